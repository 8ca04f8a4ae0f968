r"""丢弃法（dropout；第 6 章"丢弃法：训练时丢弃，推理时不丢"讲解）。

训练时每个元素以概率 p 置 0，留下的除以 1 − p，使期望不变；推理时原样返回：

.. math::

    \mathrm{Dropout}(x)_i = \frac{m_i\, x_i}{1-p},\qquad m_i = [\,u_i < 1 - p\,],\quad u_i \sim U[0, 1)

:math:`u_i < 1 - p` 的概率正好是 1 − p，所以 :math:`m_i \sim \mathrm{Bernoulli}(1-p)`。``torch.nn.Dropout``
在 CPU 上用 ``bernoulli_(1 - p)`` 抽 :math:`m_i`，它内部就是这样比较的：每个元素从全局随机数
生成器取一个 float64 的均匀随机数。这里用 ``torch.rand(..., dtype=torch.float64)`` 取 **同样的**
随机数、做同样的比较和除法，所以同一个种子下丢弃的位置、输出、之后的随机数状态都与 ``nn.Dropout``
逐位相同（``tests/unit/test_dropout.py``；torch 在某些构建、某些 CPU 上让 ``bernoulli_`` 改用 MKL
的随机数流，那时 ``nn.Dropout`` 的随机数不同，而这里的不变），只是更快：少了 ``bernoulli_`` 逐个
元素的分布对象，每次丢弃的随机数快约六分之一。第 8 章的模型每步训练丢弃 22 次：16 次在各子层的
输出上，6 次在注意力权重上（见 :mod:`tinyformer.attention` 的 ``_attend_fused``）；
``benchmarks/bench_translation.py`` 的 profile 列出它们的耗时。
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
        >>> _ = torch.manual_seed(0)
        >>> torch.equal(y, torch.nn.functional.dropout(x, p=0.25))  # 与 torch 逐位相同
        True
    """
    check_dropout("p", p)
    if p == 0.0:
        return x
    u = torch.rand(x.shape, dtype=torch.float64, device=x.device)  # 与 bernoulli_ 取同样的随机数
    # 与 x 同形状：0 或 1/(1-p)。与 torch 一样用除法：乘 1/(1-p) 在 p = 0.15 时差 1 ulp
    keep = (u < 1.0 - p).to(x.dtype).div_(1.0 - p)
    return x * keep


class Dropout(nn.Dropout):
    """丢弃法的模块：``train()`` 时按 :func:`dropout` 丢弃，``eval()`` 时原样返回。

    是 ``torch.nn.Dropout`` 的子类：``p``、``train()``/``eval()``、``isinstance(m, nn.Dropout)``
    都照旧，输出也与它逐位相同，只是更快（见模块说明）。与 ``nn.Dropout`` 不同，``p`` 必须在
    [0, 1) 内（p = 1 会把一切都丢掉）。

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
