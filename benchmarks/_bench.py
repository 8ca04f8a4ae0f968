"""基准脚本共用的几件事：命令行参数、交替运行、计时、逐轮比值。

各脚本的情形在每一轮里交替运行（先预热），比值取 **逐轮比值**（同一轮里两个情形之比）的中位数：
机器在一次运行里的快慢起伏落在同一轮的两边，在比值里抵消。
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch


def options(doc: str, repeats: int, warmup: int, threads=None, **sizes: int) -> argparse.Namespace:
    """``--repeats/--warmup/--threads/--tiny`` 与脚本自己的整数尺寸（``sizes``：``vocab_size=600`` →
    ``--vocab-size``）；``--tiny`` 把轮数降到 2 轮（预热 1 轮）。"""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=repeats)
    parser.add_argument("--warmup", type=int, default=warmup)
    parser.add_argument("--threads", type=int, default=threads, help="torch.set_num_threads")
    parser.add_argument("--tiny", action="store_true", help="测试用：极小的尺寸、2 轮")
    for name, default in sizes.items():
        parser.add_argument(f"--{name.replace('_', '-')}", type=int, default=default)
    args = parser.parse_args()
    if args.tiny:
        args.repeats, args.warmup = 2, 1
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    return args


def interleave(cases: dict, repeats: int, warmup: int) -> dict[str, list[float]]:
    """每一轮把各情形各跑一次（交替），返回 情形 -> 每轮的秒数（每个情形返回自己的秒数）。"""
    for _ in range(warmup):
        for function in cases.values():
            function()
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(repeats):
        for name, function in cases.items():
            times[name].append(function())
    return times


def seconds(function) -> float:
    """运行 ``function()`` 一次，返回秒数（返回值不要）。"""
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def paired(times: dict[str, list[float]], name: str, baseline: str) -> float:
    """逐轮比值 name / baseline 的中位数。"""
    return statistics.median(a / b for a, b in zip(times[name], times[baseline], strict=True))
