"""单元测试用一个线程：测试里的张量都很小，多线程只带来调度开销，机器忙时尤其明显。

另有构建好的网站的 fixture（网站测试与浏览器测试共用）。
"""

import importlib.util
import os
from pathlib import Path

import pytest
import torch

torch.set_num_threads(1)

SITE = Path(__file__).resolve().parents[1] / "_build" / "html"


def load_tool(name: str):
    """导入 tools/ 里的一个脚本（它们不是包）。"""
    path = Path(__file__).resolve().parents[1] / "tools" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def skip_or_fail(reason: str) -> None:
    """缺少前提时本地跳过；CI（CI=true）里必须真的测到，所以改为失败。"""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason}（CI=true：不允许跳过）")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def site() -> Path:
    """构建好的网站 _build/html；没有就跳过（CI 里失败）。"""
    if not (SITE / "index.html").exists():
        skip_or_fail(f"{SITE} 不存在：先运行 python3 tasks.py book")
    return SITE


def pytest_addoption(parser):
    parser.addoption(
        "--slow",
        action="store_true",
        help="也运行标了 slow 的测试（一次性环境、联网解析依赖；python3 tasks.py doors 会加上它）",
    )


def pytest_collection_modifyitems(config, items):
    """slow 测试默认跳过，只在给了 --slow 时运行（CI 用 python3 tasks.py doors 运行它们）。"""
    if config.getoption("--slow"):
        return
    skip = pytest.mark.skip(reason="slow：加 --slow 运行（python3 tasks.py doors）")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
