"""全书 PDF（python3 tasks.py book 构建网页后打印，网页的下载菜单链接它）：每章都在、中文可以提取、没有缺字。

PDF 由 tools/book_pdf.py 用无头 chromium 打印。没有构建时本地跳过，CI=true 时失败。
"""

import json
import re
import shutil
import subprocess

import pytest
import yaml

from tests.kit import ROOT, skip_or_fail
from tools import book_pdf

TOC = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
DOCS = [TOC["root"]] + [c["file"] for part in TOC["parts"] for c in part["chapters"]]
# 正文各章的标题前面由 Sphinx 写上“第 N 章　”（_toc.yml 的 numbered，_ext/chapter_numbers.py）
CHAPTER_NUMBERS = {
    c["file"]: n
    for part in TOC["parts"]
    if part.get("numbered")
    for n, c in enumerate(part["chapters"], 1)
}
CJK = re.compile(r"[\u4e00-\u9fff]")
RADICAL = re.compile(r"[\u2e80-\u2fdf]")  # 部首补充与康熙部首


def title(doc: str) -> str:
    """一个文档的第一个一级标题（笔记本或 MyST Markdown），正文各章带上网页与 PDF 里显示的章号。"""
    path = ROOT / f"{doc}.ipynb"
    if path.exists():
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    else:
        text = (ROOT / f"{doc}.md").read_text(encoding="utf-8")
    heading = re.search(r"^# (.+)$", text, re.M).group(1)
    return f"第 {CHAPTER_NUMBERS[doc]} 章\u3000{heading}" if doc in CHAPTER_NUMBERS else heading


@pytest.fixture(scope="module")
def pdf_pages():
    """PDF 每一页的文字，用 poppler 的 pdftotext 提取（Debian 的 poppler-utils）。

    不用 pypdf 提取：中文字体里有的字形与部首共用，chromium 写进 PDF 的 ToUnicode 表把“言”“见”
    等映射成部首“⾔”“⻅”（U+2F00、U+2E80 起）；pdftotext 把它们换回统一汉字，pypdf 不换。
    """
    pdf = book_pdf.SITE_COPY
    if not pdf.exists():
        skip_or_fail(f"{pdf} 不存在：先运行 python3 tasks.py book（需要 chromium）")
    if shutil.which("pdftotext") is None:
        skip_or_fail("没有 pdftotext（apt-get install poppler-utils）")
    text = subprocess.run(
        ["pdftotext", "-enc", "UTF-8", str(pdf), "-"], capture_output=True, text=True, check=True
    ).stdout
    return text.split("\f")[:-1]  # 每页以换页符结尾


def test_pdf_holds_every_chapter_in_order(pdf_pages):
    assert len(pdf_pages) >= 10 * len(DOCS)  # 现在约 200 页；只有目录或少了几章时远少于此
    text = re.sub(r"\s+", "", "".join(pdf_pages))
    headings = [re.sub(r"\s+", "", title(doc)) for doc in DOCS]
    assert text.index(headings[0]) < text.index(headings[1])  # 前言在最前
    # 前言里的目录已按顺序列出各章：正文从目录之后、第 1 章标题第二次出现的地方开始
    position = text.index(headings[1], text.index(headings[1]) + 1)
    for doc, heading in zip(DOCS[2:], headings[2:], strict=True):
        found = text.find(heading, position + 1)
        assert found > position, f"PDF 里 {doc} 的标题 {heading!r} 不在前一章之后"
        position = found


def test_pdf_text_is_chinese_and_extractable(pdf_pages):
    chinese = sum(len(CJK.findall(page)) for page in pdf_pages)
    assert chinese > 20_000, chinese
    with_chinese = sum(bool(CJK.search(page)) for page in pdf_pages)
    assert with_chinese >= 0.8 * len(pdf_pages)  # 整页都是代码的页很少
    radicals = sorted({c for page in pdf_pages for c in RADICAL.findall(page)})
    assert radicals == [], f"提取出的是部首而不是汉字：{radicals}"


def test_pdf_has_no_missing_glyph():
    if not book_pdf.SITE_COPY.exists():
        skip_or_fail(f"{book_pdf.SITE_COPY} 不存在：先运行 python3 tasks.py book")
    counts = book_pdf.missing_glyphs(book_pdf.SITE_COPY)
    assert sum(counts) == 0, {i + 1: n for i, n in enumerate(counts) if n}


def test_missing_glyph_check_sees_a_character_no_font_has(tmp_path):
    """对照：U+10FFFD（私用区，没有字体有它）打印出来就是缺字，检查必须数到它。"""
    if shutil.which("chromium") is None:
        skip_or_fail("没有 chromium（apt-get install chromium fonts-noto-cjk）")
    (tmp_path / "a.html").write_text(
        "<meta charset='utf-8'><p>中文 ok</p><p>\U0010fffd\U0010fffd</p>", encoding="utf-8"
    )
    book_pdf.print_pdf(tmp_path, "a.html", tmp_path / "a.pdf")
    assert book_pdf.missing_glyphs(tmp_path / "a.pdf") == [2]


def test_every_page_links_the_pdf(site):
    """每一页的下载菜单里都有“全书 PDF”，指向站点根目录的那个文件（_ext/whole_book_pdf.py）；
    那个文件（book_pdf.SITE_COPY）由上面几个测试读。"""
    pages = sorted(site.glob("chapters/*.html"))
    assert pages
    for page in pages:
        assert 'href="../tinyformer.pdf"' in page.read_text(encoding="utf-8"), page.name
