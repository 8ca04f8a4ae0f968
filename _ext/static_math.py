"""本书的一个小 Sphinx 扩展（_config.yml 里以 local_extensions 加载）：公式在构建时排好，网页不加载 MathJax。

网页原来在读者的浏览器里排版公式：下载 MathJax（``tex-chtml.js``，gzip 后约 270 KB）、编译它、再排几百个
公式，都在主线程上。手机上这是第 4、5 章这类公式多的页面最大的一块开销（Lighthouse 的 Total Blocking Time）。
这里在构建结束时（``build-finished``）用同一个 MathJax 3.2.2（npm 包 ``mathjax-full``，package-lock.json
固定版本）在 Node.js 里把每页的公式排成同样的 CHTML（``_ext/static_math.js``），写进 HTML：

- 每个公式是 ``<mjx-container>``，与浏览器里的 MathJax 排出的相同；字体还是 ``_static/mathjax`` 里的 CHTML 字体，
  这一页用到的字形的样式表写进 ``<head>``；
- 读屏软件读每个公式附带的 MathML（MathJax 的 assistive-mml，``mjx-assistive-mml``，与网页上 MathJax 菜单默认的
  设置相同）；公式不是 Tab 键的停靠点；
- 页面不再加载 MathJax 与它的设置脚本；公式排好之前隐藏 TeX 源码的 ``mathjax-pending`` 也用不着了。MathJax 的
  右键菜单因此没有了（它的朗读与探索功能本来就不在网站里，见 _ext/light_pages.py）。

只处理 html 构建器：全书 PDF 的单页 HTML（singlehtml）照旧由浏览器里的 MathJax 排版，tools/book_pdf.py 等它排完。
公式里有错误（未定义的命令等）时构建失败，指出页面与公式。增量构建时没重写的页面已经排好，跳过。
tests/book/test_browser.py 检查页面上没有未排版的 TeX，test_phone.py 检查没有 MathJax 脚本。
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

from sphinx.errors import ExtensionError
from sphinx.util import logging

from tinyformer.atomic import atomic_write

logger = logging.getLogger(__name__)

SCRIPT = Path(__file__).with_name("static_math.js")
FONTS = "_static/mathjax/output/chtml/fonts/woff-v2"
# Sphinx 的 MathJax 扩展写出的公式（行内 \( \)、行间 \[ \]，行间公式前可能有公式号）
INLINE = re.compile(r'(<span class="math notranslate nohighlight">)\\\((.*?)\\\)(</span>)', re.S)
DISPLAY = re.compile(
    r'(<div class="math notranslate nohighlight"[^>]*>\s*(?:<span class="eqno">.*?</span>\s*)?)'
    r"\\\[(.*?)\\\](\s*</div>)",
    re.S,
)
MATH_CLASS = 'class="math notranslate nohighlight"'
# 页面加载 MathJax 的三行（_ext/page_scripts.py 的 PENDING、Sphinx 的设置脚本和 tex-chtml.js）
MATHJAX_SCRIPTS = re.compile(
    r'[ \t]*<script>(?:window\.MathJax = .*?|document\.documentElement\.classList\.add\("mathjax-pending"\);)</script>\n'
    r'|[ \t]*<script defer="defer" src="[^"]*_static/mathjax/tex-chtml\.js"></script>\n'
)


class Typesetter:
    """一个常驻的 node 进程：每次送一页的公式，拿回排好的 HTML 与样式表。"""

    def __init__(self, root: Path):
        node = shutil.which("node")
        if node is None:
            raise ExtensionError("static_math：构建需要 Node.js（node）在构建时排版公式")
        self.process = subprocess.Popen(
            [node, str(SCRIPT)],
            cwd=root,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )

    def typeset(self, formulas: list[tuple[str, bool]], font_url: str) -> dict:
        self.process.stdin.write(json.dumps({"fontURL": font_url, "formulas": formulas}) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise ExtensionError("static_math：node 进程意外退出（先 npm ci 装好 mathjax-full？）")
        return json.loads(line)

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()


def prerender(page_html: str, fonts: str, typesetter: Typesetter) -> str:
    found = [(m, False) for m in INLINE.finditer(page_html)]
    found += [(m, True) for m in DISPLAY.finditer(page_html)]
    if len(found) != page_html.count(MATH_CLASS):
        raise ExtensionError(
            f"static_math：{page_html.count(MATH_CLASS)} 个公式元素里只认出 {len(found)} 个"
        )
    found.sort(key=lambda item: item[0].start())
    reply = typesetter.typeset([(html.unescape(m.group(2)), d) for m, d in found], fonts)
    if "error" in reply:
        raise ExtensionError(f"static_math：{reply['error']}")
    pieces, end = [], 0
    for (m, _), rendered in zip(found, reply["html"], strict=True):
        pieces += [page_html[end : m.start()], m.group(1), rendered, m.group(3)]
        end = m.end()
    pieces.append(page_html[end:])
    page_html = MATHJAX_SCRIPTS.sub("", "".join(pieces))
    style = f'<style id="static-math">{reply["css"]}</style>\n'
    return page_html.replace("</head>", style + "</head>", 1)


def _prerender_site(app, exception) -> None:
    if exception is not None or app.builder.name != "html":
        return
    site = Path(app.outdir)
    pages = [
        p
        for p in sorted(site.rglob("*.html"))
        if "_static" not in p.relative_to(site).parts
        and "_static/mathjax/tex-chtml.js" in p.read_text(encoding="utf-8")
    ]
    if not pages:
        return
    typesetter = Typesetter(Path(app.confdir))
    try:
        for page in pages:
            fonts = Path(*[".."] * (len(page.relative_to(site).parts) - 1), FONTS).as_posix()
            try:
                new = prerender(page.read_text(encoding="utf-8"), fonts, typesetter)
            except ExtensionError as err:
                raise ExtensionError(f"{page.relative_to(site)}：{err}") from None
            with atomic_write(page) as file:
                file.write(new.encode())
    finally:
        typesetter.close()
    logger.info(f"static_math: typeset the formulas of {len(pages)} pages")


def setup(app):
    # 在 light_pages 称重（900）之前
    app.connect("build-finished", _prerender_site, priority=450)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
