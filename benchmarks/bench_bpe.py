"""字节级 BPE 的训练耗时：增量计数（``ByteBPE.train``）vs 每步重数的朴素循环 vs Hugging Face ``tokenizers``。

运行：``.venv/bin/python -m benchmarks.bench_bpe [--poems 300] [--vocab-size 600] [--repeats 3] [--threads 1]``
（``_bench.py``）。最后一行是 JSON：各情形的中位数和对增量版的比值。

``--threads 1``（默认）时 ``tokenizers`` 也只用一个线程（``TOKENIZERS_PARALLELISM=false``），与两个 Python
版本公平比较。三者在同一份文本上学同样大小的词表；增量版与朴素版（``tinyformer.book.reference_bpe.naive_train``）的
合并表逐条相同（下面检查），与 ``tokenizers`` 的比较字节串（平手处顺序可能不同，见“中文的字节级 BPE”一章）。
"""

from __future__ import annotations

import json
import os
import statistics
from functools import partial

from benchmarks._bench import interleave, options, paired, seconds
from tinyformer.book.reference_bpe import naive_train as naive
from tinyformer.bpe import ByteBPE
from tinyformer.poetry.corpus import load_split


def main() -> None:
    tiny = dict(poems=20, vocab_size=280)
    args = options(__doc__, repeats=3, warmup=0, threads=1, tiny=tiny, poems=300, vocab_size=600)
    if args.threads == 1:
        os.environ["TOKENIZERS_PARALLELISM"] = "false"  # 在导入 tokenizers 之前
    texts = load_split("train")[: args.poems]
    cases = {
        "incremental": lambda: ByteBPE.train(texts, args.vocab_size).merges,
        "naive": lambda: naive(texts, args.vocab_size),
    }
    try:
        from tinyformer.book.reference_bpe import train_reference

        cases["tokenizers"] = lambda: train_reference(texts, args.vocab_size)
    except ImportError:
        pass
    assert cases["incremental"]() == cases["naive"]()
    times = interleave({name: partial(seconds, f) for name, f in cases.items()}, args.repeats, args.warmup)  # fmt: skip
    result = {"poems": args.poems, "vocab_size": args.vocab_size}
    for name, values in times.items():
        result[f"{name}_s"] = round(statistics.median(values), 4)
        result[f"{name}_ratio_over_incremental"] = round(paired(times, name, "incremental"), 2)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
