"""从零开始的两条命令（只需要 Python 3.10+ 和 git，不需要 make）。

    python3 tasks.py book      建 .venv、安装 requirements.txt、取前端文件（npm）、严格构建 HTML（-W -n --keep-going）
    python3 tasks.py test      建 .venv、安装 requirements.txt、ruff + 单元测试 + 各章 nbval
    python3 tasks.py execute [chapters/xx.ipynb ...]   改了代码后重新执行笔记本、保存输出

依赖只在 requirements.txt 或 pyproject.toml 变化后才重新安装（.venv/.installed 记着它们的散列）。
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / ("python.exe" if os.name == "nt" else "python")
STAMP = VENV / ".installed"


def run(*args: str | os.PathLike) -> None:
    print("+", " ".join(map(str, args)), flush=True)
    subprocess.run([str(a) for a in args], cwd=ROOT, check=True)


def setup() -> None:
    """建虚拟环境并安装固定版本的依赖（本包以可编辑模式安装）。"""
    digest = hashlib.sha256(
        b"".join((ROOT / f).read_bytes() for f in ("requirements.txt", "pyproject.toml"))
    ).hexdigest()
    if STAMP.exists() and STAMP.read_text() == digest:
        return
    if not PY.exists():
        print(f"+ python -m venv {VENV.name}", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    run(PY, "-m", "pip", "install", "--upgrade", "pip")
    run(PY, "-m", "pip", "install", "-r", "requirements.txt")
    STAMP.write_text(digest)


def book() -> None:
    run(PY, "tools/web_assets.py")  # 固定版本的 require.js 与控件管理器，放进 _vendor/
    run(BIN / "jupyter-book", "build", ".", "--builder", "html", "-W", "-n", "--keep-going")
    print(f"\n书已构建：{ROOT / '_build' / 'html' / 'index.html'}")


def test() -> None:
    run(PY, "-m", "ruff", "check", ".")
    run(PY, "-m", "ruff", "format", "--check", ".")
    run(PY, "-m", "pytest")


def execute(*notebooks: str) -> None:
    run(PY, "tools/execute_notebooks.py", *notebooks)


COMMANDS = {"book": book, "test": test, "execute": execute}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS:
        sys.exit(f"usage: python3 tasks.py {{{'|'.join(COMMANDS)}}} [args]")
    setup()
    try:
        COMMANDS[sys.argv[1]](*sys.argv[2:])
    except subprocess.CalledProcessError as err:
        sys.exit(err.returncode)
