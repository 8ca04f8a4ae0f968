"""让笔记本删掉的张量内存真的还给操作系统（各章在导入单元格里调用一次 :func:`return_freed_memory`）。

Linux 上 glibc 的 malloc 把大于“mmap 阈值”的分配用 mmap 单独向系统要，释放时立刻还回去；更小的从堆上分，
释放后留在进程里等下次再用。这个阈值起初是 128 KB，但每释放一块用 mmap 分到的内存，glibc 就把阈值调高到
那一块的大小（最高 32 MB）。笔记本里先算过一个大矩阵，之后几 MB 到几十 MB 的张量就都从堆上分，``del``
之后常驻内存也不降：内核的峰值变成各个单元格留下的内存之 **和**，而不是其中最大的一个。
mybinder.org 只保证 1 GB 内存，要放得下两章笔记本和 Jupyter 服务器，每章的峰值就得在 500 MB 以内。

办法是每个单元格运行完调用一次 glibc 的 ``malloc_trim(0)``：它把堆里整页空闲的内存交还系统。
只在单元格之间做，训练循环里的分配照旧从堆上复用，不变慢。（另一个办法是用 ``mallopt`` 把阈值固定在
128 KB，让每个大于它的张量都单独 mmap：常驻内存同样降下来，但每次分配都要系统调用和清零新页，
``benchmarks/bench_memory.py`` 里训练一个小 GPT 慢了约 1.7 倍。）
"""

from __future__ import annotations

import ctypes
import platform

__all__ = ["return_freed_memory"]


def _trim(*_) -> None:
    """把堆里空闲的整页还给操作系统（IPython 的 ``post_run_cell`` 事件会传入一个参数，忽略它）。"""
    ctypes.CDLL("libc.so.6").malloc_trim(0)


def return_freed_memory() -> bool:
    """在 IPython 内核里登记：每个单元格运行完，把空闲的堆内存还给操作系统；返回是否生效。

    不在 IPython 里（脚本、测试）时只当场还一次。只在用 glibc 的系统（一般的 Linux、Binder、Colab）上
    有事可做；macOS、Windows 和 musl 的 Linux 上什么也不做，返回 ``False``。可以重复调用，不会重复登记。

    例子::

        >>> return_freed_memory()  # 在 glibc 的 Linux 上  # doctest: +SKIP
        True
    """
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        from IPython import get_ipython
    except ImportError:  # 没装 IPython 的环境
        shell = None
    else:
        shell = get_ipython()
    if shell is not None and _trim not in shell.events.callbacks["post_run_cell"]:
        shell.events.register("post_run_cell", _trim)
    _trim()
    return True
