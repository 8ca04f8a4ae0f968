"""全部测试的 fixture 与选项。

单元测试用一个线程：测试里的张量都很小，多线程只带来调度开销，机器忙时尤其明显。

- ``tests/unit``：包的单元测试，自动带 ``unit`` 标记（``-m unit`` 只跑它们）；
- ``tests/book``：书、网站与工具的测试，自动带 ``book`` 标记；其中要构建好的网站的用 ``site`` fixture；
- 极小的模型与数据是 ``tests/kit.py`` 里的工厂（``tiny_transformer``、``tiny_gpt``、``padded_ids``、
  ``tiny_translator``，参数覆盖默认尺寸），测试直接 ``from tests.kit import ...`` 调用它们：每次新建、
  种子固定，不需要 fixture 的作用域。
"""

from pathlib import Path

import pytest
import torch

from tests import kit

torch.set_num_threads(1)


@pytest.fixture(scope="session")
def site() -> Path:
    """构建好的网站 _build/html；没有就跳过（CI 里失败）。"""
    if not (kit.SITE / "index.html").exists():
        kit.skip_or_fail(f"{kit.SITE} 不存在：先运行 python3 tasks.py book")
    return kit.SITE


def pytest_addoption(parser):
    parser.addoption(
        "--slow",
        action="store_true",
        help="也运行标了 slow 的测试（一次性环境、联网解析依赖；python3 tasks.py doors 会加上它）",
    )


TESTS = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config, items):
    """按文件夹加 unit/book 标记；slow 测试默认跳过，只在给了 --slow 时运行。"""
    for item in items:
        path = Path(str(item.fspath)).resolve()
        for folder in ("unit", "book"):
            if (TESTS / folder) in path.parents:
                item.add_marker(getattr(pytest.mark, folder))
    if config.getoption("--slow"):
        return
    skip = pytest.mark.skip(reason="slow：加 --slow 运行（python3 tasks.py doors）")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip)
