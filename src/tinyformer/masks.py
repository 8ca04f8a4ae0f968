"""注意力掩码：因果掩码与填充掩码（“注意力机制”一章讲解）。

约定：**True 表示"可以关注"**，与 ``torch.nn.functional.scaled_dot_product_attention``
相同（注意 ``torch.nn.MultiheadAttention`` 的 ``key_padding_mask``/bool ``attn_mask``
恰好相反，True 表示"不许关注"）。掩码作用在分数矩阵 QKᵀ 上：不许关注的分数在 softmax
之前加上 -inf，softmax 之后这些位置的权重为 0。两种掩码用 ``&`` 组合。

两种掩码的意思不同，包里的参数也分开（与 torch 同名）：

- *注意力掩码*（``attn_mask``、``src_mask``、``tgt_mask``、``memory_mask``）：哪个查询可以看
  哪个键，形状 (T, S) 或 (B|1, H|1, T|1, S)，例如 :func:`causal_mask`；
- *填充掩码*（``key_padding_mask``、``src_key_padding_mask``、``tgt_key_padding_mask``、
  ``memory_key_padding_mask``）：每一句里哪些键是真实词元，形状恰好 (B, S)，即 ``ids != pad_id``。

B == T 时 (B, S) 与 (T, S) 形状相同，单看形状分不出来，所以它们不能共用一个参数。
:func:`padding_mask` 给出的是摆成注意力掩码形状的填充掩码 (B, 1, 1, S)，供手工与
:func:`causal_mask` 相与、传给 ``attn_mask``。
"""

from __future__ import annotations

import torch
from torch import Tensor

from ._checks import check_int, check_memory, check_positive_int, check_tensor


def causal_mask(T: int, device: torch.device | str | None = None, start: int = 0) -> Tensor:
    r"""因果（下三角）掩码：位置 t 只能关注位置 0..t。

    .. math::

        \mathrm{mask}_{t,s} = (s \le start + t)

    参数:
        T: 查询（新词元）的个数。
        device: 掩码所在设备（默认 ``None``，即 CPU）。
        start: 已经处理过的位置数（默认 0）。增量解码时新词元位于 start..start+T-1，
            键是全部 start+T 个位置，所以返回完整 (start+T, start+T) 掩码的最后 T 行。

    形状:
        - 输出: (T, start + T)，bool；start=0 时为 (T, T)，对角线及其下方为 True。

    例子::

        >>> from tinyformer import causal_mask
        >>> causal_mask(3).int()
        tensor([[1, 0, 0],
                [1, 1, 0],
                [1, 1, 1]], dtype=torch.int32)
        >>> causal_mask(1, start=2).int()  # 第 3 个词元可以看见前面全部 3 个位置
        tensor([[1, 1, 1]], dtype=torch.int32)
    """
    check_positive_int("T", T)
    check_int("start", start, minimum=0)
    S = start + T
    check_memory(f"causal_mask(T={T}, start={start})", 2 * S * S)  # (S, S) 的全 1 表和它的下三角
    full = torch.ones(S, S, dtype=torch.bool, device=device).tril()  # (S, S) 下三角
    return full[start:]  # (S, S) -> (T, S)：只要新词元那几行


def padding_mask(ids: Tensor, pad_id: int) -> Tensor:
    r"""填充掩码：不去关注填充词元 ``<pad>``。

    .. math::

        \mathrm{mask}_{b,0,0,s} = (\mathrm{ids}_{b,s} \ne pad\_id)

    参数:
        ids: 一批词元编号（键/源序列）。
        pad_id: 填充词元的编号。

    形状:
        - 输入 ids: (B, S)
        - 输出: (B, 1, 1, S)，bool；两个 1 分别广播到 H 个头和 T 个查询。它是注意力掩码的形状，
          可以传给 ``attn_mask``；``key_padding_mask`` 参数要的是 (B, S) 的 ``ids != pad_id``。

    例子::

        >>> import torch
        >>> from tinyformer import causal_mask, padding_mask
        >>> ids = torch.tensor([[5, 6, 7], [5, 6, 0]])
        >>> padding_mask(ids, pad_id=0).shape
        torch.Size([2, 1, 1, 3])
        >>> (padding_mask(ids, pad_id=0) & causal_mask(3)).shape  # 两种掩码用 & 组合
        torch.Size([2, 1, 3, 3])
    """
    check_tensor("ids", ids, "(B, S)")
    check_int("pad_id", pad_id)
    return (ids != pad_id)[:, None, None, :]  # (B, S) -> (B, 1, 1, S)
