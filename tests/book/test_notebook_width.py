"""代码与保存的输出放得进网页的代码框（issue 18）：每一行的显示宽度不超过 chapters/ruff.toml 的行宽。

行宽由无头 Chromium 在 1366 px 的窗口里量得（见 chapters/ruff.toml 的说明），汉字按两列计
（下面的 display_width，与 ruff 量行宽的办法一致）。代码由
tools/format_notebooks.py 排好，ruff check 的 E501（chapters/ruff.toml）守着，tests/book/test_browser.py 在网页上
核对代码框；这里量 ruff 管不到的保存的输出（文字输出：print 的内容与表达式的纯文本显示；有 HTML、Markdown、
图片的输出网页上不显示纯文本）。
"""

import json
import re
import unicodedata
from pathlib import Path

import pytest

from tools import format_notebooks as FORMAT

ROOT = Path(__file__).resolve().parents[2]
RUFF_CONFIG = (ROOT / "chapters" / "ruff.toml").read_text(encoding="utf-8")
WIDTH = int(re.search(r"^line-length\s*=\s*(\d+)", RUFF_CONFIG, re.M).group(1))
NOTEBOOKS = sorted((ROOT / "chapters").glob("*.ipynb"))
RICH = {"text/html", "text/markdown", "text/latex", "image/png", "image/svg+xml"}


def code_cells(path):
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [(n, cell) for n, cell in enumerate(cells, 1) if cell["cell_type"] == "code"]


def text_outputs(cell):
    """这个单元格在网页上以等宽文字显示的输出。"""
    for output in cell.get("outputs", []):
        if output["output_type"] == "stream":
            yield "".join(output["text"])
        elif output["output_type"] == "error":
            yield "\n".join(output["traceback"])
        elif "data" in output and not RICH & set(output["data"]):
            plain = output["data"].get("text/plain", "")
            if not any(k.startswith("application/vnd.") for k in output["data"]):
                yield "".join(plain)


def display_width(text: str) -> int:
    """等宽字体里一行占几列：东亚宽字符（汉字、全角标点）算两列，组合附加符号算零列，其余一列。"""
    width = 0
    for char in text:
        if unicodedata.combining(char):
            continue
        width += 2 if unicodedata.east_asian_width(char) in "WF" else 1
    return width


def too_wide(text):
    return [line for line in text.split("\n") if display_width(line) > WIDTH]


def test_display_width_counts_chinese_as_two_columns():
    assert display_width("abc") == 3
    assert display_width("注意力") == 6
    assert display_width("（B，T）") == 8  # 全角标点也是两列
    assert display_width("é") == 1  # e + 组合附加符号
    assert 60 <= WIDTH <= 100


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_outputs_fit_the_column(path):
    wide = [
        (n, line)
        for n, cell in code_cells(path)
        for text in text_outputs(cell)
        for line in too_wide(text)
    ]
    assert wide == [], f"输出超过 {WIDTH} 列：改打印它的单元格（换行、短一些的标签）后重新执行"


def test_formatting_is_a_no_op_on_the_stored_notebooks():
    """仓库里的笔记本已经排好：再排一遍什么也不改（格式化器与 lint 一致）。"""
    import nbformat

    for path in NOTEBOOKS:
        nb = nbformat.reads(path.read_text(encoding="utf-8"), as_version=nbformat.NO_CONVERT)
        before = [cell.source for cell in nb.cells]
        FORMAT.format_sources(nb, path.relative_to(ROOT))
        assert [cell.source for cell in nb.cells] == before, path.name
