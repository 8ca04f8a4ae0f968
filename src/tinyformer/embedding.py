"""词嵌入：编号 → 向量（“词嵌入”一章讲解）。

嵌入层就是一张查找表 E，形状 (vocab_size, d_model)：编号 i 取出第 i 行。
它等价于 one-hot 向量乘以 E，只是不必真的造出 one-hot。
"""

from __future__ import annotations

import math

from torch import Tensor, nn

from ._checks import (
    check_bool,
    check_indices,
    check_int,
    check_positive_int,
    check_tensor,
    checked,
)


class TokenEmbedding(nn.Module):
    r"""词嵌入层：查表得到词向量，（默认）再乘以 :math:`\sqrt{d_{model}}`。

    .. math::

        \mathrm{TokenEmbedding}(x) = E[x] \cdot \sqrt{d_{model}}
        = \mathrm{onehot}(x)\, E \cdot \sqrt{d_{model}}

    论文 §3.4 让嵌入与 softmax 前的输出投影共享同一个权重 E，并把嵌入乘以
    :math:`\sqrt{d_{model}}`（“词嵌入”一章用实测数字讨论这个缩放）。

    参数:
        vocab_size: 词表大小 V。
        d_model: 词向量维数 C。
        padding_idx: 填充词元的编号（默认 ``None``）；给出时这一行初始化为 0 且不接收梯度，
            与 ``nn.Embedding`` 相同。
        scale: 是否乘以 :math:`\sqrt{d_{model}}`（默认 ``True``）。

    属性:
        embedding: 内部的 ``nn.Embedding``，权重形状 (vocab_size, d_model)，
            可以手动赋值或与输出层共享（权重绑定）。

    形状:
        - 输入 ids: (B, T)，整数编号，取值在 [0, vocab_size) 内
        - 输出: (B, T, C)

    例子::

        >>> import torch
        >>> from tinyformer import TokenEmbedding
        >>> emb = TokenEmbedding(vocab_size=10, d_model=16)
        >>> emb(torch.tensor([[1, 2, 3], [4, 5, 0]])).shape
        torch.Size([2, 3, 16])
    """

    def __init__(
        self, vocab_size: int, d_model: int, padding_idx: int | None = None, scale: bool = True
    ):
        super().__init__()
        check_positive_int("vocab_size", vocab_size)
        check_positive_int("d_model", d_model)
        check_bool("scale", scale)
        if padding_idx is not None:
            check_int("padding_idx", padding_idx, minimum=0)
            if padding_idx >= vocab_size:
                raise ValueError(
                    f"padding_idx must be in [0, vocab_size) = [0, {vocab_size}), "
                    f"got padding_idx={padding_idx}"
                )
        self.vocab_size = vocab_size
        self.d_model = d_model
        self.scale = scale
        self.embedding = nn.Embedding(vocab_size, d_model, padding_idx=padding_idx)

    def forward(self, ids: Tensor) -> Tensor:
        if not checked():  # 在 Transformer、GPT 里由它们的入口查过
            check_tensor("ids", ids, "(B, T)")
            check_indices("ids", ids, self.vocab_size, "vocab_size")
        x = self.embedding(ids)  # (B, T) -> (B, T, C)：按编号取 E 的行
        return x * math.sqrt(self.d_model) if self.scale else x

    def extra_repr(self) -> str:
        return f"vocab_size={self.vocab_size}, d_model={self.d_model}, scale={self.scale}"
