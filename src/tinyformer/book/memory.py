"""让笔记本删掉的张量内存真的还给操作系统（各章在导入单元格里调用一次 :func:`return_freed_memory`）。

Linux 上 glibc 的 malloc 把大于“mmap 阈值”的分配用 mmap 单独向系统要，释放时立刻还回去；更小的从堆上分，
释放后留在进程里等下次再用。这个阈值起初是 128 KB，但每释放一块用 mmap 分到的内存，glibc 就把阈值调高到
那一块的大小（最高 32 MB）。笔记本里先算过一个大矩阵，之后几 MB 到几十 MB 的张量就都从堆上分，``del``
之后常驻内存也不降，单元格里的临时张量还在堆里越堆越高。
mybinder.org 只保证 1 GB 内存，要放得下两章笔记本和 Jupyter 服务器，每章的峰值就得在 500 MB 以内。

代价：每次分配、释放大于阈值的张量都要一次系统调用，新页要由内核清零。``benchmarks/bench_memory.py``
里训练一个小 GPT（每个张量几 MB）慢了约 1.5–2 倍（阈值 4 MB 时约 1.15 倍，但删掉模型后多留约 230 MB）；各章的执行时间是在负载很高的机器上记的，量不出可靠的差别。要在笔记本里训练很多步、内存又够，就不调用它。
只在单元格之间调用 ``malloc_trim`` 没有这个代价，但单靠它各章的峰值几乎不降（单元格之内的临时张量仍在堆里累积）。
两者合用时它另有用处：许多小块内存（比如训练 BPE 时几十万个小数组、字典）释放后在堆中间留下空洞，
阈值管不着它们；在 Jupyter 里 :func:`return_freed_memory` 因此还让每个单元格运行完调用一次
``malloc_trim(0)``，把堆里空出的整页还给系统（在全唐诗的训练集上训练一个 512 个词元的 BPE 之后，单独量是少占约 30 MB）。
"""

from __future__ import annotations

import ctypes
import platform

M_MMAP_THRESHOLD = -3  # glibc <malloc.h> 里 mallopt 的参数号

__all__ = ["return_freed_memory"]


def return_freed_memory(threshold: int = 128 * 1024) -> bool:
    """把 glibc 的 mmap 阈值固定为 ``threshold`` 字节（也就关掉了它的自动调高）；返回是否生效。

    之后大于 ``threshold`` 的张量都单独用 mmap 分配，``del`` 之后立刻还给操作系统。只在用 glibc 的系统
    （一般的 Linux、Binder、Colab）上有事可做；macOS、Windows 和 musl 的 Linux 上什么也不做，返回
    ``False``。可以重复调用。在 IPython（Jupyter 的内核）里还让每个单元格运行完调用一次
    ``malloc_trim(0)``（见模块说明；重复调用也只登记一次）。

    例子::

        >>> return_freed_memory()  # 在 glibc 的 Linux 上  # doctest: +SKIP
        True
    """
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        from IPython import get_ipython  # 不在 IPython 里时返回 None
    except ImportError:  # 没装 IPython：只固定阈值
        shell = None
    else:
        shell = get_ipython()
    if shell is not None and _trim_heap not in shell.events.callbacks["post_run_cell"]:
        shell.events.register("post_run_cell", _trim_heap)
    return ctypes.CDLL("libc.so.6").mallopt(M_MMAP_THRESHOLD, threshold) == 1


def _trim_heap(result=None) -> None:
    """IPython 的 ``post_run_cell`` 事件：单元格运行完，把堆里空出的整页还给系统（glibc 的 ``malloc_trim``）。"""
    ctypes.CDLL("libc.so.6").malloc_trim(0)
