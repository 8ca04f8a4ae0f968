"""把删掉的内存还给操作系统的两种办法：训练一个小 GPT 慢多少、删掉模型后常驻内存少多少。

运行：``.venv/bin/python benchmarks/bench_memory.py [--repeats 5] [--threads N]``（``_bench.py``）。

三种情形，每一轮各起一个子进程（mmap 阈值是整个进程的设置，一旦固定就改不回 glibc 的自动调整）：

- ``default``：glibc 默认的自动阈值；
- ``fixed``：先调用 :func:`tinyformer.book.memory.return_freed_memory`，把阈值固定在 128 KB，
  每个大于它的张量单独 mmap（各章的导入单元格这样做）；
- ``trimmed``：同 default，删掉模型后调用 glibc 的 ``malloc_trim(0)``（把堆里空闲的整页还给系统）。

每个子进程先分配、释放一个 30 MB 的张量（笔记本里大矩阵之后的常态：glibc 因此把阈值调高），再训练若干步，
报告训练的秒数，以及训练完、删掉模型之后的常驻内存。
"""

from __future__ import annotations

import functools
import json
import statistics
import subprocess
import sys

from _bench import interleave, options, paired

CHILD = """
import ctypes, re, sys, time
from pathlib import Path
import torch
from tinyformer import GPT, GPTConfig
from tinyformer.book.memory import return_freed_memory

mode, (steps, d_model, threads) = sys.argv[1], map(int, sys.argv[2:5])
torch.set_num_threads(threads)
if mode == "fixed":
    assert return_freed_memory()


def rss_mb() -> float:
    status = Path("/proc/self/status").read_text()
    return int(re.search(r"VmRSS:\\s+(\\d+)", status).group(1)) / 1e3


big = torch.ones(30_000_000 // 4)  # 30 MB
del big
torch.manual_seed(0)
config = GPTConfig(vocab_size=2000, max_len=128, d_model=d_model, num_heads=4, num_layers=4)
model = GPT(config)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
ids = torch.randint(0, 2000, (16, 128))  # (B, T)
start = time.perf_counter()
for _ in range(steps):
    logits = model(ids[:, :-1])  # (B, T-1, V)
    loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), ids[:, 1:].flatten())
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
seconds = time.perf_counter() - start
del model, optimizer, logits, loss
if mode == "trimmed":
    ctypes.CDLL("libc.so.6").malloc_trim(0)
print(seconds, rss_mb())
"""


def run(mode: str, steps: int, d_model: int, threads: int) -> tuple[float, float]:
    out = subprocess.run(
        [sys.executable, "-c", CHILD, mode, str(steps), str(d_model), str(threads)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    seconds, rss = map(float, out.split())
    return seconds, rss


def main() -> None:
    args = options(__doc__, repeats=5, warmup=0)
    steps, d_model = (2, 32) if args.tiny else (10, 256)
    modes = ("default", "fixed", "trimmed")
    cases = {m: functools.partial(run, m, steps, d_model, args.threads or 1) for m in modes}
    results = interleave(cases, args.repeats, args.warmup)  # 情形 -> 每轮的 (秒数, 常驻内存 MB)
    seconds = {mode: [s for s, _ in rows] for mode, rows in results.items()}
    summary = {}
    for mode, rows in results.items():
        summary[f"{mode}_seconds"] = round(statistics.median(seconds[mode]), 3)
        summary[f"{mode}_rss_mb_after"] = round(statistics.median(r for _, r in rows), 1)
        print(
            f"{mode:8s} 训练 {steps} 步 {summary[f'{mode}_seconds']:.2f} 秒，"
            f"删掉模型后常驻内存 {summary[f'{mode}_rss_mb_after']:.0f} MB"
        )
    for mode in ("fixed", "trimmed"):
        summary[f"seconds_ratio_{mode}_over_default"] = round(paired(seconds, mode, "default"), 3)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
