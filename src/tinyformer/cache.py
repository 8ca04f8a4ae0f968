"""键/值缓存：让增量解码每一步只算新词元（“完整模型”一章讲解）。

逐词生成时，第 t 步的自注意力需要前面所有位置的 K、V。它们在前几步已经算过，
而且因果掩码保证它们不会因为后来的词元而改变，所以存起来、每步只追加新词元的 K、V。
交叉注意力的 K、V 来自编码器输出 memory，整个生成过程中不变，算一次即可。
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from ._checks import check_indices, check_tensor, checked


class KVCache:
    r"""一次增量解码的键/值缓存：注意力模块 → 它已算好的 (K, V)。

    每个 :class:`~tinyformer.MultiHeadAttention` 用 **它自己** 作钥匙在缓存里存取自己的
    K、V（形状 (B, H, S, D)；分组查询注意力是 (B, H_kv, S, D)），所以整个模型共用一个 ``KVCache`` 对象，调用者不必管层号。
    注意力模块遇到缓存时有两种用法（由 ``MultiHeadAttention.forward`` 的 ``static_kv`` 决定）：

    - 自注意力（``static_kv=False``）：新词元的 K、V 追加在已存的后面，:meth:`append`；
    - 交叉注意力（``static_kv=True``）：第一次算出 memory 的 K、V 存起来，以后 :meth:`get` 直接取用。

    一个缓存只对应一批源句的一次生成；换一批输入时新建一个 ``KVCache()``。

    贪心解码（``Transformer``；``GPT.generate`` 内部也是这样做的）::

        memory = model.encode(src)                       # (B, S, C)
        is_pad = src == model.config.pad_id              # (B, S) 源句的填充掩码
        cache = KVCache()
        ys = torch.full((B, 1), bos_id)                  # (B, 1)
        for _ in range(max_new_tokens):
            # 只送入最新的一个词元；位置偏移由缓存长度决定
            logits = model.decode(
                ys[:, -1:], memory, memory_key_padding_mask=is_pad, cache=cache
            )                                            # (B, 1, V)
            ys = torch.cat([ys, logits[:, -1].argmax(-1, keepdim=True)], dim=1)

    束搜索：先把 memory、is_pad 沿批量维重复 beam 次
    （``memory.repeat_interleave(beam, dim=0)``），从 B·beam 行开始解码；之后每一步选出新的
    B·beam 条候选，``parent`` 是每条候选来自的旧行号（形状 (B·beam,)），调用
    ``cache.reorder(parent)`` 让每一行的缓存跟着它的候选走。

    例子::

        >>> import torch
        >>> from tinyformer import KVCache, MultiHeadAttention
        >>> mha = MultiHeadAttention(d_model=16, num_heads=4)
        >>> x = torch.randn(2, 3, 16)
        >>> cache = KVCache()
        >>> for t in range(3):  # 一次一个词元
        ...     out, _ = mha(x[:, t : t + 1], x[:, t : t + 1], x[:, t : t + 1], cache=cache)
        >>> cache.length(mha), out.shape
        (3, torch.Size([2, 1, 16]))
        >>> cache.reorder(torch.tensor([1, 1, 0]))  # 例如束搜索：新的 3 行来自旧的第 1、1、0 行
        >>> cache.get(mha)[0].shape
        torch.Size([3, 4, 3, 4])
    """

    def __init__(self) -> None:
        self._store: dict[nn.Module, tuple[Tensor, Tensor]] = {}

    def get(self, module: nn.Module) -> tuple[Tensor, Tensor] | None:
        """取出 ``module`` 存的 (K, V)，形状 (B, H, S, D)；没有时返回 ``None``。"""
        return self._store.get(module)

    def append(self, module: nn.Module, key: Tensor, value: Tensor) -> tuple[Tensor, Tensor]:
        """把新的 K、V（形状 (B, H, T, D)）接在 ``module`` 已存的后面，返回全部 (K, V)。"""
        past = self._store.get(module)
        if past is not None:
            if past[0].shape[0] != key.shape[0]:
                raise ValueError(
                    f"the cache holds batch size {past[0].shape[0]} but got batch size "
                    f"{key.shape[0]}; use cache.reorder(indices) to change the batch"
                )
            key = torch.cat([past[0], key], dim=-2)  # (B, H, S, D) + (B, H, T, D) -> (B, H, S+T, D)
            value = torch.cat([past[1], value], dim=-2)
        self._store[module] = (key, value)
        return key, value

    def length(self, module: nn.Module) -> int:
        """``module`` 已缓存的位置数 S（没有缓存时为 0）。模型用它作位置偏移 ``start``。"""
        past = self._store.get(module)
        return 0 if past is None else past[0].shape[-2]

    def nbytes(self) -> int:
        """缓存里全部 K、V 占的字节数。分组查询注意力只存 H_kv 个头，所以是多头注意力的 H_kv / H。"""
        return sum(t.numel() * t.element_size() for pair in self._store.values() for t in pair)

    def reorder(self, indices: Tensor) -> None:
        """沿批量维重新挑选各行：新的第 j 行 = 旧的第 ``indices[j]`` 行（束搜索用）。

        形状: indices (N,)，整数，取值在 [0, B) 内；之后缓存的批量大小变成 N。
        """
        if not checked() and self._store:  # 束搜索的每一步不再查：行号是它自己算出来的
            check_tensor("indices", indices, "(N)")
            batch = next(iter(self._store.values()))[0].shape[0]  # 每个模块存的批量大小相同
            check_indices("indices", indices, batch, "batch size")
        for module, (key, value) in self._store.items():
            indices = indices.to(key.device)
            # (B, H, S, D) -> (N, H, S, D)
            self._store[module] = (key.index_select(0, indices), value.index_select(0, indices))

    def clear(self) -> None:
        """清空缓存，以便开始新的一次生成。"""
        self._store.clear()

    def __repr__(self) -> str:
        lengths = [key.shape[-2] for key, _ in self._store.values()]
        return f"KVCache(modules={len(self._store)}, lengths={lengths})"
