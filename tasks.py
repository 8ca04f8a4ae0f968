"""从零开始的两条命令（只需要 Python 3.10+ 和 git，不需要 make）。

    python3 tasks.py book      建 .venv、安装 requirements.txt、取前端文件（npm）、严格构建 HTML（-W -n --keep-going）
    python3 tasks.py test      建 .venv、安装 requirements.txt、ruff + 单元测试 + 各章 nbval（本机配置与两种强制的 CPU 配置）
    python3 tasks.py test -k attention   其余参数原样交给 pytest（只跑一遍，本机配置）
    python3 tasks.py execute [chapters/xx.ipynb ...]   改了代码后重新执行笔记本、保存输出

依赖只在 requirements.txt 或 pyproject.toml 变化后才重新安装（.venv/.installed 记着它们的散列）。
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
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
    # 固定版本的 require.js 与控件管理器，放进 _vendor/
    timed("网页脚本", PY, "tools/web_assets.py")
    strict = ("-W", "-n", "--keep-going")  # 警告即错误
    timed("构建", BIN / "jupyter-book", "build", ".", "--builder", "html", *strict)
    print(f"\n书已构建：{ROOT / '_build' / 'html' / 'index.html'}")


# 存下的输出必须是数学的事实，而不是某一种 CPU 的事实：除了本机的原生配置，再在几种强制的 CPU 配置下
# 重新执行各章并逐字核对（配置与说明见 tools/cpu_configs.json；附录“执行统计”列出它们）。
FORCED_CPUS = {
    name: env
    for name, env in json.loads((ROOT / "tools" / "cpu_configs.json").read_text("utf-8")).items()
    if not name.startswith("_")
}
NBVAL = ("--nbval", "--nbval-current-env")


def timed(label: str, *args: str | os.PathLike, env: dict[str, str] | None = None) -> None:
    """运行一步并打印它的用时（CI 的日志里能看到每一步花了多久）。"""
    start = time.perf_counter()
    print("+", " ".join(f"{k}={v}" for k, v in (env or {}).items()), *map(str, args), flush=True)
    subprocess.run([str(a) for a in args], cwd=ROOT, check=True, env={**os.environ, **(env or {})})
    print(f"[用时] {label}：{time.perf_counter() - start:.0f} 秒", flush=True)


def test(*pytest_args: str) -> None:
    """ruff、单元测试、文档测试、网站与浏览器测试、各章 nbval；再在两种强制的 CPU 配置下各跑一遍 nbval。

    给了参数（例如 ``-k attention``）时只运行一次带这些参数的 pytest（含 nbval），方便改代码时挑着测。
    """
    if pytest_args:
        timed("pytest", PY, "-m", "pytest", *NBVAL, *pytest_args)
        return
    start = time.perf_counter()
    timed("ruff", PY, "-m", "ruff", "check", ".")
    timed("ruff format", PY, "-m", "ruff", "format", "--check", ".")
    timed("pytest（原生 CPU 配置）", PY, "-m", "pytest", *NBVAL)
    for name, env in FORCED_CPUS.items():
        timed(f"nbval（{name}）", PY, "-m", "pytest", *NBVAL, "chapters", env=env)
    print(f"[用时] 全部测试：{time.perf_counter() - start:.0f} 秒", flush=True)


def execute(*notebooks: str) -> None:
    run(PY, "tools/execute_notebooks.py", *notebooks)


COMMANDS = {"book": book, "test": test, "execute": execute}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS:
        sys.exit(f"usage: python3 tasks.py {{{'|'.join(COMMANDS)}}} [args]")
    started = time.perf_counter()
    setup()
    print(f"[用时] 环境（.venv）：{time.perf_counter() - started:.0f} 秒", flush=True)
    try:
        COMMANDS[sys.argv[1]](*sys.argv[2:])
    except subprocess.CalledProcessError as err:
        sys.exit(err.returncode)
