"""全书 PDF（python3 tasks.py book 构建网页后打印，网页的下载菜单链接它）：每章都在、中文可以提取、没有缺字。

PDF 由 tools/book_pdf.py 用无头 chromium 打印。没有构建时本地跳过，CI=true 时失败。
"""

import importlib.util
import re
import shutil
from pathlib import Path

import pytest
import yaml
from conftest import skip_or_fail

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("book_pdf", ROOT / "tools" / "book_pdf.py")
book_pdf = importlib.util.module_from_spec(spec)
spec.loader.exec_module(book_pdf)

TOC = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
DOCS = [TOC["root"]] + [c["file"] for part in TOC["parts"] for c in part["chapters"]]
CJK = re.compile(r"[\u4e00-\u9fff]")


def title(doc: str) -> str:
    """一个文档的第一个一级标题（笔记本或 MyST Markdown）。"""
    path = next(p for p in (ROOT / f"{doc}.ipynb", ROOT / f"{doc}.md") if p.exists())
    return re.search(r"^# (.+?)\s*$", path.read_text(encoding="utf-8"), re.M).group(1).strip('"\\n')


@pytest.fixture(scope="module")
def pdf_pages():
    pdf = book_pdf.SITE_COPY
    if not pdf.exists():
        skip_or_fail(f"{pdf} 不存在：先运行 python3 tasks.py book（需要 chromium）")
    from pypdf import PdfReader

    return [page.extract_text() for page in PdfReader(pdf).pages]


def test_pdf_holds_every_chapter_in_order(pdf_pages):
    assert len(pdf_pages) >= 10 * len(DOCS)  # 现在约 170 页；只有目录或一章时远少于此
    text = re.sub(r"\s+", "", "\f".join(pdf_pages))
    positions = []
    for doc in DOCS:
        heading = re.sub(r"\s+", "", title(doc))
        assert heading in text, f"PDF 里没有 {doc} 的标题 {heading!r}"
        # 目录里出现一次，正文里再出现一次：找最后一次（正文）
        positions.append(text.rindex(heading))
    assert positions == sorted(positions), "各章在 PDF 里的顺序与 _toc.yml 不同"


def test_pdf_text_is_chinese_and_extractable(pdf_pages):
    chinese = sum(len(CJK.findall(page)) for page in pdf_pages)
    assert chinese > 20_000, chinese
    assert all(CJK.search(page) for page in pdf_pages[1:-1] if len(page) > 400)


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
