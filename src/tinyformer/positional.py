r"""正弦位置编码与它的"平移矩阵"（“位置编码”一章、“位置编码问答与证明”一章讲解）。

注意力本身不看顺序（打乱输入的词，输出只是跟着打乱），所以要把位置信息加进词向量。
第 i 对维度 (2i, 2i+1) 共用 **一个** 频率 :math:`\omega_i = 1 / base^{2i/d_{model}}`，
一个放 sin、一个放 cos；正因为成对，PE(pos + k) 才能由 PE(pos) 旋转得到（“位置编码问答与证明”一章）。
:class:`RotaryEmbedding`（RoPE）用同样的频率，但不加到输入上，而是在注意力里把每个头的 q、k 按位置旋转。
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from ._checks import (
    check_choice,
    check_dropout,
    check_fits,
    check_int,
    check_positive_float,
    check_positive_int,
    check_tensor,
    checked,
)


def _frequencies(d_model: int, base: float) -> Tensor:
    """第 i 对维度的角频率 ω_i = 1 / base^(2i/d_model)，i = 0, 1, ...；float64，长度 ⌈d_model/2⌉。"""
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # 2i = 0, 2, 4, ...
    return base ** (-two_i / d_model)


def _check_frequencies(omega: Tensor, d_model: int, base: float, name: str = "d_model") -> None:
    """ω_i = 1/base^(2i/d_model) 都必须是有限的正数：base 太小（如 1e-310）时 ω 溢出成 inf，
    太大时下溢成 0，编码表会是 nan 或者一列常数，而不是报错。"""
    if omega.is_meta:  # 在 meta 设备上只算形状（读检查点时），真正建表时再查
        return
    bad = ~torch.isfinite(omega) | (omega == 0)
    if bad.any():
        i = int(bad.nonzero()[0, 0])
        raise ValueError(
            f"base must keep the frequencies 1/base^(2i/{name}) finite and nonzero in float64, "
            f"got base={base}, {name}={d_model}: the frequency of i={i} is {float(omega[i])}"
        )


def sinusoidal_encoding(max_len: int, d_model: int, base: float = 10000.0) -> Tensor:
    r"""正弦位置编码表（论文 §3.5）。

    .. math::

        PE_{(pos, 2i)} = \sin(pos \cdot \omega_i), \quad
        PE_{(pos, 2i+1)} = \cos(pos \cdot \omega_i), \quad
        \omega_i = \frac{1}{base^{2i/d_{model}}}

    维度 2i 和 2i+1 共用同一个频率 :math:`\omega_i`。d_model 为奇数时最后一列是
    sin（它没有配对的 cos）。角度先用 float64 计算再转成 float32，
    这样位置很大时 sin/cos 仍然准确。

    参数:
        max_len: 表的行数，即最长序列长度（不是词表大小）。
        d_model: 编码维数 C。
        base: 频率的底数（默认 10000.0，论文的取值）。

    形状:
        - 输出: (max_len, d_model)，float32

    例子（d_model=4 时位置 1 的编码是 [sin 1, cos 1, sin 0.01, cos 0.01]）::

        >>> import math, torch
        >>> from tinyformer import sinusoidal_encoding
        >>> pe = sinusoidal_encoding(max_len=3, d_model=4)
        >>> pe.shape
        torch.Size([3, 4])
        >>> expected = [math.sin(1), math.cos(1), math.sin(0.01), math.cos(0.01)]
        >>> torch.allclose(pe[1], torch.tensor(expected))
        True
    """
    check_positive_int("max_len", max_len)
    check_positive_int("d_model", d_model)
    check_positive_float("base", base)
    # 角度表 (max_len, ⌈C/2⌉) 和结果 (max_len, C) 都是 float64，最后再转成 float32
    position = torch.arange(max_len, dtype=torch.float64)[:, None]  # (max_len, 1)
    omega = _frequencies(d_model, base)  # (⌈C/2⌉,)
    _check_frequencies(omega, d_model, base)
    angle = position * omega  # (max_len, 1) * (⌈C/2⌉,) -> (max_len, ⌈C/2⌉)
    pe = torch.zeros(max_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(angle)  # 偶数维 2i：sin
    pe[:, 1::2] = torch.cos(angle[:, : d_model // 2])  # 奇数维 2i+1：cos，同一个 ω_i
    return pe.float()


def shift_matrix(k: int, d_model: int, base: float = 10000.0) -> Tensor:
    r"""平移 k 个位置的矩阵 M(k)：对所有 pos 都有 PE(pos + k) = M(k) · PE(pos)。

    记 :math:`a = pos\,\omega_i,\ b = k\,\omega_i`，由和角公式

    .. math::

        \begin{pmatrix} \sin(a+b) \\ \cos(a+b) \end{pmatrix}
        = \begin{pmatrix} \cos b & \sin b \\ -\sin b & \cos b \end{pmatrix}
          \begin{pmatrix} \sin a \\ \cos a \end{pmatrix}

    所以 M(k) 是分块对角矩阵，第 i 个 2×2 块是上面那个旋转矩阵；它只依赖 k，不依赖 pos。

    d_model 必须是偶数：d_model 为奇数时最后一列 :math:`\sin(pos\,\omega)` 没有配对的 cos，
    而 :math:`\sin((pos+k)\omega) = \sin(pos\,\omega)\cos(k\omega) + \cos(pos\,\omega)\sin(k\omega)`
    需要表里没有的 :math:`\cos(pos\,\omega)`，这样的 M(k) 不存在，因此抛出 ``ValueError``。

    参数:
        k: 平移的位置数（整数，可以为负）。
        d_model: 编码维数 C（偶数）。
        base: 频率的底数（默认 10000.0），须与 :func:`sinusoidal_encoding` 一致。

    形状:
        - 输出: (d_model, d_model)，float32

    例子::

        >>> import torch
        >>> from tinyformer import shift_matrix, sinusoidal_encoding
        >>> pe = sinusoidal_encoding(max_len=10, d_model=8)
        >>> M = shift_matrix(3, d_model=8)
        >>> M.shape
        torch.Size([8, 8])
        >>> torch.allclose(M @ pe[2], pe[5], atol=1e-6)
        True
    """
    check_int("k", k)
    check_positive_int("d_model", d_model)
    check_positive_float("base", base)
    if d_model % 2 != 0:
        raise ValueError(
            "d_model must be even for shift_matrix: with odd d_model the last sin column has "
            f"no cos partner, so PE(pos + k) is not a linear function of PE(pos); got d_model={d_model}"
        )
    omega = _frequencies(d_model, base)  # (C/2,)
    _check_frequencies(omega, d_model, base)
    angle = k * omega  # (C/2,)：每一对维度转过的角度 kω_i
    cos, sin = torch.cos(angle), torch.sin(angle)
    M = torch.zeros(d_model, d_model, dtype=torch.float64)
    M[0::2, 0::2] = torch.diag(cos)  # sin 行：cos b · sin a
    M[0::2, 1::2] = torch.diag(sin)  #       + sin b · cos a
    M[1::2, 0::2] = torch.diag(-sin)  # cos 行：-sin b · sin a
    M[1::2, 1::2] = torch.diag(cos)  #       + cos b · cos a
    return M.float()


class PositionalEncoding(nn.Module):
    r"""把正弦位置编码加到词向量上，再做 dropout（论文 §3.5）。

    .. math::

        \mathrm{PositionalEncoding}(x)_{b,t} = \mathrm{Dropout}(x_{b,t} + PE_{start+t})

    编码表注册为 buffer ``pe``：它不是可学习参数，但会随 ``.to(device)`` 一起移动。

    参数:
        d_model: 编码维数 C。
        max_len: 能处理的最长序列（默认 5000）；表的形状是 (max_len, d_model)。
        dropout: 相加之后的丢弃概率（默认 0.0）。
        base: 频率的底数（默认 10000.0）。

    形状:
        - 输入 x: (B, T, C)
        - 输出: (B, T, C)

    ``forward(x, start=0)`` 的 ``start`` 是位置偏移：增量解码时新词元位于
    start, start+1, ...，要求 T + start <= max_len。

    例子::

        >>> import torch
        >>> from tinyformer import PositionalEncoding
        >>> pos = PositionalEncoding(d_model=16, max_len=50)
        >>> pos(torch.zeros(2, 5, 16)).shape
        torch.Size([2, 5, 16])
        >>> pos(torch.zeros(2, 1, 16), start=7).shape  # 第 8 个位置
        torch.Size([2, 1, 16])
    """

    def __init__(
        self, d_model: int, max_len: int = 5000, dropout: float = 0.0, base: float = 10000.0
    ):
        super().__init__()
        check_dropout("dropout", dropout)
        self.d_model = d_model
        self.max_len = max_len
        self.dropout = nn.Dropout(dropout)
        pe = sinusoidal_encoding(max_len, d_model, base)  # 这里检查 max_len、d_model、base
        self.register_buffer("pe", pe, persistent=False)  # (max_len, C)

    def forward(self, x: Tensor, start: int = 0) -> Tensor:
        if not checked():  # 在 Transformer 里由它的入口查过
            check_tensor("x", x, "(B, T, C)", d_model=self.d_model)
            check_int("start", start, minimum=0)
            T = x.shape[1]
            check_fits(f"T + start = {T} + {start}", T + start, self.max_len)
        B, T, C = x.shape
        x = x + self.pe[start : start + T]  # (B, T, C) + (T, C) -> (B, T, C)
        return self.dropout(x)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, max_len={self.max_len}"


ROPE_LAYOUTS = ("half", "interleaved")


class RotaryEmbedding(nn.Module):
    r"""旋转位置编码 RoPE（Su 等 2021，RoFormer），作用在注意力每个头的 q、k 上（“位置编码”一章）。

    位置 pos 上的向量 x（一个头的 D 维）分成 D/2 对，第 i 对转过角度 :math:`pos\,\omega_i`，
    :math:`\omega_i = 1/base^{2i/D}`（与 :func:`sinusoidal_encoding` 同一组频率），按 RoFormer 式 (15)
    的方向（逆时针）：

    .. math::

        \begin{pmatrix} y_a \\ y_b \end{pmatrix}
        = \begin{pmatrix} \cos pos\,\omega_i & -\sin pos\,\omega_i \\
                           \sin pos\,\omega_i & \cos pos\,\omega_i \end{pmatrix}
          \begin{pmatrix} x_a \\ x_b \end{pmatrix}

    哪两维成一对，有“位置编码”一章说的两种布局：

    - ``"half"``（默认）：a = i，b = i + D/2，前一半与后一半成对（GPT-NeoX、Hugging Face 的 LLaMA 的
      ``rotate_half``）；
    - ``"interleaved"``：a = 2i，b = 2i + 1，相邻两维成对（RoFormer 论文、Meta 原版 LLaMA）。

    两种布局只差一个固定的维度重排，但训练好的权重不能混用。旋转保持长度，且转 m 与转 n 的
    内积只依赖 m − n：:math:`(R_m q)^\top (R_n k) = q^\top R_{n-m} k`，所以分数只看相对位置。
    cos、sin 表先用 float64 算再转成 float32，注册为 buffer（不是参数，不存进权重文件）。

    参数:
        head_dim: 每个头的维数 D（偶数）。
        max_len: 能处理的最长序列（默认 5000）。
        base: 频率的底数（默认 10000.0）。
        layout: ``"half"``（默认）或 ``"interleaved"``。

    形状:
        - 输入 x: (..., T, D)，例如 (B, H, T, D)
        - 输出: 与输入相同

    ``forward(x, start=0)`` 的 ``start`` 是位置偏移：用键/值缓存逐词生成时，新词元位于
    start, start+1, ...（start = 已缓存的长度），要求 T + start <= max_len。

    例子::

        >>> import torch
        >>> from tinyformer import RotaryEmbedding
        >>> rope = RotaryEmbedding(head_dim=8, max_len=16)
        >>> q = torch.randn(2, 4, 5, 8)  # (B, H, T, D)
        >>> rope(q).shape
        torch.Size([2, 4, 5, 8])
        >>> torch.allclose(rope(q).norm(dim=-1), q.norm(dim=-1))  # 旋转不改变长度
        True
    """

    def __init__(
        self, head_dim: int, max_len: int = 5000, base: float = 10000.0, layout: str = "half"
    ):
        super().__init__()
        check_positive_int("head_dim", head_dim)
        check_positive_int("max_len", max_len)
        check_positive_float("base", base)
        check_choice("layout", layout, ROPE_LAYOUTS)
        if head_dim % 2 != 0:
            raise ValueError(
                f"head_dim must be even for RoPE (dimensions are rotated in pairs), got head_dim={head_dim}"
            )
        self.head_dim = head_dim
        self.max_len = max_len
        self.layout = layout
        omega = _frequencies(head_dim, base)  # (D/2,)：ω_i = 1/base^(2i/D)
        _check_frequencies(omega, head_dim, base, name="head_dim")
        position = torch.arange(max_len, dtype=torch.float64)[:, None]  # (max_len, 1)
        angle = position * omega  # (max_len, 1) * (D/2,) -> (max_len, D/2)：第 i 对转过 pos·ω_i
        self.register_buffer("cos", torch.cos(angle).float(), persistent=False)  # (max_len, D/2)
        self.register_buffer("sin", torch.sin(angle).float(), persistent=False)  # (max_len, D/2)

    def forward(self, x: Tensor, start: int = 0) -> Tensor:
        T, D = x.shape[-2:]
        if not checked():  # 在 GPT 里由它的入口查过
            check_int("start", start, minimum=0)  # 负的下标从表尾数起：会悄悄切出空表
            check_fits(f"T + start = {T} + {start}", T + start, self.max_len)
        cos = self.cos[start : start + T].to(x.dtype)  # (T, D/2)，对 (..., T, D/2) 广播
        sin = self.sin[start : start + T].to(x.dtype)
        if self.layout == "half":  # 第 i 维与第 i + D/2 维成对：各 (..., T, D/2)
            a, b = x[..., : D // 2], x[..., D // 2 :]
        else:  # 第 2i 维与第 2i+1 维成对：各 (..., T, D/2)
            a, b = x[..., 0::2], x[..., 1::2]
        y_a = a * cos - b * sin  # 每一对逆时针转 pos·ω_i
        y_b = a * sin + b * cos
        if self.layout == "half":
            return torch.cat([y_a, y_b], dim=-1)  # (..., T, D/2) ×2 -> (..., T, D)
        return torch.stack([y_a, y_b], dim=-1).flatten(-2)  # (..., T, D/2, 2) -> (..., T, D)

    def extra_repr(self) -> str:
        return f"head_dim={self.head_dim}, max_len={self.max_len}, layout={self.layout!r}"
