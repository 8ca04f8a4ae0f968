"""各章第一个单元格：只在 Colab 里安装本书的包。仓库地址与分支取自 ``_config.yml``（唯一的出处）。

``tools/execute_notebooks.py`` 执行前调用 :func:`sync_setup_cell`，所以改了 ``_config.yml``
之后重新执行一遍笔记本即可；``tests/book/test_book_config.py`` 检查各章与配置一致。
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[1]
TAGS = ["remove-cell", "colab-setup"]  # remove-cell：网页里不显示；nbval 照常执行


def repository() -> tuple[str, str]:
    """返回 ``_config.yml`` 里的 (仓库地址, 分支)。"""
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    return config["repository"]["url"].rstrip("/"), config["repository"]["branch"]


def setup_source() -> str:
    url, branch = repository()
    return (
        "# 只在 Colab 中运行：从 GitHub 安装本书的 tinyformer 包（torch 用 Colab 自带的）。\n"
        "# 在本地、Binder 和 CI 里这个单元格什么也不做。\n"
        "import sys\n"
        "\n"
        'if "google.colab" in sys.modules:\n'
        "    import subprocess\n"
        "\n"
        f'    package = "tinyformer @ git+{url}@{branch}"\n'
        '    subprocess.run([sys.executable, "-m", "pip", "install", "-q", package], check=True)'
    )


def sync_setup_cell(nb) -> None:
    """让笔记本的第一个单元格成为最新的安装单元格（没有就插入一个）。"""
    cells = nb.cells
    if cells and "colab-setup" in cells[0].get("metadata", {}).get("tags", []):
        cells[0].source = setup_source()
        cells[0].metadata["tags"] = list(TAGS)
    else:
        cells.insert(0, nbformat.v4.new_code_cell(setup_source(), metadata={"tags": list(TAGS)}))
