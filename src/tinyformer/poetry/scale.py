"""规模实验：计算量一定时模型该多大（等计算量曲线）、损失随数据量怎样变，以及 2017 年之后的块一次改一处
（“规模与 2017 年之后的改进”一章讲解）。

每个实验是一条 :class:`Experiment`：模型尺寸、训练集取前多少首、步数（或计算量预算 ``flops``，步数由
C = 6·N·D 算出）、批、学习率、种子，以及交给 :class:`~tinyformer.GPTConfig` 的其余选项（RMSNorm、RoPE……）。
:func:`run` 用“只有解码器”一章的 :func:`~tinyformer.poetry.training.make_model`、
:func:`~tinyformer.poetry.training.train`、:func:`~tinyformer.poetry.training.evaluate` 训练并评估它；
量度是验证集前 :data:`EVAL_POEMS` 首诗上的每字比特数，字表总是整个训练集的字表（与“只有解码器”一章相同），
所以各行可以直接比较。:func:`fit_isoflop` 是 Hoffmann 等人的方法二（每个预算一条抛物线、最低点连成直线、
残差自助法的区间），:func:`fit_power_law` 拟合带下限的幂律。

:data:`EXPERIMENTS` 是全部记下的实验；``python -m tools.scale_lab`` 逐个运行它们，结果连同来历写进
``data/scale_lab.json``（:func:`load_results` 读它）。这台 2 核机器上单线程：等计算量组约 81 分钟，
配方组约 75 分钟，消融组约 12 分钟，数据量组约 3 分钟。模型很小、训练很短：这里量的是 **小** 模型的规律，
不是大模型的。
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from functools import cache
from importlib.resources import files

import torch
from torch import nn

from .corpus import Vocab, load_split
from .training import make_batch, make_model, train

__all__ = [
    "ABLATIONS",
    "EVAL_POEMS",
    "RECIPES",
    "EXPERIMENTS",
    "Experiment",
    "BUDGETS",
    "ISOFLOP_SIZES",
    "PREDICTED",
    "PREDICTION",
    "best_isoflop_runs",
    "experiment",
    "fit_isoflop",
    "fit_power_law",
    "isoflop_points",
    "load_results",
    "non_embedding_params",
    "run",
    "SEEDS",
    "top1_accuracy",
]

EVAL_POEMS = 200  # 验证集的前 200 首（约 9,000 个预测）：评估一次不到 1 秒
STEPS, BATCH_SIZE, LR, WARMUP = (
    300,
    16,
    3e-3,
    30,
)  # 每个实验看 300 × 16 = 4,800 首诗（约 21.5 万个字）


@dataclass(frozen=True)
class Experiment:
    """一次训练的全部设置。``train_poems=None`` 用整个训练集（33,135 首），否则用前 ``train_poems`` 首；
    ``options`` 原样交给 :class:`~tinyformer.GPTConfig`；每 ``eval_every`` 步在验证集上评估一次。"""

    name: str
    group: str  # "isoflop"、"data"、"ablation" 或 "recipe"
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
    warmup: int = WARMUP
    muon_lr: float | None = None  # 给出时块里的矩阵用 Muon（见 tinyformer.optim）
    flops: float | None = None  # 给出时按 C = 6·N·D 定步数（N 数全部参数），预热取步数的 10%
    schedule: str = "cosine"  # 学习率曲线：预热 + 余弦，或 "wsd"（见 training.lr_at）


def _experiments() -> list[Experiment]:
    runs = []
    # 数据量：固定的模型（d_model 64，2 层，与消融的基线相同），训练集只取前 n 首；300 步里小的训练集要重复很多轮，
    # 每 25 步评估一次，取验证集上最好的一次（提前停止，Kaplan 等人的 L(D) 也这样量）
    for n in (200, 400, 800, 1600, 3200):
        runs.append(Experiment(f"data-{n}", "data", train_poems=n, eval_every=25))
    # 消融：d_model 64、2 层，同样的步数与批，一次改一处，每行两个种子
    for row, options in ABLATIONS.items():
        for seed in SEEDS:
            runs.append(Experiment(f"{row}-s{seed}", "ablation", seed=seed, options=options))
    # 配方：随包发布的尺寸（d_model 128，4 层），600 步 × 64 首（约 1.2 轮），只换优化器与学习率
    for row, (settings, seeds) in RECIPES.items():
        for seed in seeds:
            runs.append(
                Experiment(f"recipe-{row}-s{seed}", "recipe", 128, 4, 4, steps=600, batch_size=64,
                           seed=seed, warmup=60, eval_every=600, **settings)
            )  # fmt: skip
    # 等计算量（IsoFLOP）：每个预算 C 下的几个尺寸，训练的字数 D = C / (6N)（N 数全部参数）。
    # 最小的预算先给每个尺寸扫三个学习率（AdamW 与 Muon 的峰值同乘一个倍数），更大的预算用各尺寸扫出的那个
    for size, (d, layers, heads) in ISOFLOP_SIZES.items():
        for times in ISOFLOP_SWEEP:
            runs.append(
                Experiment(f"iso-{budget_label(BUDGETS[0])}-{size}-x{times:g}", "isoflop", d, layers,
                           heads, batch_size=32, lr=LR * times, muon_lr=MUON_LR * times,
                           flops=BUDGETS[0])
            )  # fmt: skip
    for budget, sizes in zip(BUDGETS[1:], WINDOWS, strict=True):
        for size in sizes:
            runs.append(
                Experiment(f"iso-{budget_label(budget)}-{size}", "isoflop", *ISOFLOP_SIZES[size],
                           batch_size=32, lr=LR * TUNED[size], muon_lr=MUON_LR * TUNED[size],
                           flops=budget)
            )  # fmt: skip
    runs.append(PREDICTION)
    return runs


# 等计算量实验的尺寸（名字是 d_model 与层数）。小模型的参数大半在词嵌入里（5,342 个字 × d_model），
# 所以全部参数从 9 万到 149 万只差约 16 倍，非嵌入参数却差约 130 倍
ISOFLOP_SIZES: dict[str, tuple[int, int, int]] = {
    "d16L2": (16, 2, 2), "d24L2": (24, 2, 2), "d32L2": (32, 2, 2), "d40L2": (40, 2, 2),
    "d48L2": (48, 2, 4), "d64L2": (64, 2, 4), "d80L3": (80, 3, 4), "d96L4": (96, 4, 4),
    "d128L4": (128, 4, 4),
}  # fmt: skip


def budget_label(flops: float) -> str:
    """实验名里的预算：``2.5e12`` 写成 ``"2.5e12"``（不写 ``e+``）。"""
    return f"{flops:.3g}".replace("e+", "e")


BUDGETS = (1e12, 2e12, 4e12)  # 计算量预算 C（浮点运算次数），相邻两个差 2 倍
MUON_LR = 0.02  # 等计算量实验：块里的矩阵用 Muon（配方表里最好的），其余用 AdamW（峰值 LR）
ISOFLOP_SWEEP = (1.0, 2.0, 4.0)  # 最小的预算上扫的学习率倍数：两个峰值同乘它
# 更大的预算各跑五个尺寸：最好的尺寸随预算变大，窗口也跟着右移
WINDOWS = (
    ("d16L2", "d24L2", "d32L2", "d48L2", "d64L2"),
    ("d24L2", "d32L2", "d40L2", "d48L2", "d64L2"),
)
# 扫出的学习率倍数：每个尺寸在最小的预算上最好的那个（测试核对它与随包的结果一致）
TUNED: dict[str, float] = {
    "d16L2": 4.0, "d24L2": 2.0, "d32L2": 2.0, "d40L2": 4.0, "d48L2": 4.0, "d64L2": 2.0,
    "d80L3": 2.0, "d96L4": 2.0, "d128L4": 2.0,
}  # fmt: skip


# 外推：三个预算的拟合（fit_isoflop）预测最大预算 3 倍处计算最优的尺寸与损失。训练之前把离 N* 最近的
# 尺寸和预测值写在这里、提交，然后才用 ``--only iso-predict`` 训练它（来历里的 git 提交就是写下预测的那一个）
PREDICTED = {
    "n": 1035725.1,
    "bpc": 6.7054,
    "interval": (6.3518, 6.7835),
}  # N*、每字比特数、一次训练的 95% 区间
PREDICTION = Experiment(
    "iso-predict", "isoflop", *ISOFLOP_SIZES["d96L4"], batch_size=32, lr=LR * TUNED["d96L4"],
    muon_lr=MUON_LR * TUNED["d96L4"], flops=3 * BUDGETS[-1],
)  # fmt: skip


# 配方表的行：(设置, 种子)。每种优化器扫三个峰值学习率（种子 0）；AdamW 的 3e-3 与 Muon 的 0.02 再跑
# 种子 1、2（0.02 是事先在整个验证集上试出来的，随包的模型也用它）；
# Muon 只管块里的矩阵，词嵌入、偏置、归一化仍用 AdamW 3e-3
RECIPES: dict[str, tuple[dict, tuple[int, ...]]] = {
    "adamw-1.5e-3": ({"lr": 1.5e-3}, (0,)),
    "adamw-3e-3": ({"lr": 3e-3}, (0, 1, 2)),
    "adamw-6e-3": ({"lr": 6e-3}, (0,)),
    "muon-0.01": ({"muon_lr": 0.01}, (0,)),
    "muon-0.02": ({"muon_lr": 0.02}, (0, 1, 2)),
    "muon-0.05": ({"muon_lr": 0.05}, (0,)),
}
SEEDS = (0, 1)
# 消融表的行：交给 GPTConfig 的选项。SwiGLU 的隐藏层默认是 round(2/3·4·d_model)，参数量与 4·d_model 的
# 两层前馈网络相当；GQA 让 4 个查询头共用 2 组 K、V
ABLATIONS: dict[str, dict] = {
    "gpt2": {},
    "rmsnorm": {"norm": "rmsnorm"},
    "rope": {"position": "rope"},
    "swiglu": {"ffn": "swiglu"},
    "gqa": {"num_kv_heads": 2},
    "no-bias": {"bias": False},
    "nope": {"position": "none"},
    "llama": {
        "norm": "rmsnorm", "position": "rope", "ffn": "swiglu", "num_kv_heads": 2, "bias": False
    },
}  # fmt: skip


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
    ``curve`` 是每次评估的 [步数, 每字比特数]；``valid_top1``、``valid_exact`` 见 :func:`top1_accuracy`
    （在训练结束时的模型上量）。
    """
    vocab, train_all, valid = _data()
    poems = train_all if exp.train_poems is None else train_all[: exp.train_poems]
    model = make_model(
        vocab, exp.d_model, exp.num_layers, exp.num_heads, seed=exp.seed, **exp.options
    ).to(device)
    params = sum(p.numel() for p in model.parameters())  # 共享的词嵌入只数一次
    chars_per_poem = sum(len(p) + 1 for p in poems) / len(poems)  # 每首的预测数（字符 + <eos>）
    steps, warmup, eval_every = exp.steps, exp.warmup, exp.eval_every
    if exp.flops is not None:  # C = 6·N·D：D = 步数 × 批 × 每首的字数
        steps = max(1, round(exp.flops / (6 * params * exp.batch_size * chars_per_poem)))
        warmup, eval_every = max(1, steps // 10), steps
    started = time.perf_counter()
    result = train(
        model, vocab, poems, valid, steps=steps, seed=exp.seed, batch_size=exp.batch_size,
        lr=exp.lr, warmup=warmup, log_every=eval_every, eval_every=eval_every,
        progress=progress, muon_lr=exp.muon_lr, schedule=exp.schedule,
    )  # fmt: skip
    curve = [[row["step"], round(row["valid_bpc"], 4)] for row in result.valid]
    best = min(curve, key=lambda row: row[1])
    return {
        **asdict(exp),
        "steps": steps,
        "warmup": warmup,
        "eval_every": eval_every,
        "train_poems": len(poems),
        "params": params,
        "non_embedding_params": non_embedding_params(model),
        "tokens": round(steps * exp.batch_size * chars_per_poem),  # 训练中看过的字数（约）
        "train_bpc": round(result.log[-1]["train_bpc"], 4),
        "valid_bpc": curve[-1][1],
        "best_valid_bpc": best[1],
        "best_step": best[0],
        "curve": curve,
        **top1_accuracy(model, valid, vocab),
        "seconds": round(time.perf_counter() - started, 1),
        "train_seconds": round(result.seconds, 1),
        "threads": torch.get_num_threads(),
        "device": device,
    }


EXACT_LENGTHS = (1, 2, 3, 5, 7)  # “整段全对”的段长 L（字）


@torch.no_grad()
def top1_accuracy(model: nn.Module, poems: Sequence[str], vocab: Vocab) -> dict:
    """教师强制下逐字的 top-1 准确率 a，与“连续 L 个字全猜对”的比例（每首诗里每个长 L 的窗口算一次）。

    返回 ``{"valid_top1": a, "valid_exact": {L: 比例}}``；L 取 :data:`EXACT_LENGTHS`，L = 1 时就是 a。
    Schaeffer 等人（2023）：各字独立时整段全对约是 a^L——平滑的 a 放进指数，看起来就会“突然出现”。
    """
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    right, total = 0, 0
    windows = {n: [0, 0] for n in EXACT_LENGTHS}  # L -> [全对的窗口数, 窗口数]
    for i in range(0, len(poems), 20):  # 每批 20 首，内存同 training.evaluate
        x, y = make_batch(poems[i : i + 20], vocab)
        hit = (model(x.to(device)).argmax(-1) == y.to(device)).cpu()  # (B, T, V) -> (B, T)
        for row, target in zip(hit.tolist(), y.tolist(), strict=True):
            n = sum(t != vocab.pad_id for t in target)  # 这首诗的预测数（字符 + <eos>）
            right, total = right + sum(row[:n]), total + n
            for length, counts in windows.items():
                runs = [all(row[j : j + length]) for j in range(n - length + 1)]
                counts[0], counts[1] = counts[0] + sum(runs), counts[1] + len(runs)
    model.train(was_training)
    exact = {str(n): round(ok / count, 5) for n, (ok, count) in windows.items()}
    return {"valid_top1": round(right / total, 5), "valid_exact": exact}


def load_results() -> dict:
    """随包发布的实验结果（``data/scale_lab.json``）：``provenance`` 与 ``runs``（每个实验一行，见 :func:`run`）。"""
    path = files("tinyformer.poetry") / "data" / "scale_lab.json"
    return json.loads(path.read_text(encoding="utf-8"))


def _linear_fit(
    columns: Sequence[Sequence[float]], y: Sequence[float]
) -> tuple[list[float], float]:
    """最小二乘 y ≈ Σ_j w_j · columns[j]：解正规方程 (XᵀX) w = Xᵀy（高斯消元，列主元），
    返回 (w, 残差平方和)。列只有两三个，全用 Python 的 float 逐项算，任何 CPU 上结果相同。"""
    k = len(columns)
    # 增广矩阵 [XᵀX | Xᵀy]：k × (k + 1)
    rows = [
        [sum(p * q for p, q in zip(columns[i], columns[j], strict=True)) for j in range(k)]
        + [sum(p * q for p, q in zip(columns[i], y, strict=True))]
        for i in range(k)
    ]
    for i in range(k):
        pivot = max(range(i, k), key=lambda r: abs(rows[r][i]))
        rows[i], rows[pivot] = rows[pivot], rows[i]
        for r in range(i + 1, k):
            factor = rows[r][i] / rows[i][i]
            rows[r] = [a - factor * b for a, b in zip(rows[r], rows[i], strict=True)]
    w = [0.0] * k
    for i in reversed(range(k)):  # 回代
        w[i] = (rows[i][k] - sum(rows[i][j] * w[j] for j in range(i + 1, k))) / rows[i][i]
    sse = sum((v - sum(w[j] * columns[j][n] for j in range(k))) ** 2 for n, v in enumerate(y))
    return w, sse


def fit_power_law(
    x: Sequence[float], y: Sequence[float], with_floor: bool = True
) -> dict[str, float]:
    r"""最小二乘拟合 :math:`y = a\,x^{-lpha} + c`（``with_floor=False`` 时 :math:`c = 0`，即双对数坐标里的直线
    :math:`\log y = \log a - lpha \log x`）。

    给定 α，模型对 (a, c) 是线性的，最小二乘有闭式解；于是只需在 α 上找残差平方和最小的点：先在
    [0.001, 3] 上按 0.001 的网格找，再在最好的格点两侧按 1e-6 细找。全部用 Python 的 float（float64）
    逐项计算，任何 CPU 上结果相同。返回 ``{"a", "alpha", "c", "rmse"}``（rmse 是 y 的均方根残差）。

    例子::

        >>> x = [1e3, 1e4, 1e5, 1e6]
        >>> fit = fit_power_law(x, [20 * v**-0.3 + 5 for v in x])
        >>> round(fit["a"], 3), round(fit["alpha"], 4), round(fit["c"], 4)
        (20.0, 0.3, 5.0)
    """
    if len(x) != len(y) or len(x) < (3 if with_floor else 2):
        raise ValueError(
            f"need as many x as y and at least {3 if with_floor else 2} points, "
            f"got {len(x)} x and {len(y)} y"
        )
    if with_floor:

        def solve(alpha: float) -> tuple[list[float], float]:
            return _linear_fit([[v**-alpha for v in x], [1.0] * len(x)], y)

        grid = [k / 1000 for k in range(1, 3001)]
        best = min(grid, key=lambda alpha: solve(alpha)[1])
        fine = [best + k * 1e-6 for k in range(-999, 1001)]  # α > 0：α = 0 时 u 与 1 是同一列
        alpha = min(fine, key=lambda alpha: solve(alpha)[1])
        (a, c), sse = solve(alpha)
    else:  # log y = log a − α log x：直线的最小二乘
        (log_a, slope), _ = _linear_fit(
            [[1.0] * len(x), [math.log(v) for v in x]], [math.log(v) for v in y]
        )
        a, alpha, c = math.exp(log_a), -slope, 0.0
        sse = sum((v - a * u**-alpha) ** 2 for u, v in zip(x, y, strict=True))
    return {"a": a, "alpha": alpha, "c": c, "rmse": math.sqrt(sse / len(x))}


def best_isoflop_runs(rows: Sequence[dict]) -> dict[float, list[dict]]:
    """等计算量实验里每个预算、每个尺寸最好的那一次（学习率按尺寸调：同一尺寸跑过几个学习率时取验证集
    每字比特数最低的），按全部参数排好：``{预算: [行, …]}``。外推的那一次（``iso-predict``）不算。"""
    best: dict[tuple[float, int, int], dict] = {}
    for row in rows:
        if row["group"] != "isoflop" or row["name"].startswith("iso-predict"):
            continue
        key = (row["flops"], row["d_model"], row["num_layers"])
        if key not in best or row["valid_bpc"] < best[key]["valid_bpc"]:
            best[key] = row
    runs: dict[float, list[dict]] = {}
    for (flops, _, _), row in sorted(best.items()):
        runs.setdefault(flops, []).append(row)
    return {flops: sorted(r, key=lambda row: row["params"]) for flops, r in runs.items()}


def isoflop_points(
    rows: Sequence[dict], count: str = "params"
) -> dict[float, list[tuple[int, float]]]:
    """:func:`best_isoflop_runs` 的点：每个预算一组 [(参数量, 验证集每字比特数)]。``count`` 是参数的数法：
    ``"params"``（全部参数，Chinchilla）或 ``"non_embedding_params"``（不算嵌入，Kaplan）。"""
    if count not in ("params", "non_embedding_params"):
        raise ValueError(f"count must be 'params' or 'non_embedding_params', got {count!r}")
    return {
        flops: sorted((row[count], row["valid_bpc"]) for row in runs)
        for flops, runs in best_isoflop_runs(rows).items()
    }


def _parabola(x: Sequence[float], y: Sequence[float]) -> list[float]:
    """最小二乘 y ≈ p0 + p1·x + p2·x²，返回 [p0, p1, p2]；开口向下（p2 ≤ 0，没有最低点）时报错。"""
    p, _ = _linear_fit([[1.0] * len(x), list(x), [v * v for v in x]], y)
    if p[2] <= 0:
        raise ValueError(f"the parabola through these points opens downward (p2 = {p[2]:.3g})")
    return p


def fit_isoflop(
    points: dict[float, list[tuple[int, float]]],
    predict_at: float,
    resamples: int = 1000,
    seed: int = 0,
) -> dict:
    r"""Hoffmann 等人的“方法二”：每个预算 C 上，损失对 :math:`\ln N` 拟合一条抛物线，它的最低点给出
    这个预算下最好的尺寸 :math:`N^*(C)` 与损失 :math:`L^*(C)`；再在双对数坐标里拟合两条直线
    :math:`N^* \propto C^{a}`、:math:`L^* \propto C^{-\gamma}`，外推到 ``predict_at``。

    区间来自残差自助法：各预算抛物线的残差合在一起（按自由度放大），每次有放回地抽一份加回拟合值，
    整个拟合重做一遍；``resamples`` 次里取 2.5% 与 97.5% 分位（开口向下、没有最低点的那几次不算，
    ``dropped`` 记它们的个数）。``observed_interval`` 是 *一次* 新的训练在 ``predict_at`` 上会落在哪里：
    每次的外推值再加一个抽出的残差（种子噪声与拟合不上的部分都在残差里）。全用 Python 的 float，``random.Random(seed)`` 抽样，任何 CPU 上结果相同。

    返回 ``{"minima": [(C, N*, L*)], "parabolas": [(C, p0, p1, p2)], "a", "gamma", "n_pred",
    "loss_pred"}``，``resamples`` > 0 时还有每个量的 ``"<量>_interval"``（2.5%、97.5% 分位）和
    ``"dropped"``。
    """
    budgets = sorted(points)
    if len(budgets) < 2 or any(len(points[c]) < 4 for c in budgets):
        raise ValueError(
            f"need at least 2 budgets with at least 4 sizes each, got "
            f"{[len(points[c]) for c in budgets]} sizes for {len(budgets)} budgets"
        )
    xs = {c: [math.log(n) for n, _ in points[c]] for c in budgets}

    def laws(ys: dict[float, list[float]]) -> dict:
        parabolas = {c: _parabola(xs[c], ys[c]) for c in budgets}
        minima = [  # 抛物线的顶点：x* = −p1 / (2·p2)，y* = p0 − p1² / (4·p2)
            (c, math.exp(-p1 / (2 * p2)), p0 - p1 * p1 / (4 * p2))
            for c, (p0, p1, p2) in parabolas.items()
        ]
        log_c = [math.log(c) for c, _, _ in minima]
        ones = [1.0] * len(minima)
        (k_n, a), _ = _linear_fit([ones, log_c], [math.log(n) for _, n, _ in minima])
        (k_l, slope), _ = _linear_fit([ones, log_c], [math.log(v) for _, _, v in minima])
        return {
            "minima": minima, "parabolas": [(c, *p) for c, p in parabolas.items()],
            "a": a, "gamma": -slope,
            "n_pred": math.exp(k_n + a * math.log(predict_at)),
            "loss_pred": math.exp(k_l + slope * math.log(predict_at)),
        }  # fmt: skip

    ys = {c: [v for _, v in points[c]] for c in budgets}
    fit = laws(ys)
    fitted = {c: [p0 + p1 * v + p2 * v * v for v in xs[c]] for c, p0, p1, p2 in fit["parabolas"]}
    if resamples == 0:
        return fit
    residuals = [v - f for c in budgets for v, f in zip(ys[c], fitted[c], strict=True)]
    scale_up = math.sqrt(len(residuals) / (len(residuals) - 3 * len(budgets)))
    rng, draws, dropped = random.Random(seed), [], 0
    for _ in range(resamples):
        fake = {c: [f + scale_up * rng.choice(residuals) for f in fitted[c]] for c in budgets}
        try:
            draws.append(laws(fake))
        except ValueError:  # 这一份数据的某条抛物线开口向下
            dropped += 1
    for draw in draws:
        draw["observed"] = draw["loss_pred"] + scale_up * rng.choice(residuals)
    for key in ("a", "gamma", "n_pred", "loss_pred", "observed"):
        values = sorted(d[key] for d in draws)
        fit[f"{key}_interval"] = (
            values[int(0.025 * len(values))], values[int(0.975 * len(values)) - 1]
        )  # fmt: skip
    fit["dropped"] = dropped
    return fit
