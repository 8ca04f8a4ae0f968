r"""训练：批量与掩码、标签平滑的交叉熵、学习率预热、训练循环、按验证集挑选权重（“完整模型”一章讲解）。

一步训练 = 取一批句对 → 源句、目标句各自用 ``<pad>`` 补齐 → 教师强制（teacher forcing）：
解码器输入是 ``<bos> y_1 … y_n``，要预测的是 ``y_1 … y_n <eos>``（右移一位）→
标签平滑的交叉熵（忽略填充位置）→ 反向传播 → Adam 按预热学习率更新一步。

掩码不用在这里造：:class:`~tinyformer.Transformer` 的 ``forward`` 按 ``pad_id`` 自己构造
源端填充掩码 (B, 1, 1, S) 和目标端的 填充 & 因果 掩码 (B, 1, T, T)。
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

from .._checks import (
    check_dropout,
    check_floating,
    check_indices,
    check_instance,
    check_int,
    check_nonnegative_float,
    check_positive_float,
    check_positive_int,
    check_seed,
    check_tensor,
)
from .._random import seeded
from ..model import TransformerConfig
from ..optim import AdamW
from ..text import Vocab, pad_sequences, tokenize_en
from .corpus import TranslationCorpus, corpus_tokenizer, generate_corpus
from .translator import Translator, new_translator


@dataclass(frozen=True)
class Batch:
    """一批训练样本，都已用 ``pad_id`` 补齐：源句 (B, S)，解码器输入 ``<bos> y_1 … y_n`` (B, T)，
    要预测的 ``y_1 … y_n <eos>`` (B, T)（``tgt_in`` 左移一位）。"""

    src: Tensor
    tgt_in: Tensor
    tgt_out: Tensor
    pad_id: int = 0


def encode_pairs(
    pairs: Sequence,
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    tokenizer: Callable[[str], list[str]] = corpus_tokenizer,
) -> list[tuple[list[int], list[int]]]:
    """句对（有 ``.zh``、``.en``）→ (源句编号, 目标句编号)。源句用 ``tokenizer`` 分词（默认语料的
    ``corpus_tokenizer``：词表是用它建的），目标句两端加 ``<bos>``/``<eos>``。

    例子::

        >>> from tinyformer.translation.corpus import generate_corpus
        >>> corpus = generate_corpus()
        >>> src_vocab, tgt_vocab = corpus.build_vocabs()
        >>> src, tgt = encode_pairs(corpus.train[:1], src_vocab, tgt_vocab)[0]
        >>> src_vocab.decode(src), tgt_vocab.decode(tgt)
        (['学生', '们', '在', '北京', '看', '电影', '吗', '？'], ['<bos>', 'do', 'the', 'students', 'watch', 'movies', 'in', 'beijing', '?', '<eos>'])
    """
    return [
        (
            src_vocab.encode(tokenizer(p.zh)),
            tgt_vocab.encode(tokenize_en(p.en), add_bos=True, add_eos=True),
        )
        for p in pairs
    ]


def make_batch(examples: Sequence[tuple[list[int], list[int]]], pad_id: int = 0) -> Batch:
    """(源句编号, 带 <bos>/<eos> 的目标句编号) 的列表 → :class:`Batch`。

    例子::

        >>> batch = make_batch([([5, 6, 7], [2, 8, 9, 3]), ([5], [2, 8, 3])])
        >>> batch.src.tolist(), batch.tgt_in.tolist(), batch.tgt_out.tolist()
        ([[5, 6, 7], [5, 0, 0]], [[2, 8, 9], [2, 8, 3]], [[8, 9, 3], [8, 3, 0]])
    """
    src = pad_sequences([s for s, _ in examples], pad_id)  # (B, S)
    tgt = pad_sequences([t for _, t in examples], pad_id)  # (B, T + 1)
    # 教师强制：输入去掉最后一个，目标去掉第一个 (<bos>)
    return Batch(src=src, tgt_in=tgt[:, :-1], tgt_out=tgt[:, 1:], pad_id=pad_id)


def iterate_batches(
    examples: Sequence[tuple[list[int], list[int]]],
    batch_size: int,
    pad_id: int = 0,
    shuffle: bool = False,
    generator: torch.Generator | None = None,
) -> Iterator[Batch]:
    """按 ``batch_size`` 切成批（最后一批可能较小）；``shuffle`` 时用 ``generator`` 打乱顺序。"""
    check_positive_int("batch_size", batch_size)
    order = torch.randperm(len(examples), generator=generator) if shuffle else range(len(examples))
    order = list(order)
    for i in range(0, len(order), batch_size):
        yield make_batch([examples[j] for j in order[i : i + batch_size]], pad_id)


def label_smoothed_cross_entropy(
    logits: Tensor, target: Tensor, smoothing: float = 0.1, ignore_index: int = 0
) -> Tensor:
    r"""标签平滑的交叉熵，对非填充位置取平均。

    真实分布不再是 one-hot，而是把 ε 的概率平均分给全部 V 个词元：

    .. math::

        q_w = (1 - \varepsilon)\,[w = y] + \varepsilon / V, \qquad
        \mathcal{L} = -\sum_w q_w \log p_w
        = (1 - \varepsilon)(-\log p_y) + \varepsilon \cdot \frac{1}{V}\sum_w (-\log p_w)

    与 ``F.cross_entropy(logits, target, label_smoothing=ε, ignore_index=pad)`` 相同
    （“完整模型”一章和测试都核对）。论文 §5.4 用 ε = 0.1。

    logits (..., V)，target (...)，smoothing 即 ε，在 [0, 1) 内。``ignore_index``（默认 0，
    即 ``<pad>``）的位置不计入损失，它可以在 [0, V) 之外（如 torch 的惯例 -100）；
    全部位置都被忽略时返回 0（``F.cross_entropy`` 返回 nan）。

    例子::

        >>> import torch, torch.nn.functional as F
        >>> logits, target = torch.randn(2, 5, 7), torch.tensor([[3, 4, 5, 0, 0], [1, 2, 3, 4, 5]])
        >>> ours = label_smoothed_cross_entropy(logits, target, 0.1, ignore_index=0)
        >>> torch.allclose(ours, F.cross_entropy(logits.view(-1, 7), target.view(-1),
        ...                                      label_smoothing=0.1, ignore_index=0))
        True
    """
    check_tensor("logits", logits, "(..., V)")
    check_floating("logits", logits)
    check_dropout("smoothing", smoothing)  # 与丢弃概率同一条规则：[0, 1)
    check_int("ignore_index", ignore_index)
    if not isinstance(target, Tensor) or logits.shape[:-1] != target.shape:
        got = tuple(target.shape) if isinstance(target, Tensor) else type(target).__name__
        raise ValueError(
            f"target must have shape logits.shape[:-1] = {tuple(logits.shape[:-1])}, got {got}"
        )
    keep = target != ignore_index  # (...)
    # 被忽略的位置可能是 -100 这样的编号：先换成 0 再取 log p，这些位置最后不计入损失
    check_indices("target", target[keep], logits.shape[-1], "V")
    safe_target = target.masked_fill(~keep, 0)  # (...)
    log_p = torch.log_softmax(logits.float(), dim=-1)  # (..., V)
    nll = -log_p.gather(-1, safe_target.unsqueeze(-1)).squeeze(-1)  # -log p_y: (...)
    uniform = -log_p.mean(dim=-1)  # (1/V) Σ_w -log p_w: (...)
    loss = (1 - smoothing) * nll + smoothing * uniform  # (...)
    return loss[keep].sum() / keep.sum().clamp(min=1)


def warmup_lr(step: int, d_model: int, warmup: int, factor: float = 1.0) -> float:
    r"""论文 §5.3 的学习率：先线性升高 ``warmup`` 步，再按步数的 -1/2 次方下降。

    .. math::

        \mathrm{lr}(n) = \mathrm{factor} \cdot d_{model}^{-0.5}
        \cdot \min(n^{-0.5},\ n \cdot \mathrm{warmup}^{-1.5})

    峰值在 n = warmup，等于 factor / √(d_model · warmup)。``step`` 从 1 数起。

    例子::

        >>> round(warmup_lr(4000, d_model=512, warmup=4000), 6)  # 论文 base 模型的峰值
        0.000699
    """
    check_positive_int("step", step)
    check_positive_int("d_model", d_model)
    check_positive_int("warmup", warmup)
    check_nonnegative_float("factor", factor)
    return factor * d_model**-0.5 * min(step**-0.5, step * warmup**-1.5)


def make_optimizer(model: nn.Module) -> AdamW:
    """论文的优化器：Adam(β1=0.9, β2=0.98, ε=1e-9)，即不带权重衰减的 :class:`~tinyformer.optim.AdamW`。

    学习率每一步由训练循环按 :func:`warmup_lr` 写进 ``optimizer.param_groups``。
    """
    return AdamW(model.parameters(), lr=0.0, betas=(0.9, 0.98), eps=1e-9, weight_decay=0.0)


@dataclass
class TrainHistory:
    """训练记录：每一步的损失和学习率，以及总步数、用时（秒）。"""

    losses: list[float] = field(default_factory=list)
    lrs: list[float] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def steps(self) -> int:
        return len(self.losses)


def train(
    model: nn.Module,
    examples: Sequence[tuple[list[int], list[int]]],
    max_steps: int | None = None,
    max_seconds: float | None = None,
    batch_size: int = 64,
    smoothing: float = 0.1,
    warmup: int = 400,
    lr_factor: float = 1.0,
    seed: int = 0,
    progress: bool = True,
    callback=None,
) -> TrainHistory:
    """训练 ``model``，直到走满 ``max_steps`` 步或用满 ``max_seconds`` 秒（先到者为准）。

    每个 epoch 用 ``torch.Generator().manual_seed(seed + epoch)`` 打乱顺序；dropout 的随机数
    来自 ``torch.manual_seed(seed)``（在 ``torch.random.fork_rng`` 里，训练前后全局随机数状态不变）。
    所以只给 ``max_steps`` 时，同一台机器上重复训练的结果完全相同；给 ``max_seconds`` 时走多少步取决于机器快慢。

    ``model`` 是 :class:`~tinyformer.Transformer`，或任何 ``forward(src, tgt_in)`` 返回 logits、带
    ``config``（:class:`~tinyformer.TransformerConfig`）的模块（基准脚本用它训练同尺寸的
    ``torch.nn.Transformer``），训练后保持 ``train()`` 模式；``examples`` 是 :func:`encode_pairs` 的结果；
    ``smoothing`` 是标签平滑 ε；``warmup``、``lr_factor`` 传给 :func:`warmup_lr`。进度条只显示步数和损失，
    不显示用时。``callback(step, model)`` 每步之后调用，返回 ``True`` 时提前停止（基准脚本用它评估）。
    返回 :class:`TrainHistory`。
    """
    check_instance("model", model, nn.Module)
    check_instance("model.config", getattr(model, "config", None), TransformerConfig)
    if max_steps is None and max_seconds is None:
        raise ValueError("give max_steps or max_seconds (or both), got neither")
    if max_steps is not None:
        check_positive_int("max_steps", max_steps)
    if max_seconds is not None:
        check_positive_float("max_seconds", max_seconds)
    check_positive_int("batch_size", batch_size)
    check_dropout("smoothing", smoothing)
    check_positive_int("warmup", warmup)
    check_nonnegative_float("lr_factor", lr_factor)
    check_seed("seed", seed)
    if not examples:
        raise ValueError("examples must not be empty")
    from tqdm.auto import tqdm  # 笔记本里是控件，终端里是文本进度条

    with seeded(seed):  # dropout 的随机数；训练完，全局随机数状态与训练前相同
        pad_id = model.config.pad_id
        optimizer = make_optimizer(model)
        history = TrainHistory()
        bar = tqdm(
            total=max_steps,
            disable=not progress,
            # 不显示用时和速度：笔记本里保存的进度条因此每次执行都一样
            bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} 步{postfix}"
            if max_steps
            else "{n_fmt} 步{postfix}",
            desc="训练",
        )
        model.train()
        start = time.perf_counter()
        epoch = 0
        done = False
        while not done:
            generator = torch.Generator().manual_seed(seed + epoch)
            for batch in iterate_batches(examples, batch_size, pad_id, True, generator):
                logits = model(batch.src, batch.tgt_in)  # (B, T, V)
                loss = label_smoothed_cross_entropy(logits, batch.tgt_out, smoothing, pad_id)
                optimizer.zero_grad()
                loss.backward()
                lr = warmup_lr(history.steps + 1, model.config.d_model, warmup, lr_factor)
                for group in optimizer.param_groups:
                    group["lr"] = lr
                optimizer.step()
                history.lrs.append(lr)
                history.losses.append(loss.item())
                if not math.isfinite(history.losses[-1]):
                    raise ValueError(
                        f"training diverged: the loss became {history.losses[-1]} at step "
                        f"{history.steps}; lower lr_factor={lr_factor} or raise warmup={warmup}"
                    )
                bar.update(1)
                if history.steps % 50 == 0:
                    bar.set_postfix_str(f"损失 {loss.item():.3f}", refresh=False)
                history.seconds = time.perf_counter() - start
                stop = callback is not None and callback(history.steps, model)
                if (
                    stop
                    or (max_steps is not None and history.steps >= max_steps)
                    or (max_seconds is not None and history.seconds >= max_seconds)
                ):
                    done = True
                    break
            epoch += 1
        bar.set_postfix_str(f"损失 {history.losses[-1]:.3f}")
        bar.close()
    return history


def num_parameters(model: nn.Module) -> int:
    """参数个数（共享的权重只数一次）。"""
    return sum(p.numel() for p in model.parameters())


def fit_translator(
    seed: int = 0,
    max_steps: int | None = None,
    max_seconds: float | None = None,
    progress: bool = True,
    eval_every: int = 200,
    corpus: TranslationCorpus | None = None,
) -> tuple[Translator, TrainHistory, TranslationCorpus, dict]:
    """生成语料（``seed``；也可以直接给 ``corpus``）、建“完整模型”一章尺寸的模型、训练，按验证集挑选权重。

    每 ``eval_every`` 步在 **验证集** 上算一次完全匹配率，记下最好的那一份权重（同分时取较早的）；
    训练结束后把它装回模型。测试集只在最后用一次——挑选权重不能看测试集，否则测试分数就不再是
    "没见过的数据"上的分数了。``python -m tinyformer.translation train`` 就是它加上评估和保存检查点。

    返回:
        (翻译器, 训练记录, 语料, ``{"best_step": 步数, "best_valid_exact_match": 完全匹配率}``)。
    """
    check_positive_int("eval_every", eval_every)
    check_instance("corpus", corpus, TranslationCorpus, allow_none=True)
    if corpus is None:
        corpus = generate_corpus(seed=seed)
    src_vocab, tgt_vocab = corpus.build_vocabs()
    translator = new_translator(src_vocab, tgt_vocab, seed=seed)
    examples = encode_pairs(corpus.train, src_vocab, tgt_vocab)
    best = {"best_step": 0, "best_valid_exact_match": -1.0}
    best_state = None

    def select(step: int, model) -> bool:
        nonlocal best_state
        if step % eval_every == 0:
            exact = translator.evaluate(corpus.valid).exact_match
            model.train()  # evaluate 把模型切到了 eval 模式
            if exact > best["best_valid_exact_match"]:
                best.update(best_step=step, best_valid_exact_match=exact)
                best_state = copy.deepcopy(model.state_dict())
        return False

    history = train(
        translator.model,
        examples,
        max_steps=max_steps,
        max_seconds=max_seconds,
        seed=seed,
        progress=progress,
        callback=select,
    )
    final = translator.evaluate(corpus.valid).exact_match  # 最后一步的权重也参加挑选
    if final >= best["best_valid_exact_match"]:
        best.update(best_step=history.steps, best_valid_exact_match=final)
    else:
        translator.model.load_state_dict(best_state)
    translator.model.eval()
    return translator, history, corpus, best


def train_and_score(
    seed: int = 0,
    max_steps: int | None = None,
    max_seconds: float | None = None,
    beam_size: int = 1,
    progress: bool = True,
    corpus: TranslationCorpus | None = None,
) -> tuple[Translator, dict]:
    """:func:`fit_translator`，再在验证集和留出的测试集上评估（束宽 ``beam_size``）。

    返回 (翻译器, 指标)：指标是 ``python -m tinyformer.translation train`` 打印、存进检查点的那些数
    （种子、步数、用时、最后的损失、挑中的步数、验证集与测试集的完全匹配率和 BLEU）。
    """
    translator, history, corpus, best = fit_translator(
        seed, max_steps, max_seconds, progress=progress, corpus=corpus
    )
    test = translator.evaluate(corpus.test, beam_size=beam_size)
    valid = translator.evaluate(corpus.valid, beam_size=beam_size)
    return translator, {
        "seed": seed,
        "steps": history.steps,
        "train_seconds": round(history.seconds, 1),
        "final_loss": round(history.losses[-1], 4),
        "best_step": best["best_step"],
        "valid_exact_match": round(valid.exact_match, 4),
        "valid_bleu": round(valid.bleu, 2),
        "test_exact_match": round(test.exact_match, 4),
        "test_bleu": round(test.bleu, 2),
        "test_sentences": len(corpus.test),
        "beam_size": beam_size,
    }
