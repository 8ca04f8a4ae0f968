"""masks.py：True = 可以关注；形状、偏移、组合，以及与 torch 的约定一致。"""

import torch
import torch.nn.functional as F

from tinyformer import causal_mask, padding_mask

T = 5


def test_causal_mask_matches_definition():
    mask = causal_mask(T)
    assert mask.dtype == torch.bool and mask.shape == (T, T)
    for t in range(T):
        for s in range(T):
            assert bool(mask[t, s]) == (s <= t)


def test_causal_mask_with_start_is_the_last_rows_of_the_full_mask():
    full = causal_mask(7)
    for start in range(7):
        T_new = 7 - start
        torch.testing.assert_close(causal_mask(T_new, start=start), full[start:])


def test_padding_mask_shape_and_values():
    ids = torch.tensor([[4, 5, 6], [4, 0, 0]])
    mask = padding_mask(ids, pad_id=0)
    assert mask.dtype == torch.bool and mask.shape == (2, 1, 1, 3)
    assert mask[:, 0, 0].tolist() == [[True, True, True], [True, False, False]]


def test_masks_combine_with_and():
    ids = torch.tensor([[4, 5, 6], [4, 0, 0]])
    combined = padding_mask(ids, 0) & causal_mask(3)
    assert combined.shape == (2, 1, 3, 3)
    for b in range(2):
        for t in range(3):
            for s in range(3):
                assert bool(combined[b, 0, t, s]) == (s <= t and ids[b, s] != 0)


def test_device_argument():
    assert causal_mask(3, device="cpu").device.type == "cpu"


def test_same_convention_as_torch_functional_sdpa():
    # F.scaled_dot_product_attention 也是 True = 可以关注：第 0 个查询只看第 0 个键
    torch.manual_seed(0)
    q, k, v = torch.randn(1, T, 4), torch.randn(1, T, 4), torch.randn(1, T, 4)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=causal_mask(T))
    torch.testing.assert_close(out[0, 0], v[0, 0])


# ---- 填充掩码与注意力掩码不能混淆（issue 26）：B == T 时 (B, S) 与 (T, S) 形状相同 ----------
#
# 旧代码只有一个 mask 参数，(B, S) 的填充掩码在 B == T 时被当成 (T, S) 的注意力掩码接受：
# 遮住的是每个*查询行*而不是每个*批量行*，输出错了却不报错。下面每个旧调用现在都是错误，
# 而按名字传的填充掩码给出与逐句单独计算相同的结果。

import pytest  # noqa: E402

from tests.kit import padded_ids, tiny_transformer  # noqa: E402
from tinyformer import (  # noqa: E402
    DecoderLayer,
    EncoderLayer,
    MultiHeadAttention,
    attention_with_weights,
)

_N = 4  # B == T == S：形状分不出两种掩码
_IDS = padded_ids((_N, _N - 1, _N - 2, 1), 20, 0, seed=3)  # (B, S)，每句填充个数不同
_NOT_PAD = _IDS != 0  # (B, S) 填充掩码


def _x(*shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(0))


def test_sdpa_refuses_a_padding_mask_in_the_old_argument():
    q = _x(_N, _N, 8)  # (B, T, D)
    with pytest.raises(TypeError, match="unexpected keyword argument 'mask'"):
        attention_with_weights(q, q, q, mask=_NOT_PAD)
    out, _ = attention_with_weights(q, q, q, key_padding_mask=_NOT_PAD)
    for b in range(_N):  # 每一句单独算、去掉填充：结果相同
        n = int(_NOT_PAD[b].sum())
        alone, _ = attention_with_weights(q[b : b + 1], q[b : b + 1, :n], q[b : b + 1, :n])
        torch.testing.assert_close(out[b : b + 1], alone)


@pytest.mark.parametrize("need_weights", [True, False], ids=["unfused", "fused"])
def test_mha_refuses_a_padding_mask_in_the_old_argument(need_weights):
    mha = MultiHeadAttention(16, 4).eval()
    x = _x(_N, _N, 16)
    with pytest.raises(TypeError, match="unexpected keyword argument 'mask'"):
        mha(x, x, x, mask=_NOT_PAD, need_weights=need_weights)
    with pytest.raises(TypeError, match="positional"):
        mha(x, x, x, _NOT_PAD)
    out, _ = mha(x, x, x, key_padding_mask=_NOT_PAD, need_weights=need_weights)
    b, n = 2, int(_NOT_PAD[2].sum())
    alone, _ = mha(x[b : b + 1], x[b : b + 1, :n], x[b : b + 1, :n], need_weights=need_weights)
    torch.testing.assert_close(out[b : b + 1], alone, atol=1e-6, rtol=1e-5)


def test_encoder_layer_has_only_a_padding_mask():
    layer = EncoderLayer(16, 4, 32).eval()
    x = _x(_N, _N, 16)
    with pytest.raises(TypeError, match="unexpected keyword argument 'src_mask'"):
        layer(x, src_mask=_NOT_PAD)
    with pytest.raises(TypeError, match="positional"):
        layer(x, _NOT_PAD)
    with pytest.raises(ValueError, match=r"src_key_padding_mask|key_padding_mask must have shape"):
        layer(x, src_key_padding_mask=_NOT_PAD[:, None, None, :])


def test_decoder_layer_memory_takes_only_a_padding_mask():
    layer = DecoderLayer(16, 4, 32).eval()
    x, memory = _x(_N, _N, 16), _x(_N, _N, 16)
    with pytest.raises(TypeError, match="unexpected keyword argument 'memory_mask'"):
        layer(x, memory, tgt_mask=causal_mask(_N), memory_mask=_NOT_PAD)
    out = layer(x, memory, tgt_mask=causal_mask(_N), memory_key_padding_mask=_NOT_PAD)
    b, n = 3, int(_NOT_PAD[3].sum())
    alone = layer(x[b : b + 1], memory[b : b + 1, :n], tgt_mask=causal_mask(_N))
    torch.testing.assert_close(out[b : b + 1], alone, atol=1e-6, rtol=1e-5)


def test_model_has_no_src_mask_and_decode_no_memory_mask():
    model = tiny_transformer(src_vocab_size=20, tgt_vocab_size=20, max_len=8).eval()
    tgt = padded_ids((_N,) * _N, 20, 0, seed=4)
    with pytest.raises(TypeError, match="unexpected keyword argument 'src_mask'"):
        model(_IDS, tgt, src_mask=_NOT_PAD)
    with pytest.raises(TypeError, match="positional"):
        model(_IDS, tgt, _NOT_PAD)
    memory = model.encode(_IDS)
    with pytest.raises(TypeError, match="positional"):
        model.decode(tgt, memory, _NOT_PAD)
    with pytest.raises(TypeError, match="unexpected keyword argument 'memory_mask'"):
        model.decode(tgt, memory, memory_mask=_NOT_PAD)
    # 默认的填充掩码就是 src != pad_id：与显式传入相同
    torch.testing.assert_close(model(_IDS, tgt), model(_IDS, tgt, src_key_padding_mask=_NOT_PAD))
