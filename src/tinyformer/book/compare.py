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

from .._checks import shorten

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

    判断标准是最大绝对差 :math:`\max_i |a_i - b_i| \le \mathrm{tol}`，比较本身不引入误差：
    实数先转成 float64 再减；两边都是整数时按整数精确地比（2**53 以上的 int64 转成 float64
    会丢掉最低位）；有一边是复数时按 complex128 比，:math:`|a_i - b_i|` 同时包含实部与虚部。
    相等的元素差为 0（两边同一位置都是 ``inf`` 也算相等）；``nan`` 永远不一致。
    形状必须相同，不做广播：形状不同就是不一致。

    参数:
        actual, expected: 张量、数字或（嵌套的、每层等长的）列表；``None``、字符串、
            参差不齐的列表、meta 张量是 ``TypeError``。
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
    a, b = _numbers("actual", actual), _numbers("expected", expected)
    if a.shape != b.shape:
        return Agreement(False, math.nan, tol, shapes=(tuple(a.shape), tuple(b.shape)))
    if a.numel() == 0:
        return Agreement(True, 0.0, tol)
    if not (a.dtype.is_floating_point or a.dtype.is_complex) and not (
        b.dtype.is_floating_point or b.dtype.is_complex
    ):
        # 整数（和 bool）：逐个取出不相等的元素，用 Python 的整数相减，没有舍入也没有溢出
        unequal = a != b
        pairs = zip(a[unequal].tolist(), b[unequal].tolist(), strict=True)
        diff = max((abs(int(x) - int(y)) for x, y in pairs), default=0)
        return Agreement(diff <= tol, float(diff), tol)
    dtype = torch.complex128 if a.dtype.is_complex or b.dtype.is_complex else torch.float64
    a, b = a.to(dtype), b.to(dtype)
    # 相等的元素差为 0（inf == inf）；其余 |a - b|，有 nan 时 diff 是 nan，下面的比较为 False
    diff = torch.where(a == b, 0.0, (a - b).abs().to(torch.float64)).max().item()
    return Agreement(diff <= tol, diff, tol)


def _numbers(name: str, value) -> torch.Tensor:
    """``value`` → CPU 上的张量（dtype 不变）；不是数的输入给出写明参数名的 ``TypeError``。"""
    rule = "a tensor, a number or a (nested, rectangular) list of numbers"
    if isinstance(value, torch.Tensor):
        if value.is_meta:
            raise TypeError(
                f"{name} must be {rule} with data, got a meta tensor (it has no values)"
            )
        tensor = value.detach()
        return (tensor.to_dense() if tensor.layout != torch.strided else tensor).cpu()
    if value is None or isinstance(value, (str, bytes, dict, set)):
        raise TypeError(f"{name} must be {rule}, got {type(value).__name__}")
    try:
        return torch.as_tensor(value)
    except (TypeError, ValueError, RuntimeError) as err:
        raise TypeError(f"{name} must be {rule}, got {shorten(value)} ({err})") from None


def magnitude(value) -> str:
    """一个误差的数量级，例如 0.000321 -> "3e-4"，0.14 -> "1e-1"，0 -> "0"。

    只保留一位有效数字：误差的大小是要讲的内容时，数量级在任何 CPU 上都一样，更多的位数则未必。

    例子::

        >>> magnitude(0.000321), magnitude(0.14), magnitude(2.0), magnitude(0)
        ('3e-4', '1e-1', '2e0', '0')
    """
    numbers = _numbers("value", value)
    if numbers.numel() == 0:
        raise ValueError("value must hold at least one number, got an empty tensor")
    value = float(numbers.abs().to(torch.float64).max())
    if value == 0:
        return "0"
    if not math.isfinite(value):
        return str(value)
    return _format_power(float(f"{value:.0e}"))
