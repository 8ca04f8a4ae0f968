"""在全唐诗上预训练 GPT：批、学习率、每字比特数、训练循环、可选的多进程（“只有解码器”一章讲解）。

每首诗是一条序列 ``<bos> 诗 <eos>``，一批里短的在末尾补 ``<pad>``。语言模型的目标是
"由前面的字预测下一个字"：输入 = 序列去掉最后一个，目标 = 序列去掉第一个，损失对 ``<pad>`` 不计。
填充只在末尾，因果注意力又只看前面，所以真实的字永远看不到填充——不需要填充掩码。

多进程（``torchrun --nproc_per_node=2 -m tinyformer.poetry train ...``）：每个进程用同一个种子算出
同一个全局批，第 r 个进程拿其中的第 r, r+W, r+2W, … 首诗（W = 进程数）；
``DistributedDataParallel`` 在反向时把各进程的梯度 **取平均**。每个进程的损失写成
"本进程的负对数似然之和 × W / 全局批的目标字数"，取平均之后恰好是整批的平均损失，
所以 W 个进程上的梯度与一个进程在整批上的梯度相同（只差浮点求和的顺序，测试按容差核对）。
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .._checks import check_choice, check_positive_int
from .._random import seeded
from ..gpt import GPT, GPTConfig
from ..optim import AdamW, Muon
from .corpus import Vocab

__all__ = [
    "MAX_LEN",
    "TrainResult",
    "batch_loss",
    "batches",
    "evaluate",
    "lr_at",
    "SCHEDULES",
    "make_batch",
    "make_model",
    "setup_distributed",
    "train",
]

MAX_LEN = 8 * 8 + 2  # 最长的诗（七律：8 句 × (7 字 + 1 个标点)）+ <bos> + <eos>


def make_model(
    vocab: Vocab,
    d_model: int = 128,
    num_layers: int = 4,
    num_heads: int = 4,
    seed: int = 0,
    **options,
) -> GPT:
    """一个为这份语料定尺寸的 :class:`~tinyformer.GPT`：词表 = ``len(vocab)``，max_len = :data:`MAX_LEN`。

    ``options`` 原样交给 :class:`~tinyformer.GPTConfig`（如 ``d_ff``），默认是 GPT-2 式的块。
    """
    with seeded(seed):
        config = GPTConfig(
            vocab_size=len(vocab), max_len=MAX_LEN, d_model=d_model,
            num_heads=num_heads, num_layers=num_layers, **options,
        )  # fmt: skip
        return GPT(config)


def make_batch(poems: Sequence[str], vocab: Vocab) -> tuple[Tensor, Tensor]:
    """诗 → (输入, 目标)，都在末尾用 ``<pad>``（0）补齐。

    形状: 输入、目标都是 (B, T)，T = 最长的诗的字数 + 1。

    例子::

        >>> vocab = Vocab(["<pad>", "<unk>", "<bos>", "<eos>", "春", "花"])
        >>> x, y = make_batch(["春花", "花"], vocab)
        >>> x.tolist(), y.tolist()
        ([[2, 4, 5], [2, 5, 3]], [[4, 5, 3], [5, 3, 0]])
    """
    if not poems:
        raise ValueError("poems must hold at least one poem, got an empty list")
    rows = [vocab.encode(poem, bos=True, eos=True) for poem in poems]
    T = max(len(r) for r in rows)
    ids = torch.tensor([r + [vocab.pad_id] * (T - len(r)) for r in rows])  # (B, T + 1)
    return ids[:, :-1], ids[:, 1:]  # 教师强制：(B, T) 预测 (B, T)


def batch_loss(
    model: nn.Module, poems: Sequence[str], vocab: Vocab, rank: int = 0, world: int = 1
) -> tuple[Tensor, int]:
    """全局批 ``poems`` 里第 ``rank`` 份（第 rank, rank+W, … 首）的损失，已缩放成"整批平均 / W"。

    返回 (损失, 全局批的目标字数)。W 个进程的损失之和（DDP 取平均之前）= 整批的平均负对数似然（nats）。
    """
    device = next(model.parameters()).device
    total = sum(len(poem) + 1 for poem in poems)  # 整批的预测数：每首诗的字符 + <eos>
    x, y = make_batch(poems[rank::world], vocab)
    logits = model(x.to(device))  # (B/W, T, V)
    nll = F.cross_entropy(
        logits.flatten(0, 1), y.to(device).flatten(), ignore_index=vocab.pad_id, reduction="sum"
    )  # (B/W·T, V) 对 (B/W·T,)
    return nll * world / total, total


@torch.no_grad()
def evaluate(model: nn.Module, poems: Sequence[str], vocab: Vocab, batch_size: int = 20) -> float:
    r"""模型在 ``poems`` 上的每字比特数 :math:`-\frac{1}{N}\sum \log_2 p(\text{下一个字})`。

    每次送入 ``batch_size`` 首（默认 20）：一批的 logits 是 (B, T, V) 个 float32，字表 5,341、T = 65 时
    一首约 1.4 MB，交叉熵另存一份 log-softmax；20 首约 60 MB，100 首则约 280 MB（Binder 只保证 1 GB）。

    N 与 :func:`~tinyformer.poetry.corpus.bigram_bits_per_char` 的相同：每首诗的每个字符（含 ，。）加 ``<eos>``。
    """
    if not poems:  # 每字比特数是 0/0
        raise ValueError("poems must hold at least one poem, got an empty list")
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    nll, count = 0.0, 0
    for i in range(0, len(poems), batch_size):
        x, y = make_batch(poems[i : i + batch_size], vocab)
        logits = model(x.to(device))  # (B, T, V)
        nll += F.cross_entropy(
            logits.flatten(0, 1), y.to(device).flatten(), ignore_index=vocab.pad_id, reduction="sum"
        ).item()
        count += int((y != vocab.pad_id).sum())
    model.train(was_training)
    return nll / count / math.log(2)


SCHEDULES = ("cosine", "wsd")


def lr_at(
    step: int,
    steps: int,
    lr: float,
    warmup: int,
    floor: float = 0.1,
    schedule: str = "cosine",
    decay: float = 0.2,
) -> float:
    """第 ``step`` 步（从 0 数）的学习率：前 ``warmup`` 步线性升到 ``lr``，然后降到 ``floor·lr``。

    ``schedule="cosine"``（默认）：预热之后按余弦一路降下去。``"wsd"``（warm-up–stable–decay，
    Hu 等 2024 的 MiniCPM）：预热之后停在 ``lr``，最后 ``decay``（默认 20%）的步数里线性降到 ``floor·lr``。

    例子::

        >>> [round(lr_at(s, 10, 1.0, 2), 3) for s in (0, 1, 2, 6, 9)]
        [0.5, 1.0, 1.0, 0.45, 0.1]
        >>> [round(lr_at(s, 10, 1.0, 2, schedule="wsd"), 3) for s in (0, 1, 2, 6, 7, 8, 9)]
        [0.5, 1.0, 1.0, 1.0, 1.0, 0.55, 0.1]
    """
    if step < warmup:
        return lr * (step + 1) / warmup
    if schedule == "wsd":
        start = steps - max(1, round(decay * steps))  # 从这一步起线性下降
        if step < start:
            return lr
        progress = (step - start + 1) / (steps - start)  # 降段的第一步已开始降，最后一步到 floor
        return lr * (1 - (1 - floor) * min(1.0, progress))
    progress = (step - warmup) / max(1, steps - warmup - 1)  # 0 → 1
    return lr * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * min(1.0, progress))))


def batches(
    poems: Sequence[str], batch_size: int, generator: torch.Generator, chunk: int = 16
) -> Iterator[list[str]]:
    """无穷的批：每轮打乱一次，每 ``chunk`` 个批的诗按字数排序后再切批，批的顺序再打乱。

    同一批的诗字数相近，补的 ``<pad>`` 就少（全随机时平均约三分之一的位置是填充）；
    批的顺序与每轮的打乱都只取决于 ``generator``。每轮末尾凑不满一批的几首在这一轮里不用。

    例子::

        >>> g = torch.Generator().manual_seed(0)
        >>> batch = next(batches(["春眠不觉晓", "春", "花落", "知多少"], 2, g, chunk=2))
        >>> [len(poem) for poem in batch]  # 字数相近的在一批
        [1, 2]
    """
    check_positive_int("batch_size", batch_size)
    if batch_size > len(poems):  # 否则一轮里凑不出一批，下面的循环永远空转
        raise ValueError(
            f"batch_size must be at most the number of poems, got batch_size={batch_size} "
            f"for {len(poems)} poems"
        )
    return _batches(poems, batch_size, generator, chunk)  # 检查在调用时就做，不等第一个 next()


def _batches(
    poems: Sequence[str], batch_size: int, generator: torch.Generator, chunk: int
) -> Iterator[list[str]]:
    while True:
        order = torch.randperm(len(poems), generator=generator).tolist()
        span = batch_size * chunk
        epoch = []
        for i in range(0, len(order) - batch_size + 1, span):
            # 稳定排序：同样长的按打乱后的顺序
            part = sorted(order[i : i + span], key=lambda j: len(poems[j]))
            epoch += [
                part[k : k + batch_size] for k in range(0, len(part) - batch_size + 1, batch_size)
            ]
        for b in torch.randperm(len(epoch), generator=generator).tolist():
            yield [poems[j] for j in epoch[b]]


def setup_distributed(device: str) -> tuple[int, int]:
    """在 ``torchrun`` 下（环境里有 ``WORLD_SIZE`` > 1）初始化进程组：CPU 用 gloo，cuda 用 nccl。

    返回 (rank, world)；单进程时是 (0, 1)，什么也不做。
    """
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world == 1:
        return 0, 1
    import torch.distributed as dist

    if not dist.is_initialized():
        if device == "cuda":
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        dist.init_process_group("nccl" if device == "cuda" else "gloo")
    return dist.get_rank(), dist.get_world_size()


@dataclass
class TrainResult:
    """训练的记录：``log`` 每 ``log_every`` 步一行 {step, lr, train_bpc}（这几步训练损失的平均，
    换算成比特），``valid`` 每 ``eval_every`` 步一行 {step, valid_bpc}；``seconds`` 是训练用时（不含评估）。"""

    log: list[dict] = field(default_factory=list)
    valid: list[dict] = field(default_factory=list)
    seconds: float = 0.0


def train(
    model: GPT,
    vocab: Vocab,
    train_poems: Sequence[str],
    valid_poems: Sequence[str],
    steps: int,
    seed: int = 0,
    batch_size: int = 64,
    lr: float = 3e-3,
    warmup: int = 100,
    weight_decay: float = 0.1,
    log_every: int = 50,
    eval_every: int = 500,
    progress: Callable[[str], None] | None = None,
    accumulate: int = 1,
    muon_lr: float | None = None,
    schedule: str = "cosine",
) -> TrainResult:
    """AdamW + 预热 + 余弦，训练 ``steps`` 步（就地修改 ``model``），返回 :class:`TrainResult`。

    ``muon_lr`` 给出时，块里的权重矩阵改用 :class:`~tinyformer.optim.Muon`（峰值学习率 ``muon_lr``，
    同一条学习率曲线），词嵌入（兼输出层）、位置嵌入、偏置和归一化的增益仍用 AdamW（``lr``）。

    ``accumulate`` > 1 时每步把批分成 ``accumulate`` 份（第 j, j+A, … 首），逐份前向、反向，梯度在
    参数上累加，再走一步：与 DDP 分给各进程的是同一种切分（:func:`batch_loss`），所以梯度与整批一起算的
    相同（到浮点舍入），激活值只占约 1/A 的内存。

    ``schedule`` 是学习率曲线：``"cosine"``（默认）或 ``"wsd"``，见 :func:`lr_at`。

    数据顺序只取决于 ``seed``（:func:`batches`：每轮打乱，字数相近的诗放在同一批）。
    在 ``torchrun`` 下先调用 :func:`setup_distributed`，这里按进程组的 rank、world 分批、包上 DDP。
    权重衰减只加在矩阵上（嵌入、线性层的权重），不加在偏置和 LayerNorm 上（GPT-2 / nanoGPT 的做法）。
    """
    import torch.distributed as dist

    check_positive_int("steps", steps)
    check_positive_int("accumulate", accumulate)
    check_choice("schedule", schedule, SCHEDULES)
    if not valid_poems:  # 每 eval_every 步与最后一步都在它上面量每字比特数
        raise ValueError("valid_poems must hold at least one poem, got an empty list")
    if accumulate > batch_size:
        raise ValueError(
            f"accumulate must be at most batch_size, got accumulate={accumulate}, batch_size={batch_size}"
        )
    world = dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1
    rank = dist.get_rank() if world > 1 else 0
    net: nn.Module = model
    if world > 1:
        device = next(model.parameters()).device
        net = nn.parallel.DistributedDataParallel(
            model, device_ids=[device.index] if device.type == "cuda" else None
        )
    matrices = {  # 块里的权重矩阵（共享的词嵌入只列一次，在 token_embedding 下）
        name: p for name, p in model.named_parameters()
        if p.dim() >= 2 and not name.startswith(("token_embedding.", "position_embedding."))
    }  # fmt: skip
    embeddings = [
        p for name, p in model.named_parameters() if p.dim() >= 2 and name not in matrices
    ]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    adam_decay = embeddings if muon_lr is not None else embeddings + list(matrices.values())
    optimizers = [
        AdamW(
            [{"params": adam_decay, "weight_decay": weight_decay},
             {"params": no_decay, "weight_decay": 0.0}],
            lr=lr, betas=(0.9, 0.95),
        )
    ]  # fmt: skip
    peaks = [lr]
    if muon_lr is not None:
        optimizers.append(Muon(list(matrices.values()), lr=muon_lr, weight_decay=weight_decay))
        peaks.append(muon_lr)
    generator = torch.Generator().manual_seed(seed)
    stream = batches(train_poems, batch_size, generator)
    result, running, started = TrainResult(), [], time.perf_counter()
    model.train()
    for step in range(steps):
        batch = next(stream)
        for optimizer, peak in zip(optimizers, peaks, strict=True):
            for group in optimizer.param_groups:
                group["lr"] = lr_at(step, steps, peak, warmup, schedule=schedule)
            optimizer.zero_grad()
        parts = []  # 各份的损失之和 = 整批的平均（单进程时）
        for j in range(accumulate):  # 本进程的第 j 份：全局第 rank·A + j 份（共 W·A 份）
            loss, _ = batch_loss(net, batch, vocab, rank * accumulate + j, world * accumulate)
            share = loss / accumulate
            share.backward()
            parts.append(share.item())
        if not math.isfinite(sum(parts)):  # 发散了：再走下去只会把 nan 写进每个参数
            raise FloatingPointError(
                f"the loss is {sum(parts)} at step {step + 1} (training diverged)"
            )
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        for optimizer in optimizers:
            optimizer.step()
        running.append(sum(parts))  # 单进程时是整批的平均；多进程时是本进程那一份的估计
        if (step + 1) % log_every == 0 or step + 1 == steps:
            bpc = sum(running) / len(running) / math.log(2)
            result.log.append(
                {
                    "step": step + 1,
                    "lr": lr_at(step, steps, lr, warmup, schedule=schedule),
                    "train_bpc": bpc,
                }
            )
            running = []
            if progress:
                progress(f"step {step + 1}/{steps}  train {bpc:.3f} bpc")
        if (step + 1) % eval_every == 0 or step + 1 == steps:
            result.seconds += time.perf_counter() - started
            valid = evaluate(model, valid_poems, vocab)
            result.valid.append({"step": step + 1, "valid_bpc": valid})
            if progress:
                progress(f"step {step + 1}/{steps}  valid {valid:.3f} bpc")
            started = time.perf_counter()
    result.seconds += time.perf_counter() - started
    return result
