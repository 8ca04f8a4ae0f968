"""固定种子而不动全局随机数（导入本包、调用本包的函数都不改变 ``torch`` 的全局随机数状态）。"""

import contextlib
from collections.abc import Iterator

import torch


@contextlib.contextmanager
def seeded(seed: int) -> Iterator[None]:
    """``with seeded(0): ...`` 里的随机数来自 ``torch.manual_seed(0)``，离开后全局状态恢复原样。

    例子::

        >>> state = torch.get_rng_state()
        >>> with seeded(0):
        ...     a = torch.rand(2)
        >>> with seeded(0):
        ...     b = torch.rand(2)
        >>> torch.equal(a, b), torch.equal(torch.get_rng_state(), state)
        (True, True)
    """
    with torch.random.fork_rng(devices=[]):  # 只保存、恢复 CPU 的状态：本书的代码都在 CPU 上运行
        torch.manual_seed(seed)
        yield
