"""masks.py：True = 遮住，与 torch.nn 同名同义；形状、偏移、组合，同一组掩码给 torch 与本包得到同样的结果。"""

import pytest
import torch
import torch.nn.functional as F

from tests.kit import padded_ids, tiny_transformer
from tinyformer import (
    DecoderLayer,
    EncoderLayer,
    MultiHeadAttention,
    attention_with_weights,
    causal_mask,
    copy_from_torch,
    padding_mask,
)

T = 5


def test_causal_mask_matches_definition_and_torch():
    mask = causal_mask(T)
    assert mask.dtype == torch.bool and mask.shape == (T, T)
    torch_float = torch.nn.Transformer.generate_square_subsequent_mask(T)
    assert torch.equal(mask, torch_float == float("-inf"))


def test_causal_mask_with_start_is_the_last_rows_of_the_full_mask():
    full = causal_mask(7)
    for start in range(7):
        T_new = 7 - start
        torch.testing.assert_close(causal_mask(T_new, start=start), full[start:])


def test_causal_mask_builds_only_the_rows_it_returns():
    row = causal_mask(1, start=100_000)  # 整张表是 10^10 个元素；只建最后一行
    assert row.shape == (1, 100_001) and not row.any()


def test_padding_mask_is_what_key_padding_mask_takes():
    ids = torch.tensor([[5, 6, 7], [5, 0, 0]])
    mask = padding_mask(ids, pad_id=0)
    assert mask.dtype == torch.bool and mask.shape == (2, 3)
    assert mask.tolist() == [[False, False, False], [False, True, True]]
    mha = MultiHeadAttention(8, 2).eval()
    x = torch.randn(2, 3, 8)
    mha(x, x, x, key_padding_mask=mask)  # 包自己的帮手给出的正是参数要的


def test_masks_combine_with_or():
    ids = torch.tensor([[5, 6, 0], [5, 0, 0]])
    combined = padding_mask(ids, 0)[:, None, None, :] | causal_mask(3)
    assert combined.shape == (2, 1, 3, 3)
    for b in range(2):
        for t in range(3):
            for s in range(3):
                assert bool(combined[b, 0, t, s]) == (s > t or ids[b, s] == 0)


def test_attention_with_weights_takes_a_mask_and_sdpa_takes_its_inverse():
    # F.scaled_dot_product_attention 的 bool attn_mask 意思相反（True = 可以关注）
    torch.manual_seed(0)
    q, k, v = torch.randn(1, T, 4), torch.randn(1, T, 4), torch.randn(1, T, 4)
    ours, weights = attention_with_weights(q, k, v, mask=causal_mask(T))
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=~causal_mask(T))
    torch.testing.assert_close(ours, expected)
    torch.testing.assert_close(ours[0, 0], v[0, 0])  # 第 0 个查询只看第 0 个键
    with pytest.raises(TypeError, match="unexpected keyword argument 'attn_mask'"):
        attention_with_weights(q, k, v, attn_mask=causal_mask(T))


# ---- 同一组掩码（torch 的写法）交给 torch.nn.Transformer 和本包，结果相同 -----------------------

B, S, T_TGT, C, H, D_FF, PAD = 3, 6, 5, 16, 4, 32, 0
SRC = padded_ids((6, 4, 2), 20, PAD, seed=3)  # (B, S)，每句填充个数不同
TGT = padded_ids((5, 3, 4), 20, PAD, seed=4)  # (B, T)


@pytest.mark.filterwarnings("ignore:.*nested:UserWarning")  # torch 自己的快路径提示
@pytest.mark.parametrize("norm_first", [False, True])
def test_same_masks_as_torch_nn_transformer(norm_first):
    """填充的一批、因果的目标：torch.nn.Transformer 收的掩码原样传给本包的层，输出相同。"""
    torch.manual_seed(0)
    theirs = torch.nn.Transformer(
        C, H, 2, 2, D_FF, dropout=0.0, batch_first=True, norm_first=norm_first
    ).eval()
    encoders = [
        copy_from_torch(EncoderLayer(C, H, D_FF, norm_first=norm_first), layer).eval()
        for layer in theirs.encoder.layers
    ]
    decoders = [
        copy_from_torch(DecoderLayer(C, H, D_FF, norm_first=norm_first), layer).eval()
        for layer in theirs.decoder.layers
    ]
    masks = {  # torch 的写法：True = 遮住
        "src_key_padding_mask": padding_mask(SRC, PAD),
        "tgt_mask": causal_mask(T_TGT),
        "tgt_key_padding_mask": padding_mask(TGT, PAD),
        "memory_key_padding_mask": padding_mask(SRC, PAD),
    }
    src, tgt = torch.randn(B, S, C), torch.randn(B, T_TGT, C)
    with torch.no_grad():
        expected = theirs(src, tgt, **masks)
        memory = src
        for layer in encoders:
            memory = layer(memory, src_key_padding_mask=masks["src_key_padding_mask"])
        memory = theirs.encoder.norm(memory)
        out = tgt
        for layer in decoders:
            out = layer(
                out,
                memory,
                tgt_mask=masks["tgt_mask"],
                tgt_key_padding_mask=masks["tgt_key_padding_mask"],
                memory_key_padding_mask=masks["memory_key_padding_mask"],
            )
        out = theirs.decoder.norm(out)
    real = ~masks["tgt_key_padding_mask"]  # 填充的查询行：两边都没有意义（torch 给出什么都行）
    torch.testing.assert_close(out[real], expected[real], atol=1e-5, rtol=1e-5)


def test_an_inverted_padding_mask_is_an_error_not_a_silent_answer():
    """torch 以前的读者不会写反；写反的（ids != pad_id）在没有填充的句子上遮住全部键：报错。"""
    model = tiny_transformer(src_vocab_size=20, tgt_vocab_size=20, max_len=8).eval()
    with pytest.raises(
        ValueError,
        match=r"must leave at least one key .* got every key of sentence\(s\) \[0\] masked.*ids != pad_id",
    ):
        model.encode(SRC, src_key_padding_mask=SRC != PAD)


# ---- 填充掩码与注意力掩码不能混淆：B == T 时 (B, S) 与 (T, S) 形状相同 -------------------------
#
# (B, S) 的填充掩码在 B == T 时若被当成 (T, S) 的注意力掩码接受，遮住的是每个*查询行*而不是每个
# *批量行*，输出错了却不报错。所以两种掩码走两个参数、只能按名字传，没有用不到的 src_mask/memory_mask。

_N = 4  # B == T == S：形状分不出两种掩码
_IDS = padded_ids((_N, _N - 1, _N - 2, 1), 20, 0, seed=3)  # (B, S)，每句填充个数不同
_IS_PAD = _IDS == 0  # (B, S) 填充掩码


def _x(*shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(0))


@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_padding_mask_equals_each_sentence_alone(need_weights):
    mha = MultiHeadAttention(16, 4).eval()
    x = _x(_N, _N, 16)
    out, _ = mha(x, x, x, key_padding_mask=_IS_PAD, need_weights=need_weights)
    b, n = 2, int((~_IS_PAD[2]).sum())
    alone, _ = mha(x[b : b + 1], x[b : b + 1, :n], x[b : b + 1, :n], need_weights=need_weights)
    torch.testing.assert_close(out[b : b + 1], alone, atol=1e-6, rtol=1e-5)


def test_encoder_layer_has_only_a_padding_mask():
    layer = EncoderLayer(16, 4, 32).eval()
    x = _x(_N, _N, 16)
    with pytest.raises(TypeError, match="unexpected keyword argument 'src_mask'"):
        layer(x, src_mask=_IS_PAD)
    with pytest.raises(TypeError, match="positional"):
        layer(x, _IS_PAD)
    with pytest.raises(ValueError, match=r"key_padding_mask must have shape"):
        layer(x, src_key_padding_mask=_IS_PAD[:, None, None, :])


def test_decoder_layer_memory_takes_only_a_padding_mask():
    layer = DecoderLayer(16, 4, 32).eval()
    x, memory = _x(_N, _N, 16), _x(_N, _N, 16)
    with pytest.raises(TypeError, match="unexpected keyword argument 'memory_mask'"):
        layer(x, memory, tgt_mask=causal_mask(_N), memory_mask=_IS_PAD)
    out = layer(x, memory, tgt_mask=causal_mask(_N), memory_key_padding_mask=_IS_PAD)
    b, n = 3, int((~_IS_PAD[3]).sum())
    alone = layer(x[b : b + 1], memory[b : b + 1, :n], tgt_mask=causal_mask(_N))
    torch.testing.assert_close(out[b : b + 1], alone, atol=1e-6, rtol=1e-5)


def test_model_has_no_src_mask_and_decode_no_memory_mask():
    model = tiny_transformer(src_vocab_size=20, tgt_vocab_size=20, max_len=8).eval()
    tgt = padded_ids((_N,) * _N, 20, 0, seed=4)
    with pytest.raises(TypeError, match="unexpected keyword argument 'src_mask'"):
        model(_IDS, tgt, src_mask=_IS_PAD)
    with pytest.raises(TypeError, match="positional"):
        model(_IDS, tgt, _IS_PAD)
    memory = model.encode(_IDS)
    with pytest.raises(TypeError, match="positional"):
        model.decode(tgt, memory, _IS_PAD)
    with pytest.raises(TypeError, match="unexpected keyword argument 'memory_mask'"):
        model.decode(tgt, memory, memory_mask=_IS_PAD)
