r"""解码：贪心解码与束搜索，都可以用键/值缓存增量地算（“完整模型”一章讲解）。

训练时解码器一次看到整句（右移一位的目标句）；翻译一个新句子时没有目标句，只能一个词元
一个词元地生成：第 t 步把已生成的 t 个词元送进解码器，取最后一个位置的 logits 选下一个词元，
直到每句都生成了 ``<eos>`` 或到达长度上限。

- **贪心解码**（greedy decoding）：每步取概率最大的词元。
- **束搜索**（beam search）：每句同时保留 ``beam_size`` 个得分最高的前缀，得分是对数概率之和
  除以长度惩罚 :math:`\mathrm{lp}(y) = ((5 + |y|) / 6)^{\alpha}`（GNMT 的做法）。

``use_cache=True`` 时用 :class:`~tinyformer.KVCache`：每步只送入最新的一个词元，前面位置的
K、V 从缓存取；``use_cache=False`` 时每步把整段前缀重新送入解码器（"完整重算"）。两者得到的
词元完全相同，测试和“完整模型”一章都检查这一点，基准脚本测两者的速度比。
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from ._checks import (
    arguments_checked,
    check_bool,
    check_instance,
    check_int,
    check_memory,
    check_nonnegative_float,
    check_positive_int,
    check_tensor,
)
from .cache import KVCache
from .model import Transformer


def _check_decode_args(
    model, src: Tensor, bos_id: int, eos_id: int, max_len: int, use_cache: bool
) -> None:
    check_instance("model", model, Transformer)
    check_tensor("src", src, "(B, S)")
    vocab_size = model.config.tgt_vocab_size
    for name, value in (("bos_id", bos_id), ("eos_id", eos_id)):
        check_int(name, value)
        if not 0 <= value < vocab_size:
            raise ValueError(
                f"{name} must be in [0, tgt_vocab_size) = [0, {vocab_size}), got {name}={value}"
            )
    check_positive_int("max_len", max_len)
    check_bool("use_cache", use_cache)
    if max_len + 1 > model.config.max_len:  # 解码器最多看到 <bos> + max_len 个词元
        raise ValueError(
            f"max_len + 1 (for <bos>) must be <= model.config.max_len={model.config.max_len}, "
            f"got max_len={max_len}"
        )


def _next_logits(model, ys: Tensor, memory: Tensor, is_pad: Tensor, cache) -> Tensor:
    """已生成的前缀 ys (N, t) → 下一个词元的 logits (N, V)。

    有缓存时只送入最后一个词元（位置由缓存长度决定），否则整段前缀重新送入。
    """
    tgt = ys if cache is None else ys[:, -1:]  # (N, t) 或 (N, 1)
    logits = model.decode(tgt, memory, memory_key_padding_mask=is_pad, cache=cache)  # (N, T, V)
    return logits[:, -1]  # (N, T, V) -> (N, V)


@torch.no_grad()
def greedy_decode(
    model: Transformer,
    src: Tensor,
    bos_id: int,
    eos_id: int,
    max_len: int = 32,
    use_cache: bool = True,
    stop_at_eos: bool = True,
) -> Tensor:
    r"""贪心解码：每步取 :math:`\arg\max_w P(w \mid y_{<t}, x)`。

    参数:
        model: :class:`~tinyformer.Transformer`（请先 ``model.eval()``，否则 dropout 仍在起作用）。
        src: 源句编号，形状 (B, S)，用 ``model.config.pad_id`` 填充。
        bos_id, eos_id: 目标词表的 ``<bos>``、``<eos>`` 编号。
        max_len: 最多生成多少个词元（不含 ``<bos>``，默认 32）。
        use_cache: 是否用键/值缓存（默认 ``True``；结果与 ``False`` 相同，只是更快）。
        stop_at_eos: 为 ``True``（默认）时所有句子都生成 ``<eos>`` 后提前停止；
            ``False`` 时一定生成 ``max_len`` 个词元（基准测试用）。

    返回:
        (B, 1 + L) 的编号，第一列是 ``<bos>``，L ≤ max_len；某句生成 ``<eos>`` 之后的位置
        填 ``pad_id``。

    例子::

        >>> import torch
        >>> from tinyformer import Transformer, TransformerConfig
        >>> config = TransformerConfig(src_vocab_size=12, tgt_vocab_size=12, d_model=16,
        ...     num_heads=4, num_encoder_layers=1, num_decoder_layers=1, d_ff=32, max_len=20)
        >>> model = Transformer(config).eval()
        >>> src = torch.tensor([[5, 6, 7], [8, 9, 0]])
        >>> out = greedy_decode(model, src, bos_id=2, eos_id=3, max_len=6)
        >>> out.shape[0], bool((out[:, 0] == 2).all())
        (2, True)
        >>> torch.equal(out, greedy_decode(model, src, 2, 3, max_len=6, use_cache=False))
        True
    """
    _check_decode_args(model, src, bos_id, eos_id, max_len, use_cache)
    check_bool("stop_at_eos", stop_at_eos)
    B = src.shape[0]
    pad_id = model.config.pad_id
    is_pad = src == pad_id  # (B, S) 源句的填充掩码
    memory = model.encode(src)  # (B, S, C)；encode 检查 src 的编号
    cache = KVCache() if use_cache else None
    ys = torch.full((B, 1), bos_id, dtype=torch.long, device=src.device)  # (B, 1)
    finished = torch.zeros(B, dtype=torch.bool, device=src.device)  # (B,)
    with arguments_checked():  # 以下每一步的参数都已查过
        for _ in range(max_len):
            next_id = _next_logits(model, ys, memory, is_pad, cache).argmax(dim=-1)  # (B,)
            next_id = next_id.masked_fill(finished, pad_id)  # 已结束的句子只补填充
            ys = torch.cat([ys, next_id[:, None]], dim=1)  # (B, t) -> (B, t + 1)
            finished |= next_id == eos_id
            if stop_at_eos and finished.all():  # 读回主机：所有句子都结束了就停
                break
    return ys


def length_penalty(length: Tensor | int, alpha: float) -> Tensor:
    r"""GNMT 的长度惩罚 :math:`((5 + \mathrm{length}) / 6)^{\alpha}`；``alpha=0`` 时恒为 1。

    束搜索用 对数概率之和 / 长度惩罚 给候选打分：对数概率都是负数，不除的话越短的句子
    得分越高，束搜索会偏爱过早结束。

    例子::

        >>> round(float(length_penalty(7, alpha=0.6)), 4), float(length_penalty(7, alpha=0.0))
        (1.5157, 1.0)
    """
    return ((5.0 + torch.as_tensor(length, dtype=torch.float)) / 6.0) ** alpha


@torch.no_grad()
def beam_search(
    model: Transformer,
    src: Tensor,
    bos_id: int,
    eos_id: int,
    beam_size: int = 4,
    max_len: int = 32,
    alpha: float = 0.6,
    use_cache: bool = True,
) -> Tensor:
    r"""束搜索：每句保留 ``beam_size`` 个得分最高的前缀，返回每句得分最高的完整译文。

    得分 :math:`\mathrm{score}(y) = \log P(y \mid x) / \mathrm{lp}(|y|)`，
    :math:`|y|` 是不含 ``<bos>`` 的长度（含 ``<eos>``），见 :func:`length_penalty`。
    每一步，每条未结束的前缀扩展出 V 个候选，每句在 ``beam_size`` × V 个候选中按对数概率
    选出最好的 ``beam_size`` 个；生成了 ``<eos>`` 的前缀不再扩展，对数概率保持不变。
    所有前缀都结束、或到达 ``max_len`` 时停止，按长度惩罚后的得分选出每句的最佳译文。
    ``beam_size=1`` 时与 :func:`greedy_decode` 的结果相同。

    参数:
        model: :class:`~tinyformer.Transformer`（请先 ``model.eval()``）。
        src: 源句编号，形状 (B, S)，用 ``model.config.pad_id`` 填充。
        bos_id, eos_id: 目标词表的 ``<bos>``、``<eos>`` 编号。
        beam_size: 束宽 K（默认 4）。
        max_len: 最多生成多少个词元（不含 ``<bos>``，默认 32）。
        alpha: 长度惩罚的指数（默认 0.6；0 表示不惩罚）。
        use_cache: 是否用键/值缓存（默认 ``True``）。缓存随候选重排：``cache.reorder(parent)``。

    返回:
        (B, 1 + L) 的编号，第一列是 ``<bos>``，``<eos>`` 之后填 ``pad_id``。

    例子::

        >>> import torch
        >>> from tinyformer import Transformer, TransformerConfig
        >>> config = TransformerConfig(src_vocab_size=12, tgt_vocab_size=12, d_model=16,
        ...     num_heads=4, num_encoder_layers=1, num_decoder_layers=1, d_ff=32, max_len=20)
        >>> model = Transformer(config).eval()
        >>> src = torch.tensor([[5, 6, 7], [8, 9, 0]])
        >>> greedy = greedy_decode(model, src, bos_id=2, eos_id=3, max_len=6)
        >>> torch.equal(beam_search(model, src, 2, 3, beam_size=1, max_len=6), greedy)
        True
    """
    _check_decode_args(model, src, bos_id, eos_id, max_len, use_cache)
    check_positive_int("beam_size", beam_size)
    V, outputs = model.config.tgt_vocab_size, 0
    for length in range(1, max_len + 1):  # 最多 max_len 个词元的不同输出有 V + V² + … 个
        outputs += V**length
        if outputs >= beam_size:
            break
    if beam_size > outputs:
        raise ValueError(
            f"beam_size must be <= the number of distinct outputs of at most max_len={max_len} "
            f"tokens (V + V**2 + ... with V={V}) = {outputs}, got beam_size={beam_size}"
        )
    check_nonnegative_float("alpha", alpha)
    if not math.isfinite(float(length_penalty(max_len, alpha))):
        # 例如 alpha=1e308：惩罚是 inf，每个候选的得分都是 -0.0，选出的译文是任意的
        raise ValueError(
            f"alpha must keep the length penalty ((5 + max_len) / 6)**alpha finite in float32, "
            f"got alpha={alpha}, max_len={max_len}"
        )
    B, K = src.shape[0], beam_size
    pad_id, device = model.config.pad_id, src.device
    # 每个候选一份 memory (S, C) 和编码时的 FFN 激活 (S, d_ff)、几份 logits (V)、一个前缀
    # (1 + max_len)，缓存里每层还有交叉注意力的 K、V (S, C) 和自注意力的 K、V (1 + max_len, C)
    c = model.config
    S = src.shape[1]
    per_row = 4 * S * (c.d_model * (1 + 2 * c.num_decoder_layers) + c.d_ff) + 12 * c.tgt_vocab_size
    per_row += 8 * (1 + max_len) + 8 * (1 + max_len) * c.d_model * c.num_decoder_layers
    check_memory(f"beam_search with B={B}, beam_size={K}", B * K * per_row)

    # 每句复制 K 份：第 b 句的 K 个前缀占第 b*K .. b*K+K-1 行
    src_k = src.repeat_interleave(K, dim=0)  # (B, S) -> (B*K, S)
    is_pad = src_k == pad_id  # (B*K, S) 源句的填充掩码
    memory = model.encode(src_k)  # (B*K, S, C)；encode 检查 src 的编号
    cache = KVCache() if use_cache else None

    ys = torch.full((B * K, 1), bos_id, dtype=torch.long, device=device)  # (B*K, 1)
    # 开始时 K 个前缀一模一样，只让第一个参与竞争，免得选出 K 个相同的候选
    log_probs = torch.full((B, K), float("-inf"), device=device)  # (B, K)
    log_probs[:, 0] = 0.0
    finished = torch.zeros(B, K, dtype=torch.bool, device=device)  # (B, K)
    lengths = torch.zeros(B, K, device=device)  # 不含 <bos> 的长度（含 <eos>）

    with arguments_checked():  # 以下每一步的参数都已查过
        for _ in range(max_len):
            logits = _next_logits(model, ys, memory, is_pad, cache)  # (B*K, V)
            V = logits.shape[-1]
            step = torch.log_softmax(logits.float(), dim=-1).view(B, K, V)  # (B*K, V) -> (B, K, V)
            # 已结束的前缀只能"扩展"出一个填充词元，对数概率加 0，保持不变
            ended = torch.full((V,), float("-inf"), device=device)
            ended[pad_id] = 0.0
            step = torch.where(finished[..., None], ended, step)  # (B, K, V)
            candidates = (log_probs[..., None] + step).view(B, K * V)  # (B, K, V) -> (B, K*V)
            log_probs, flat = candidates.topk(K, dim=-1)  # (B, K)：每句最好的 K 个候选
            parent = flat // V  # 候选来自该句的第几个前缀 (B, K)
            token = flat % V  # 候选的新词元 (B, K)

            rows = (parent + torch.arange(B, device=device)[:, None] * K).view(-1)  # (B*K,) 旧行号
            ys = torch.cat([ys[rows], token.view(-1, 1)], dim=1)  # (B*K, t) -> (B*K, t + 1)
            if cache is not None:
                cache.reorder(rows)  # 每一行的缓存跟着它的候选走
            was_finished = finished.gather(1, parent)  # (B, K)
            lengths = lengths.gather(1, parent) + (~was_finished).float()
            finished = was_finished | (token == eos_id)
            if finished.all():
                break

    scores = log_probs / length_penalty(lengths, alpha)  # (B, K)
    best = scores.argmax(dim=-1)  # (B,)
    rows = best + torch.arange(B, device=device) * K  # (B,)
    return ys[rows]  # (B, 1 + L)
