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
折成几行，长字符串切成相邻的几段。写回是原子的（``tools/records.py``）：中途打断时笔记本原封不动。
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat

from tools.records import write_text

ROOT = Path(__file__).resolve().parents[1]
RUFF = Path(sys.executable).parent / "ruff"


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
        write_text(path, new)
    return new != old


def main(paths: list[str]) -> None:
    notebooks = [Path(p) for p in paths] or sorted((ROOT / "chapters").glob("*.ipynb"))
    for path in notebooks:
        if format_notebook(path):
            print(f"已排版 {path}")


if __name__ == "__main__":
    main(sys.argv[1:])
