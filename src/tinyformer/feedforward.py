r"""逐位置前馈网络与 GELU 激活（“层归一化、残差与前馈网络”一章讲解）。

FFN 对每个位置独立地做同一个两层全连接：先升维到 d_ff（通常 4·d_model），
经过激活函数，再降回 d_model。位置之间不交换信息——那是注意力的事。
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from ._checks import (
    check_choice,
    check_dropout,
    check_floating,
    check_positive_int,
    check_tensor,
)

ACTIVATIONS = ("relu", "gelu", "gelu_tanh")


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


def _make_activation(activation: str) -> nn.Module:
    check_choice("activation", activation, ACTIVATIONS)
    if activation == "relu":
        return nn.ReLU()
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
        activation: ``"relu"``（默认，论文）、``"gelu"``（精确，erf）或
            ``"gelu_tanh"``（GPT-2 的 :class:`NewGELU`）。

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

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0, activation: str = "relu"):
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_int("d_ff", d_ff)
        check_dropout("dropout", dropout)
        self.d_model = d_model
        self.activation_name = activation
        self.linear1 = nn.Linear(d_model, d_ff)  # W_1, b_1
        self.activation = _make_activation(activation)  # 这里检查 activation
        self.dropout = nn.Dropout(dropout)
        self.linear2 = nn.Linear(d_ff, d_model)  # W_2, b_2

    def forward(self, x: Tensor) -> Tensor:
        check_tensor("x", x, "(..., C)", d_model=self.d_model)
        check_floating("x", x, self.linear1.weight)
        h = self.activation(self.linear1(x))  # (..., C) -> (..., d_ff)
        return self.linear2(self.dropout(h))  # (..., d_ff) -> (..., C)
