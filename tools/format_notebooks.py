"""把各章笔记本的代码排进网页的代码框：ruff 整理导入、排版。

    python -m tools.format_notebooks                      # chapters/ 里的全部笔记本
    python -m tools.format_notebooks chapters/ch05_*.ipynb

行宽是 ``chapters/ruff.toml`` 的 ``line-length``（代码框放得下的列数，汉字按两列计，见那里的说明）。
``ruff check --select I --fix`` 与 ``ruff format`` 都从标准输入读整个笔记本（用笔记本自己那一层的 ruff
配置），这里只取回代码单元格的源码，再按 ``tools/execute_notebooks.py`` 的写法（``nbformat.writes``）写回，
输出、元数据一字不动。

为什么不直接 ``ruff format chapters/``：ruff 写回笔记本时重新序列化全部 JSON，输出里的浮点数
（Vega-Lite 图的数据）会差最后一位。这里只改源码，所以保存的输出逐字节不变。

格式化器折不了的（超宽的注释和字符串）由 ``ruff check`` 的 E501 报出来，手改：长注释写在上一行、
折成几行，长字符串切成相邻的几段。``tests/book/test_notebook_width.py`` 用这里的 :func:`display_width`
核对代码与保存的输出。
"""

from __future__ import annotations

import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
RUFF_CONFIG = ROOT / "chapters" / "ruff.toml"
RUFF = Path(sys.executable).parent / "ruff"


def line_length() -> int:
    match = re.search(r"^line-length\s*=\s*(\d+)", RUFF_CONFIG.read_text("utf-8"), re.M)
    return int(match.group(1))


def display_width(text: str) -> int:
    """等宽字体里一行占几列：东亚宽字符（汉字、全角标点）算两列，组合附加符号算零列，其余一列。

    与 ruff 量行宽的办法（Unicode 显示宽度）一致，例如 ``display_width("注意力 x") == 8``。
    """
    width = 0
    for char in text:
        if unicodedata.combining(char):
            continue
        width += 2 if unicodedata.east_asian_width(char) in "WF" else 1
    return width


def ruff(notebook_text: str, path: Path, *args: str) -> str:
    """把整个笔记本从标准输入交给 ruff，返回它改好的笔记本 JSON。"""
    result = subprocess.run(
        [str(RUFF), *args, "--stdin-filename", str(path), "-"],
        input=notebook_text,
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=ROOT,
    )
    if not result.stdout.strip():
        raise RuntimeError(f"ruff {' '.join(args)} 处理 {path} 失败：{result.stderr}")
    return result.stdout


def format_sources(nb, path: Path) -> None:
    """就地改 ``nb`` 里代码单元格的源码：整理导入，再排版。"""
    text = nbformat.writes(nb)
    text = ruff(text, path, "check", "--select", "I", "--fix", "--exit-zero", "--quiet")
    text = ruff(text, path, "format")
    formatted = nbformat.reads(text, as_version=nbformat.NO_CONVERT)
    for cell, new in zip(nb.cells, formatted.cells, strict=True):
        if cell.cell_type == "code":
            cell.source = new.source


def format_notebook(path: Path) -> bool:
    """排好一个笔记本；改了就写回并返回 True。"""
    path = Path(path).resolve()
    old = path.read_text(encoding="utf-8")
    nb = nbformat.reads(old, as_version=nbformat.NO_CONVERT)
    format_sources(nb, path.relative_to(ROOT))
    new = nbformat.writes(nb) + "\n"
    if new != old:
        path.write_text(new, encoding="utf-8")
    return new != old


def main(paths: list[str]) -> None:
    notebooks = [Path(p) for p in paths] or sorted((ROOT / "chapters").glob("*.ipynb"))
    for path in notebooks:
        if format_notebook(path):
            print(f"已排版 {path}")


if __name__ == "__main__":
    main(sys.argv[1:])
