"""Binder 这扇门：repo2docker 读 binder/，用 runtime.txt 选 Python，按 binder/requirements.txt 安装。

没有 runtime.txt 时 repo2docker 用 Python 3.10，而 numpy 2.4 与 matplotlib 3.11 的轮子要 ≥ 3.11，
镜像就建不起来。这里在本机做一次“为那个 Python 解析依赖”的演习（pip 的 --dry-run，只下载元数据）：

- torch 以外的固定版本都能从包索引为 runtime.txt 的 Python 解析出来；
- torch 的 CPU 版来自 PyTorch 的 CPU 索引，CI 连不到它，所以只核对版本与 requirements.txt 一致
  （tests/book/test_book_config.py 的 test_binder_pins_the_same_torch_as_requirements）。

要联网解析（约半分钟），标为 slow：python3 tasks.py doors 运行它。
"""

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.kit import ROOT

BINDER = ROOT / "binder"
# 只发布了源码包（没有轮子）的依赖：为别的 Python 解析时 pip 不许构建源码包，只能单独 --no-deps 解析
SDIST_ONLY = {"jieba"}


def binder_python() -> str:
    """binder/runtime.txt 里的 Python 版本，例如 ``python-3.11`` -> ``"3.11"``。"""
    text = (BINDER / "runtime.txt").read_text(encoding="utf-8").strip()
    match = re.fullmatch(r"python-(3\.\d+)", text)
    assert match, f"binder/runtime.txt must read python-3.X, got {text!r}"
    return match.group(1)


def binder_pins() -> dict[str, str]:
    """binder/requirements.txt 里的 ``名字==版本``（注释、pip 选项不算）。"""
    pins = {}
    for line in (BINDER / "requirements.txt").read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            name, version = line.split("==")
            pins[name.lower()] = version
    return pins


def test_runtime_python_is_within_the_package_floor():
    floor = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    low = re.fullmatch(r">=(3\.\d+)", floor["requires-python"]).group(1)
    assert tuple(map(int, binder_python().split("."))) >= tuple(map(int, low.split(".")))


def dry_run(python: str, requirements: list[str], tmp_path: Path, *options: str) -> dict:
    """为 Python ``python`` 解析 ``requirements``，不安装；返回 pip 的安装报告。"""
    report = tmp_path / f"report-{len(list(tmp_path.iterdir()))}.json"
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--dry-run",
        "--quiet",
        "--ignore-installed",
        "--target",
        str(tmp_path / "target"),
        "--python-version",
        python,
        "--report",
        str(report),
        *options,
        *requirements,
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    return json.loads(report.read_text(encoding="utf-8"))


@pytest.mark.slow
def test_binder_requirements_resolve_for_the_runtime_python(tmp_path):
    python = binder_python()
    pins = {name: v for name, v in binder_pins().items() if not name.startswith("torch")}
    assert {"numpy", "matplotlib", "jieba"} <= set(pins)
    wheels = [f"{n}=={v}" for n, v in pins.items() if n not in SDIST_ONLY]
    sdists = [f"{n}=={v}" for n, v in pins.items() if n in SDIST_ONLY]
    resolved = {}
    for report in (
        dry_run(python, wheels, tmp_path, "--only-binary=:all:"),
        dry_run(python, sdists, tmp_path, "--no-deps"),
    ):
        for item in report["install"]:
            resolved[item["metadata"]["name"].lower()] = item["metadata"]["version"]
    for name, version in pins.items():
        assert resolved.get(name) == version, (name, version, resolved.get(name))
