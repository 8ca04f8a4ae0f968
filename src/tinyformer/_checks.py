"""参数检查：每条规则只写一次，各模块共用（不属于任何一章，供全书的模块调用）。

出错时抛出 ``ValueError``/``TypeError``，消息里写明参数名、它的值和规则，例如
``d_model must be divisible by num_heads, got d_model=10, num_heads=3``。
这样读者看到的是"哪里错了、该怎么改"，而不是 torch 深处一个看不懂的 IndexError。
"""

from __future__ import annotations

import math
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

import torch
from torch import Tensor

SEED_LIMIT = 2**32  # 种子的范围 [0, 2**32)：torch、random、numpy 都接受，seed + epoch 也不会溢出

# ---- 只在入口查一次 ------------------------------------------------------------------------
# 读者调用的入口（Transformer、GPT、解码、写诗……）查完参数，在 ``with arguments_checked():`` 里算；
# 里面的层、注意力、嵌入看到 ``checked()`` 为 True 就不再逐层、逐步重查（否则一次前向要进检查函数
# 上百次，"每一句的键都没被全遮住"这类检查还要把张量读回主机：在 GPU 上每次都是一次停顿）。
# 直接调用这些模块（“词嵌入”一章的 TokenEmbedding、“注意力机制”一章的 MultiHeadAttention）时，它们自己就是入口。
_CHECKED: ContextVar[bool] = ContextVar("tinyformer_arguments_checked", default=False)
checked = _CHECKED.get  # () -> bool：参数是否已由外层的入口查过


@contextmanager
def arguments_checked() -> Iterator[None]:
    """入口查完参数之后进入：块里调用的模块跳过自己的检查。"""
    token = _CHECKED.set(True)
    try:
        yield
    finally:
        _CHECKED.reset(token)


def shorten(value, limit: int = 60, *, chinese: bool = False) -> str:
    """``repr(value)``，太长时只保留开头，并注明原来有多长（消息里引用用户的输入时用）。

    本包的异常消息都是英文，所以默认用英文注明长度；``chinese=True`` 给命令行打印给读者的中文消息用。

    例子::

        >>> shorten("我明天去北京")
        "'我明天去北京'"
        >>> shorten("好" * 1000, limit=10)
        "'好好好好好好好好好好'… (1000 characters)"
        >>> shorten("好" * 1000, limit=10, chinese=True)
        "'好好好好好好好好好好'…（共 1000 个字符）"
    """
    if isinstance(value, str) and len(value) > limit:
        head, n, of = repr(value[:limit]), len(value), ""
    else:
        text = repr(value)
        if len(text) <= limit:
            return text
        head, n, of = text[:limit], len(text), "repr "
    if chinese:
        return f"{head}…（{of}共 {n} 个字符）"
    return f"{head}… ({n} characters{' in its repr' if of else ''})"


# 一层 Transformer 在参数之外的开销（Python 对象、张量头、模块字典），实测 50–70 KB
LAYER_OVERHEAD_BYTES = 64 * 1024


def machine_memory() -> int:
    """这台机器的物理内存（字节）；读不到时当作 1 TiB（只用来挡住显然不可能的尺寸）。"""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 2**40


def _bytes_text(nbytes: int) -> str:
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= size:
            return f"{nbytes / size:.1f} {unit}"
    return f"{nbytes} bytes"


def check_memory(what: str, nbytes: int) -> None:
    """``what`` 要的张量放不进这台机器的内存时拒绝，消息写明要多少字节。

    在分配之前调用（构造函数、掩码、束搜索），免得 torch 的分配器在深处报
    ``DefaultCPUAllocator: can't allocate memory``，或者机器因为内存耗尽而卡死。
    """
    limit = machine_memory()
    if nbytes > limit:
        raise ValueError(
            f"{what} would need about {_bytes_text(nbytes)} ({nbytes} bytes) of memory, "
            f"more than this machine has ({_bytes_text(limit)}); choose smaller sizes"
        )


def layer_stack_bytes(d_model: int, d_ff: int, attentions: int, num_layers: int) -> int:
    """``num_layers`` 个 Transformer 层的 float32 参数加上模块开销（字节）。

    每层：``attentions`` 个多头注意力（4 个 C×C 矩阵和偏置）、一个前馈网络（C×d_ff、d_ff×C 和偏置）、
    ``attentions + 1`` 个 LayerNorm（γ、β）。编码器层和 GPT 的块 attentions=1，解码器层 2。
    """
    C = d_model
    per_layer = (
        attentions * (4 * C * C + 4 * C) + 2 * C * d_ff + d_ff + C + (attentions + 1) * 2 * C
    )
    return num_layers * (4 * per_layer + LAYER_OVERHEAD_BYTES)


def _is_int(value) -> bool:
    # bool 是 int 的子类，但 True 不是一个合理的"大小"
    return isinstance(value, int) and not isinstance(value, bool)


def _is_real(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_positive_int(name: str, value) -> None:
    """``value`` 必须是正整数（层数、维度、词表大小……）。"""
    if not _is_int(value) or value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {name}={shorten(value)}")


def check_int(name: str, value, minimum: int | None = None) -> None:
    """``value`` 必须是整数；给了 ``minimum`` 时还必须不小于它。"""
    if not _is_int(value):
        raise TypeError(f"{name} must be an integer, got {name}={shorten(value)}")
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {name}={value}")


def check_seed(name: str, value) -> None:
    """随机种子必须是 [0, 2**32) 内的整数（``2**70`` 这样的值 torch 会在深处报溢出）。"""
    check_int(name, value)
    if not 0 <= value < SEED_LIMIT:
        raise ValueError(f"{name} must be in [0, 2**32) = [0, {SEED_LIMIT}), got {name}={value}")


def check_positive_float(name: str, value) -> None:
    """``value`` 必须是有限的正实数（温度、eps、位置编码的底数……）；nan、inf 都不行。"""
    if not _is_real(value) or not 0 < value < math.inf:
        raise ValueError(f"{name} must be a finite positive number, got {name}={shorten(value)}")


def check_nonnegative_float(name: str, value) -> None:
    """``value`` 必须是有限的非负实数（长度惩罚的指数、学习率的系数……）；nan、inf 都不行。"""
    if not _is_real(value) or not 0 <= value < math.inf:
        raise ValueError(f"{name} must be a finite number >= 0, got {name}={shorten(value)}")


def check_fraction(name: str, value) -> None:
    """``value`` 必须在 [0, 1) 内（丢弃概率、Adam 的 β、动量 μ）：1 会把一切丢掉、让滑动平均永远不动。"""
    if not _is_real(value) or not 0.0 <= value < 1.0:
        raise ValueError(f"{name} must be in [0, 1), got {name}={shorten(value)}")


check_dropout = check_fraction  # 丢弃概率：p = 1 会把一切都丢掉


def check_bool(name: str, value) -> None:
    """开关参数必须是真正的 ``bool``（避免 ``norm_first="False"`` 这种字符串被当成真）。"""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {name}={shorten(value)}")


def check_instance(name: str, value, cls: type, allow_none: bool = False) -> None:
    """``value`` 必须是 ``cls`` 的实例（``allow_none`` 时也可以是 ``None``）。"""
    if (value is None and allow_none) or isinstance(value, cls):
        return
    expected = cls.__name__ + (" or None" if allow_none else "")
    raise TypeError(f"{name} must be a {expected}, got {type(value).__name__}")


def check_divisible(name: str, value: int, divisor_name: str, divisor: int) -> None:
    """``value`` 必须能被 ``divisor`` 整除，例如 d_model 与 num_heads。"""
    if value % divisor != 0:
        raise ValueError(
            f"{name} must be divisible by {divisor_name}, "
            f"got {name}={value}, {divisor_name}={divisor}"
        )


def check_choice(name: str, value, allowed: Sequence[str]) -> None:
    """``value`` 必须是 ``allowed`` 中的一个；消息里列出全部允许值。"""
    if value not in allowed:
        choices = ", ".join(repr(a) for a in allowed)
        raise ValueError(f"{name} must be one of {choices}, got {name}={shorten(value)}")


def check_tensor(name: str, x, layout: str, d_model: int | None = None) -> None:
    """``x`` 必须是张量，维数与 ``layout`` 一致；给了 ``d_model`` 时最后一维必须等于它。

    ``layout`` 如 ``"(B, T, C)"`` 要求恰好 3 维；``"(..., T, D)"`` 要求至少 2 维。
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of shape {layout}, got {type(x).__name__}")
    letters = layout.strip("()").split(", ")
    if letters[0] == "...":
        wrong = x.ndim < len(letters) - 1
    else:
        wrong = x.ndim != len(letters)
    if wrong:
        raise ValueError(f"{name} must have shape {layout}, got shape {tuple(x.shape)}")
    if d_model is not None and x.shape[-1] != d_model:
        raise ValueError(
            f"last dimension of {name} must equal d_model={d_model}, got shape {tuple(x.shape)}"
        )


def check_floating(name: str, x: Tensor, like: Tensor | None = None, like_name: str = "") -> None:
    """``x`` 必须是浮点张量；给了 ``like`` 时 dtype 还必须与它相同。

    ``like`` 是模块的权重（``like_name`` 为空）或另一个输入（``like_name`` 是它的名字）。
    否则 torch 会在矩阵乘法深处报 "mat1 and mat2 must have the same dtype" 这类消息，
    看不出是哪个参数、该怎么改。
    """
    if not x.dtype.is_floating_point:
        raise TypeError(
            f"{name} must be a floating-point tensor, got dtype={x.dtype}; "
            f"convert it with {name}.float()"
        )
    if like is None or x.dtype == like.dtype:
        return
    if like_name:
        raise TypeError(
            f"{name} and {like_name} must have the same dtype, got {name} dtype={x.dtype}, "
            f"{like_name} dtype={like.dtype}; convert one with .to(dtype)"
        )
    raise TypeError(
        f"{name} has dtype={x.dtype} but the module's weights have dtype={like.dtype}; "
        f"convert the input with {name}.to({like.dtype}) or the module with .to({x.dtype})"
    )


def check_indices(name: str, ids: Tensor, size: int, size_name: str) -> None:
    """编号必须是整数张量，且每个值都在 [0, size) 内；消息给出第一个越界的值。

    词元编号（size 是 vocab_size）和缓存重排的行号（size 是批量大小）都用它检查。
    """
    if ids.dtype.is_floating_point or ids.dtype.is_complex or ids.dtype == torch.bool:
        raise TypeError(f"{name} must be an integer tensor, got dtype={ids.dtype}")
    if ids.is_meta:
        raise ValueError(f"{name} must hold values, got a meta tensor (a shape without data)")
    outside = (ids < 0) | (ids >= size)
    if outside.any():
        bad = ids[outside][0].item()
        raise ValueError(f"{name} must be in [0, {size_name}) = [0, {size}), got {bad}")


def check_fits(what: str, length: int, max_len: int) -> None:
    """序列（连同偏移或已缓存的位置）不能超过位置表的长度 max_len；``what`` 写明长度怎么算出来的。"""
    if length > max_len:
        raise ValueError(f"{what} = {length} must be <= max_len={max_len}")


def check_key_value(key: Tensor, value: Tensor) -> None:
    """键和值一一对应：长度 S（倒数第二维）必须相同。"""
    if key.shape[-2] != value.shape[-2]:
        raise ValueError(
            "key and value must have the same length S (dim -2), "
            f"got key shape {tuple(key.shape)}, value shape {tuple(value.shape)}"
        )


def _check_bool_mask(name: str, mask, builder: str) -> None:
    """掩码必须是 bool 张量（True = 遮住，与 torch.nn 相同）；``builder`` 告诉读者该用什么造它。"""
    if not isinstance(mask, Tensor) or mask.dtype != torch.bool:
        got = f"dtype={mask.dtype}" if isinstance(mask, Tensor) else type(mask).__name__
        raise TypeError(
            f"{name} must be a bool tensor (True = masked out, as in torch.nn.MultiheadAttention), "
            f"got {got}; convert with mask.bool() or build it with {builder}"
        )
    if mask.is_meta:
        raise ValueError(f"{name} must hold values, got a meta tensor (a shape without data)")


def check_mask(name: str, mask, shape: Sequence[int], ndims: Sequence[int]) -> None:
    """注意力掩码（attn_mask）：bool 张量（True = 遮住），能广播到注意力分数的形状 ``shape``。

    注意力掩码说的是"哪个查询不许看哪个键"，所以它的最后两维是 (T, S)：维数属于 ``ndims``；
    从右往左对齐后每一维要么等于 ``shape`` 的对应维，要么是 1；最后一维必须恰好是 S。
    (B, S) 的填充掩码**不能**从这里传进来：B == T 时它的形状与 (T, S) 相同，却会把每个
    *查询行*而不是每个*批量行*遮住。填充掩码有自己的参数 ``key_padding_mask``
    （见 :func:`check_key_padding_mask`）。
    """
    if mask is None:
        return
    _check_bool_mask(name, mask, "causal_mask")
    expected = tuple(shape[-mask.ndim :]) if mask.ndim <= len(shape) else None
    fits = (
        mask.ndim in ndims
        and expected is not None
        and mask.shape[-1] == expected[-1]
        and all(m in (1, e) for m, e in zip(mask.shape, expected, strict=True))
    )
    if not fits:
        allowed = " or ".join(str(n) for n in ndims)
        raise ValueError(
            f"{name} of shape {tuple(mask.shape)} does not fit the attention scores of shape "
            f"{tuple(shape)}: an attention mask needs {allowed} dimensions ending in (T, S), "
            "each equal to the scores' dimension or 1 (aligned from the right), the last one "
            "exactly S; a (B, S) padding mask goes to key_padding_mask instead"
        )


def check_key_padding_mask(name: str, mask, batch: int, S: int) -> None:
    """填充掩码（key_padding_mask）：bool 张量 (B, S)，True = 这个键是填充、遮住（与 torch 相同）。

    它说的是"每一句里哪些键是填充"，与查询无关，所以形状恰好是 (B, S)，不接受广播。
    一句话的键全是填充时没有什么可看：torch 在这里给出 NaN，我们报错，因为这几乎总是
    把掩码写反了（``ids != pad_id`` 是"真实词元"，不是填充）。
    """
    if mask is None:
        return
    _check_bool_mask(name, mask, "padding_mask(ids, pad_id), i.e. ids == pad_id")
    if tuple(mask.shape) != (batch, S):
        raise ValueError(
            f"{name} must have shape (B, S) = ({batch}, {S}) (True = padding, ignored), "
            f"got shape {tuple(mask.shape)}; pass padding_mask(ids, pad_id), i.e. ids == pad_id"
        )
    hidden = mask.all(dim=-1) if S > 0 else None  # (B,)：这一句的键全被遮住（S = 0 时没有键可遮）
    if hidden is not None and hidden.any():
        rows = hidden.nonzero().flatten().tolist()
        raise ValueError(
            f"{name} must leave at least one key of each sentence unmasked (True = padding, "
            f"ignored, as in torch), got every key of sentence(s) {shorten(rows)} masked; "
            "did you pass ids != pad_id (the real tokens) instead of ids == pad_id?"
        )
