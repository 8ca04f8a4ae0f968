"""第一屏要的少（issue 38 第 1 条）：公式在构建时排好（_ext/static_math.py），每页一个样式表
（_ext/first_screen.py）。这里用小例子查两个扩展本身；整站的效果由 tests/book/test_phone.py 在浏览器里查。"""

import re
import shutil
from pathlib import Path

import pytest
from sphinx.errors import ExtensionError

from _ext.first_screen import css_text
from _ext.static_math import Typesetter, prerender
from tests.kit import ROOT, skip_or_fail

PAGE = """<html><head>
    <script>window.MathJax = {"loader": {"load": ["ui/lazy"]}}</script>
    <script defer="defer" src="../_static/mathjax/tex-chtml.js"></script>
    <script>document.documentElement.classList.add("mathjax-pending");</script>
</head><body>
<p>向量 <span class="math notranslate nohighlight">\\(x_i &lt; y\\)</span> 的长度。</p>
<div class="math notranslate nohighlight" id="equation-eq-a">
<span class="eqno">(4.1)<a class="headerlink" href="#equation-eq-a">#</a></span>\\[\\begin{aligned}
a &amp;= b \\\\[2pt] c &amp;= \\sqrt{d}\\end{aligned}\\]</div>
</body></html>"""


@pytest.fixture(scope="module")
def typesetter():
    if shutil.which("node") is None or not (ROOT / "node_modules" / "mathjax-full").is_dir():
        skip_or_fail("没有 node 或 node_modules/mathjax-full（python3 tasks.py book 会 npm ci）")
    t = Typesetter(ROOT)
    yield t
    t.close()


def test_formulas_are_typeset_at_build_time(typesetter):
    html = prerender(PAGE, "../_static/mathjax/output/chtml/fonts/woff-v2", typesetter)
    assert html.count("<mjx-container") == 2
    assert "\\(" not in html and "\\[" not in html
    # 读屏软件读 MathML；TeX 里的 &lt; 先还原成 <，排出来的 MathML 再转义
    assert "<mjx-assistive-mml" in html and "<mo>&lt;</mo>" in html
    assert 'display="true"' in html
    assert '<span class="eqno">(4.1)' in html  # 公式号留在原处
    # 不再加载 MathJax；样式表带着字体（先用本机字体画，字体到了再换）
    assert "tex-chtml.js" not in html and "window.MathJax" not in html
    assert "mathjax-pending" not in html
    style = html[html.index('<style id="static-math">') : html.index("</head>")]
    assert (
        "font-display: swap" in style and "../_static/mathjax/output/chtml/fonts/woff-v2/" in style
    )


def test_a_bad_formula_fails_the_build_naming_it(typesetter):
    bad = PAGE.replace("x_i &lt; y", "\\operatorname{softmax}(x) \\notacommand")
    with pytest.raises(ExtensionError, match=r"notacommand"):
        prerender(bad, "fonts", typesetter)


def test_an_unrecognised_formula_element_fails_the_build(typesetter):
    odd = PAGE.replace("\\(x_i &lt; y\\)", "$x$")
    with pytest.raises(ExtensionError, match="只认出"):
        prerender(odd, "fonts", typesetter)


def test_stylesheets_are_joined_with_imports_inlined_and_urls_rebased(tmp_path: Path):
    static = tmp_path / "_static"
    (static / "styles").mkdir(parents=True)
    (static / "basic.css").write_text("div { background: url(file.png) }", encoding="utf-8")
    (static / "styles" / "theme.css").write_text(
        '@import "../basic.css";\np { background: url("img/a.svg") } '
        "q { background: url(data:image/png;base64,AA==) }",
        encoding="utf-8",
    )
    text = css_text(tmp_path, "_static/styles/theme.css")
    assert "@import" not in text
    assert "url(file.png)" in text  # basic.css 本来就在 _static/
    assert 'url("styles/img/a.svg")' in text  # 相对 _static/ 里的合并文件
    assert "url(data:image/png;base64,AA==)" in text


def test_code_leaves_names_and_punctuation_unwrapped_with_the_same_text():
    """与代码块同色的名字、标点不包 span（_ext/first_screen.py 第 4 条）；有颜色的词照旧，文字一字不差。"""
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer

    from _ext.first_screen import PlainTokensFormatter

    code = "x = torch.zeros(3, 4)  # 注释\nprint(len(x), 'a')\n"
    lean = highlight(code, PythonLexer(), PlainTokensFormatter())
    full = highlight(code, PythonLexer(), HtmlFormatter())
    assert 'class="n"' in full and 'class="p"' in full
    assert 'class="n"' not in lean and 'class="p"' not in lean and 'class="w"' not in lean
    for kept in ('class="o"', 'class="mi"', 'class="c1"', 'class="nb"', 'class="s1"'):
        assert kept in lean
    assert lean.count("<span") < full.count("<span") / 2
    assert re.sub(r"<[^>]+>", "", lean) == re.sub(r"<[^>]+>", "", full)
