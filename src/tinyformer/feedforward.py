r"""逐位置前馈网络与 GELU 激活（“层归一化、残差与前馈网络”一章讲解）。

FFN 对每个位置独立地做同一个两层全连接：先升维到 d_ff（通常 4·d_model），
经过激活函数，再降回 d_model。位置之间不交换信息——那是注意力的事。
:class:`SwiGLU` 是后来（PaLM、LLaMA）常用的门控变体：两个升维，一个过 Swish 当作门，逐元素相乘后降维。
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ._checks import (
    check_bool,
    check_choice,
    check_dropout,
    check_floating,
    check_positive_int,
    check_tensor,
    checked,
)

ACTIVATIONS = ("relu", "gelu", "gelu_tanh", "relu2")


class NewGELU(nn.Module):
    r"""GPT-2 用的 GELU 的 tanh 近似（"NewGELU"），等于 ``nn.GELU(approximate="tanh")``。

    .. math::

        \mathrm{NewGELU}(x) = 0.5\, x \left(1 + \tanh\!\Big(\sqrt{2/\pi}\,(x + 0.044715\, x^3)\Big)\right)

    形状:
        - 输入: 任意形状
        - 输出: 与输入相同

    例子::

        >>> import torch
        >>> from tinyformer import NewGELU
        >>> NewGELU()(torch.tensor([-1.0, 0.0, 1.0])).round(decimals=4)
        tensor([-0.1588,  0.0000,  0.8412])
    """

    def forward(self, x: Tensor) -> Tensor:
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


class ReLUSquared(nn.Module):
    r"""ReLU²：:math:`\max(0, x)^2`（So 等人 2021 的 Primer；modded-nanogpt 的 GPT 用它）。

    例子::

        >>> import torch
        >>> ReLUSquared()(torch.tensor([-1.0, 0.5, 2.0]))
        tensor([0.0000, 0.2500, 4.0000])
    """

    def forward(self, x: Tensor) -> Tensor:
        return F.relu(x).square()


def _make_activation(activation: str) -> nn.Module:
    check_choice("activation", activation, ACTIVATIONS)
    if activation == "relu":
        return nn.ReLU()
    if activation == "relu2":
        return ReLUSquared()
    if activation == "gelu":
        return nn.GELU()  # 精确的 GELU：x·Φ(x)，Φ 用 erf 计算
    return NewGELU()


class PositionWiseFFN(nn.Module):
    r"""逐位置前馈网络（论文 §3.3）。

    .. math::

        \mathrm{FFN}(x) = \mathrm{Linear_2}\big(\mathrm{Dropout}(f(\mathrm{Linear_1}(x)))\big)
        = f(x W_1 + b_1) W_2 + b_2

    其中 f 是激活函数；dropout 放在激活之后，与 ``torch.nn.TransformerEncoderLayer`` 相同。

    参数:
        d_model: 输入输出维数 C。
        d_ff: 隐藏层维数（论文取 2048 = 4·512）。
        dropout: 激活之后的丢弃概率（默认 0.0）。
        activation: ``"relu"``（默认，论文）、``"gelu"``（精确，erf）、
            ``"gelu_tanh"``（GPT-2 的 :class:`NewGELU`）或 ``"relu2"``（:class:`ReLUSquared`）。
        bias: 两个线性层是否带偏置 :math:`b_1, b_2`（默认 ``True``）。

    属性:
        linear1: C -> d_ff；linear2: d_ff -> C（与 torch 的层同名，便于拷贝权重）。

    形状:
        - 输入: (..., C)：每个位置独立计算，前面的维数不限，如 (B, T, C) 或 (T, C)
        - 输出: 与输入相同

    例子::

        >>> import torch
        >>> from tinyformer import PositionWiseFFN
        >>> ffn = PositionWiseFFN(d_model=16, d_ff=64, activation="gelu_tanh")
        >>> ffn(torch.randn(2, 5, 16)).shape
        torch.Size([2, 5, 16])
    """

    def __init__(
        self,
        d_model: int,
        d_ff: int,
        dropout: float = 0.0,
        activation: str = "relu",
        bias: bool = True,
    ):
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_int("d_ff", d_ff)
        check_dropout("dropout", dropout)
        check_bool("bias", bias)
        self.d_model = d_model
        self.activation_name = activation
        self.linear1 = nn.Linear(d_model, d_ff, bias=bias)  # W_1, b_1
        self.activation = _make_activation(activation)  # 这里检查 activation
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(d_ff, d_model, bias=bias)  # W_2, b_2

    def forward(self, x: Tensor) -> Tensor:
        if not checked():  # 在模型里由它的入口查过
            check_tensor("x", x, "(..., C)", d_model=self.d_model)
            check_floating("x", x, self.linear1.weight)
        h = self.activation(self.linear1(x))  # (..., C) -> (..., d_ff)
        return self.linear2(self.dropout(h))  # (..., d_ff) -> (..., C)


def swiglu_hidden_size(d_model: int) -> int:
    r"""SwiGLU 的默认隐藏层维数 :math:`\mathrm{round}(\tfrac{2}{3} \cdot 4C)`。

    普通 FFN 有两个矩阵，参数 :math:`2 \cdot C \cdot 4C = 8C^2`；SwiGLU 有三个，取
    :math:`d_{ff} = \tfrac{2}{3} \cdot 4C` 时参数 :math:`3 \cdot C \cdot \tfrac{8C}{3} = 8C^2`，两者可比
    （Shazeer 2020 的做法；LLaMA 再向上取整到 256 的倍数，小模型上那样多出的参数太多，这里取最近的整数）。

    例子::

        >>> swiglu_hidden_size(128)  # 2/3 · 512 = 341.3
        341
    """
    return round(8 * d_model / 3)


class SwiGLU(nn.Module):
    r"""门控前馈网络 SwiGLU（Shazeer 2020，“GLU Variants Improve Transformer”）。

    .. math::

        \mathrm{SwiGLU}(x) = \big(\mathrm{Swish}(x W_g) \odot x W_u\big) W_d, \quad
        \mathrm{Swish}(z) = z\,\sigma(z) = \mathrm{SiLU}(z)

    :math:`xW_g` 经过 Swish 之后当作"门"，逐元素乘到另一个升维 :math:`xW_u` 上，再降回 C 维。
    dropout 放在相乘之后（与 :class:`PositionWiseFFN` 放在激活之后同一个位置）。
    三个矩阵而不是两个，所以隐藏层取 :func:`swiglu_hidden_size` 时参数量与 4C 的普通 FFN 相当。

    参数:
        d_model: 输入输出维数 C。
        d_ff: 隐藏层维数。
        dropout: 相乘之后的丢弃概率（默认 0.0）。
        bias: 三个线性层是否带偏置（默认 ``True``；LLaMA 不带）。

    属性:
        gate_proj: :math:`W_g`，C -> d_ff；up_proj: :math:`W_u`，C -> d_ff；down_proj: :math:`W_d`，d_ff -> C
        （与 Hugging Face 的 LLaMA 同名）。

    形状:
        - 输入: (..., C)
        - 输出: 与输入相同

    例子::

        >>> import torch
        >>> from tinyformer import SwiGLU
        >>> SwiGLU(d_model=16, d_ff=43)(torch.randn(2, 5, 16)).shape
        torch.Size([2, 5, 16])
    """

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0, bias: bool = True):
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_int("d_ff", d_ff)
        check_dropout("dropout", dropout)
        check_bool("bias", bias)
        self.d_model = d_model
        self.gate_proj = nn.Linear(d_model, d_ff, bias=bias)  # W_g
        self.up_proj = nn.Linear(d_model, d_ff, bias=bias)  # W_u
        self.dropout = nn.Dropout(dropout)
        self.down_proj = nn.Linear(d_ff, d_model, bias=bias)  # W_d

    def forward(self, x: Tensor) -> Tensor:
        if not checked():
            check_tensor("x", x, "(..., C)", d_model=self.d_model)
            check_floating("x", x, self.gate_proj.weight)
        # (..., C) -> (..., d_ff) 两次；Swish(门) ⊙ 升维，逐元素
        h = F.silu(self.gate_proj(x)) * self.up_proj(x)
        return self.down_proj(self.dropout(h))  # (..., d_ff) -> (..., C)


FFNS = ("mlp", "swiglu")
