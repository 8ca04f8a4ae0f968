r"""编码器层与解码器层（“编码器与解码器”一章讲解）。

每个子层（注意力或前馈网络）都包在"残差 + 层归一化"里，有两种放法：

- post-LN（论文原版，``norm_first=False``）：:math:`x = \mathrm{LN}(x + \mathrm{Dropout}(\mathrm{Sublayer}(x)))`
- pre-LN（GPT-2 等，``norm_first=True``）：:math:`x = x + \mathrm{Dropout}(\mathrm{Sublayer}(\mathrm{LN}(x)))`

dropout 的位置与 ``torch.nn.TransformerEncoderLayer``/``TransformerDecoderLayer`` 完全相同：
注意力权重上一处（在注意力模块里），FFN 激活之后一处（在 FFN 里），每个子层输出上一处。

把注意力权重留下来画热力图：设 ``layer.need_weights = True``（或在 ``with recording_weights(layer):``
里前向，出来时恢复原值），前向之后读 ``layer.self_attn_weights``（解码器还有
``layer.cross_attn_weights``），形状 (B, H, T, S)。默认 ``False``，走更快的融合注意力，这两个属性为 ``None``。
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from torch import Tensor, nn

from ._checks import check_bool, check_tensor, checked
from .attention import MultiHeadAttention
from .cache import KVCache
from .feedforward import PositionWiseFFN
from .normalization import LayerNorm


class EncoderLayer(nn.Module):
    r"""编码器层：自注意力 + 前馈网络，各带残差与层归一化。

    .. math::

        \text{post-LN:}\quad x &= \mathrm{LN_1}(x + \mathrm{SelfAttn}(x)),\quad
            x = \mathrm{LN_2}(x + \mathrm{FFN}(x)) \\
        \text{pre-LN:}\quad x &= x + \mathrm{SelfAttn}(\mathrm{LN_1}(x)),\quad
            x = x + \mathrm{FFN}(\mathrm{LN_2}(x))

    给自注意力一个因果掩码，它就是 GPT 的块（自注意力 + FFN，没有交叉注意力）：
    :class:`~tinyformer.GPTBlock` 是同一个公式，另带逐词生成用的缓存和“2017 年之后”的选项。

    参数:
        d_model: 模型维数 C。
        num_heads: 头数 H。
        d_ff: 前馈网络隐藏层维数。
        dropout: 丢弃概率（默认 0.0），位置同 ``torch.nn.TransformerEncoderLayer``。
        norm_first: ``False``（默认）为 post-LN，``True`` 为 pre-LN。
        activation: ``"relu"``（默认）、``"gelu"`` 或 ``"gelu_tanh"``。

    形状:
        - 输入 x: (B, T, C)
        - 输出: (B, T, C)

    例子::

        >>> import torch
        >>> from tinyformer import EncoderLayer
        >>> layer = EncoderLayer(d_model=16, num_heads=4, d_ff=64)
        >>> ids = torch.tensor([[5, 6, 7, 8, 9], [5, 6, 7, 0, 0]])
        >>> layer(torch.randn(2, 5, 16), src_key_padding_mask=ids == 0).shape  # True = 填充
        torch.Size([2, 5, 16])
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int,
        dropout: float = 0.0,
        norm_first: bool = False,
        activation: str = "relu",
    ):
        super().__init__()
        check_bool("norm_first", norm_first)
        self.d_model = d_model
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout)
        self.ffn = PositionWiseFFN(d_model, d_ff, dropout, activation)
        self.norm1 = LayerNorm(d_model)
        self.norm2 = LayerNorm(d_model)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.need_weights = False
        self.self_attn_weights: Tensor | None = None

    def forward(
        self,
        x: Tensor,
        *,
        src_key_padding_mask: Tensor | None = None,
    ) -> Tensor:
        r"""自注意力子层，再前馈子层；每个子层都是 残差 + 层归一化。

        编码器是双向的，每个位置都可以看每个真实词元，所以它只有填充掩码一种掩码：
        ``src_key_padding_mask``，与 ``torch.nn.TransformerEncoderLayer`` 同名、同形状、同义
        （True = 填充，遮住），只能按名字传。没有 torch 的 ``src_mask``：(B, S) 的填充掩码
        在 B == S 时与 (S, S) 的注意力掩码形状相同，传错了参数会被悄悄读成"遮住哪些查询"。
        要因果掩码的是 GPT 的块 :class:`~tinyformer.GPTBlock`。

        参数:
            x: 输入序列（编码器里是源句的表示）。
            src_key_padding_mask: 填充掩码（默认 ``None``，不遮挡）：每一句里哪些位置是填充，
                即 :func:`~tinyformer.padding_mask` 的 ``src == pad_id``。

        形状:
            - x: (B, T, C)
            - src_key_padding_mask: (B, T)
            - 输出: (B, T, C)
        """
        # x 的形状与 dtype 由第一个子层（层归一化或多头注意力）在它的入口检查
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), src_key_padding_mask)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, src_key_padding_mask))
            x = self.norm2(x + self._ff_block(x))
        return x  # (B, T, C)

    # 子层（残差之前的部分），名字与 torch.nn.TransformerEncoderLayer 的相同
    def _sa_block(self, x: Tensor, key_padding_mask: Tensor | None) -> Tensor:
        y, weights = self.self_attn(
            x, x, x, key_padding_mask=key_padding_mask, need_weights=self.need_weights
        )
        self.self_attn_weights = None if weights is None else weights.detach()
        return self.dropout1(y)

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout2(self.ffn(x))


class DecoderLayer(nn.Module):
    r"""解码器层：掩码自注意力 + 交叉注意力 + 前馈网络，各带残差与层归一化。

    .. math::

        \text{post-LN:}\quad x &= \mathrm{LN_1}(x + \mathrm{SelfAttn}(x)),\
            x = \mathrm{LN_2}(x + \mathrm{CrossAttn}(x, m)),\ x = \mathrm{LN_3}(x + \mathrm{FFN}(x)) \\
        \text{pre-LN:}\quad x &= x + \mathrm{SelfAttn}(\mathrm{LN_1}(x)),\
            x = x + \mathrm{CrossAttn}(\mathrm{LN_2}(x), m),\ x = x + \mathrm{FFN}(\mathrm{LN_3}(x))

    交叉注意力的查询来自解码器，键和值来自编码器的输出 memory（m）。

    参数:
        d_model: 模型维数 C。
        num_heads: 头数 H。
        d_ff: 前馈网络隐藏层维数。
        dropout: 丢弃概率（默认 0.0），位置同 ``torch.nn.TransformerDecoderLayer``。
        norm_first: ``False``（默认）为 post-LN，``True`` 为 pre-LN。
        activation: ``"relu"``（默认）、``"gelu"`` 或 ``"gelu_tanh"``。

    形状:
        - 输入 x: (B, T, C)，memory: (B, S, C)
        - 输出: (B, T, C)

    例子::

        >>> import torch
        >>> from tinyformer import DecoderLayer, causal_mask
        >>> layer = DecoderLayer(d_model=16, num_heads=4, d_ff=64, norm_first=True)
        >>> x, memory = torch.randn(2, 5, 16), torch.randn(2, 7, 16)
        >>> layer(x, memory, tgt_mask=causal_mask(5)).shape
        torch.Size([2, 5, 16])
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int,
        dropout: float = 0.0,
        norm_first: bool = False,
        activation: str = "relu",
    ):
        super().__init__()
        check_bool("norm_first", norm_first)
        self.d_model = d_model
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(d_model, num_heads, dropout)
        self.cross_attn = MultiHeadAttention(d_model, num_heads, dropout)
        self.ffn = PositionWiseFFN(d_model, d_ff, dropout, activation)
        self.norm1 = LayerNorm(d_model)
        self.norm2 = LayerNorm(d_model)
        self.norm3 = LayerNorm(d_model)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.dropout3 = nn.Dropout(dropout)
        self.need_weights = False
        self.self_attn_weights: Tensor | None = None
        self.cross_attn_weights: Tensor | None = None

    def forward(
        self,
        x: Tensor,
        memory: Tensor,
        *,
        tgt_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        memory_key_padding_mask: Tensor | None = None,
        cache: KVCache | None = None,
    ) -> Tensor:
        r"""掩码自注意力、交叉注意力（看 memory）、前馈网络三个子层，各带残差与层归一化。

        掩码与 ``torch.nn.TransformerDecoderLayer`` 同名、同义（bool，True = 遮住），只能按名字传。
        ``tgt_mask`` 是注意力掩码（哪个查询不许看哪个键），``*_key_padding_mask`` 是填充掩码
        （每一句哪些键是填充）；自注意力遮住两者之一说遮住的键。
        交叉注意力只需要源句的填充掩码，所以没有 torch 的 ``memory_mask``：(B, S) 的填充掩码
        在 B == T 时与 (T, S) 的注意力掩码形状相同，传错了参数会被悄悄读成"遮住哪些查询"。

        参数:
            x: 目标端序列（右移一位的目标句，或逐词生成时的新词元）。
            memory: 编码器的输出。
            tgt_mask: 自注意力的注意力掩码（默认 ``None``）；通常是 :func:`~tinyformer.causal_mask`。
            tgt_key_padding_mask: 目标端填充掩码（默认 ``None``），``tgt == pad_id``。
            memory_key_padding_mask: 源句的填充掩码（默认 ``None``），``src == pad_id``。
            cache: :class:`~tinyformer.KVCache`，逐词生成用（“完整模型”一章，默认 ``None``）：
                自注意力把新词元的 K、V 接在缓存后面，交叉注意力只在第一次计算 memory 的 K、V。

        形状:
            - x: (B, T, C)，memory: (B, S, C)
            - tgt_mask: (T|1, T') 或 (B|1, H|1, T|1, T')，T' = 缓存后的总长度（没有缓存时 T' = T）
            - tgt_key_padding_mask: (B, T')；memory_key_padding_mask: (B, S)
            - 输出: (B, T, C)
        """
        if not checked():  # x 由第一个子层检查；memory 在这里查，消息才说得出是 memory
            check_tensor("memory", memory, "(B, S, C)", d_model=self.d_model)
        self_attn = (tgt_mask, tgt_key_padding_mask, cache)  # 自注意力的两个掩码与缓存
        cross_attn = (memory, memory_key_padding_mask, cache)  # 交叉注意力看 memory
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), *self_attn)
            x = x + self._mha_block(self.norm2(x), *cross_attn)
            x = x + self._ff_block(self.norm3(x))
        else:
            x = self.norm1(x + self._sa_block(x, *self_attn))
            x = self.norm2(x + self._mha_block(x, *cross_attn))
            x = self.norm3(x + self._ff_block(x))
        return x  # (B, T, C)

    # 子层（残差之前的部分），名字与 torch.nn.TransformerDecoderLayer 的相同
    def _sa_block(self, x, attn_mask, key_padding_mask, cache: KVCache | None = None) -> Tensor:
        """掩码自注意力；有缓存时新词元的 K、V 接在已缓存的后面。"""
        y, weights = self.self_attn(
            x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
            need_weights=self.need_weights, cache=cache,
        )  # fmt: skip
        self.self_attn_weights = None if weights is None else weights.detach()
        return self.dropout1(y)

    def _mha_block(self, x, memory, key_padding_mask, cache: KVCache | None = None) -> Tensor:
        """交叉注意力：查询来自 x，键和值来自 memory（有缓存时只在第一次投影）。"""
        y, weights = self.cross_attn(
            x, memory, memory, key_padding_mask=key_padding_mask,
            need_weights=self.need_weights, cache=cache, static_kv=True,
        )  # fmt: skip
        self.cross_attn_weights = None if weights is None else weights.detach()
        return self.dropout2(y)

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout3(self.ffn(x))


@contextmanager
def recording_weights(*layers: EncoderLayer | DecoderLayer) -> Iterator[tuple[nn.Module, ...]]:
    """在 ``with`` 块里让这些层留下注意力权重（``need_weights = True``），出来时恢复原值。

    例子::

        >>> import torch
        >>> layer = EncoderLayer(d_model=16, num_heads=4, d_ff=32)
        >>> with recording_weights(layer) as (recorded,):
        ...     _ = recorded(torch.randn(1, 3, 16))
        >>> recorded.self_attn_weights.shape, layer.need_weights
        (torch.Size([1, 4, 3, 3]), False)
    """
    for layer in layers:
        if not isinstance(layer, (EncoderLayer, DecoderLayer)):
            raise TypeError(
                f"layers must be EncoderLayer or DecoderLayer, got {type(layer).__name__}"
            )
    previous = [layer.need_weights for layer in layers]
    for layer in layers:
        layer.need_weights = True
    try:
        yield layers
    finally:
        for layer, value in zip(layers, previous, strict=True):
            layer.need_weights = value
