"""基准脚本共用的几件事：命令行参数、交替运行、计时、逐轮比值。

各脚本的情形在每一轮里交替运行（先预热），比值取 **逐轮比值**（同一轮里两个情形之比）的中位数：
机器在一次运行里的快慢起伏落在同一轮的两边，在比值里抵消。``--tiny`` 是测试用的极小规模，
只检查脚本能跑通（tests/book/test_benchmarks.py），数字没有意义。最后一行都是 JSON。
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch


def options(doc: str, repeats: int, warmup: int, threads=None, tiny=(), **sizes: int):
    """``--repeats/--warmup/--threads/--tiny`` 与脚本自己的整数尺寸（``sizes``：``vocab_size=600`` →
    ``--vocab-size``）；``--tiny`` 把轮数降到 2 轮（预热 1 轮），再按 ``tiny`` 改尺寸。"""
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
        vars(args).update(tiny)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    return args


def header(text: str) -> None:
    print(f"torch {torch.__version__}, CPU, threads={torch.get_num_threads()}, {text}")


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


def cached_vs_full(runs: dict, repeats: int) -> tuple[dict[str, float], float, bool]:
    """``runs`` 的两个情形 ``cached``、``full``（缓存解码与每步整段重算）：各跑一次（也是预热、
    核对输出相同），再交替计时。返回 (各自秒数的中位数, full/cached 的逐轮比值, 输出相同)。"""
    outputs = {name: run() for name, run in runs.items()}
    times = interleave(
        {name: lambda run=run: seconds(run) for name, run in runs.items()}, repeats, 0
    )
    medians = {name: statistics.median(t) for name, t in times.items()}
    same = bool(torch.equal(outputs["cached"], outputs["full"]))
    return medians, paired(times, "full", "cached"), same


# 读回主机的张量操作：在 GPU 上每一个都让 Python 停下来等设备算完（CPU 上它们几乎不花时间，但照样数）
_SYNCS = {
    torch.Tensor.item, torch.Tensor.__bool__, torch.Tensor.__int__, torch.Tensor.__float__,
    torch.Tensor.__index__, torch.Tensor.tolist, torch.Tensor.numpy, torch.Tensor.nonzero,
    torch.nonzero, torch.equal, torch.allclose, torch.Tensor.allclose,
}  # fmt: skip


class _CountSyncs(torch.overrides.TorchFunctionMode):
    def __init__(self):
        super().__init__()
        self.count = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        self.count += func in _SYNCS
        return func(*args, **(kwargs or {}))


def host_syncs(function) -> int:
    """``function()`` 里读回主机的次数（``.item()``、``bool(张量)``、``.tolist()``……）。"""
    with _CountSyncs() as counter:
        function()
    return counter.count


def calls_into(module, function) -> int:
    """``function()`` 运行时，Python 进入 ``module`` 里定义的函数多少次（``sys.setprofile`` 数）。"""
    import sys

    filename, count = module.__file__, 0

    def profile(frame, event, arg):
        nonlocal count
        count += event == "call" and frame.f_code.co_filename == filename

    sys.setprofile(profile)
    try:
        function()
    finally:
        sys.setprofile(None)
    return count
