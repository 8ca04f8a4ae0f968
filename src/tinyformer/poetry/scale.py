"""规模实验：损失随参数量、随数据量怎样变，以及 2017 年之后的块一次改一处（“规模与 2017 年之后的改进”一章讲解）。

每个实验是一条 :class:`Experiment`：模型尺寸、训练集取前多少首、步数、批、学习率、种子，以及交给
:class:`~tinyformer.GPTConfig` 的其余选项（RMSNorm、RoPE……）。:func:`run` 用“只有解码器”一章的
:func:`~tinyformer.poetry.training.make_model`、:func:`~tinyformer.poetry.training.train`、
:func:`~tinyformer.poetry.training.evaluate` 训练并评估它；量度是验证集前 :data:`EVAL_POEMS` 首诗上的
每字比特数，字表总是整个训练集的字表（与“只有解码器”一章相同），所以各行可以直接比较。

:data:`EXPERIMENTS` 是全部记下的实验；``python -m tools.scale_lab`` 逐个运行它们，结果连同来历写进
``data/scale_lab.json``（:func:`load_results` 读它）。这台 2 核机器上全部约 20 分钟，所以模型很小、训练很短：
这里量的是 **小** 模型的规律，不是大模型的。
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import cache
from importlib.resources import files

import torch
from torch import nn

from .corpus import Vocab, load_split
from .training import evaluate, make_model, train

__all__ = [
    "EVAL_POEMS",
    "EXPERIMENTS",
    "Experiment",
    "experiment",
    "load_results",
    "non_embedding_params",
    "run",
]

EVAL_POEMS = 200  # 验证集的前 200 首（约 9,000 个预测）：评估一次不到 1 秒
STEPS, BATCH_SIZE, LR, WARMUP = 300, 16, 3e-3, 30  # 每个实验看 300 × 16 = 4,800 首诗（约 21.5 万个字）


@dataclass(frozen=True)
class Experiment:
    """一次训练的全部设置。``train_poems=None`` 用整个训练集（33,135 首），否则用前 ``train_poems`` 首；
    ``options`` 原样交给 :class:`~tinyformer.GPTConfig`；每 ``eval_every`` 步在验证集上评估一次。"""

    name: str
    group: str  # "size"、"data" 或 "ablation"
    d_model: int = 64
    num_layers: int = 2
    num_heads: int = 4
    train_poems: int | None = None
    steps: int = STEPS
    batch_size: int = BATCH_SIZE
    lr: float = LR
    seed: int = 0
    eval_every: int = 50
    options: dict = field(default_factory=dict)


def _experiments() -> list[Experiment]:
    runs = []
    # 参数量：6 个尺寸，非嵌入参数约 3.4 千到 80 万（约 240 倍），数据量相同（300 步 × 16 首）
    for i, (d, layers, heads) in enumerate(
        [(16, 1, 2), (32, 1, 2), (32, 2, 2), (64, 2, 4), (96, 3, 4), (128, 4, 4)], start=1
    ):
        runs.append(Experiment(f"size-{i}", "size", d, layers, heads))
    # 数据量：固定的模型（size-4 的尺寸），训练集只取前 n 首；300 步里小的训练集要重复很多轮，
    # 每 25 步评估一次，取验证集上最好的一次（提前停止，Kaplan 等人的 L(D) 也这样量）
    for n in (200, 400, 800, 1600, 3200):
        runs.append(Experiment(f"data-{n}", "data", train_poems=n, eval_every=25))
    return runs


EXPERIMENTS: list[Experiment] = _experiments()


def experiment(name: str) -> Experiment:
    """按名字取 :data:`EXPERIMENTS` 里的一个实验。"""
    for exp in EXPERIMENTS:
        if exp.name == name:
            return exp
    raise ValueError(f"no experiment named {name!r}; names are {[e.name for e in EXPERIMENTS]}")


@cache
def _data() -> tuple[Vocab, list[str], list[str]]:
    train_poems = load_split("train")
    return Vocab.build(train_poems), train_poems, load_split("valid")[:EVAL_POEMS]


def non_embedding_params(model: nn.Module) -> int:
    """不算词嵌入（与输出层共享）和位置嵌入的参数个数 N（Kaplan 等人的约定）。"""
    return sum(
        p.numel()
        for name, p in model.named_parameters()  # 共享的权重只列一次（在 token_embedding 下）
        if not name.startswith(("token_embedding.", "position_embedding."))
    )


def run(
    exp: Experiment, device: str = "cpu", progress: Callable[[str], None] | None = None
) -> dict:
    """训练并评估 ``exp``，返回一行结果：设置、参数量、看过的字数、验证集每字比特数、用时。

    ``valid_bpc`` 是训练结束时的值，``best_valid_bpc`` 是各次评估里最好的（提前停止），
    ``curve`` 是每次评估的 [步数, 每字比特数]。
    """
    vocab, train_all, valid = _data()
    poems = train_all if exp.train_poems is None else train_all[: exp.train_poems]
    model = make_model(
        vocab, exp.d_model, exp.num_layers, exp.num_heads, seed=exp.seed, **exp.options
    ).to(device)
    started = time.perf_counter()
    result = train(
        model, vocab, poems, valid, steps=exp.steps, seed=exp.seed, batch_size=exp.batch_size,
        lr=exp.lr, warmup=WARMUP, log_every=exp.eval_every, eval_every=exp.eval_every,
        progress=progress,
    )  # fmt: skip
    curve = [[row["step"], round(row["valid_bpc"], 4)] for row in result.valid]
    best = min(curve, key=lambda row: row[1])
    chars_per_poem = sum(len(p) + 1 for p in poems) / len(poems)  # 每首的预测数（字符 + <eos>）
    return {
        **asdict(exp),
        "train_poems": len(poems),
        "params": sum(p.numel() for p in model.parameters()),
        "non_embedding_params": non_embedding_params(model),
        "tokens": round(exp.steps * exp.batch_size * chars_per_poem),  # 训练中看过的字数（约）
        "train_bpc": round(result.log[-1]["train_bpc"], 4),
        "valid_bpc": curve[-1][1],
        "best_valid_bpc": best[1],
        "best_step": best[0],
        "curve": curve,
        "seconds": round(time.perf_counter() - started, 1),
        "train_seconds": round(result.seconds, 1),
        "threads": torch.get_num_threads(),
        "device": device,
    }


def load_results() -> dict:
    """随包发布的实验结果（``data/scale_lab.json``）：``provenance`` 与 ``runs``（每个实验一行，见 :func:`run`）。"""
    path = files("tinyformer.poetry") / "data" / "scale_lab.json"
    return json.loads(path.read_text(encoding="utf-8"))
