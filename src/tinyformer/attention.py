"""缩放点积注意力与多头注意力（第 5 章 注意力机制 讲解）。

掩码约定见 :mod:`tinyformer.masks`：True 表示"可以关注"。掩码作用在分数矩阵 QKᵀ/√D 上：
被遮住的分数换成该数据类型能表示的最小有限值，softmax 之后它们的权重是 0（exp 下溢）。
一行里的键全被遮住时 softmax 给出均匀分布，我们再把这一行的权重置 0，于是输出是 0，
而不是用 -inf 时会得到的 NaN（-inf 减 -inf）。float32、float16、bfloat16 都是如此。
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ._checks import (
    check_bool,
    check_divisible,
    check_dropout,
    check_floating,
    check_instance,
    check_key_value,
    check_mask,
    check_positive_int,
    check_tensor,
)
from .cache import KVCache


def _attend(
    query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None, dropout_p: float
) -> tuple[Tensor, Tensor]:
    """softmax(QKᵀ/√D) V 本身，不检查参数（调用者已检查）。"""
    D = query.shape[-1]
    # QKᵀ/√D 与 (Q/√D)Kᵀ 相等；先缩放 Q（T×D 个数）比缩放分数（T×S 个数）省一次大张量运算
    # (..., T, D) @ (..., D, S) -> (..., T, S)
    scores = (query / math.sqrt(D)) @ key.transpose(-2, -1)
    if mask is not None:
        # 用有限的最小值而不是 -inf：被遮住的分数 softmax 后是 0（exp 下溢），
        # 整行被遮住时 softmax 得到均匀分布而不是 NaN（-inf 减 -inf）
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    weights = torch.softmax(scores, dim=-1)  # (..., T, S)，每行和为 1
    if mask is not None:
        has_key = mask.any(dim=-1, keepdim=True)  # (..., T|1, 1)：这一行至少有一个可关注的键
        if not has_key.all():  # 有整行被遮住时，把那几行的均匀分布换成 0
            weights = weights.masked_fill(~has_key, 0.0)
    if dropout_p > 0.0:
        weights = F.dropout(weights, p=dropout_p)
    return weights @ value, weights  # (..., T, S) @ (..., S, Dv) -> (..., T, Dv)


def _attend_fused(
    query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None, dropout_p: float
) -> Tensor:
    """同样的计算交给 ``F.scaled_dot_product_attention``（融合内核，更快，但不返回权重）。"""
    has_key = None if mask is None else mask.any(dim=-1, keepdim=True)  # (..., T|1, 1)
    if has_key is None or has_key.all():
        # (..., T, D), (..., S, D), (..., S, Dv) -> (..., T, Dv)
        return F.scaled_dot_product_attention(
            query, key, value, attn_mask=mask, dropout_p=dropout_p
        )
    # 整行被遮住时 torch 的某些版本/后端给出 NaN（梯度也会是 NaN）。先让这些行"什么都能看"，
    # 算完再把它们的输出置 0，与 _attend 的结果一致。
    out = F.scaled_dot_product_attention(
        query, key, value, attn_mask=mask | ~has_key, dropout_p=dropout_p
    )
    return out.masked_fill(~has_key, 0.0)  # (..., T, Dv)


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    mask: Tensor | None = None,
    dropout_p: float = 0.0,
) -> tuple[Tensor, Tensor]:
    r"""缩放点积注意力（论文 §3.2.1），同时返回输出和注意力权重。

    .. math::

        \mathrm{Attention}(Q, K, V) = \mathrm{softmax}\Big(\frac{QK^\top}{\sqrt{D}}\Big) V

    ``mask`` 为 False 的分数在 softmax 前被换成极小值，softmax 后它们的权重为 0；
    一行全为 False 时该行权重和输出都是 0（不是 NaN）。

    参数:
        query, key, value: 查询、键、值。
        mask: bool 掩码，True 表示可以关注（默认 ``None``，不遮挡）；须能广播到 (..., T, S)，
            最后一维恰好是 S。
        dropout_p: 对注意力权重做 dropout 的概率（默认 0.0）。注意这个函数总会按它丢弃，
            训练/评估的切换由调用者负责（与 ``torch.nn.functional`` 相同）。

    形状:
        - query: (..., T, D)，key: (..., S, D)，value: (..., S, Dv)
        - mask: (..., T|1, S)
        - 输出: (..., T, Dv)；权重: (..., T, S)

    例子::

        >>> import torch
        >>> from tinyformer import causal_mask, scaled_dot_product_attention
        >>> q = k = v = torch.randn(2, 5, 8)
        >>> out, weights = scaled_dot_product_attention(q, k, v, mask=causal_mask(5))
        >>> out.shape, weights.shape
        (torch.Size([2, 5, 8]), torch.Size([2, 5, 5]))
        >>> weights[0, 0].tolist()  # 第一个词元只能关注它自己
        [1.0, 0.0, 0.0, 0.0, 0.0]
    """
    check_tensor("query", query, "(..., T, D)")
    check_tensor("key", key, "(..., S, D)")
    check_tensor("value", value, "(..., S, Dv)")
    check_floating("query", query)
    check_floating("key", key, query, "query")
    check_floating("value", value, query, "query")
    if query.shape[-1] != key.shape[-1]:
        raise ValueError(
            "query and key must have the same last dimension D, "
            f"got query shape {tuple(query.shape)}, key shape {tuple(key.shape)}"
        )
    check_key_value(key, value)
    check_dropout("dropout_p", dropout_p)
    try:  # 分数 QKᵀ 的形状：批量维互相广播，再接 (T, S)
        batch_shape = torch.broadcast_shapes(query.shape[:-2], key.shape[:-2])
    except RuntimeError:
        raise ValueError(
            "the leading (batch) dimensions of query and key must broadcast, "
            f"got query shape {tuple(query.shape)}, key shape {tuple(key.shape)}"
        ) from None
    scores_shape = (*batch_shape, query.shape[-2], key.shape[-2])
    check_mask("mask", mask, scores_shape, ndims=range(2, len(scores_shape) + 1))
    return _attend(query, key, value, mask, dropout_p)


class ScaledDotProductAttention(nn.Module):
    r"""把 :func:`scaled_dot_product_attention` 包成模块：训练时才做 dropout。

    .. math::

        \mathrm{Attention}(Q, K, V) = \mathrm{softmax}\Big(\frac{QK^\top}{\sqrt{D}}\Big) V

    参数:
        dropout: 注意力权重的丢弃概率（默认 0.0），只在 ``model.train()`` 时生效。

    形状:
        与 :func:`scaled_dot_product_attention` 相同：(..., T, D), (..., S, D), (..., S, Dv)
        -> 输出 (..., T, Dv)，权重 (..., T, S)。

    例子::

        >>> import torch
        >>> from tinyformer import ScaledDotProductAttention
        >>> attention = ScaledDotProductAttention(dropout=0.1)
        >>> q, k, v = torch.randn(2, 4, 5, 8), torch.randn(2, 4, 7, 8), torch.randn(2, 4, 7, 8)
        >>> out, weights = attention(q, k, v)
        >>> out.shape, weights.shape
        (torch.Size([2, 4, 5, 8]), torch.Size([2, 4, 5, 7]))
    """

    def __init__(self, dropout: float = 0.0):
        super().__init__()
        check_dropout("dropout", dropout)
        self.dropout = dropout

    def forward(
        self, query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        dropout_p = self.dropout if self.training else 0.0
        return scaled_dot_product_attention(query, key, value, mask, dropout_p)

    def extra_repr(self) -> str:
        return f"dropout={self.dropout}"


class MultiHeadAttention(nn.Module):
    r"""多头注意力（论文 §3.2.2）：H 个头在各自的 D = C / H 维子空间里并行做注意力。

    .. math::

        \mathrm{MultiHead}(Q, K, V) = \mathrm{Concat}(\mathrm{head}_1, \dots, \mathrm{head}_H) W^O,
        \quad \mathrm{head}_h = \mathrm{Attention}(Q W^Q_h, K W^K_h, V W^V_h)

    实现上 :math:`W^Q` 是一个 C×C 的线性层 ``q_proj``，它的输出切成 H 份就是各个头的
    :math:`QW^Q_h`；``k_proj``、``v_proj``、``out_proj``（即 :math:`W^O`）同理。

    参数:
        d_model: 模型维数 C，须能被 num_heads 整除。
        num_heads: 头数 H。
        dropout: 注意力权重的丢弃概率（默认 0.0），只在训练时生效。
        bias: 四个线性层是否带偏置（默认 ``True``）。

    ``forward(query, key, value, mask=None, need_weights=True, cache=None, static_kv=False)``:

    - ``mask``: bool，True 表示可以关注；形状 (T|1, S) 或 (B|1, H|1, T|1, S)。
      (B, S) 的填充掩码要先变成 (B, 1, 1, S)（见 :func:`~tinyformer.padding_mask`）。
    - ``need_weights=False``: 走 ``torch.nn.functional.scaled_dot_product_attention`` 融合路径，
      结果相同但更快，返回 ``(output, None)``。
    - ``cache``: :class:`~tinyformer.KVCache`，增量解码用。自注意力（``static_kv=False``）
      时 key/value 只需是新词元，它们的 K、V 追加进缓存；交叉注意力（``static_kv=True``）时
      第一次调用算出 memory 的 K、V 存起来，以后直接取用（key、value 不再被投影）。
      此时 S 是缓存中的键数，掩码的最后一维要与它一致。

    形状:
        - query: (B, T, C)，key: (B, S, C)，value: (B, S, C)
        - 输出: (B, T, C)；权重: (B, H, T, S)（每个头一份，不取平均）

    例子::

        >>> import torch
        >>> from tinyformer import MultiHeadAttention, causal_mask
        >>> mha = MultiHeadAttention(d_model=16, num_heads=4)
        >>> x = torch.randn(2, 5, 16)
        >>> out, weights = mha(x, x, x, mask=causal_mask(5))
        >>> out.shape, weights.shape
        (torch.Size([2, 5, 16]), torch.Size([2, 4, 5, 5]))
    """

    def __init__(self, d_model: int, num_heads: int, dropout: float = 0.0, bias: bool = True):
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_int("num_heads", num_heads)
        check_divisible("d_model", d_model, "num_heads", num_heads)
        check_dropout("dropout", dropout)
        check_bool("bias", bias)
        self.d_model = d_model
        self.num_heads = num_heads
        self.head_dim = d_model // num_heads  # D
        self.dropout = dropout
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)  # W^Q，H 个头拼在一起
        self.k_proj = nn.Linear(d_model, d_model, bias=bias)  # W^K
        self.v_proj = nn.Linear(d_model, d_model, bias=bias)  # W^V
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)  # W^O

    def _split_heads(self, x: Tensor) -> Tensor:
        B, L, C = x.shape
        # (B, L, C) -> (B, L, H, D) -> (B, H, L, D)
        return x.view(B, L, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        mask: Tensor | None = None,
        need_weights: bool = True,
        cache: KVCache | None = None,
        static_kv: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        check_tensor("query", query, "(B, T, C)", d_model=self.d_model)
        check_tensor("key", key, "(B, S, C)", d_model=self.d_model)
        check_tensor("value", value, "(B, S, C)", d_model=self.d_model)
        check_key_value(key, value)
        for name, x in (("query", query), ("key", key), ("value", value)):
            check_floating(name, x, self.q_proj.weight)
        if not query.shape[0] == key.shape[0] == value.shape[0]:
            raise ValueError(
                "query, key and value must have the same batch size B, got "
                f"{query.shape[0]}, {key.shape[0]}, {value.shape[0]}"
            )
        check_bool("need_weights", need_weights)
        check_bool("static_kv", static_kv)
        check_instance("cache", cache, KVCache, allow_none=True)
        B, T, C = query.shape
        H = self.num_heads

        q = self._split_heads(self.q_proj(query))  # (B, T, C) -> (B, H, T, D)
        if cache is not None and static_kv and cache.get(self) is not None:
            k, v = cache.get(self)  # 交叉注意力：memory 的 K、V 已经算过，(B, H, S, D)
        else:
            k = self._split_heads(self.k_proj(key))  # (B, S, C) -> (B, H, S, D)
            v = self._split_heads(self.v_proj(value))  # (B, S, C) -> (B, H, S, D)
            if cache is not None:
                k, v = cache.append(self, k, v)  # 自注意力：接在已缓存的位置后面
        S = k.shape[-2]
        check_mask("mask", mask, (B, H, T, S), ndims=(2, 4))

        dropout_p = self.dropout if self.training else 0.0
        if need_weights:
            y, weights = _attend(q, k, v, mask, dropout_p)  # (B, H, T, D), (B, H, T, S)
        else:
            y, weights = _attend_fused(q, k, v, mask, dropout_p), None
        y = y.transpose(1, 2).reshape(B, T, C)  # (B, H, T, D) -> (B, T, H, D) -> (B, T, C)
        return self.out_proj(y), weights

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, num_heads={self.num_heads}, dropout={self.dropout}"
