"""命令行：训练、写诗、评估（“只有解码器”一章讲解）。

    python -m tinyformer.poetry train --steps 1800 --muon-lr 0.02 --seed 0 --out runs/poetry.safetensors
    python -m tinyformer.poetry generate --acrostic 春夏秋冬
    python -m tinyformer.poetry generate --form 七律 --rhyme 尤
    python -m tinyformer.poetry evaluate

装好本包后 ``tinyformer-poetry`` 是同一个程序。``train`` 与 ``evaluate`` 最后在 stdout 打印 **一行 JSON**；
``generate`` 一行一首诗。多进程训练：``torchrun --standalone --nproc_per_node=2 -m tinyformer.poetry train ...``。

出错时只在 stderr 打印一行 ``错误：…``，从不打印 traceback（与中译英的命令行同一套，:mod:`tinyformer._cli`；
argparse 自己发现的用法错误——不认识的参数、缺少命令——照 argparse 的样子打印用法和 ``error: …``）：
用法错误（参数不对、前句或藏头的字不对、``--out`` 写不进去、模型太大、训练发散）退出码 2，
权重文件用不了（不存在、损坏、pickle 文件……，见 :class:`~tinyformer.weights.WeightsError`）退出码 3，
读写出错 5，Ctrl-C 130，SIGTERM 143。参数和输出路径都在训练开始之前检查完：训练几分钟后才发现
写不进去，结果就丢了。
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections.abc import Sequence

import torch

from .. import _cli
from .._checks import machine_memory
from .._cli import EXIT_USAGE, usage_error, writable_file
from ..gpt import TEMPERATURES
from .checkpoint import load_checkpoint, save_checkpoint
from .corpus import (
    Vocab,
    bigram_bits_per_char,
    kneser_ney_bits_per_char,
    load_split,
    unigram_bits_per_char,
)
from .evaluation import FORMS, format_valid, is_han, lines_copied, meter_rate
from .pretrained import weights_path
from .sampling import CLAUSE_ENDS, MeterError, MeterMask, write
from .training import evaluate, make_model, setup_distributed, train

# generate 与 evaluate 的默认采样设置（evaluate 的 format_valid 就是在这些设置下量的）。随包的权重在 τ = 0.8
# 时 100 首里形状合格的是 95 %（种子 0）和 99 %（种子 1），τ = 0.7 时 100 %：默认取 0.7，留出余量
TEMPERATURE, TOP_K, TOP_P = 0.7, None, 0.9
SAMPLES = 100  # evaluate 默认写多少首
HEADS = 4  # train 的模型的头数（make_model 的默认）


# 数值参数：argparse 只收字符串，读成数、查范围由 _cli.number 做，出错时一行“--x 应为{规则}，得到 …”
# （与中译英的命令行同一套消息）。没给的参数是下面的默认值，已经是数。
_POSITIVE = (int, "正整数", lambda v: v > 0)
_AT_MOST_1024 = (int, "不大于 1024 的正整数", lambda v: 0 < v <= 1024)  # 挡住 10**9 这样的笔误
_UNIT = (float, " (0, 1] 之内的数", lambda v: 0 < v <= 1)
NUMBERS = {
    "steps": _POSITIVE,
    "batch_size": _POSITIVE,
    "d_model": _POSITIVE,
    "n": _POSITIVE,
    "top_k": _POSITIVE,
    "layers": _AT_MOST_1024,
    "threads": _AT_MOST_1024,
    # AdamW 的学习率大于 1 没有意义（每步把每个参数挪动约 lr）；再大的数只会让训练第一步就发散
    "lr": (float, " (0, 1] 之内的数", lambda v: math.isfinite(v) and 0 < v <= 1),
    "muon_lr": (float, " (0, 1] 之内的数", lambda v: math.isfinite(v) and 0 < v <= 1),
    "top_p": _UNIT,
    "temperature": (
        float,
        f" [{TEMPERATURES[0]}, {TEMPERATURES[1]:g}] 之内的数",
        lambda v: TEMPERATURES[0] <= v <= TEMPERATURES[1],
    ),
    "seed": (int, " [0, 2**32) 之内的整数", lambda v: 0 <= v < 2**32),
}


def _read_numbers(args: argparse.Namespace) -> None:
    for name, (convert, rule, ok) in NUMBERS.items():
        text = getattr(args, name, None)
        if isinstance(text, str):
            option = "--" + name.replace("_", "-")
            setattr(args, name, _cli.number(option, text, convert, rule, ok))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m tinyformer.poetry", description="在全唐诗上训练 GPT、写诗、评估。"
    )
    commands = parser.add_subparsers(dest="command", required=True)
    t = commands.add_parser("train", help="训练并保存权重，最后打印一行 JSON 指标")
    t.add_argument("--steps", required=True, help="训练步数")
    t.add_argument("--seed", default=0, help="初始化与数据顺序的种子（默认 0）")
    t.add_argument("--out", required=True, help="权重文件（safetensors）")
    t.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    t.add_argument("--batch-size", default=64, help="全局批的诗数（默认 64）")
    t.add_argument("--lr", default=3e-3, help="峰值学习率（默认 3e-3）")
    t.add_argument(
        "--muon-lr",
        default=None,
        help="给出时块里的权重矩阵用 Muon，这是它的峰值学习率（默认只用 AdamW）",
    )
    t.add_argument("--d-model", default=128, help=f"应为头数 {HEADS} 的倍数")
    t.add_argument("--layers", default=4)
    t.add_argument("--threads", default=None, help="torch 的线程数")
    for name, help_text in (("generate", "写诗，一行一首"), ("evaluate", "评估，打印一行 JSON")):
        g = commands.add_parser(name, help=help_text)
        g.add_argument("--model", default=None, help="权重文件（默认随包发布的）")
        g.add_argument("--temperature", default=TEMPERATURE)
        g.add_argument("--top-k", default=TOP_K)
        g.add_argument("--top-p", default=TOP_P)
        g.add_argument("--seed", default=0)
        g.add_argument("--n", default=5 if name == "generate" else SAMPLES)
        g.add_argument(
            "--form", choices=tuple(FORMS), default=None, help="按这一体的格律写（平水韵）"
        )
        g.add_argument(
            "--rhyme", default=None, help="押哪个平声韵部，如 尤 或 下平声十一尤（要 --form）"
        )
    g = commands.choices["generate"]
    g.add_argument("--prefix", default="", help="第一句（或前几句），接着写")
    g.add_argument("--acrostic", default=None, help="藏头诗：4 或 8 个字，各作一句的开头")
    g.add_argument("--greedy", action="store_true", help="每步取概率最大的字（不采样）")
    return parser


def _check_text(vocab: Vocab, args, max_len: int) -> None:
    """前句、藏头字、体裁与韵部的检查：在写之前把问题一次说清楚。"""
    prefix, acrostic, form = args.prefix, args.acrostic, args.form
    if args.rhyme is not None and form is None:
        usage_error("--rhyme 要和 --form 一起用（先定体裁，才有韵脚）")
    if acrostic is not None:
        if prefix:
            usage_error("--prefix 与 --acrostic 只能给一个")
        if form is not None and len(acrostic) != FORMS[form][0]:
            usage_error(
                f"{form}有 {FORMS[form][0]} 句，--acrostic 应为 {FORMS[form][0]} 个字，"
                f"得到 {len(acrostic)} 个：{acrostic!r}"
            )
        if len(acrostic) not in (4, 8):
            usage_error(
                f"--acrostic 应为 4 或 8 个字（绝句或律诗的每句一个），得到 {len(acrostic)} 个：{acrostic!r}"
            )
        if any(ch in CLAUSE_ENDS for ch in acrostic):
            usage_error(f"--acrostic 只能是汉字，不能有标点：{acrostic!r}")
    bad = sorted({ch for ch in prefix if not (is_han(ch) or ch in CLAUSE_ENDS)})
    if bad:
        usage_error(f"--prefix 只能有汉字和 ，。：{''.join(bad)!r} 不行")
    if len(prefix) + 2 > max_len:
        usage_error(f"--prefix 太长：{len(prefix)} 个字，最多 {max_len - 2} 个")
    unknown = sorted(
        {ch for ch in prefix + (acrostic or "") if ch not in vocab and ch not in CLAUSE_ENDS}
    )
    if unknown:
        usage_error(f"模型不认识这些字（训练集里不到 2 次）：{''.join(unknown)}")
    if form is not None:
        try:
            rules = MeterMask(vocab, form, args.rhyme)
        except ValueError:
            usage_error(
                f"--rhyme 应为一个平声韵部的名字，如 尤 或 下平声十一尤，得到 {args.rhyme!r}"
            )
        try:
            for ch in prefix:
                rules.step(vocab.stoi[ch])
        except MeterError as error:
            usage_error(f"--prefix {error.zh()}")
        if rules.finished:
            usage_error(f"--prefix 已经是一整首{form}了，没有可写的")


def _samples(model, vocab, args, **kwargs) -> list[str]:
    generator = torch.Generator().manual_seed(args.seed)
    return [
        write(model, vocab, temperature=args.temperature, top_k=args.top_k, top_p=args.top_p,
              generator=generator, **kwargs).text
        for _ in range(args.n)
    ]  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)  # argparse 自己发现的用法错误照它的样子打印（退出码 2）
    _read_numbers(args)
    if args.command == "train":
        return _train(args)
    model, vocab, _ = load_checkpoint(weights_path() if args.model is None else args.model)
    if args.command == "generate":
        _check_text(vocab, args, model.config.max_len)
        kwargs = {"prefix": args.prefix, "acrostic": args.acrostic, "greedy": args.greedy,
                  "form": args.form, "rhyme": args.rhyme}  # fmt: skip
        for poem in _samples(model, vocab, args, **kwargs):
            print(poem, flush=True)
        return 0
    args.prefix, args.acrostic = "", None
    _check_text(vocab, args, model.config.max_len)
    train_poems, test_poems = load_split("train"), load_split("test")
    samples = _samples(model, vocab, args, form=args.form, rhyme=args.rhyme)
    metrics = {
        "test_bits_per_char": round(evaluate(model, test_poems, vocab), 4),
        "unigram_bits_per_char": round(unigram_bits_per_char(train_poems, test_poems, vocab), 4),
        "bigram_bits_per_char": round(bigram_bits_per_char(train_poems, test_poems, vocab), 4),
        "kneser_ney_bits_per_char": round(
            kneser_ney_bits_per_char(train_poems, test_poems, vocab), 4
        ),
        "samples": args.n,
        "format_valid": sum(map(format_valid, samples)) / len(samples),
        "lines_copied": round(lines_copied(samples, train_poems), 4),
        "meter_samples": round(meter_rate(samples), 4),
        "meter_test_poems": round(meter_rate(test_poems), 4),
        "settings": {
            "temperature": args.temperature,
            "top_k": args.top_k,
            "top_p": args.top_p,
            "seed": args.seed,
            "form": args.form,
            "rhyme": args.rhyme,
        },
    }
    print(json.dumps(metrics, ensure_ascii=False))
    return 0


def _train(args) -> int:
    out = writable_file("--out", args.out)  # 先于一切：训练完才发现写不进去，结果就丢了
    if args.d_model % HEADS:
        usage_error(
            f"--d-model 应为头数 {HEADS} 的倍数（每个头 d_model/{HEADS} 维），得到 {args.d_model}"
        )
    if args.device == "cuda" and not torch.cuda.is_available():
        usage_error("--device cuda：这台机器上没有可用的 CUDA")
    local_rank, gpus = int(os.environ.get("LOCAL_RANK", "0")), torch.cuda.device_count()
    if args.device == "cuda" and local_rank >= gpus:  # torchrun 的每个进程要一块自己的 GPU
        usage_error(
            f"--device cuda：torchrun 的第 {local_rank} 号进程（LOCAL_RANK）没有自己的 GPU，"
            f"这台机器只有 {gpus} 块；--nproc_per_node 不能多于 GPU 的块数"
        )
    train_poems, valid_poems, test_poems = (load_split(s) for s in ("train", "valid", "test"))
    if args.batch_size > len(train_poems):
        usage_error(f"--batch-size {args.batch_size} 大于训练集的诗数 {len(train_poems)}")
    vocab = Vocab.build(train_poems)
    options = {"d_model": args.d_model, "num_layers": args.layers, "num_heads": HEADS}
    _check_memory(vocab, options)
    if args.threads:
        torch.set_num_threads(args.threads)
    rank, world = setup_distributed(args.device)
    if args.batch_size % world:
        usage_error(f"--batch-size {args.batch_size} 应为进程数 {world} 的倍数")
    device = torch.device("cuda", torch.cuda.current_device()) if args.device == "cuda" else "cpu"
    model = make_model(vocab, seed=args.seed, **options).to(device)
    started = time.perf_counter()
    say = (lambda line: print(line, file=sys.stderr, flush=True)) if rank == 0 else None
    try:
        result = train(
            model, vocab, train_poems, valid_poems, steps=args.steps, seed=args.seed,
            batch_size=args.batch_size, lr=args.lr, muon_lr=args.muon_lr, progress=say,
        )  # fmt: skip
    except FloatingPointError as error:  # 损失成了 nan 或 inf：不存一个坏掉的模型
        _cli.print_error(f"训练发散，没有保存权重：{error}；试试更小的 --lr（现在是 {args.lr}）")
        raise SystemExit(EXIT_USAGE) from None
    if world > 1:
        import torch.distributed as dist

        dist.destroy_process_group()
    if rank != 0:
        return 0
    metrics = {
        "steps": args.steps,
        "seed": args.seed,
        "processes": world,
        "device": args.device,
        "parameters": sum(p.numel() for p in model.parameters()),
        "train_seconds": round(result.seconds, 1),
        "seconds": round(time.perf_counter() - started, 1),
        "valid_bits_per_char": round(result.valid[-1]["valid_bpc"], 4),
        "test_bits_per_char": round(evaluate(model, test_poems, vocab), 4),
        "bigram_bits_per_char": round(bigram_bits_per_char(train_poems, test_poems, vocab), 4),
    }
    save_checkpoint(out, model.cpu(), vocab, metrics=metrics, log=result.log, valid=result.valid)
    print(json.dumps(metrics, ensure_ascii=False), flush=True)
    return 0


def _check_memory(vocab: Vocab, options: dict) -> None:
    """训练要的内存放不进这台机器时，在建模型之前就说清楚（否则系统会在初始化的半路杀掉进程）。

    模型先建在 ``meta`` 设备上（只有形状，不占内存）数出参数个数 N；训练至少要 16N 字节：
    参数、梯度、AdamW 的 m 与 v 各一份 float32。激活值另算，所以这是下限。
    """
    try:
        with torch.device("meta"):
            n = sum(p.numel() for p in make_model(vocab, **options).parameters())
    except ValueError as error:  # GPT 自己算的账：光是参数就放不下
        usage_error(f"模型太大：{error}；减小 --d-model 或 --layers")
    if (need := 16 * n) > (total := machine_memory()):
        usage_error(
            f"模型太大：{n:,} 个参数，训练至少要 {need / 2**30:.1f} GiB 内存（参数、梯度、AdamW 的"
            f"两份状态，各 4 字节），这台机器只有 {total / 2**30:.1f} GiB；减小 --d-model 或 --layers"
        )


def run(argv: Sequence[str] | None = None) -> int:
    """运行 :func:`main`，返回退出码；任何失败都只在 stderr 上打印一行 ``错误：…``（:func:`tinyformer._cli.run`）。"""
    return _cli.run(lambda: main(argv), lambda err: _cli.reader_message(err, __name__))


def console() -> None:
    """``tinyformer-poetry`` 的入口。"""
    sys.exit(run())
