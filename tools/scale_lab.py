"""运行规模实验，把结果随包发布（见 ``tinyformer.poetry.scale``）。

    .venv/bin/python -m tools.scale_lab                     # 全部实验（单线程合计约 170 分钟）
    .venv/bin/python -m tools.scale_lab --group isoflop     # 只跑一组：isoflop（约 81 分钟）、recipe（约 75）、
                                                            # ablation（约 12）或 data（约 3）
    .venv/bin/python -m tools.scale_lab --device cuda       # 有 GPU 时

等计算量组的外推 ``iso-predict`` 要等另外几个预算跑完、拟合、把预测写进 ``scale.PREDICTED`` 之后再跑
（``--only iso-predict``）。两个进程同时跑（多核时省时间）：各自 ``--results`` 写一个文件，再 ``--merge``
进随包的结果::

    .venv/bin/python -m tools.scale_lab --group ablation --seed 0 --results /tmp/a.json &
    .venv/bin/python -m tools.scale_lab --group ablation --seed 1 --results /tmp/b.json
    .venv/bin/python -m tools.scale_lab --merge /tmp/a.json --merge /tmp/b.json

每跑完一个实验就把它那一行写进 ``src/tinyformer/poetry/data/scale_lab.json``（原子写入，中途打断也不丢
已跑完的），同名的旧行被替换；来历（命令、git 提交、torch 版本、日期、CPU、线程数，以及用的是哪一版语料：训练集、验证集的 sha256）记在 ``provenance``，
每一行自己记着种子和用时。默认单线程，与“只有解码器”一章随包的权重一样。
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import torch

from tinyformer.poetry.scale import EXPERIMENTS, run
from tools.records import git_commit, machine, write_json

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "src" / "tinyformer" / "poetry" / "data" / "scale_lab.json"
CORPUS = RESULTS.parent / "provenance.json"  # 随包语料的来历


def _command(words: list[str]) -> str:
    """记进来历的命令：结果写到哪个文件（``--results``）与跑了什么无关，不记。"""
    kept = [
        w for k, w in enumerate(words) if w != "--results" and words[k - 1 : k] != ["--results"]
    ]
    return " ".join(["python", "-m", "tools.scale_lab", *kept])


def _read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {"runs": []}


def _store(record: dict, rows: list[dict], invocation: dict) -> None:
    """把 ``rows`` 并进 ``record``（同名的旧行被替换），它们的来历归 ``invocation``。"""
    names = {row["name"] for row in rows}
    record["runs"] = [r for r in record["runs"] if r["name"] not in names] + rows
    order = {e.name: k for k, e in enumerate(EXPERIMENTS)}
    record["runs"].sort(key=lambda r: order.get(r["name"], len(order)))
    for earlier in record["provenance"]:
        earlier["runs"] = [name for name in earlier["runs"] if name not in names]
    invocation["runs"] += [row["name"] for row in rows]
    record["provenance"] = [inv for inv in record["provenance"] if inv["runs"]]


def merge(sources: list[Path], path: Path) -> None:
    """把几个结果文件（各自带来历）并进 ``path``。"""
    record = _read(path)
    record["provenance"] = _invocations(record)
    for source in sources:
        other = _read(source)
        for invocation in _invocations(other):
            rows = [r for r in other["runs"] if r["name"] in invocation["runs"]]
            fresh = {
                **invocation,
                "command": _command(invocation["command"].split()[3:]),
                "runs": [],
            }
            record["provenance"].append(fresh)
            _store(record, rows, fresh)
    write_json(path, record, sort_keys=False)
    print(f"merged {len(sources)} files -> {path}: {len(record['runs'])} runs")


def _invocations(record: dict) -> list[dict]:
    """以前各次运行的来历，只留下仍有结果出自它的（重跑的实验归最后一次）。"""
    earlier = record.get("provenance", [])
    if isinstance(earlier, dict):  # 第一版只记最后一次运行；它跑的是当时已有的全部实验
        earlier = [{**earlier, "runs": [r["name"] for r in record["runs"]]}]
    return earlier


def corpus_digests() -> dict[str, str]:
    """随包语料训练集、验证集的 sha256（``data/provenance.json``）：实验读的就是它们。"""
    record = json.loads(CORPUS.read_text(encoding="utf-8"))
    return {split: record["splits"][split]["sha256"] for split in ("train", "valid")}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tools.scale_lab", description=__doc__)
    parser.add_argument(
        "--group", choices=("isoflop", "data", "ablation", "recipe"), action="append"
    )
    parser.add_argument("--only", action="append", help="只跑这个名字的实验（可重复）")
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--seed", type=int, action="append", help="只跑这个种子的实验（可重复）")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--results", type=Path, default=RESULTS, help="结果文件（默认随包的）")
    parser.add_argument("--merge", type=Path, action="append", help="把这个结果文件并进 --results")
    args = parser.parse_args(argv)
    if args.merge:
        return merge(args.merge, args.results)
    torch.set_num_threads(args.threads)
    chosen = [
        exp
        for exp in EXPERIMENTS
        if (not args.group or exp.group in args.group)
        and (not args.only or exp.name in args.only)
        and (not args.seed or exp.seed in args.seed)
    ]
    record = _read(args.results)
    # 每次运行记一条来历：这几个实验是哪条命令、哪个提交、哪个 torch、哪台机器跑的
    invocation = {
        "command": _command(sys.argv[1:] if argv is None else argv),
        "git_commit": git_commit("--short"),
        **machine(),
        "threads": args.threads,
        "device": args.device,
        "corpus": corpus_digests(),
        "runs": [],
    }
    record["provenance"] = [*_invocations(record), invocation]
    started = time.perf_counter()
    for i, exp in enumerate(chosen, start=1):
        row = run(exp, device=args.device)
        _store(record, [row], invocation)
        write_json(args.results, record, sort_keys=False)
        print(
            f"[{i}/{len(chosen)}] {exp.name:<18} N={row['non_embedding_params']:>7,}  "
            f"valid {row['valid_bpc']:.3f} (best {row['best_valid_bpc']:.3f} @ {row['best_step']})"
            f"  {row['seconds']:.0f} s",
            flush=True,
        )
    print(f"done: {len(chosen)} runs in {time.perf_counter() - started:.0f} s -> {args.results}")


if __name__ == "__main__":
    main()
