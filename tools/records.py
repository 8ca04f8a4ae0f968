"""维护脚本写下的记录：结果出自哪个提交、哪个 torch、哪天、哪台机器，原子地写成文件。"""

from __future__ import annotations

import base64
import datetime
import hashlib
import json
import platform
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

from tinyformer.atomic import atomic_write

ROOT = Path(__file__).resolve().parents[1]


def cpu_model() -> str:
    """CPU 型号（Linux 读 /proc/cpuinfo，其他系统用 platform 给的名字）。"""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def git_commit(*options: str) -> str:
    """当前的提交（``git_commit("--short")`` 取短的）；不在 git 仓库里时是 ``unknown``。"""
    done = subprocess.run(
        ["git", "rev-parse", *options, "HEAD"], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    return done.stdout.strip() or "unknown"


def today() -> str:
    return datetime.datetime.now(datetime.UTC).date().isoformat()


def machine() -> dict[str, str]:
    """``{"torch": 版本, "date": 今天（UTC）, "cpu": 型号}``：结果是在哪里、用什么跑出来的。"""
    return {"torch": version("torch"), "date": today(), "cpu": cpu_model()}


def last_json(command: list[str]) -> dict:
    """运行 ``python -m …`` 的 ``command``（用本解释器），返回它 stdout 的最后一行 JSON。"""
    print("+", " ".join(command), flush=True)
    done = subprocess.run(
        [sys.executable, *command[1:]], cwd=ROOT, check=True, stdout=subprocess.PIPE, text=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def write_text(path: Path, text: str) -> None:
    """写文件：中途被打断（Ctrl-C、磁盘满）时原来的文件原封不动。"""
    with atomic_write(path) as file:
        file.write(text.encode("utf-8"))


def write_json(path: Path, record: dict, sort_keys: bool = True) -> str:
    """把 ``record`` 写成缩进 1 格、不转义中文的 JSON（原子地），返回写下的文字。"""
    text = json.dumps(record, indent=1, ensure_ascii=False, sort_keys=sort_keys) + "\n"
    write_text(path, text)
    return text


def fetch_pinned(folder: Path, command: list[str], filename: str, integrity: str) -> Path:
    """在 ``folder`` 里运行 ``command``（``npm pack 包@版本`` 或 ``pip download``），返回它取来的
    ``filename``，先核对它的 ``integrity``（npm 的写法 ``sha512-<base64>``，``sha256-…`` 亦可）。"""
    subprocess.run(command, cwd=folder, check=True, capture_output=True)
    path = folder / filename
    algorithm = integrity.split("-", 1)[0]
    digest = hashlib.new(algorithm, path.read_bytes()).digest()
    found = f"{algorithm}-{base64.b64encode(digest).decode()}"
    if found != integrity:
        raise SystemExit(f"{filename}: {found} != pinned {integrity}")
    return path
