"""cache.py：增量计算（每步一个词元，带缓存）与整段重算的结果相同；reorder 按行重排。"""

import torch

from tinyformer import KVCache, MultiHeadAttention, causal_mask

B, T, S, C, H = 2, 5, 7, 16, 4


def _causal_self_attention():
    """(注意力, 输入 x (B, T, C), 整段带因果掩码的输出, 空缓存)。"""
    torch.manual_seed(0)
    mha = MultiHeadAttention(C, H).eval()
    x = torch.randn(B, T, C)
    full, _ = mha(x, x, x, attn_mask=causal_mask(T))
    return mha, x, full, KVCache()


def test_incremental_self_attention_equals_full_causal_attention():
    mha, x, full, cache = _causal_self_attention()
    steps = [
        mha(x[:, t : t + 1], x[:, t : t + 1], x[:, t : t + 1], cache=cache)[0] for t in range(T)
    ]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=1e-5)
    assert cache.length(mha) == T
    key, value = cache.get(mha)
    assert key.shape == value.shape == (B, H, T, C // H)


def test_chunked_prefill_then_single_steps():
    # 先一次送入 3 个词元（需要带偏移的因果掩码），再逐个送入
    mha, x, full, cache = _causal_self_attention()
    first, _ = mha(x[:, :3], x[:, :3], x[:, :3], attn_mask=causal_mask(3), cache=cache)
    rest = [
        mha(
            x[:, t : t + 1],
            x[:, t : t + 1],
            x[:, t : t + 1],
            attn_mask=causal_mask(1, start=t),
            cache=cache,
        )[0]
        for t in range(3, T)
    ]
    torch.testing.assert_close(torch.cat([first, *rest], dim=1), full, atol=1e-5, rtol=1e-5)


def test_static_cross_attention_is_computed_once():
    torch.manual_seed(0)
    mha = MultiHeadAttention(C, H).eval()
    query, memory = torch.randn(B, T, C), torch.randn(B, S, C)
    full, _ = mha(query, memory, memory)
    cache = KVCache()
    outs = []
    for t in range(T):
        # 第一次之后，传入的 memory 不再被投影：传一个不同的张量，结果也不变
        kv = memory if t == 0 else torch.zeros_like(memory)
        outs.append(mha(query[:, t : t + 1], kv, kv, cache=cache, static_kv=True)[0])
    torch.testing.assert_close(torch.cat(outs, dim=1), full, atol=1e-5, rtol=1e-5)
    assert cache.length(mha) == S  # 没有越存越长


def test_reorder_then_continue_equals_reordered_inputs():
    # 束搜索的场景：重排缓存后继续解码，等于一开始就用重排后的输入
    torch.manual_seed(0)
    mha = MultiHeadAttention(C, H).eval()
    x = torch.randn(B, T, C)
    indices = torch.tensor([1, 0, 1])
    cache = KVCache()
    for t in range(T - 1):
        mha(x[:, t : t + 1], x[:, t : t + 1], x[:, t : t + 1], cache=cache)
    cache.reorder(indices)
    last = x[indices, T - 1 :]
    out, _ = mha(last, last, last, cache=cache)
    y = x[indices]
    expected, _ = mha(y, y, y, attn_mask=causal_mask(T))
    torch.testing.assert_close(out, expected[:, -1:], atol=1e-5, rtol=1e-5)


def test_clear_and_repr():
    mha = MultiHeadAttention(C, H)
    x = torch.randn(B, 2, C)
    cache = KVCache()
    mha(x, x, x, cache=cache)
    assert repr(cache) == "KVCache(modules=1, lengths=[2])"
    cache.clear()
    assert cache.get(mha) is None and cache.length(mha) == 0
