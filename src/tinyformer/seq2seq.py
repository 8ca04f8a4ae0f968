r"""通往注意力之路：RNN 编码器–解码器与加性注意力（“Transformer 总览”一章讲解）。

Transformer 之前的神经机器翻译用两个 RNN：编码器把源句读成隐藏状态 :math:`h_1, \dots, h_S`，
解码器从它们生成译文。这里用 GRU 写出两个版本，只差在解码器每一步拿到的 *上下文* :math:`c_i`：

- **没有注意力**（Sutskever 等 2014、Cho 等 2014）：:math:`c_i = h_S`，整句被压进最后一个
  隐藏状态这一个固定大小的向量（瓶颈）；
- **加性注意力**（Bahdanau 等 2014）：:math:`c_i = \sum_j \alpha_{ij} h_j`，权重
  :math:`\alpha_{ij} = \mathrm{softmax}_j(e_{ij})`，
  :math:`e_{ij} = v^\top \tanh(W s_{i-1} + U h_j)`，每一步重新决定看源句的哪些位置。

任务是抄写一串随机数字（``make_copy_batch``）：输出必须与输入逐位相同，句子越长，固定的 :math:`h_S`
越装不下。本模块的形状字母：B 批量、S 源长度、T 目标长度、C 隐藏状态维数 ``hidden_size``、
E 词嵌入维数 ``embed_size``、V 词表大小。掩码约定与全书（和 ``torch.nn``）相同：True 表示"遮住"。
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ._checks import check_bool, check_int, check_positive_int, check_seed, check_tensor
from .optim import AdamW

PAD, BOS, EOS = 0, 1, 2  # 特殊词元的编号
DIGIT_OFFSET = 3  # 数字 d 的编号是 d + 3
VOCAB_SIZE = DIGIT_OFFSET + 10


def make_copy_batch(
    lengths: list[int], generator: torch.Generator
) -> tuple[Tensor, Tensor, Tensor]:
    """一批抄写任务：每句是长度为 ``lengths[b]`` 的随机数字串，目标与源句相同。

    短句在右边补 ``PAD``。目标句错开一位（教师强制，“完整模型”一章）：解码器输入 ``<bos> x_1 … x_n``，
    要预测的是 ``x_1 … x_n <eos>``。

    参数:
        lengths: 每句的长度（正整数）。
        generator: 随机数发生器（固定种子，结果可复现）。

    返回:
        ``(src, tgt_in, tgt_out)``，形状 ``(B, S)``、``(B, S + 1)``、``(B, S + 1)``，S = max(lengths)。

    例子::

        >>> src, tgt_in, tgt_out = make_copy_batch([3, 2], torch.Generator().manual_seed(0))
        >>> src.shape, tgt_in.shape
        (torch.Size([2, 3]), torch.Size([2, 4]))
        >>> bool((tgt_in[:, 1:] == src).all()), int(src[1, 2])  # 第二句补了一个 PAD
        (True, 0)
    """
    if not lengths:
        raise ValueError("lengths must be a non-empty list of positive integers, got lengths=[]")
    for n in lengths:
        check_positive_int("each length in lengths", n)
    S = max(lengths)
    digits = torch.randint(0, 10, (len(lengths), S), generator=generator) + DIGIT_OFFSET  # (B, S)
    real = torch.arange(S) < torch.tensor(lengths)[:, None]  # (B, S)：True = 真实数字
    src = torch.where(real, digits, PAD)  # (B, S)
    tgt_in = torch.cat([torch.full((len(lengths), 1), BOS), src], dim=1)  # (B, S + 1)
    tgt_out = torch.cat([src, torch.full((len(lengths), 1), PAD)], dim=1)  # (B, S + 1)
    tgt_out[torch.arange(len(lengths)), torch.tensor(lengths)] = EOS  # 每句末尾之后是 <eos>
    return src, tgt_in, tgt_out


class GRUEncoder(nn.Module):
    r"""RNN 编码器：词嵌入 + 单向 GRU，给出每个位置的隐藏状态和整句的最后一个隐藏状态。

    :math:`h_j = \mathrm{GRU}(x_j, h_{j-1})`；句子右边补的 ``PAD`` 在最后一个真实词之后，
    不影响前面的 :math:`h_j`，所以"整句的最后状态" :math:`h_S` 取每句最后一个真实位置的输出。

    参数:
        vocab_size: 词表大小 V。
        embed_size: 词嵌入维数 E。
        hidden_size: 隐藏状态维数 C。

    形状:
        - src: ``(B, S)`` 词元编号，右边补 ``PAD``（编号 0）。
        - 输出: ``(states, last)``，``(B, S, C)`` 与 ``(B, C)``。

    例子::

        >>> encoder = GRUEncoder(VOCAB_SIZE, embed_size=8, hidden_size=16)
        >>> states, last = encoder(torch.tensor([[3, 4, 5], [6, 7, 0]]))
        >>> tuple(states.shape), tuple(last.shape)
        ((2, 3, 16), (2, 16))
    """

    def __init__(self, vocab_size: int, embed_size: int, hidden_size: int):
        super().__init__()
        for name, value in (
            ("vocab_size", vocab_size),
            ("embed_size", embed_size),
            ("hidden_size", hidden_size),
        ):
            check_positive_int(name, value)
        self.embed = nn.Embedding(vocab_size, embed_size, padding_idx=PAD)
        self.rnn = nn.GRU(embed_size, hidden_size, batch_first=True)

    def forward(self, src: Tensor) -> tuple[Tensor, Tensor]:
        check_tensor("src", src, "(B, S)")
        states, _ = self.rnn(self.embed(src))  # (B, S, E) -> (B, S, C)
        last_index = (src != PAD).sum(dim=1).clamp(min=1) - 1  # (B,)：最后一个真实词的位置
        last = states[torch.arange(src.shape[0]), last_index]  # (B, C)
        return states, last


class AdditiveAttention(nn.Module):
    r"""加性注意力（Bahdanau 等 2014）：用一个单隐藏层的小网络给每个源位置打分。

    .. math::
        e_{j} = v^\top \tanh(W q + U k_j), \qquad
        \alpha = \mathrm{softmax}(e), \qquad
        c = \sum_j \alpha_j k_j .

    论文里查询 :math:`q` 是解码器上一步的状态 :math:`s_{i-1}`，键 :math:`k_j` 就是编码器的
    隐藏状态 :math:`h_j`（这里值也是 :math:`h_j`）。被遮住的位置（填充）打分为 :math:`-\infty`，
    softmax 之后权重为 0。

    参数:
        query_size: 查询的维数。
        key_size: 键（编码器隐藏状态）的维数。
        hidden_size: 打分网络的隐藏层维数（:math:`W`、:math:`U` 的输出维数）。

    形状:
        - query: ``(B, Cq)``；keys: ``(B, S, Ck)``；mask: ``(B, S)`` bool，True = 遮住（填充）。
        - 输出: ``(context, weights)``，``(B, Ck)`` 与 ``(B, S)``，每行权重之和为 1。

    例子::

        >>> attention = AdditiveAttention(query_size=4, key_size=6, hidden_size=5)
        >>> context, weights = attention(torch.randn(2, 4), torch.randn(2, 3, 6))
        >>> tuple(context.shape), tuple(weights.shape)
        ((2, 6), (2, 3))
    """

    def __init__(self, query_size: int, key_size: int, hidden_size: int):
        super().__init__()
        for name, value in (
            ("query_size", query_size),
            ("key_size", key_size),
            ("hidden_size", hidden_size),
        ):
            check_positive_int(name, value)
        self.W = nn.Linear(query_size, hidden_size, bias=False)
        self.U = nn.Linear(key_size, hidden_size, bias=True)
        self.v = nn.Linear(hidden_size, 1, bias=False)

    def forward(
        self,
        query: Tensor,
        keys: Tensor,
        mask: Tensor | None = None,
        projected_keys: Tensor | None = None,
    ) -> tuple[Tensor, Tensor]:
        """``projected_keys`` 是事先算好的 ``U(keys)``：解码的每一步键都不变，只需算一次。"""
        check_tensor("query", query, "(B, Cq)")
        check_tensor("keys", keys, "(B, S, Ck)")
        if mask is not None and (mask.dtype != torch.bool or mask.shape != keys.shape[:2]):
            raise ValueError(
                f"mask must be a bool tensor of shape (B, S) = {tuple(keys.shape[:2])} (True = masked out), "
                f"got dtype={mask.dtype}, shape {tuple(mask.shape)}"
            )
        if projected_keys is None:
            projected_keys = self.U(keys)  # (B, S, Ck) -> (B, S, hidden)
        # (B, 1, hidden) + (B, S, hidden) -> (B, S, hidden)
        hidden = torch.tanh(self.W(query)[:, None, :] + projected_keys)
        scores = self.v(hidden).squeeze(-1)  # (B, S, hidden) -> (B, S, 1) -> (B, S)
        if mask is not None:
            scores = scores.masked_fill(mask, float("-inf"))
        weights = torch.softmax(scores, dim=-1)  # (B, S)
        # (B, 1, S) @ (B, S, Ck) -> (B, 1, Ck) -> (B, Ck)
        context = (weights[:, None, :] @ keys).squeeze(1)
        return context, weights


class Seq2Seq(nn.Module):
    r"""GRU 编码器–解码器，``attention`` 决定上下文是固定的 :math:`h_S` 还是加性注意力。

    解码器的每一步（:math:`s_0 = h_S`）：

    .. math::
        s_i = \mathrm{GRU}([y_{i-1}; c_i],\ s_{i-1}), \qquad
        P(y_i) = \mathrm{softmax}(W_o [s_i; c_i]),

    其中 :math:`c_i = h_S`（``attention=False``）或 :math:`c_i = \sum_j \alpha_{ij} h_j`
    （``attention=True``，:math:`\alpha_{ij}` 由 :math:`s_{i-1}` 和 :math:`h_j` 算出）。两个版本的参数
    只差注意力的打分网络。

    参数:
        vocab_size: 词表大小 V（默认 ``VOCAB_SIZE``，10 个数字加 3 个特殊词元）。
        embed_size: 词嵌入维数 E（默认 16）。
        hidden_size: 隐藏状态维数 C（默认 64）。
        attention: 是否用加性注意力（默认 ``True``）。

    形状:
        - src: ``(B, S)``；tgt_in: ``(B, T)``。
        - 输出: ``(logits, weights)``，``(B, T, V)`` 与 ``(B, T, S)``（没有注意力时为 ``None``）。

    例子::

        >>> model = Seq2Seq(attention=True)
        >>> logits, weights = model(torch.tensor([[3, 4, 5]]), torch.tensor([[1, 3, 4, 5]]))
        >>> tuple(logits.shape), tuple(weights.shape)
        ((1, 4, 13), (1, 4, 3))
    """

    def __init__(
        self,
        vocab_size: int = VOCAB_SIZE,
        embed_size: int = 16,
        hidden_size: int = 64,
        attention: bool = True,
    ):
        super().__init__()
        check_bool("attention", attention)
        self.encoder = GRUEncoder(vocab_size, embed_size, hidden_size)
        self.embed = nn.Embedding(vocab_size, embed_size, padding_idx=PAD)
        self.cell = nn.GRUCell(embed_size + hidden_size, hidden_size)
        self.attention = (
            AdditiveAttention(hidden_size, hidden_size, hidden_size) if attention else None
        )
        self.output = nn.Linear(2 * hidden_size, vocab_size)

    def _step(
        self, y_prev: Tensor, state: Tensor, memory: tuple
    ) -> tuple[Tensor, Tensor, Tensor | None]:
        """解码一步：``y_prev`` (B,) 上一个词，``state`` (B, C) 即 s_{i-1}；返回 logits (B, V)、s_i、权重 (B, S)。"""
        states, last, mask, projected = memory
        if self.attention is None:
            context, weights = last, None  # 固定的上下文 h_S：(B, C)
        else:
            context, weights = self.attention(state, states, mask, projected)  # (B, C), (B, S)
        # 输入 [y_{i-1}; c_i]：(B, E + C)，状态 (B, C) -> (B, C)
        state = self.cell(torch.cat([self.embed(y_prev), context], dim=-1), state)
        logits = self.output(torch.cat([state, context], dim=-1))  # (B, 2C) -> (B, V)
        return logits, state, weights

    def _encode(self, src: Tensor) -> tuple[tuple, Tensor]:
        states, last = self.encoder(src)  # (B, S, C), (B, C)
        projected = self.attention.U(states) if self.attention is not None else None  # (B, S, C)
        return (states, last, src == PAD, projected), last

    def forward(self, src: Tensor, tgt_in: Tensor) -> tuple[Tensor, Tensor | None]:
        check_tensor("tgt_in", tgt_in, "(B, T)")
        memory, state = self._encode(src)
        all_logits, all_weights = [], []
        for i in range(tgt_in.shape[1]):  # 教师强制：第 i 步的输入是正确的第 i-1 个词
            logits, state, weights = self._step(tgt_in[:, i], state, memory)
            all_logits.append(logits)
            all_weights.append(weights)
        logits = torch.stack(all_logits, dim=1)  # T 个 (B, V) -> (B, T, V)
        if self.attention is None:
            return logits, None
        return logits, torch.stack(all_weights, dim=1)  # T 个 (B, S) -> (B, T, S)

    @torch.no_grad()
    def greedy(self, src: Tensor, max_len: int) -> tuple[Tensor, Tensor | None]:
        """贪心解码 ``max_len`` 步（不在 ``<eos>`` 处停）：返回编号 ``(B, max_len)`` 与权重 ``(B, max_len, S)``。"""
        check_positive_int("max_len", max_len)
        memory, state = self._encode(src)
        y = torch.full((src.shape[0],), BOS)  # (B,)
        outputs, all_weights = [], []
        for _ in range(max_len):
            logits, state, weights = self._step(y, state, memory)
            y = logits.argmax(dim=-1)  # (B, V) -> (B,)
            outputs.append(y)
            all_weights.append(weights)
        ids = torch.stack(outputs, dim=1)  # (B, max_len)
        return ids, None if self.attention is None else torch.stack(all_weights, dim=1)


def train_copy_model(
    model: Seq2Seq,
    steps: int,
    min_len: int,
    max_len: int,
    batch_size: int = 64,
    lr: float = 0.01,
    seed: int = 0,
) -> list[float]:
    """在抄写任务上训练 ``model``：每批的句长在 [min_len, max_len] 里均匀抽取，Adam，交叉熵忽略 ``PAD``。

    参数:
        model: 要训练的 :class:`Seq2Seq`。
        steps: 训练步数。
        min_len, max_len: 句长范围（含两端）。
        batch_size: 批量大小（默认 64）。
        lr: Adam 的学习率（默认 0.01）。
        seed: 随机种子（数据与参数初始化之外的一切随机性都从它来）。

    返回:
        每一步的损失。
    """
    check_positive_int("steps", steps)
    check_positive_int("min_len", min_len)
    check_int("max_len", max_len, minimum=min_len)
    check_positive_int("batch_size", batch_size)
    check_seed("seed", seed)
    generator = torch.Generator().manual_seed(seed)
    optimizer = AdamW(model.parameters(), lr=lr, weight_decay=0.0)  # λ = 0：Adam
    model.train()
    losses = []
    threads = torch.get_num_threads()
    # 矩阵只有 64×64：多线程同步的开销比省下的计算还多，单线程反而快几倍（两核都忙时更明显）
    torch.set_num_threads(1)
    try:
        for _ in range(steps):
            lengths = torch.randint(
                min_len, max_len + 1, (batch_size,), generator=generator
            ).tolist()
            src, tgt_in, tgt_out = make_copy_batch(lengths, generator)
            logits, _ = model(src, tgt_in)  # (B, T, V)
            loss = F.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(), ignore_index=PAD)
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            losses.append(loss.item())
    finally:
        torch.set_num_threads(threads)
    model.eval()
    return losses


def copy_accuracy(model: Seq2Seq, length: int, num: int = 500, seed: int = 1) -> float:
    """``num`` 句长度为 ``length`` 的新数字串上，贪心抄写的逐位准确率（第 k 位数字抄对的比例）。"""
    check_positive_int("length", length)
    check_positive_int("num", num)
    check_seed("seed", seed)
    src, _, _ = make_copy_batch([length] * num, torch.Generator().manual_seed(seed))
    ids, _ = model.greedy(src, max_len=length)  # (num, length)
    return (ids == src).float().mean().item()
