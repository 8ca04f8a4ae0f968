"""从零开始的两条命令（只需要 Python 3.11+ 和 git，不需要 make）。

    python3 tasks.py book      建 .venv、安装 requirements.txt、取前端文件（npm）、严格构建 HTML（-W -n --keep-going）
    python3 tasks.py test      建 .venv、安装 requirements.txt、ruff + 单元测试 + 各章 nbval（本机配置与两种强制的 CPU 配置）
    python3 tasks.py test -k attention   其余参数原样交给 pytest（只跑一遍，本机配置）
    python3 tasks.py execute [chapters/ch05_attention.ipynb ...]   改了代码后重新执行笔记本、保存输出
    python3 tasks.py edition   由 chapters/ 与构建生成笔记本版 edition/、由 requirements.txt 生成 binder/requirements.txt
    python3 tasks.py pdf       全书 PDF（单页 HTML + 无头 chromium），写到 _build/pdf/ 和 _build/html/
    python3 tasks.py dev       另装开发工具：pre-commit、jupyterlab（README 里提到的）
    python3 tasks.py doors     慢测试：Binder 依赖解析、下限版本、模拟 Colab（pytest --slow）

依赖只在 requirements.txt 或 pyproject.toml 变化后才重新安装（.venv/.installed 记着它们的散列）。

PyTorch：Linux 上默认装 CPU 版（约 190 MB 的轮子，装好约 750 MB），取自 PyTorch 的 CPU 索引；
PyPI 上 Linux 的 torch 是 CUDA 版，连同 nvidia-* 依赖约 2.7 GB。要 CUDA 版就设 TORCH=cuda：

    TORCH=cuda python3 tasks.py book

连不上 CPU 索引时（只能访问 PyPI 的机器，例如 CI）不等它超时：先用几秒探一下，探不到就只用
pip 已配置的索引（这样的机器通常在本地备好了 CPU 轮子）。
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import threading
import time
import urllib.request
import venv
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if os.name == "nt" else "bin")
PY = BIN / ("python.exe" if os.name == "nt" else "python")
STAMP = VENV / ".installed"
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def run(*args: str | os.PathLike, label: str = "", env: dict[str, str] | None = None) -> None:
    """运行一步；给了 ``label`` 时打印它的用时（CI 的日志里能看到每一步花了多久）。"""
    start = time.perf_counter()
    print("+", *(f"{k}={v}" for k, v in (env or {}).items()), *map(str, args), flush=True)
    subprocess.run([str(a) for a in args], cwd=ROOT, check=True, env={**os.environ, **(env or {})})
    if label:
        print(f"[用时] {label}：{time.perf_counter() - start:.0f} 秒", flush=True)


def run_two_at_a_time(
    steps: list[tuple[str, list[str | os.PathLike], dict[str, str] | None]],
) -> None:
    """按顺序运行 ``(label, args, env)`` 各步，同时最多两步（CI 的机器有 2 个核；多数测试只用满一个）。

    每步的输出先写进它自己的日志，做完时整段打印（两步的输出不交错），再打印用时；有一步失败时
    其余的照样跑完，最后一起报告。
    """
    logs = ROOT / "_build" / "test-logs"
    logs.mkdir(parents=True, exist_ok=True)
    lock = threading.Lock()

    def one(index: int, label: str, args, env) -> int:
        log = logs / f"{index}.log"
        command = " ".join([*(f"{k}={v}" for k, v in (env or {}).items()), *map(str, args)])
        with lock:
            print(f"[开始] {label}：{command}", flush=True)
        start = time.perf_counter()
        with log.open("w", encoding="utf-8") as out:
            code = subprocess.run(
                [str(a) for a in args],
                cwd=ROOT,
                env={**os.environ, **(env or {})},
                stdout=out,
                stderr=subprocess.STDOUT,
            ).returncode
        with lock:
            print(f"+ {command}\n{log.read_text(encoding='utf-8')}", end="", flush=True)
            print(f"[用时] {label}：{time.perf_counter() - start:.0f} 秒", flush=True)
        return code

    with ThreadPoolExecutor(max_workers=2) as pool:
        codes = list(pool.map(lambda step: one(*step), ((i, *s) for i, s in enumerate(steps))))
    failed = [label for (label, *_), code in zip(steps, codes, strict=True) if code]
    if failed:
        print(f"失败：{'、'.join(failed)}", flush=True)
        sys.exit(1)


def torch_index_options() -> list[str]:
    """pip 的额外索引：Linux 上默认加 PyTorch 的 CPU 索引（TORCH=cuda 时不加，用 PyPI 的 CUDA 版）。

    requirements.txt 写的是 torch==X；CPU 索引里的 X+cpu 满足它，且版本排序在 X 之后，pip 选它。
    """
    variant = os.environ.get("TORCH", "cpu")
    if variant not in ("cpu", "cuda"):
        sys.exit(f"TORCH must be 'cpu' or 'cuda', got TORCH={variant!r}")
    # macOS、Windows 上 PyPI 的 torch 本来就是 CPU 版
    if variant == "cuda" or sys.platform != "linux":
        return []
    try:
        urllib.request.urlopen(f"{TORCH_CPU_INDEX}/torch/", timeout=5).close()
    except OSError:
        print(f"+ # 连不上 {TORCH_CPU_INDEX}，只用 pip 已配置的索引", flush=True)
        return []
    return ["--extra-index-url", TORCH_CPU_INDEX]


def setup() -> None:
    """建虚拟环境并安装固定版本的依赖（本包以可编辑模式安装）。"""
    digest = hashlib.sha256(
        b"".join((ROOT / f).read_bytes() for f in ("requirements.txt", "pyproject.toml"))
        + os.environ.get("TORCH", "cpu").encode()
    ).hexdigest()
    if STAMP.exists() and STAMP.read_text() == digest:
        return
    if not PY.exists():
        print(f"+ python -m venv {VENV.name}", flush=True)
        venv.EnvBuilder(with_pip=True).create(VENV)
    run(PY, "-m", "pip", "install", "--upgrade", "pip")
    run(PY, "-m", "pip", "install", *torch_index_options(), "-r", "requirements.txt")
    STAMP.write_text(digest)


def book() -> None:
    # 固定版本的网页脚本（控件管理器、vega），放进 _vendor/
    run(PY, "-m", "tools.web_assets", label="网页脚本")
    strict = ("-W", "-n", "--keep-going")  # 警告即错误
    run(BIN / "jupyter-book", "build", ".", "--builder", "html", *strict, label="构建")
    # 笔记本版 edition/：章节号与锚点取自刚才的构建（tools/edition.py）
    edition()
    # 全书 PDF：网页的下载菜单链接 _build/html/tinyformer.pdf。没有 chromium 时跳过（链接暂时无效）
    start = time.perf_counter()
    if subprocess.run([PY, "-m", "tools.book_pdf"], cwd=ROOT).returncode not in (0, 2):
        sys.exit("全书 PDF 没有生成")
    print(f"[用时] 全书 PDF：{time.perf_counter() - start:.0f} 秒", flush=True)
    print(f"\n书已构建：{ROOT / '_build' / 'html' / 'index.html'}")


def edition() -> None:
    run(PY, "-m", "tools.edition", label="笔记本版")
    run(PY, "-m", "tools.binder_requirements")


def pdf() -> None:
    run(PY, "-m", "tools.book_pdf")


# 存下的输出必须是数学的事实，而不是某一种 CPU 的事实：除了本机的原生配置，再在几种强制的 CPU 配置下
# 重新执行各章并逐字核对（配置与说明见 tools/cpu_configs.json；附录“执行统计”列出它们）。
FORCED_CPUS = {
    name: env
    for name, env in json.loads((ROOT / "tools" / "cpu_configs.json").read_text("utf-8")).items()
    if not name.startswith("_")
}
NBVAL = ("--nbval", "--nbval-current-env", "--nbval-sanitize-with", "tests/nbval_sanitize.cfg")


def test(*pytest_args: str) -> None:
    # 给了参数（例如 -k attention）时只运行一次带这些参数的 pytest（含 nbval），方便改代码时挑着测
    if pytest_args:
        run(PY, "-m", "pytest", *NBVAL, *pytest_args, label="pytest")
        return
    start = time.perf_counter()
    run(PY, "-m", "ruff", "check", ".", label="ruff")
    run(PY, "-m", "ruff", "format", "--check", ".", label="ruff format")
    # 单元测试与网站测试一步，各章的 nbval 每种 CPU 配置一步；两步两步地同时跑
    steps = [("pytest（单元测试、网站与工具）", [PY, "-m", "pytest", "tests", "src"], None)]
    for name, env in {"原生 CPU 配置": None, **FORCED_CPUS}.items():
        steps.append((f"nbval（{name}）", [PY, "-m", "pytest", *NBVAL, "chapters"], env))
    run_two_at_a_time(steps)
    print(f"[用时] 全部测试：{time.perf_counter() - start:.0f} 秒", flush=True)


def execute(*notebooks: str) -> None:
    run(PY, "-m", "tools.execute_notebooks", *notebooks)


def dev() -> None:
    run(PY, "-m", "pip", "install", "-e", ".[dev]")
    run(BIN / "pre-commit", "install")


# 有慢测试的文件，最长的在前（tests/book/test_book_config.py 核对这里一个不少）
DOORS = ("tests/book/test_colab.py", "tests/book/test_floors.py", "tests/book/test_binder.py")


def doors(*pytest_args: str) -> None:
    """慢测试（标了 slow）：搭一次性环境、联网解析依赖。CI 在 README 的两条命令之后运行它。"""
    slow = [PY, "-m", "pytest", "--slow", "-m", "slow"]
    if pytest_args:
        run(*slow, "tests/", *pytest_args, label="慢测试")
        return
    run_two_at_a_time([(f"慢测试（{Path(f).stem}）", [*slow, f], None) for f in DOORS])


COMMANDS = {f.__name__: f for f in (book, test, execute, edition, pdf, dev, doors)}

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
