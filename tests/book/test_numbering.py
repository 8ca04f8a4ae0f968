"""章节号由 Sphinx 排，不手写（_toc.yml 正文部分 ``numbered: 2``，写法见 _ext/chapter_numbers.py）。

- 笔记本里：标题不带号，正文里的“5.3 节”“第 4 章”写成 {numref}`%s 节 <标签>`、{numref}`第 %s 章 <标签>`；
- 网站上：章标题、左侧目录、上一页/下一页写“第 5 章　”，节写“5.3 ”，学习目标、小结、练习不编号，
  引用显示成“5.3 节”“第 4 章”并链到那一节；指向别章笔记本的链接文字里的章号也是 Sphinx 排的。

第一组只读笔记本，不需要构建；第二组用构建好的网站（没有时跳过，CI 里失败）。
"""

import json
import re

import yaml
from bs4 import BeautifulSoup

from tests.kit import ROOT

TOC = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
(MAIN,) = [part for part in TOC["parts"] if part.get("numbered")]
CHAPTERS = [entry["file"] for entry in MAIN["chapters"]]
FRAME = {"学习目标", "小结", "练习"}

# 手写的号：“第 5 章”“5.3 节”“练习 5”，带号的标题；{numref} 角色（“第 %s 章 <标签>”）不算
HAND_TYPED = re.compile(r"第\s*\d+\s*章|(?<![\d.])\d+\.\d+\s*节|练习\s*\d+|(?m:^#+ \d+\.\d+ )")
NUMREF = re.compile(r"\{numref\}`[^`]*`")


def markdown(path, kinds=("markdown",)) -> list[str]:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return ["".join(c["source"]) for c in cells if c["cell_type"] in kinds]


def test_the_main_part_is_numbered_chapters_and_sections_only():
    assert MAIN["caption"] == "正文" and MAIN["numbered"] == 2
    assert [p for p in TOC["parts"] if p.get("numbered")] == [MAIN]  # 前言、附录不编号


def prose(kinds=("markdown",)):
    """各章笔记本的单元格（默认只要 Markdown）和附录 .md：逐段给出 (文件名, 文字)。"""
    docs = sorted((ROOT / "chapters").glob("*.ipynb")) + sorted((ROOT / "chapters").glob("*.md"))
    for path in docs:
        is_notebook = path.suffix == ".ipynb"
        texts = markdown(path, kinds) if is_notebook else [path.read_text(encoding="utf-8")]
        for text in texts:
            yield path.name, text


def test_no_hand_typed_numbers():
    """章节号只来自 {numref}（网站、PDF 与笔记本版由同一次构建编号）：正文、标题、链接文字、代码里都不手写。"""
    found = [
        (name, match.group())
        for name, text in prose(kinds=("markdown", "code"))
        for match in HAND_TYPED.finditer(NUMREF.sub("", text))
    ]
    assert found == [], found


def test_the_number_check_sees_hand_typed_numbers():
    for text in ("[第 5 章](ch05_attention.ipynb)", "# 5.3 节的公式", "## 5.3 查询", "见练习 2"):
        assert HAND_TYPED.search(text), text
    assert not HAND_TYPED.search(NUMREF.sub("", "{numref}`第 %s 章 <ch05-attention>`"))


def test_numrefs_spell_out_their_text():
    """{numref}`标签` 不写文字时 Sphinx 用英文的默认格式，网页上成了“节 5.7”；要写成 {numref}`%s 节 <标签>`。"""
    bare = [
        (name, role)
        for name, text in prose()
        for role in re.findall(r"\{numref\}`([^`]*)`", text)
        if "%s" not in role
    ]
    assert bare == [], bare


def test_chapters_carry_a_label_for_numref():
    for doc in CHAPTERS:
        text = "\n".join(markdown(ROOT / f"{doc}.ipynb"))
        assert re.search(r"^\([\w-]+\)=\n# ", text, re.M), f"{doc}: 章标题上方要有标签"


def article(site, doc: str):
    return BeautifulSoup((site / f"{doc}.html").read_text("utf-8"), "html.parser")


def test_headings_show_chapter_and_section_numbers(site):
    for n, doc in enumerate(CHAPTERS, 1):
        soup = article(site, doc)
        h1 = soup.select_one("article h1")
        assert h1.select_one(".section-number").get_text() == f"第 {n} 章\u3000", doc
        assert soup.title.get_text().startswith(f"第 {n} 章"), doc
        numbers = []
        for h2 in soup.select("article h2"):
            number = h2.select_one(".section-number")
            title = h2.get_text().replace("#", "").strip()
            assert (number is None) == (title in FRAME), f"{doc}: {title}"
            if number:
                numbers.append(number.get_text())
        assert numbers == [f"{n}.{i} " for i in range(1, len(numbers) + 1)], doc
        assert len(numbers) >= 5, doc


def test_navigation_shows_chapter_numbers(site):
    soup = article(site, "chapters/ch05_attention")
    sidebar = [a.get_text() for a in soup.select(".bd-sidebar-primary a.reference")]
    assert "第 1 章\u3000Transformer 总览" in sidebar
    assert not any(t.startswith("第") for t in sidebar if "附录" in t or "术语表" in t)
    titles = [p.get_text().strip() for p in soup.select(".prev-next-title")]
    assert titles == ["第 4 章\u3000位置编码问答与证明", "第 6 章\u3000层归一化、残差与前馈网络"]
    on_this_page = [a.get_text().strip() for a in soup.select(".bd-sidebar-secondary a.nav-link")]
    assert on_this_page[0] == "学习目标" and on_this_page[1].startswith("5.1 ")


def test_references_render_as_section_and_chapter_numbers(site):
    soup = article(site, "chapters/ch05_attention")
    refs = {
        a.get_text(): a["href"] for a in soup.select("a.reference") if a.select_one(".std-numref")
    }
    assert refs["5.6 节"] == "#ch05-why-scale"
    assert refs["7.5 节"] == "ch07_encoder_decoder.html#ch07-gpt-block"
    # 指向别章笔记本的链接文字里的章号也是 Sphinx 编出的（{numref}），不是手写的
    assert refs["第 3 章"].startswith("ch03_positional_encoding.html")
    # 附录引用正文的节、正文引用练习
    errata = article(site, "chapters/appendix_errata")
    assert "2.5 节" in [a.get_text() for a in errata.select(".std-numref")]
    ch06 = article(site, "chapters/ch06_norm_residual_ffn")
    assert "练习 6.2" in [a.get_text() for a in ch06.select(".std-numref")]


def test_objects_in_unnumbered_documents_count_from_one(site):
    html = (site / "chapters/ch00_preface.html").read_text("utf-8")
    assert re.findall(r'caption-number">图 ([\d.]+) <', html) == ["1", "2"]
