"""比较两个计算结果：给出"一致/不一致"的结论，而不是打印 1e-8 级的噪声（前言"本书的数字"讲解）。

同一个公式，换一台 CPU（AVX-512、AVX2 还是不带向量指令）、换一个线程数，浮点数的求和顺序就不同，
结果会在最后一两位上不一样：今天打印 ``2.98e-07``，明天可能是 ``3.58e-07``，后天是 ``0.00e+00``。
这种差异不是我们要讲的内容，所以全书比较"教学版 vs 包 vs torch"时都用 :func:`agree`：
它只说结果在给定的容差内是否一致，打印出来的句子在任何机器上都相同。

误差的大小本身就是要讲的内容时（例如 float16 与 float32 差多少、写错的公式错多少），
用 :func:`magnitude` 只打印它的数量级。
"""

from __future__ import annotations

import math

import torch

__all__ = ["Agreement", "agree", "magnitude"]


def _format_power(value: float) -> str:
    """1e-06 -> "1e-6"，2.5e-05 -> "2.5e-5"：容差写得像人手写的一样。"""
    mantissa, exponent = f"{value:.1e}".split("e")
    mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}e{int(exponent)}"


class Agreement:
    """:func:`agree` 的结果。``bool(result)`` 表示是否一致，``str(result)`` 是可以打印的结论。

    属性:
        ok: 最大绝对差是否不超过容差（形状不同时为 ``False``）。
        max_diff: 最大绝对差（形状不同时为 ``nan``）。
        tol: 容差。
    """

    def __init__(self, ok: bool, max_diff: float, tol: float, shapes: tuple | None = None):
        self.ok = ok
        self.max_diff = max_diff
        self.tol = tol
        self._shapes = shapes

    def __bool__(self) -> bool:
        return self.ok

    def __str__(self) -> str:
        if self._shapes is not None:
            return f"不一致（形状不同：{self._shapes[0]} vs {self._shapes[1]}）"
        if self.ok:
            return f"一致（最大差 ≤ {_format_power(self.tol)}）"
        # 不一致时差别远大于噪声，两位有效数字在任何机器上都一样；只报数量级更稳妥
        return f"不一致（最大差约 {magnitude(self.max_diff)}，容差 {_format_power(self.tol)}）"

    __repr__ = __str__


def agree(actual, expected, tol: float = 1e-6) -> Agreement:
    r"""比较两个结果，返回可以打印的结论 "一致（最大差 ≤ 1e-6）" 或 "不一致（…）"。

    判断标准是最大绝对差 :math:`\max_i |a_i - b_i| \le \mathrm{tol}`（先转成 float64 再减，
    所以比较本身不引入误差）。形状必须相同，不做广播：形状不同就是不一致。

    参数:
        actual, expected: 张量、数字或（嵌套的）列表。
        tol: 容差，须是有限的非负数（默认 1e-6：float32 的运算噪声约 1e-7，远小于它）。

    例子::

        >>> import torch
        >>> x = torch.randn(4, 8)
        >>> print(agree(x * 3 / 3, x))
        一致（最大差 ≤ 1e-6）
        >>> print(agree(x + 0.5, x))
        不一致（最大差约 5e-1，容差 1e-6）
        >>> bool(agree([1.0, 2.0], [1.0, 2.0]))
        True
    """
    if isinstance(tol, bool) or not isinstance(tol, (int, float)):
        raise TypeError(f"tol must be a number, got {type(tol).__name__}")
    if not math.isfinite(tol) or tol < 0:
        raise ValueError(f"tol must be a finite number >= 0, got tol={tol}")
    a = torch.as_tensor(actual).detach().to("cpu", torch.float64)
    b = torch.as_tensor(expected).detach().to("cpu", torch.float64)
    if a.shape != b.shape:
        return Agreement(False, math.nan, tol, shapes=(tuple(a.shape), tuple(b.shape)))
    if a.numel() == 0:
        return Agreement(True, 0.0, tol)
    diff = (a - b).abs().max().item()  # 有 nan 时 diff 是 nan，下面的比较为 False
    return Agreement(diff <= tol, diff, tol)


def magnitude(value) -> str:
    """一个误差的数量级，例如 0.000321 -> "3e-4"，0.14 -> "1e-1"，0 -> "0"。

    只保留一位有效数字：误差的大小是要讲的内容时，数量级在任何 CPU 上都一样，更多的位数则未必。

    例子::

        >>> magnitude(0.000321), magnitude(0.14), magnitude(2.0), magnitude(0)
        ('3e-4', '1e-1', '2e0', '0')
    """
    value = float(torch.as_tensor(value, dtype=torch.float64).abs().max())
    if value == 0:
        return "0"
    if not math.isfinite(value):
        return str(value)
    return _format_power(float(f"{value:.0e}"))
