r"""层归一化（“层归一化、残差与前馈网络”一章讲解）。

LayerNorm 在每个词元自己的 C 个特征上求均值和方差，与批里别的句子、别的位置无关；
所以变长、带填充的批次不会污染它的统计量（BatchNorm 则会，“层归一化、残差与前馈网络”一章实测）。
:class:`RMSNorm` 是它的简化（LLaMA 等后来的模型用它）：不减均值、没有 β，只除以均方根。
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ._checks import (
    check_bool,
    check_choice,
    check_floating,
    check_positive_float,
    check_positive_int,
    check_tensor,
    checked,
)

# 这些 dtype 的尾数太短，在它们里面求均值和方差会丢精度：统计量改用 float32 计算（torch 也这样做）
_LOW_PRECISION = (torch.float16, torch.bfloat16)


class LayerNorm(nn.Module):
    r"""层归一化，与 ``torch.nn.LayerNorm(d_model, eps)`` 计算同一个函数（“从零实现层归一化”一节实现并核对）。

    .. math::

        \mu = \frac{1}{C}\sum_{c} x_c, \quad
        \sigma^2 = \frac{1}{C}\sum_{c} (x_c - \mu)^2, \quad
        \mathrm{LayerNorm}(x) = \gamma \odot \frac{x - \mu}{\sqrt{\sigma^2 + \epsilon}} + \beta

    方差是有偏的（除以 C 而不是 C-1），:math:`\epsilon` 在平方根里面。
    输入是 float16 / bfloat16 时，均值、方差和归一化都在 float32 里算，最后转回输入的 dtype，
    与 ``torch.nn.LayerNorm`` 相同：否则 fp16 的 ``[0, 512, 0, 512]`` 求方差时 256² 溢出，
    归一化成全 0，而正确结果是 ``[-1, 1, -1, 1]``。

    参数:
        d_model: 特征维数 C。
        eps: 加在方差上防止除以 0 的小数（默认 1e-5）。
        bias: 是否有 :math:`\beta`（默认 ``True``）；``False`` 时没有这个参数，公式里不加 β，
            与 ``torch.nn.LayerNorm(..., bias=False)`` 相同。

    属性:
        weight: :math:`\gamma`，形状 (C,)，初始为 1。
        bias: :math:`\beta`，形状 (C,)，初始为 0；``bias=False`` 时为 ``None``。

    形状:
        - 输入: (..., C)
        - 输出: 与输入相同

    例子::

        >>> import torch
        >>> from tinyformer import LayerNorm
        >>> norm = LayerNorm(16)
        >>> y = norm(torch.randn(2, 5, 16))
        >>> y.shape
        torch.Size([2, 5, 16])
        >>> bool(y.mean(-1).abs().max() < 1e-5)  # 每个词元的特征均值为 0
        True
    """

    def __init__(self, d_model: int, eps: float = 1e-5, bias: bool = True):
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_float("eps", eps)
        check_bool("bias", bias)
        self.d_model = d_model
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))  # γ
        self.bias = nn.Parameter(torch.zeros(d_model)) if bias else None  # β

    def forward(self, x: Tensor) -> Tensor:
        if not checked():  # 在模型里由它的入口查过
            check_tensor("x", x, "(..., C)", d_model=self.d_model)
            # float16/bfloat16 的输入在 float32 里算（下面）；其余 dtype 须与 γ、β 相同
            check_floating("x", x, None if x.dtype in _LOW_PRECISION else self.weight)
        if x.dtype in _LOW_PRECISION:  # 统计量在 float32 里算，结果再转回原来的 dtype
            weight = None if self.weight is None else self.weight.float()
            bias = None if self.bias is None else self.bias.float()
            y = F.layer_norm(x.float(), (self.d_model,), weight, bias, self.eps)
            return y.to(x.dtype)
        # 上面的公式（“从零实现层归一化”一节逐项写出，并核对它与 F.layer_norm 相同）交给 torch 的融合内核：
        # 前向、反向各一个算子，而不是十来个逐元素运算（benchmarks/ 里实测快一个数量级）
        return F.layer_norm(x, (self.d_model,), self.weight, self.bias, self.eps)  # (..., C)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, eps={self.eps}"


class RMSNorm(nn.Module):
    r"""均方根归一化（Zhang & Sennrich 2019），与 ``torch.nn.RMSNorm(d_model, eps)`` 计算同一个函数。

    .. math::

        \mathrm{RMS}(x) = \sqrt{\frac{1}{C}\sum_{c} x_c^2 + \epsilon}, \quad
        \mathrm{RMSNorm}(x) = \gamma \odot \frac{x}{\mathrm{RMS}(x)}

    与 :class:`LayerNorm` 相比少了两样：不减均值 :math:`\mu`，也没有 :math:`\beta`。
    :math:`\epsilon` 同样在平方根里面。float16 / bfloat16 的输入在 float32 里算，再转回原来的 dtype。

    参数:
        d_model: 特征维数 C。
        eps: 加在均方上防止除以 0 的小数（默认 1e-5，同 :class:`LayerNorm`）。

    属性:
        weight: :math:`\gamma`，形状 (C,)，初始为 1。

    形状:
        - 输入: (..., C)
        - 输出: 与输入相同

    例子::

        >>> import torch
        >>> from tinyformer import RMSNorm
        >>> y = RMSNorm(16)(torch.randn(2, 5, 16))
        >>> bool((y.pow(2).mean(-1) - 1).abs().max() < 1e-4)  # 每个词元的均方为 1
        True
    """

    def __init__(self, d_model: int, eps: float = 1e-5):
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_float("eps", eps)
        self.d_model = d_model
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))  # γ

    def forward(self, x: Tensor) -> Tensor:
        if not checked():  # 在模型里由它的入口查过
            check_tensor("x", x, "(..., C)", d_model=self.d_model)
            check_floating("x", x, None if x.dtype in _LOW_PRECISION else self.weight)
        h = x.float() if x.dtype in _LOW_PRECISION else x
        # 1/RMS(x)：(..., C) -> (..., 1)。乘以 rsqrt 而不是除以 sqrt：同一个数，前向加反向快约三分之一
        inv_rms = torch.rsqrt(h.square().mean(dim=-1, keepdim=True) + self.eps)
        y = h * inv_rms * self.weight.to(h.dtype)  # (..., C) * (..., 1) * (C,) -> (..., C)
        return y.to(x.dtype)

    def extra_repr(self) -> str:
        return f"d_model={self.d_model}, eps={self.eps}"


NORMS = ("layernorm", "rmsnorm")


def make_norm(norm: str, d_model: int, bias: bool = True) -> nn.Module:
    """``"layernorm"`` -> :class:`LayerNorm`，``"rmsnorm"`` -> :class:`RMSNorm`（它本来就没有 β，不看 ``bias``）。"""
    check_choice("norm", norm, NORMS)
    return LayerNorm(d_model, bias=bias) if norm == "layernorm" else RMSNorm(d_model)
