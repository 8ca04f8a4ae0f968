"""让笔记本释放的张量内存真的还给操作系统（各章在导入单元格里调用一次 :func:`return_freed_memory`）。

Linux 上 glibc 的 malloc 把大于“mmap 阈值”的分配用 mmap 单独向系统要，释放时立刻还回去；更小的从堆上分，
释放后多半留在进程里等下次再用。这个阈值起初是 128 KB，但每释放一块用 mmap 分到的内存，glibc 就把阈值
调高到那一块的大小（最高 32 MB）。笔记本里先算一个大矩阵、再算一串几 MB 的张量时，后者于是都从堆上分，
``del`` 之后常驻内存也不降：内核的峰值变成各个单元格临时张量之 **和**，而不是其中最大的一个。
mybinder.org 只保证 1 GB 内存，要放得下两章笔记本和 Jupyter 服务器，每章的峰值就得在 500 MB 以内。
"""

from __future__ import annotations

import ctypes
import platform

M_MMAP_THRESHOLD = -3  # glibc <malloc.h> 里 mallopt 的参数号

__all__ = ["return_freed_memory"]


def return_freed_memory(threshold: int = 128 * 1024) -> bool:
    """把 glibc 的 mmap 阈值固定为 ``threshold`` 字节（也就关掉了它的自动调高）；返回是否生效。

    之后大于 ``threshold`` 的张量都单独用 mmap 分配，``del`` 之后立刻还给操作系统。代价是每次分配、释放
    大张量都要一次系统调用。只在用 glibc 的系统（一般的 Linux、Binder、Colab）上有事可做；
    macOS、Windows 和 musl 的 Linux 上什么也不做，返回 ``False``。可以重复调用。

    例子::

        >>> return_freed_memory()  # 在 glibc 的 Linux 上  # doctest: +SKIP
        True
    """
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    return ctypes.CDLL("libc.so.6").mallopt(M_MMAP_THRESHOLD, threshold) == 1
