r"""丢弃法（dropout）从零写出来：“层归一化、残差与前馈网络”一章里“丢弃法：训练时丢弃，推理时不丢”一节的展品。

包里的模块（位置编码、前馈网络、编码器/解码器层、GPT 的残差丢弃）用的是 torch 的 ``nn.Dropout``，
注意力权重上的丢弃用 ``F.dropout`` / ``F.scaled_dot_product_attention`` 的 ``dropout_p``；这里的
:func:`dropout` 与 :class:`Dropout` 只为让读者看到公式本身（*inverted dropout*）：

训练时每个元素以概率 p 置 0，留下的除以 1 − p，使期望不变；推理时原样返回：

.. math::

    \mathrm{Dropout}(x)_i = \frac{m_i\, x_i}{1-p},\qquad m_i = [\,u_i < 1 - p\,],\quad u_i \sim U[0, 1)

:math:`u_i < 1 - p` 的概率正好是 1 − p，所以 :math:`m_i \sim \mathrm{Bernoulli}(1-p)`。它与
``nn.Dropout`` 在分布上相同：置 0 的比例是 p、留下的值是 1/(1 − p)、期望不变
（``tests/unit/test_dropout.py``）。
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from ._checks import check_dropout


def dropout(x: Tensor, p: float) -> Tensor:
    """以概率 ``p`` 把 ``x`` 的每个元素置 0，其余乘 1/(1 − p)（总是丢弃：训练/推理的切换由调用者负责）。

    例子::

        >>> import torch
        >>> x = torch.ones(100_000)
        >>> _ = torch.manual_seed(0)
        >>> y = dropout(x, p=0.25)
        >>> sorted(set(y.tolist()))  # 只有两种值：0 和 1/(1 - 0.25)
        [0.0, 1.3333333730697632]
        >>> round(y.mean().item(), 2)  # 期望不变
        1.0
    """
    check_dropout("p", p)
    if p == 0.0:
        return x
    u = torch.rand(x.shape, dtype=torch.float64, device=x.device)  # u_i ~ U[0, 1)
    # 与 x 同形状：m_i / (1 - p)，即 0 或 1/(1-p)
    keep = (u < 1.0 - p).to(x.dtype) / (1.0 - p)
    return x * keep


class Dropout(nn.Dropout):
    """丢弃法的模块：``train()`` 时按 :func:`dropout` 丢弃，``eval()`` 时原样返回。

    是 ``torch.nn.Dropout`` 的子类：``p``、``train()``/``eval()``、``isinstance(m, nn.Dropout)``
    都照旧，丢弃的分布也相同（见模块说明）；包里的模块用的是 ``nn.Dropout`` 本身。与 ``nn.Dropout``
    不同，``p`` 必须在 [0, 1) 内（p = 1 会把一切都丢掉）。

    参数:
        p: 丢弃概率（默认 0.5，与 ``nn.Dropout`` 相同）。

    形状:
        - 输入: 任意形状
        - 输出: 与输入相同
    """

    def __init__(self, p: float = 0.5):
        check_dropout("p", p)
        super().__init__(p)

    def forward(self, x: Tensor) -> Tensor:
        return dropout(x, self.p) if self.training else x
