"""构建好的网页读起来是中文书：扫描 _build/html（不构建，也不开浏览器；没有构建结果时跳过，CI 里失败）。
排版见 _ext/cjk_typography.py，界面文字见 _ext/zh_interface.py、locale/、_templates/，参考文献见 _ext/bib_labels.py。
"""

import re

import pytest
from bs4 import BeautifulSoup, NavigableString

from _ext.light_pages import html_pages
from tests.kit import SITE

HAN = "\u3400-\u4dbf\u4e00-\u9fff\u3001-\u303f\uff01-\uffef"
CJK_SPACE_CJK = re.compile(rf"[{HAN}][ \t\r\n]+[{HAN}]")

# 正文里有意写的空格：把一句话分好的词用空格隔开给读者看（源文件里就是这样写的，不是换行）
DELIBERATE = ["我 爱 学习", "我 明天 在学校 看小说", "我 爱 北京 天安门", "中文句子 \n翻译"]
# sphinx-exercise 生成的解答标题（“解答 练习 1.1”）：两个词之间本来就该有空格
GENERATED = re.compile(r"^解答 练习 \d+\.\d+$")

# 块级元素：它们之间的换行不显示为空格，文字按它们分组后再找“汉字 空白 汉字”
BLOCKS = {
    "p", "li", "dt", "dd", "h1", "h2", "h3", "h4", "h5", "h6", "td", "th", "caption",
    "figcaption", "summary", "div", "blockquote", "section", "article", "main", "ul", "ol",
    "dl", "table", "thead", "tbody", "tr", "details", "aside", "nav", "header", "footer",
    "figure", "span.caption-text",
}  # fmt: skip

# 不看的内容：代码、输出、脚本；行内的代码与公式换成一个占位字母（它们两侧的空格是有意的）
SKIP = "pre, script, style, .cell_output, .output, .headerlink, .toggle-details__summary"
PLACEHOLDER = "code, kbd, .math, mjx-container"

# 主题与扩展里的英文界面文字（可见的文字，或 title、aria-label、placeholder、alt 属性）
ENGLISH_UI = [
    "Show code cell",
    "Hide code cell",
    "Click to show",
    "Click to hide",
    "Search this book",
    "Toggle primary sidebar",
    "Toggle secondary sidebar",
    "Color mode",
    "light/dark",
    "列印成 PDF",
    "Print to PDF",
    "Skip to main content",
    "Back to top",
    "previous page",
    "next page",
    "Link to this heading",
    "Link to this term",
    "Link to this equation",
    "Launch on",
    "Launch Thebe",
    "Launch interactive content",
    "Live Code",
    "Binder logo",
    "Colab logo",
    "Download source file",
    "Download notebook file",
    "Fullscreen mode",
    "Source repository",
    "On this page",
    "Contents",
]


PAGES = [p.relative_to(SITE).as_posix() for p in html_pages(SITE)] if SITE.exists() else []


def article(site, name):
    soup = BeautifulSoup((site / name).read_text(encoding="utf-8"), "html.parser")
    return soup, soup.select_one("article.bd-article") or soup.select_one("main")


def _block_of(node):
    for parent in node.parents:
        if parent.name in BLOCKS:
            return parent
    return None


def inline_runs(root):
    """按最近的块级祖先把文字分组：每组是浏览器里排在同一行流里的文字。"""
    for element in root.select(SKIP):
        element.decompose()
    for element in root.select(PLACEHOLDER):
        element.replace_with("X")
    runs: dict[int, list[str]] = {}
    for text in root.find_all(string=True):
        if isinstance(text, NavigableString) and type(text) is NavigableString:
            runs.setdefault(id(_block_of(text)), []).append(str(text))
    return ["".join(parts) for parts in runs.values()]


def cjk_spaces(text):
    found = []
    for match in CJK_SPACE_CJK.finditer(text):
        context = text[max(0, match.start() - 12) : match.end() + 12]
        if not any(d in context for d in DELIBERATE) and not GENERATED.match(context.strip()):
            found.append(context)
    return found


def test_the_scan_finds_a_space_between_chinese_characters():
    soup = BeautifulSoup(
        "<article class='bd-article'><p>某个\n<em>代码</em> 单元格，<code>x = 1</code> 的值"
        "<span class='math'>\\(x\\)</span>。</p><pre>我 爱</pre></article>",
        "html.parser",
    )
    runs = inline_runs(soup.select_one("article"))
    found = [c for run in runs for c in cjk_spaces(run)]
    # 两处：“个\n代”（跨进强调）与“码 单”；“X 的”两边不都是汉字，<pre> 里的不看
    assert len(found) == 2 and all(c == "某个\n代码 单元格，X 的值X。" for c in found)


@pytest.mark.parametrize("name", PAGES)
def test_page_reads_as_a_chinese_book(site, name):
    """正文里没有“汉字 空白 汉字”；界面文字是简体中文；有网站图标（只是跳转到前言的 index.html 除外）。"""
    text = (site / name).read_text(encoding="utf-8")
    soup, root = BeautifulSoup(text, "html.parser"), None
    if not (soup.select_one('meta[http-equiv="Refresh"]') and not soup.select_one("body")):
        icon = soup.select_one('link[rel~="icon"]')
        assert icon is not None and (site / name).parent.joinpath(icon["href"]).resolve().is_file()
        root = soup.select_one("article.bd-article") or soup.select_one("main")
    if root is not None:
        found = [c for run in inline_runs(root) for c in cjk_spaces(run)]
        assert found == [], f"{name}: {found[:10]}"
    # 正文里作者自己写的英文（例如“Contents”出现在代码输出里）不算：只看正文之外，以及属性与按钮
    soup = BeautifulSoup(text, "html.parser")
    main = soup.select_one("article.bd-article")
    if main is not None:
        for element in main.select("section, .cell, p, pre, table, dl, ul, ol, div.math"):
            element.decompose()
    interface = str(soup)
    assert [s for s in ENGLISH_UI if s in interface] == [], name


def test_punctuation_after_inline_math_stays_with_it(site):
    _, root = article(site, "chapters/ch03_positional_encoding.html")
    wrapped = root.select(".cjk-nobreak")
    assert len(wrapped) > 5
    for span in wrapped:
        assert span.select_one(".math") is not None
        assert re.match(r"^[，。、；：？！）》」』】”’…]+$", span.get_text()[-1])
    # 没有漏网的：公式后面紧跟中文标点的，都包起来了
    for math in root.select(".math"):
        following = math.next_sibling
        wrapped = "cjk-nobreak" in (math.parent.get("class") or [])
        if (
            not wrapped
            and isinstance(following, NavigableString)
            and re.match(r"^[，。、；：？！）]", following)
        ):
            pytest.fail(f"公式 {math.get_text()} 后面的 {following[:3]!r} 没有包进 .cjk-nobreak")


def test_bibliography_labels_read_like_the_citations(site):
    references, root = article(site, "chapters/appendix_references.html")
    labels = [
        label.get_text().strip("[]") for label in root.select("div.citation span.label, .label")
    ]
    labels = [label for label in labels if label]
    assert len(labels) >= 10
    cited = set()
    for path in html_pages(site):
        for link in BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser").select(
            'a[href*="appendix_references.html#"], a[href^="#id"]'
        ):
            cited.add(" ".join(link.get_text().split()))
    assert all(re.fullmatch(r".+, \d{4}[a-z]?", label) for label in labels), labels
    assert "Vaswani et al., 2017" in labels
    uncited = [label for label in labels if label not in cited]
    assert uncited == [], f"参考文献里这些标签在正文里没有同样写法的引用：{uncited}"
