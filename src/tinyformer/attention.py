r"""缩放点积注意力与多头注意力（“注意力机制”一章讲解）。

按章节顺序从上往下读：

1. :func:`attention_with_weights` 与它的计算 ``_attend``：“注意力机制”一章的公式一行一行写出来
   （权重上的 dropout 在“层归一化、残差与前馈网络”一章）；
2. :class:`MultiHeadAttention`：投影、分头、注意力、拼接、输出投影；
3. 它的两个附加部分：键/值缓存 ``_project_with_cache``（“完整模型”一章的增量解码）和
   不返回权重时走的快路径 ``_attend_fused``（torch 自己的融合内核
   ``torch.nn.functional.scaled_dot_product_attention``，与 nanoGPT 的 ``flash`` 路径相同）；
4. 参数检查 ``_check_mha_inputs``。

掩码约定见 :mod:`tinyformer.masks`：True 表示"遮住"，与 ``torch.nn.MultiheadAttention`` 相同。
掩码作用在分数矩阵 QKᵀ/√D 上：遮住的分数换成 -inf，softmax 之后它们的权重恰好是 0。一行里的键
全被遮住时，这一行的权重和输出都定为 0（不是 NaN），两条路径都是如此，理由写在 ``_attend`` 里发生的地方。

两条路径算的是同一个公式，结果只差浮点舍入（``tests/unit/test_attention.py`` 按写明的容差核对）。
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
    check_key_padding_mask,
    check_key_value,
    check_mask,
    check_positive_int,
    check_tensor,
    checked,
)
from .cache import KVCache
from .normalization import RMSNorm
from .positional import RotaryEmbedding


def attention_with_weights(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    mask: Tensor | None = None,
    dropout_p: float = 0.0,
) -> tuple[Tensor, Tensor]:
    r"""缩放点积注意力（论文 §3.2.1），返回 ``(输出, 注意力权重)`` 两者。

    名字说它返回两样东西。torch 的 ``F.scaled_dot_product_attention``
    只返回输出（它的融合内核根本不存下权重）；这里多返回权重，好画热力图、
    检查掩码。同名而返回值不同会让读者拿错，所以不与 torch 同名。

    .. math::

        \mathrm{Attention}(Q, K, V) = \mathrm{softmax}\Big(\frac{QK^\top}{\sqrt{D}}
            + M\Big) V,\qquad M_{\dots,t,s} = \begin{cases} -\infty, & \mathrm{mask}_{\dots,t,s} \\
            0, & \text{否则} \end{cases}

    ``mask`` 是 bool，**True 表示遮住**（与 ``scores.masked_fill(mask, -inf)`` 的 ``mask``、
    ``nn.MultiheadAttention`` 的掩码相同）；遮住的权重在 softmax 后为 0，一行全被遮住时
    该行权重和输出都是 0（不是 NaN）。参数不叫 ``attn_mask``，因为
    ``F.scaled_dot_product_attention`` 的 bool ``attn_mask`` 意思恰好相反（True = 可以关注）。

    参数:
        query, key, value: 查询、键、值。
        mask: 掩码（默认 ``None``，不遮挡），例如 :func:`~tinyformer.causal_mask`；
            须能广播到分数的形状 (..., T, S)。
        dropout_p: 对注意力权重做 dropout 的概率（默认 0.0）。注意这个函数总会按它丢弃，
            训练/评估的切换由调用者负责（与 ``torch.nn.functional`` 相同）。

    形状:
        - query: (..., T, D)，key: (..., S, D)，value: (..., S, Dv)
        - mask: 能广播到 (..., T, S)
        - 输出: (..., T, Dv)；权重: (..., T, S)

    例子::

        >>> import torch
        >>> from tinyformer import attention_with_weights, causal_mask
        >>> q = k = v = torch.randn(2, 5, 8)
        >>> out, weights = attention_with_weights(q, k, v, mask=causal_mask(5))
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
    try:  # 分数 QKᵀ 的形状：批量维（最后两维之前）按 torch 的规则互相广播，再接 (T, S)
        batch = torch.broadcast_shapes(query.shape[:-2], key.shape[:-2])
    except RuntimeError as error:
        raise ValueError(
            "the leading (batch) dimensions of query and key must broadcast, "
            f"got query shape {tuple(query.shape)}, key shape {tuple(key.shape)}"
        ) from error
    scores_shape = (*batch, query.shape[-2], key.shape[-2])
    check_mask("mask", mask, scores_shape, ndims=range(2, len(scores_shape) + 1))
    return _attend(query, key, value, mask, dropout_p)


def _attend(
    query: Tensor, key: Tensor, value: Tensor, mask: Tensor | None, dropout_p: float
) -> tuple[Tensor, Tensor]:
    """softmax(QKᵀ/√D) V 本身，一步一行，不检查参数（调用者已检查）。"""
    D = query.shape[-1]
    # (..., T, D) @ (..., D, S) -> (..., T, S)
    scores = query @ key.transpose(-2, -1) / math.sqrt(D)
    if mask is not None:  # mask 的 True 表示遮住：这些分数换成 -inf
        scores = scores.masked_fill(mask, -math.inf)
    weights = torch.softmax(scores, dim=-1)  # (..., T, S)：-inf 处恰好是 0
    if mask is not None:
        # 全被遮住的行：分数全是 -inf，softmax 要算 -inf - (-inf)，得到 NaN。
        # 这一行没有可看的键，我们规定它的权重全为 0，于是输出也是 0。
        # 反向时这些 NaN 也不会漏出去：上面 masked_fill 的梯度在被遮住的位置
        # （这一行的全部位置）恰好是 0。不先问"有没有这样的行"：那要把张量读回主机（GPU 上是一次停顿）。
        has_key = ~mask.all(dim=-1, keepdim=True)  # (..., T|1, 1)，这一行至少有一个没被遮住的键
        weights = weights.masked_fill(~has_key, 0.0)
    if dropout_p > 0.0:  # 丢弃法：随机丢掉一些权重，其余的放大 1/(1-p)
        weights = F.dropout(weights, p=dropout_p)
    return weights @ value, weights  # (..., T, S) @ (..., S, Dv) -> (..., T, Dv)


class MultiHeadAttention(nn.Module):
    r"""多头注意力（论文 §3.2.2）：H 个头在各自的 D = C / H 维子空间里并行做注意力。

    .. math::

        \mathrm{MultiHead}(Q, K, V) = \mathrm{Concat}(\mathrm{head}_1, \dots, \mathrm{head}_H) W^O,
        \quad \mathrm{head}_h = \mathrm{Attention}(Q W^Q_h, K W^K_h, V W^V_h)

    实现上 :math:`W^Q` 是一个 C×C 的线性层 ``q_proj``，它的输出切成 H 份就是各个头的
    :math:`QW^Q_h`；``k_proj``、``v_proj``、``out_proj``（即 :math:`W^O`）同理。
    自注意力（query、key、value 是同一个张量）时三个投影合成一次 C -> 3C 的矩阵乘法
    （权重按行拼成 :math:`[W^Q; W^K; W^V]`，“注意力机制”一章验证它与分开算相同）。

    两个后来的变化（默认都不用，与论文相同）：

    - **分组查询注意力**（GQA，Ainslie 等 2023）：``num_kv_heads`` = :math:`H_{kv}` < H 时
      ``k_proj``、``v_proj`` 只输出 :math:`H_{kv}` 个头（C -> :math:`H_{kv} D`），每个 K、V 头由
      :math:`H / H_{kv}` 个相邻的查询头共用：查询头 h 用第 :math:`\lfloor h / (H/H_{kv}) \rfloor` 个
      （与 ``F.scaled_dot_product_attention(..., enable_gqa=True)`` 相同）。:math:`H_{kv} = 1` 即
      多查询注意力（MQA，Shazeer 2019）。键/值缓存只存 :math:`H_{kv}` 个头，省下
      :math:`1 - H_{kv}/H` 的缓存内存——这正是它的用处。
    - **RoPE**：给了 ``rope``（:class:`~tinyformer.RotaryEmbedding`）时，投影、分头之后把每个头的
      q、k 按位置旋转（v 不转）；有缓存时新词元的位置从缓存长度接着数。只用于自注意力。
    - **QK-norm**（Dehghani 等 2023）：``qk_norm=True`` 时分头之后（旋转之前）每个头的 q、k 各过一个
      D 维的 :class:`~tinyformer.RMSNorm`（各头共用增益），分数 :math:`q \cdot k / \sqrt{D}` 就不会随权重
      变大而无界地变大，softmax 不会过早饱和。

    参数:
        d_model: 模型维数 C，须能被 num_heads 整除。
        num_heads: 头数 H。
        dropout: 注意力权重的丢弃概率（默认 0.0），只在训练时生效。
        bias: 四个线性层是否带偏置（默认 ``True``）。
        num_kv_heads: K、V 的头数 :math:`H_{kv}`（默认 ``None``，即 H），须整除 H。
        rope: :class:`~tinyformer.RotaryEmbedding`，其 ``head_dim`` 须等于 D = C / H（默认 ``None``，不旋转）。
        qk_norm: q、k 是否各过一个 RMSNorm（默认 ``False``）。

    形状:
        - query: (B, T, C)，key: (B, S, C)，value: (B, S, C)
        - 输出: (B, T, C)；权重: (B, H, T, S)（每个头一份，不取平均）

    例子::

        >>> import torch
        >>> from tinyformer import MultiHeadAttention, causal_mask
        >>> mha = MultiHeadAttention(d_model=16, num_heads=4)
        >>> x = torch.randn(2, 5, 16)
        >>> out, weights = mha(x, x, x, attn_mask=causal_mask(5))  # True = 遮住
        >>> out.shape, weights.shape
        (torch.Size([2, 5, 16]), torch.Size([2, 4, 5, 5]))
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        dropout: float = 0.0,
        bias: bool = True,
        num_kv_heads: int | None = None,
        rope: RotaryEmbedding | None = None,
        qk_norm: bool = False,
    ):
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_int("num_heads", num_heads)
        check_divisible("d_model", d_model, "num_heads", num_heads)
        check_dropout("dropout", dropout)
        check_bool("bias", bias)
        check_bool("qk_norm", qk_norm)
        if num_kv_heads is None:
            num_kv_heads = num_heads
        check_positive_int("num_kv_heads", num_kv_heads)
        check_divisible("num_heads", num_heads, "num_kv_heads", num_kv_heads)
        check_instance("rope", rope, RotaryEmbedding, allow_none=True)
        if rope is not None and rope.head_dim != d_model // num_heads:
            raise ValueError(
                f"rope.head_dim must equal d_model // num_heads = {d_model // num_heads}, "
                f"got rope.head_dim={rope.head_dim}"
            )
        self.d_model = d_model
        self.num_heads = num_heads
        self.num_kv_heads = num_kv_heads  # H_kv；等于 H 时就是普通的多头注意力
        self.head_dim = d_model // num_heads  # D
        self.dropout = dropout
        kv_dim = num_kv_heads * self.head_dim  # H_kv·D（不分组时就是 C）
        self.q_proj = nn.Linear(d_model, d_model, bias=bias)  # W^Q，H 个头拼在一起
        self.k_proj = nn.Linear(d_model, kv_dim, bias=bias)  # W^K，H_kv 个头
        self.v_proj = nn.Linear(d_model, kv_dim, bias=bias)  # W^V，H_kv 个头
        self.out_proj = nn.Linear(d_model, d_model, bias=bias)  # W^O
        self.rope = rope
        # QK-norm：每个头的 q、k 在 D 维上归一化（所有头共用一组增益）；不用时没有这两个模块
        self.q_norm = RMSNorm(self.head_dim) if qk_norm else None
        self.k_norm = RMSNorm(self.head_dim) if qk_norm else None

    def forward(
        self,
        query: Tensor,
        key: Tensor,
        value: Tensor,
        *,
        key_padding_mask: Tensor | None = None,
        attn_mask: Tensor | None = None,
        need_weights: bool = True,
        cache: KVCache | None = None,
        static_kv: bool = False,
    ) -> tuple[Tensor, Tensor | None]:
        r"""对 query 的每个位置，按它与 key 的相似度加权平均 value，H 个头各做一次。

        参数:
            query: 查询。自注意力时 query、key、value 传同一个张量。
            key: 键；交叉注意力时是编码器的输出 memory。
            value: 值，与 key 一一对应（通常就是 key）。
            key_padding_mask: 填充掩码 (B, S)，bool，True 表示这个键是填充、遮住（默认 ``None``），
                即 :func:`~tinyformer.padding_mask` 的 ``ids == pad_id``。与
                ``torch.nn.MultiheadAttention`` 同名、同形状、同义。
            attn_mask: 注意力掩码，bool，True 表示这个查询不许看这个键（默认 ``None``），
                例如 :func:`~tinyformer.causal_mask`；与 ``nn.MultiheadAttention`` 同义（只收 bool）。
                两种掩码各走各的参数：B == T 时 (B, S) 与 (T, S) 形状相同，单看形状分不出来。
                实际遮住的是两者的或。掩码参数只能按名字传。
            need_weights: 是否返回每个头的注意力权重（默认 ``True``）。``False`` 时返回
                ``(output, None)``：走 torch 自己的 ``F.scaled_dot_product_attention``
                （训练时连同权重上的 dropout），输出与 ``True`` 时相同（到浮点舍入），但更快。
            cache: :class:`~tinyformer.KVCache`，增量解码用（默认 ``None``）。
                自注意力时 key/value 只需是新词元，它们的 K、V 接在缓存后面；
                此时 S 是缓存后的键数，掩码的最后一维要与它一致。
            static_kv: 与 ``cache`` 一起用于交叉注意力（默认 ``False``）：第一次调用算出
                memory 的 K、V 存起来，以后直接取用（key、value 不再被投影）。

        形状:
            - query: (B, T, C)；key、value: (B, S, C)
            - key_padding_mask: (B, S)
            - attn_mask: (T|1, S) 或 (B|1, H|1, T|1, S)
            - 输出: (B, T, C)；权重: (B, H, T, S) 或 ``None``
        """
        if not checked():  # 外层的入口（Transformer、GPT）已查过时不再逐层重查
            _check_mha_inputs(self, query, key, value, need_weights, cache, static_kv)
        B, T, C = query.shape
        if cache is None:
            q, k, v = self._project(query, key, value)  # (B, H, T, D), (B, H_kv, S, D) ×2
        else:
            q, k, v = self._project_with_cache(query, key, value, cache, static_kv)
        S = k.shape[-2]
        if not checked():
            check_mask("attn_mask", attn_mask, (B, self.num_heads, T, S), ndims=(2, 4))
            check_key_padding_mask("key_padding_mask", key_padding_mask, B, S)
        mask = _merge_masks(attn_mask, key_padding_mask)  # (B|1, H|1, T|1, S) 或 None

        dropout_p = self.dropout if self.training else 0.0  # 只在训练时丢弃
        group = self.num_heads // self.num_kv_heads  # 每个 K、V 头供几个查询头共用
        if need_weights:
            if group > 1:  # 每个 K、V 头复制给它的 group 个查询头：(B, H_kv, S, D) -> (B, H, S, D)
                k, v = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
            y, weights = _attend(q, k, v, mask, dropout_p)  # (B, H, T, D), (B, H, T, S)
        else:  # 同样的计算交给 torch 的融合内核（见文件后面的 _attend_fused），分组也由它做
            y, weights = _attend_fused(q, k, v, mask, dropout_p, enable_gqa=group > 1), None
        y = y.transpose(1, 2).reshape(B, T, C)  # (B, H, T, D) -> (B, T, H, D) -> (B, T, C)
        return self.out_proj(y), weights

    def _project(
        self, query: Tensor, key: Tensor, value: Tensor, start: int = 0
    ) -> tuple[Tensor, Tensor, Tensor]:
        """Q = query W^Q，K = key W^K，V = value W^V，各自切成 H（K、V 是 H_kv）个头。

        输入是同一个张量时合成一次矩阵乘法：自注意力 [W^Q; W^K; W^V]，交叉注意力 [W^K; W^V]。
        有 ``rope`` 时 q、k 再按位置 start, start+1, ... 旋转。
        """
        if query is key and key is value:  # 自注意力
            q, k, v = self._project_heads(query, self.q_proj, self.k_proj, self.v_proj)
        else:
            (q,) = self._project_heads(query, self.q_proj)
            if key is value:  # 交叉注意力：键和值都是 memory
                k, v = self._project_heads(key, self.k_proj, self.v_proj)
            else:
                (k,) = self._project_heads(key, self.k_proj)
                (v,) = self._project_heads(value, self.v_proj)
        if self.q_norm is not None:  # (B, H, T, D)、(B, H_kv, S, D)：每个头的 D 维各自归一化
            q, k = self.q_norm(q), self.k_norm(k)
        if self.rope is not None:  # (B, H, T, D)、(B, H_kv, S, D)：形状不变，每对维度转 pos·ω_i
            q, k = self.rope(q, start), self.rope(k, start)
        return q, k, v

    def _project_heads(self, x: Tensor, *projections: nn.Linear) -> tuple[Tensor, ...]:
        """把 n 个投影按行拼成一个线性层作用在 x 上，结果切回 n 份，每份分成它的头。

        Q 的投影输出 H·D = C 维，K、V 的输出 H_kv·D 维（不分组时也是 C）。
        """
        B, L, C = x.shape
        D = self.head_dim
        if len(projections) == 1:
            weight, bias = projections[0].weight, projections[0].bias  # (out, C)
        else:  # 按行拼成 (Σout, C)；反向时梯度按行切回各自的参数
            weight = torch.cat([p.weight for p in projections])
            bias = None if projections[0].bias is None else torch.cat([p.bias for p in projections])
        y = F.linear(x, weight, bias)  # (B, L, C) @ (C, Σout) -> (B, L, Σout)
        heads = [p.out_features // D for p in projections]  # 每份的头数 h = H 或 H_kv
        parts = y.split([h * D for h in heads], dim=-1)  # 每份 (B, L, h·D)
        # (B, L, h·D) -> (B, L, h, D) -> (B, h, L, D)；h 写明，L = 0 时也能 view
        return tuple(
            part.view(B, L, h, D).transpose(1, 2) for part, h in zip(parts, heads, strict=True)
        )

    # ---- 增量解码的键/值缓存 -------------------------------------------------------

    def _project_with_cache(
        self, query: Tensor, key: Tensor, value: Tensor, cache: KVCache, static_kv: bool
    ) -> tuple[Tensor, Tensor, Tensor]:
        """与 :meth:`_project` 相同，但 K、V 经过缓存：

        - 交叉注意力（``static_kv``）且已缓存：memory 的 K、V 直接取出，key、value 不再投影；
        - 否则投影新词元，K、V 接在已缓存的后面（第一次调用时就是存进去）。
        """
        cached = cache.get(self) if static_kv else None
        if cached is not None:
            if cached[0].shape[0] != query.shape[0]:  # 与 KVCache.append 的检查相同
                raise ValueError(
                    f"the cache holds batch size {cached[0].shape[0]} but got batch size "
                    f"{query.shape[0]}; use cache.reorder(indices) to change the batch"
                )
            (q,) = self._project_heads(query, self.q_proj)  # (B, H, T, D)
            if self.q_norm is not None:
                q = self.q_norm(q)
            return (q, *cached)  # K、V: (B, H_kv, S, D)
        # 新词元的位置从已缓存的长度接着数（RoPE 要用它）
        q, k, v = self._project(query, key, value, start=cache.length(self))
        return (q, *cache.append(self, k, v))  # 缓存只存 H_kv 个头：(B, H_kv, S_old + S, D)

    def extra_repr(self) -> str:
        kv = "" if self.num_kv_heads == self.num_heads else f", num_kv_heads={self.num_kv_heads}"
        return f"d_model={self.d_model}, num_heads={self.num_heads}{kv}, dropout={self.dropout}"


# ---- 融合路径：不要权重时，同样的计算交给 torch ---------------------------------------------


def _attend_fused(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    mask: Tensor | None,
    dropout_p: float,
    enable_gqa: bool = False,
) -> Tensor:
    """与 :func:`_attend` 相同的公式交给 torch 的融合内核（不返回权重）。

    内核是 ``F.scaled_dot_product_attention``。训练时（dropout_p > 0）也走这里，
    dropout 由 torch 在它的计算里做（nanoGPT 同样如此）。``enable_gqa=True`` 时 key、value 的
    头数 H_kv 可以少于 query 的 H，由 torch 让每 H/H_kv 个查询头共用一个（分组查询注意力）。
    """
    if mask is None:  # (..., T, D), (..., S, D), (..., S, Dv) -> (..., T, Dv)
        return F.scaled_dot_product_attention(
            query, key, value, dropout_p=dropout_p, enable_gqa=enable_gqa
        )
    # F.scaled_dot_product_attention 的 bool attn_mask 意思相反：True = 可以关注
    allowed = ~mask
    # has_key: (..., T|1, 1)，这一行至少有一个没被遮住的键
    has_key = allowed.any(dim=-1, keepdim=True)
    # 全被遮住的行：torch 的某些版本、后端在这里给出 NaN（梯度也是 NaN）。先让这些行"什么都能看"，
    # 算完再把它们的输出置 0，与 _attend 的规定一致。没有这样的行时两步什么也不改；不先问
    # "有没有"：那要把张量读回主机（GPU 上是一次停顿）。
    out = F.scaled_dot_product_attention(
        query, key, value, attn_mask=allowed | ~has_key, dropout_p=dropout_p, enable_gqa=enable_gqa
    )
    return out.masked_fill(~has_key, 0.0)  # (..., T, Dv)


# ---- 参数检查：一次调用查完 ------------------------------------------------------------------


def _check_mha_inputs(
    mha: MultiHeadAttention,
    query: Tensor,
    key: Tensor,
    value: Tensor,
    need_weights: bool,
    cache: KVCache | None,
    static_kv: bool,
) -> None:
    """``MultiHeadAttention.forward`` 的参数检查（掩码要等知道 S 之后在 forward 里查）。

    自注意力时三个参数是同一个张量，交叉注意力时 key、value 是同一个 memory：每个张量只查一次。
    """
    tensors = [("query", query, "(B, T, C)")]
    if key is not query:
        tensors.append(("key", key, "(B, S, C)"))
    if value is not key and value is not query:
        tensors.append(("value", value, "(B, S, C)"))
    for name, x, layout in tensors:
        check_tensor(name, x, layout, d_model=mha.d_model)
        check_floating(name, x, mha.q_proj.weight)
    if key is not value:
        check_key_value(key, value)
    if not query.shape[0] == key.shape[0] == value.shape[0]:
        raise ValueError(
            "query, key and value must have the same batch size B, got "
            f"{query.shape[0]}, {key.shape[0]}, {value.shape[0]}"
        )
    check_bool("need_weights", need_weights)
    check_bool("static_kv", static_kv)
    check_instance("cache", cache, KVCache, allow_none=True)


def _merge_masks(attn_mask: Tensor | None, key_padding_mask: Tensor | None) -> Tensor | None:
    """把 (B, S) 的填充掩码摆成 (B, 1, 1, S)，与注意力掩码 ``|`` 成一个（都是 True = 遮住）。"""
    if key_padding_mask is None:
        return attn_mask
    B, S = key_padding_mask.shape
    padding = key_padding_mask.view(B, 1, 1, S)  # (B, S) -> (B, 1, 1, S)
    return padding if attn_mask is None else padding | attn_mask
