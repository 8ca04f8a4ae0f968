"""注意力掩码：因果掩码与填充掩码（“注意力机制”一章讲解）。

约定与 ``torch.nn.MultiheadAttention``、``torch.nn.Transformer`` 相同：**True 表示"遮住"**
（这个键不许关注），也就是 ``scores.masked_fill(mask, -inf)`` 里 ``mask`` 的意思。掩码作用在
分数矩阵 QKᵀ 上：遮住的分数在 softmax 之前换成 -inf，softmax 之后这些位置的权重为 0。
两种掩码用 ``|`` 组合（遮住 = 任一个说遮住）。

注意 ``torch.nn.functional.scaled_dot_product_attention`` 的 bool ``attn_mask`` 恰好相反
（True 表示可以关注）；本包与它同名的参数只有模块上的 ``attn_mask``，意思随 ``nn.MultiheadAttention``。

两种掩码的意思不同，包里的参数也分开（与 torch 同名、同义）：

- *注意力掩码*（``attn_mask``、``tgt_mask``）：哪个查询不许看哪个键，形状 (T, S) 或
  (B|1, H|1, T|1, S)，例如 :func:`causal_mask`；
- *填充掩码*（``key_padding_mask``、``src_key_padding_mask``、``tgt_key_padding_mask``、
  ``memory_key_padding_mask``）：每一句里哪些键是填充，形状恰好 (B, S)，即
  :func:`padding_mask` 给出的 ``ids == pad_id``。
"""

from __future__ import annotations

import torch
from torch import Tensor

from ._checks import check_int, check_positive_int, check_tensor


def causal_mask(T: int, device: torch.device | str | None = None, start: int = 0) -> Tensor:
    r"""因果掩码：位置 t 不许看它后面的位置（True = 遮住，在对角线之上）。

    .. math::

        \mathrm{mask}_{t,s} = (s > start + t)

    与 ``torch.nn.Transformer.generate_square_subsequent_mask(T)`` 里是 -inf 的位置相同。

    参数:
        T: 查询（新词元）的个数。
        device: 掩码所在设备（默认 ``None``，即 CPU）。
        start: 已经处理过的位置数（默认 0）。增量解码时新词元位于 start..start+T-1，
            键是全部 start+T 个位置，所以返回完整 (start+T, start+T) 掩码的最后 T 行（只建这几行）。

    形状:
        - 输出: (T, start + T)，bool；start=0 时为 (T, T)，对角线之上为 True。

    例子::

        >>> from tinyformer import causal_mask
        >>> causal_mask(3).int()
        tensor([[0, 1, 1],
                [0, 0, 1],
                [0, 0, 0]], dtype=torch.int32)
        >>> causal_mask(1, start=2).int()  # 第 3 个词元可以看见前面全部 3 个位置
        tensor([[0, 0, 0]], dtype=torch.int32)
    """
    if not torch.jit.is_tracing():  # 导出 ONNX 时 T 来自 tgt.shape，是图里的张量，照样能算
        check_positive_int("T", T)
        check_int("start", start, minimum=0)
    queries = torch.arange(start, start + T, device=device)  # (T,)：新词元的位置
    keys = torch.arange(start + T, device=device)  # (S,)，S = start + T
    return keys[None, :] > queries[:, None]  # (1, S) > (T, 1) -> (T, S)


def padding_mask(ids: Tensor, pad_id: int) -> Tensor:
    r"""填充掩码：遮住填充词元 ``<pad>``（True = 这是填充）。

    .. math::

        \mathrm{mask}_{b,s} = (\mathrm{ids}_{b,s} = pad\_id)

    它正是 ``key_padding_mask``、``src_key_padding_mask`` 等参数要的 (B, S) 掩码，与 torch 相同。
    要与注意力掩码组合成一个 (B, 1, T, S) 的掩码时，先摆成 (B, 1, 1, S)：
    ``padding_mask(ids, pad_id)[:, None, None, :] | causal_mask(T)``。

    参数:
        ids: 一批词元编号（键/源序列）。
        pad_id: 填充词元的编号。

    形状:
        - 输入 ids: (B, S)
        - 输出: (B, S)，bool

    例子::

        >>> import torch
        >>> from tinyformer import causal_mask, padding_mask
        >>> ids = torch.tensor([[5, 6, 7], [5, 6, 0]])
        >>> padding_mask(ids, pad_id=0)
        tensor([[False, False, False],
                [False, False,  True]])
        >>> (padding_mask(ids, pad_id=0)[:, None, None, :] | causal_mask(3)).shape  # 用 | 组合
        torch.Size([2, 1, 3, 3])
    """
    check_tensor("ids", ids, "(B, S)")
    check_int("pad_id", pad_id)
    return ids == pad_id  # (B, S)
