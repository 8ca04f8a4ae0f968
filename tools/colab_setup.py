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


# 笔记本里导入了这些模块时，Colab 安装单元格连同 pyproject.toml 里的同名附加依赖一起装
# （Colab 没有预装 onnx、onnxruntime；tokenizers 它有，但版本不定；包本身不依赖它们）
EXTRAS = {
    "onnx": ("import onnx", "import onnxruntime"),
    "bpe": ("import tokenizers", "reference_bpe"),
}


def extras_needed(nb) -> tuple[str, ...]:
    """笔记本的代码单元格用到哪些附加依赖（见 ``EXTRAS``）。"""
    code = "\n".join(c.source for c in nb.cells if c.cell_type == "code")
    return tuple(extra for extra, imports in EXTRAS.items() if any(i in code for i in imports))


def setup_source(extras: tuple[str, ...] = ()) -> str:
    url, branch = repository()
    name = f"tinyformer[{','.join(extras)}]" if extras else "tinyformer"
    return (
        "# 只在 Colab 中运行：从 GitHub 安装本书的 tinyformer 包（torch 用 Colab 自带的）。\n"
        "# 在本地、Binder 和 CI 里这个单元格什么也不做。\n"
        "import sys\n"
        "\n"
        'if "google.colab" in sys.modules:\n'
        "    import subprocess\n"
        "\n"
        f'    repository = "git+{url}@{branch}"\n'
        f'    package = f"{name} @ {{repository}}"\n'
        "    subprocess.run(\n"
        '        [sys.executable, "-m", "pip", "install", "-q", package], check=True\n'
        "    )"
    )


def sync_setup_cell(nb) -> None:
    """让笔记本的第一个单元格成为最新的安装单元格（没有就插入一个）。"""
    if not (nb.cells and "colab-setup" in nb.cells[0].get("metadata", {}).get("tags", [])):
        nb.cells.insert(0, nbformat.v4.new_code_cell())
    nb.cells[0].source = setup_source(extras_needed(nb))
    nb.cells[0].metadata["tags"] = list(TAGS)
