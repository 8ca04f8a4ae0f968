"""重新生成“中文的字节级 BPE”一章读的实验结果 ``src/tinyformer/poetry/data/bpe_lab.json``。

    .venv/bin/python -m tools.bpe_lab

单线程 CPU，这台 2 核、与别的任务共用的机器上约 10–15 分钟。做三件事：

1. 在训练集上学 :data:`VOCAB_SIZES` 各个大小的字节级 BPE（记下用时），量测试集上每字几个词元；
   同样大小的 Hugging Face ``tokenizers`` 也学一遍，比较两份合并表（第一处不同、集合的重合）；
   :data:`SHIPPED` 大小的合并表也存下来。
2. 逐字、jieba 分词、:data:`GPT_TOKENIZERS` 里的 BPE 各训练一个同样大小的小 GPT（块的参数、步数、
   每步的诗数、数据顺序都相同：:data:`GPT`），量测试集上的每字比特数。
3. 写 JSON：结果，加上来历（命令、提交、torch 版本、日期、CPU、用时）。

    .venv/bin/python -m tools.bpe_lab --reference-merges

只重做一小部分（约半分钟）：``tokenizers`` 在整个训练集上学 :data:`SHIPPED` 大小的合并表，写进 JSON 的
``reference_merges``（带自己的来历）。该章用它搭出 ``tokenizers`` 的分词器、与我们的编码器比较，
不必在笔记本里跑占约 400 MB 内存的训练器。其余结果原样保留。
"""

from __future__ import annotations

import argparse
import json
import time
from importlib.metadata import version
from pathlib import Path

import torch

from tinyformer.book.reference_bpe import reference_tokenizer, train_reference
from tinyformer.bpe import ByteBPE
from tinyformer.poetry.corpus import load_split
from tinyformer.poetry.tokenization import bits_per_char, make_tokenizer, train_gpt
from tools.records import cpu_model, git_commit, machine, today, write_json

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "tinyformer" / "poetry" / "data" / "bpe_lab.json"
COMMAND = "python -m tools.bpe_lab"
REFERENCE_COMMAND = f"{COMMAND} --reference-merges"
VOCAB_SIZES = (256, 512, 1024, 2048, 4096)
SHIPPED = 1024  # 这个大小的合并表也写进 JSON（该章的探索器用它）
GPT_TOKENIZERS = ("char", "jieba", "bpe512", "bpe2048")
# 每个小 GPT：训练集的前 POEMS 首诗，STEPS 步 × BATCH 首（恰好一轮）
GPT = {"steps": 150, "batch_size": 32, "d_model": 64, "num_layers": 2, "num_heads": 4, "seed": 0}
POEMS = GPT["steps"] * GPT["batch_size"]


def merge_agreement(ours: ByteBPE, theirs: ByteBPE) -> dict:
    """两份合并表（换成字节串）：第一处不同在第几条、两边各是什么，以及作为集合重合多少条。"""
    mine = [(ours.vocab[a], ours.vocab[b]) for a, b in ours.merges]
    other = [(theirs.vocab[a], theirs.vocab[b]) for a, b in theirs.merges]
    first = next((k for k, (x, y) in enumerate(zip(mine, other, strict=True)) if x != y), None)
    return {
        "merges": len(mine),
        "same_prefix": len(mine) if first is None else first,
        "set_overlap": len(set(mine) & set(other)),
        "first_difference": None
        if first is None
        else {
            "ours": [p.hex() for p in mine[first]],
            "tokenizers": [p.hex() for p in other[first]],
        },
    }


def _reference_provenance(command: str, code: str, started: float) -> dict:
    """``reference_merges`` 的来历：哪条命令、哪个提交、哪个 ``tokenizers``、哪天、哪台 CPU、用时。"""
    return {
        "command": command,
        "commit": code,
        "tokenizers": version("tokenizers"),
        "date": today(),
        "cpu": cpu_model(),
        "wall_seconds": round(time.perf_counter() - started, 1),
    }


def reference_merges() -> None:
    """``tokenizers`` 在整个训练集上学 :data:`SHIPPED` 大小的合并表，连同来历写进已有的 JSON。"""
    started, code = time.perf_counter(), git_commit()
    train, test = load_split("train"), load_split("test")
    tokenizer, merges = train_reference(train, SHIPPED)
    # 只存合并表就够：由它搭出的分词器与训练出的那个在测试集上给出相同的编号
    rebuilt = reference_tokenizer(merges)
    ids = [[e.ids for e in t.encode_batch(test)] for t in (tokenizer, rebuilt)]
    assert ids[0] == ids[1], "the tokenizer rebuilt from the merges disagrees with the trained one"
    record = json.loads(OUT.read_text(encoding="utf-8"))
    record["reference_merges"] = {str(SHIPPED): [list(m) for m in merges]}
    record["reference_provenance"] = _reference_provenance(REFERENCE_COMMAND, code, started)
    write_json(OUT, record)
    print(f"wrote reference_merges[{SHIPPED}] ({len(merges)} merges) to {OUT.relative_to(ROOT)}")


def main() -> None:
    torch.set_num_threads(1)
    started, code = time.perf_counter(), git_commit()  # 开始时的提交：结果出自这份代码
    train, test = load_split("train"), load_split("test")
    characters = sum(len(poem) for poem in test)

    bpe_rows = []
    for size in VOCAB_SIZES:
        t = time.perf_counter()
        ours = ByteBPE.train(train, size)
        seconds = time.perf_counter() - t
        tokens = sum(len(ours.encode(poem)) for poem in test)
        _, merges = train_reference(train, size)
        row = {
            "vocab_size": size,
            "train_seconds": round(seconds, 1),
            "tokens_per_char": tokens / characters,
            "agreement": merge_agreement(ours, ByteBPE.from_gpt2_merges(merges)),
        }
        print(json.dumps(row), flush=True)
        bpe_rows.append(row)
        if size == SHIPPED:
            shipped_merges, shipped_reference = ours.merges, merges

    gpt_rows = {}
    for name in GPT_TOKENIZERS:
        tokenizer = make_tokenizer(name, train)
        splits = [train[:POEMS], test]
        max_len = max(len(tokenizer.split(poem)) for split in splits for poem in split) + 2
        t = time.perf_counter()
        model, result = train_gpt(tokenizer, train[:POEMS], max_len=max_len, **GPT)
        seconds = time.perf_counter() - t
        pieces = [tokenizer.split(poem) for poem in test]
        unknown = sum(
            tokenizer.vocab.encode(p).count(tokenizer.vocab.unk_id) for p in pieces
        )  # fmt: skip
        row = {
            "vocab_size": len(tokenizer.vocab),
            "max_len": max_len,
            "parameters": sum(p.numel() for p in model.parameters()),
            "tokens_per_char": sum(map(len, pieces)) / characters,
            "unknown_rate": unknown / sum(map(len, pieces)),
            "log": [
                {"step": r["step"], "train_bits_per_token": r["train_bpc"]} for r in result.log
            ],
            "test_bits_per_char": bits_per_char(model, test, tokenizer),
            "train_seconds": round(seconds, 1),
        }
        print(name, json.dumps({k: v for k, v in row.items() if k != "log"}), flush=True)
        gpt_rows[name] = row

    record = {
        "command": COMMAND,
        "commit": code,
        **machine(),
        "tokenizers": version("tokenizers"),
        "threads": 1,
        "wall_seconds": round(time.perf_counter() - started, 1),
        "gpt_settings": {**GPT, "poems": POEMS, "lr": 3e-3},
        "bpe": bpe_rows,
        "merges": {str(SHIPPED): shipped_merges},
        "reference_merges": {str(SHIPPED): [list(m) for m in shipped_reference]},
        "reference_provenance": _reference_provenance(COMMAND, code, started),
        "gpt": gpt_rows,
    }
    write_json(OUT, record)
    print(f"wrote {OUT.relative_to(ROOT)} in {record['wall_seconds']} s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--reference-merges",
        action="store_true",
        help=f"only add tokenizers' merges for V = {SHIPPED} (whole training split) to the JSON",
    )
    if parser.parse_args().reference_merges:
        reference_merges()
    else:
        main()
