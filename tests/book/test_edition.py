"""笔记本版 edition/（tools/edition.py，转换的规则见那里）与打开它的几扇门：启动按钮、Binder 的依赖。

Markdown 按 CommonMark（markdown-it-py 的 commonmark 预设，GitHub、Colab、JupyterLab 遵循的语法）渲染后
检查读者看到的文字。要网站的构建（号取自它）：没有时跳过，CI 里失败。
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import re
import sys
import tomllib
from functools import cache
from pathlib import Path
from urllib.parse import urlparse

import pytest
import yaml
from bs4 import BeautifulSoup
from markdown_it import MarkdownIt
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.kit import ROOT, SITE, skip_or_fail
from tools import binder_requirements, edition

CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
NAMES = edition.edition_notebooks()
COMMONMARK = MarkdownIt("commonmark")
# 渲染后仍是 MyST 的写法（读者看到的是这些字面文字）：查 CommonMark（JupyterLab、Colab、GitHub 都认的语法）渲染的笔记本版
MYST = {
    "{numref}": re.compile(r"\{numref\}"),
    "{term}": re.compile(r"\{term\}"),
    "{cite}": re.compile(r"\{cite"),
    "{eq}": re.compile(r"\{eq\}"),
    "{prf:…}": re.compile(r"\{prf:"),
    "{ref}/{doc}": re.compile(r"\{(?:ref|doc|download)\}"),
    ":::": re.compile(r":::"),
    "```{": re.compile(r"```\{"),
    ":label:": re.compile(r":label:"),
    ":class: …": re.compile(r"(?m)^:(?:class|name|pyobject):"),
    "(标签)=": re.compile(r"\([\w:.-]+\)="),
    "%s 节/章": re.compile(r"%s"),
    "$$ (标签)": re.compile(r"\$\$ *\(\w[\w-]*\)"),
}


def visible_text(markdown: str) -> str:
    """CommonMark 渲染后、代码块与行内代码以外的文字（读者当作正文读到的部分）。"""
    html = COMMONMARK.render(markdown)
    html = re.sub(r"<pre>.*?</pre>|<code>.*?</code>", "", html, flags=re.S)
    return re.sub(r"<[^>]+>", "", html)


def myst_items(markdown: str) -> int:
    """读者在 CommonMark 渲染后的正文里看到的 MyST 写法的个数。"""
    text = visible_text(markdown)
    return sum(len(pattern.findall(text)) for pattern in MYST.values())


def cells(folder: str, name: str) -> list[dict]:
    return json.loads((ROOT / folder / name).read_text(encoding="utf-8"))["cells"]


def markdown_cells(folder: str, name: str) -> list[str]:
    return ["".join(c["source"]) for c in cells(folder, name) if c["cell_type"] == "markdown"]


@pytest.fixture(scope="module")
def built_site() -> edition.Site:
    try:
        return edition.Site()
    except FileNotFoundError as err:
        skip_or_fail(str(err))


def test_edition_is_up_to_date(built_site):
    stale = edition.stale(edition.build(built_site))
    assert stale == [], f"edition/ 过期了：{stale}；运行 python3 tasks.py edition"


def test_myst_the_edition_does_not_know_is_an_error_not_passed_through(built_site):
    converter = edition.Converter(built_site)
    chapter = edition.Chapter(built_site, "chapters/ch05_attention", [])
    with pytest.raises(ValueError, match=r"got role='foo' in chapters/ch05_attention"):
        converter.markdown("见 {foo}`x`。", chapter)
    with pytest.raises(ValueError, match=r"got directive='bar'"):
        converter.markdown(":::{bar}\n文字\n:::\n", chapter)
    with pytest.raises(ValueError, match=r"label must be defined on the site, got label='nope'"):
        converter.markdown("见 {numref}`%s 节 <nope>`。", chapter)
    with pytest.raises(ValueError, match=r"标题比网站上的节多"):
        converter.markdown("## 一节\n", chapter)


def cjk_softbreaks(markdown: str) -> list[str]:
    """CommonMark 渲染后，两个汉字（或中文标点）之间的软换行：读者看到的是一个多余的空格。"""
    found = []
    for token in COMMONMARK.parse(markdown):
        children = token.children or []
        for before, mid, after in zip(children, children[1:], children[2:], strict=False):
            if (
                mid.type == "softbreak"
                and before.type == after.type == "text"
                and edition.CJK_NEWLINE.search(before.content[-1:] + "\n" + after.content[:1])
            ):
                found.append(before.content[-10:] + "⏎" + after.content[:10])
    return found


@pytest.mark.parametrize("name", NAMES)
def test_commonmark_render_reads_as_written(name):
    """CommonMark 渲染后读者看到的正文里：没有 MyST 写法；两个汉字之间没有软换行（显示成一个多余的空格）；
    删换行时没有把 *强调* 接在汉字后面（CommonMark 不认“个*[词](…)*”里的星号，读者会看到它）。"""
    # 对照：网站的源文件里有 MyST，检查看得见它们
    assert sum(myst_items(source) for source in markdown_cells("chapters", name)) > 0
    for source in markdown_cells("edition", name):
        text = visible_text(source)
        found = {kind: p.findall(text) for kind, p in MYST.items() if p.search(text)}
        assert found == {}, (name, source[:300])
        assert cjk_softbreaks(source) == [], name
        prose = re.sub(r"\$\$.*?\$\$|\$[^$\n]*\$", "", text, flags=re.S)
        assert "*" not in prose, (name, prose[max(0, prose.find("*") - 20) : prose.find("*") + 20])


def test_the_cjk_check_sees_a_line_break_between_chinese_characters():
    assert cjk_softbreaks("第一行\n第二行。\n\nEnglish\nwords，中文\nok") == ["第一行⏎第二行。"]


def test_the_check_sees_myst_the_way_a_reader_does():
    assert myst_items("见 {numref}`%s 节 <ch05-qkv>`。") == 1  # 反引号里的部分显示成代码
    assert myst_items("(ch05-qkv)=\n## 标题\n\n:::{note}\n:class: dropdown\n文字\n:::") == 4
    assert myst_items("代码里的 `{numref}` 不算。\n\n```python\n:::\n```") == 0
    assert "*" in visible_text("先放四个*[特殊词元](u)*（special tokens）")  # 星号原样显示


@cache
def site_page(url: str) -> BeautifulSoup:
    base = edition.site_url()
    assert url.startswith(base), url
    path = SITE / urlparse(url).path.removeprefix(urlparse(base).path)
    assert path.exists(), f"网站上没有 {url}"
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


def text_at(url: str) -> str:
    """网站上链接 ``url`` 指向的地方的文字（锚点所在的元素；空的锚点 span 取它所在的节）。"""
    page = site_page(url.split("#")[0])
    anchor = urlparse(url).fragment
    if not anchor:
        return page.get_text(" ", strip=True)
    element = page.find(id=anchor)
    assert element is not None, f"网站上没有锚点 {url}"
    if not element.get_text(strip=True):
        element = element.parent
    return element.get_text(" ", strip=True)


NUMBERED_LINK = re.compile(
    r"\[((?:第 \d+ 章)|(?:\d+\.\d+ 节)|(?:(?:练习|定理|命题|推论) \d+\.\d+)|(?:\(\d+\.\d+\)))\]\(([^)\s]+)\)"
)
SECTION_HEADING = re.compile(r"(?m)^#{1,2} (第 \d+ 章\u3000|\d+\.\d+ )")


@pytest.mark.parametrize("name", NAMES)
def test_references_point_at_the_same_number_on_the_site(name, built_site, site):
    markdown = "\n".join(markdown_cells("edition", name))
    # 缺了号的引用：“第  章”、空格前不是数字的“ 节”
    assert [m.group() for m in re.finditer(r"第\s*章|(?<!\d) 节", markdown)] == []
    base = edition.site_url()
    for text, url in NUMBERED_LINK.findall(markdown):
        # 笔记本之间、笔记本之内的链接 [第 3 章](ch03_….ipynb)、[5.3 节](#…)
        if not url.startswith("https://"):
            notebook, _, anchor = url.partition("#")
            url = f"{base}chapters/{Path(notebook or name).stem}.html" + (
                f"#{anchor}" if anchor else ""
            )
        number = re.search(r"\d+(?:\.\d+)?", text).group()
        shown = text_at(url)[:200]
        assert (f"第 {number} 章" if "章" in text else number) in shown, (text, url, shown)
    for url in re.findall(r"\]\((" + re.escape(base) + r"[^)\s]+)\)", markdown):
        text_at(url)  # 每个链到网站的链接都有那一页、那个锚点（术语表、参考文献、节）
    # 带号的标题：与网站上这一页的标题同号、同序
    page = site_page(f"{base}chapters/{Path(name).stem}.html")
    on_site = [
        h.get_text(" ", strip=True).split("\u3000")[0].split(" ")[0:2]
        for h in page.select("main h1, main h2")
        if h.find(class_="section-number")
    ]
    ours = [m.strip().split(" ")[0:2] for m in SECTION_HEADING.findall(markdown)]
    assert [o[0] for o in ours] == [s[0] for s in on_site], name


def solution_code(name: str) -> list[dict]:
    """chapters/ 里 solution-start 与 solution-end 之间的代码单元格。"""
    found, inside = [], False
    for cell in cells("chapters", name):
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            started = inside or "```{solution-start}" in source
            inside = started and "```{solution-end}" not in source
        elif inside:
            found.append(cell)
    return found


def folded_blocks(name: str) -> list[str]:
    """edition/ 里 Markdown 单元格中 ``<details>`` 与 ``</details>`` 之间的文字。"""
    markdown = "\n".join(markdown_cells("edition", name))
    return re.findall(r"(?s)<details>(.*?)</details>", markdown)


@pytest.mark.parametrize("name", NAMES)
def test_code_and_outputs_come_from_the_chapter(name):
    answers = solution_code(name)
    source = [c for c in cells("chapters", name) if c["cell_type"] == "code" and c not in answers]
    ours = [c for c in cells("edition", name) if c["cell_type"] == "code"]
    assert cells("edition", name)[0] == source[0]  # Colab 安装单元格第一，原样
    assert sorted(c["source"] for c in ours) == sorted(c["source"] for c in source)
    by_source = {json.dumps(c["source"]): c for c in source}
    for cell in ours:
        original = by_source[json.dumps(cell["source"])]
        if "remove-output" in cell["metadata"].get("tags", []):
            assert cell["outputs"] == []  # 网站上不显示、存着的是过时的控件文字：清空，运行时再出现
            continue
        for ours_output, output in zip(cell["outputs"], original["outputs"], strict=True):
            if edition.WIDGET_VIEW in output.get("data", {}):
                # 控件的 text/plain（没有内核时显示的那个）换成了控件状态的文字，其余原样
                plain = "".join(ours_output["data"].pop("text/plain"))
                output = {**output, "data": {**output["data"]}}
                output["data"].pop("text/plain")
                assert "interactive(" not in plain and "运行这个单元格" in plain, plain
            assert ours_output == output
    # 解答的代码和它打印的文字只在折叠的块里
    folded = "\n".join(folded_blocks(name))
    for cell in answers:
        assert "".join(cell["source"]).strip() in folded
        for output in cell["outputs"]:
            if output["output_type"] == "stream":
                assert "".join(output["text"]).strip() in folded


# 只属于网站的输出与文字（remove-output 单元格存着的控件文字与进度条在上一个测试里清空）
SITE_ONLY_TEXT = (
    "（构建网站时填写）",
    "正在加载模型",
    "0/150 步",
    "这个控件需要运行中的 Python 内核",
)


@pytest.mark.parametrize("name", NAMES)
def test_site_only_outputs_and_solutions(name):
    text = json.dumps(cells("edition", name), ensure_ascii=False)
    assert [t for t in SITE_ONLY_TEXT if t in text] == []
    edition_cells = cells("edition", name)
    exercises = [
        i
        for i, c in enumerate(edition_cells)
        if c["cell_type"] == "markdown"
        and re.search(r"\*\*练习 \d+\.\d+\*\*", "".join(c["source"]))
    ]
    summaries = re.findall(r"<summary>(.*?)</summary>", "\n".join(folded_blocks(name)))
    for i, cell in enumerate(edition_cells):
        # 没有折叠的代码单元格：JupyterLab 照样显示它的第一行，GitHub 整格显示
        assert cell["cell_type"] != "code" or "jupyter" not in cell["metadata"], (name, i)
        source = "".join(cell["source"])
        if "的解答（点击展开）</summary>" in source:
            assert exercises and i > min(exercises), (name, i)  # 解答在练习之后
    # 摘要里只有练习的号：答案要点开才看得到
    answers = [s for s in summaries if "解答" in s]
    assert all(re.fullmatch(r"练习 \d+\.\d+ 的解答（点击展开）", s) for s in answers), answers
    # 每个解答都折起来了：折起的个数等于这一章源文件里的解答个数
    source = "\n".join(markdown_cells("chapters", name))
    solutions = source.count("```{solution}") + source.count("```{solution-start}")
    assert text.count("的解答（点击展开）</summary>") == solutions


@pytest.mark.parametrize("name", NAMES)
def test_section_references_stay_in_the_notebook(name, built_site):
    """相对的链接都指向笔记本版里的笔记本；引用一节的，指向那个笔记本里带这个锚点（``<a id>``）的标题。"""
    markdown = "\n".join(markdown_cells("edition", name))
    for text, url in re.findall(r"\[([^\]]*)\]\(([^)\s]+)\)", markdown):
        if url.startswith(("http://", "https://", "mailto:")):
            continue
        notebook, _, anchor = url.partition("#")
        # 单独打开一章时（Colab、GitHub、JupyterLab），相对的 .ipynb 链接指向同一目录里的笔记本
        assert notebook in NAMES or notebook == "", (text, url)
        if anchor:
            target = "\n".join(markdown_cells("edition", notebook or name))
            assert re.search(rf'(?m)^#+ .*<a id="{re.escape(anchor)}"></a>', target), (text, url)
    # 链到网站某一节的“N.M 节”只剩只属于网站的东西（“网站上的 N.M 节”）
    site_sections = re.findall(r"\[(\d+\.\d+ 节)\]\(https://", markdown)
    assert site_sections == [], site_sections


# ---- 启动按钮


def launch_urls(name: str) -> dict[str, str]:
    repo = urlparse(CONFIG["repository"]["url"]).path.strip("/")
    branch = CONFIG["repository"]["branch"]
    buttons = CONFIG["launch_buttons"]
    path = f"edition/{name}"
    return {
        "Colab": f"{buttons['colab_url']}/github/{repo}/blob/{branch}/{path}",
        "Binder": f"{buttons['binderhub_url']}/v2/gh/{repo}/{branch}?urlpath=lab/tree/{path}",
        "GitHub": f"https://github.com/{repo}/blob/{branch}/{path}",
    }


@pytest.mark.parametrize("name", NAMES)
def test_launch_buttons_open_the_edition(name, site):
    html = (site / "chapters" / name.replace(".ipynb", ".html")).read_text(encoding="utf-8")
    hrefs = set(re.findall(r'href="([^"]+)"', html))
    for door, url in launch_urls(name).items():
        assert url in hrefs, (door, url)
    external = [h for h in hrefs if h.startswith("https://")]
    assert not [h for h in external if f"/chapters/{name}" in h], "启动链接仍指向网站的源文件"


# ---- Binder


def test_binder_requirements_are_generated_from_requirements():
    text = (ROOT / "binder" / "requirements.txt").read_text(encoding="utf-8")
    assert text == binder_requirements.generate(), "运行 python -m tools.binder_requirements"


def binder_distributions() -> set[str]:
    lines = (ROOT / "binder" / "requirements.txt").read_text(encoding="utf-8").splitlines()
    return {canonicalize_name(name) for name in map(binder_requirements.pin_name, lines) if name}


def with_dependencies(names: set[str]) -> set[str]:
    """``names`` 连同它们（在本机安装的版本里）递归需要的发行包：Binder 上 pip 会一并装上。"""
    seen, todo = set(), list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        try:
            requires = importlib.metadata.requires(name) or []
        except importlib.metadata.PackageNotFoundError:
            continue
        todo += [canonicalize_name(Requirement(r).name) for r in requires if "extra ==" not in r]
    return seen


def chapter_imports() -> set[str]:
    modules = set()
    for path in sorted((ROOT / "chapters").glob("*.ipynb")):
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] != "code":
                continue
            for node in ast.walk(ast.parse("".join(cell["source"]))):
                if isinstance(node, ast.Import):
                    modules |= {alias.name.split(".")[0] for alias in node.names}
                elif isinstance(node, ast.ImportFrom) and node.level == 0:
                    modules.add(node.module.split(".")[0])
    return {m for m in modules if m not in sys.stdlib_module_names}


def test_binder_installs_every_module_the_chapters_import():
    installed = with_dependencies(binder_distributions())
    providers = importlib.metadata.packages_distributions()
    modules = chapter_imports() - {"tinyformer"}  # 本包由 postBuild 安装
    assert {"torch", "matplotlib", "ipywidgets"} <= modules
    missing = {
        m: providers.get(m)
        for m in modules
        if not {canonicalize_name(d) for d in providers.get(m, [m])} & installed
    }
    assert missing == {}, f"binder/requirements.txt 缺少：{missing}"


def test_binder_installs_the_package_dependencies():
    """postBuild 用 --no-deps 装本包，所以 pyproject.toml 的每个依赖都要在 binder/requirements.txt 里。"""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    needed = {canonicalize_name(Requirement(d).name) for d in project["dependencies"]}
    assert needed - binder_distributions() == set()
    assert "--no-deps" in (ROOT / "binder" / "postBuild").read_text(encoding="utf-8")
