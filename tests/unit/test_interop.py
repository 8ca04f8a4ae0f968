"""interop.py：拷贝后两边计算同一个函数；类型、尺寸、设置不一致时给出清楚的错误。"""

import pytest
import torch
from torch import nn

from tinyformer import (
    DecoderLayer,
    EncoderLayer,
    LayerNorm,
    MultiHeadAttention,
    causal_mask,
    copy_from_torch,
)
from tinyformer.interop import copy_from_fused_qkv, copy_to_fused_qkv

C, H, D_FF = 16, 4, 32


def test_returns_ours_and_copies_split_in_projection():
    torch.manual_seed(0)
    theirs = torch.nn.MultiheadAttention(C, H, batch_first=True)
    ours = MultiHeadAttention(C, H)
    assert copy_from_torch(ours, theirs) is ours
    W = torch.cat([ours.q_proj.weight, ours.k_proj.weight, ours.v_proj.weight])  # (3C, C)
    b = torch.cat([ours.q_proj.bias, ours.k_proj.bias, ours.v_proj.bias])
    torch.testing.assert_close(W, theirs.in_proj_weight)
    torch.testing.assert_close(b, theirs.in_proj_bias)
    torch.testing.assert_close(ours.out_proj.weight, theirs.out_proj.weight)


def test_decoder_layer_copies_cross_attention_and_third_norm():
    torch.manual_seed(0)
    theirs = torch.nn.TransformerDecoderLayer(C, H, D_FF, batch_first=True)
    with torch.no_grad():
        theirs.norm3.weight.normal_()
    ours = copy_from_torch(DecoderLayer(C, H, D_FF), theirs)
    torch.testing.assert_close(ours.norm3.weight, theirs.norm3.weight)
    torch.testing.assert_close(ours.cross_attn.out_proj.bias, theirs.multihead_attn.out_proj.bias)
    torch.testing.assert_close(ours.ffn.linear2.weight, theirs.linear2.weight)


BAD_COPIES = [
    ("types", lambda: (LayerNorm(C), torch.nn.Linear(C, C)), TypeError,
     r"copy_from_torch cannot copy Linear into LayerNorm; supported pairs: "
     r"MultiHeadAttention <- torch.nn.MultiheadAttention"),
    ("batch_first", lambda: (MultiHeadAttention(C, H), torch.nn.MultiheadAttention(C, H)),
     ValueError, r"attention: torch.nn.MultiheadAttention must have batch_first=True"),
    ("d_model", lambda: (MultiHeadAttention(C, H),
                         torch.nn.MultiheadAttention(2 * C, H, batch_first=True)),
     ValueError, r"attention.d_model \(embed_dim\) differs: ours has .*=16, torch has .*=32"),
    ("num_heads", lambda: (MultiHeadAttention(C, H),
                           torch.nn.MultiheadAttention(C, 2, batch_first=True)),
     ValueError, r"attention.num_heads differs: ours has attention.num_heads=4"),
    ("bias", lambda: (MultiHeadAttention(C, H, bias=False),
                      torch.nn.MultiheadAttention(C, H, batch_first=True)),
     ValueError, r"attention.q_proj.bias: one side has it and the other does not"),
    ("kdim", lambda: (MultiHeadAttention(C, H),
                      torch.nn.MultiheadAttention(C, H, kdim=8, vdim=8, batch_first=True)),
     ValueError, r"only torch.nn.MultiheadAttention without kdim/vdim"),
    ("eps", lambda: (LayerNorm(C), torch.nn.LayerNorm(C, eps=1e-6)), ValueError,
     r"norm.eps differs: ours has norm.eps=1e-05, torch has norm.eps=1e-06"),
    ("norm-size", lambda: (LayerNorm(C), torch.nn.LayerNorm(8)), ValueError,
     r"norm.d_model \(normalized_shape\) differs"),
    ("norm_first", lambda: (EncoderLayer(C, H, D_FF, norm_first=True),
                            torch.nn.TransformerEncoderLayer(C, H, D_FF, batch_first=True)),
     ValueError, r"norm_first differs: ours has norm_first=True, torch has norm_first=False"),
    ("activation", lambda: (EncoderLayer(C, H, D_FF, activation="gelu"),
                            torch.nn.TransformerEncoderLayer(C, H, D_FF, batch_first=True)),
     ValueError, r"activation differs: ours has activation='gelu', torch has activation='relu'"),
    ("d_ff", lambda: (EncoderLayer(C, H, D_FF),
                      torch.nn.TransformerEncoderLayer(C, H, 2 * D_FF, batch_first=True)),
     ValueError, r"ffn.linear1.weight: shape mismatch, ours \(32, 16\) vs torch \(64, 16\)"),
    ("layer-batch_first", lambda: (DecoderLayer(C, H, D_FF),
                                   torch.nn.TransformerDecoderLayer(C, H, D_FF)),
     ValueError, r"self_attn: torch.nn.MultiheadAttention must have batch_first=True"),
    ("encoder-vs-decoder", lambda: (EncoderLayer(C, H, D_FF),
                                    torch.nn.TransformerDecoderLayer(C, H, D_FF, batch_first=True)),
     TypeError, r"cannot copy TransformerDecoderLayer into EncoderLayer"),
]  # fmt: skip


@pytest.mark.parametrize(
    "make, error, message", [row[1:] for row in BAD_COPIES], ids=[row[0] for row in BAD_COPIES]
)
def test_mismatches_raise_clear_errors(make, error, message):
    ours, theirs = make()
    with pytest.raises(error, match=message):
        copy_from_torch(ours, theirs)


# ---------------------------------------------------------------- GPT 风格的融合投影 c_attn


def _fused_reference(c_attn, c_proj, x, num_heads, mask):
    """minGPT 的写法，独立于本包：c_attn 一次算出 Q、K、V，交给 torch 的 F.scaled_dot_product_attention。"""
    B, T, C = x.shape
    q, k, v = c_attn(x).split(C, dim=2)  # (B, T, 3C) -> 3 个 (B, T, C)
    q, k, v = (t.view(B, T, num_heads, C // num_heads).transpose(1, 2) for t in (q, k, v))
    # F.sdpa 的 bool attn_mask：True = 可以关注，与本包的掩码相反
    y = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=~mask)  # (B, H, T, D)
    return c_proj(y.transpose(1, 2).reshape(B, T, C))  # (B, T, C)


def test_copy_from_fused_qkv_computes_the_gpt_style_attention():
    torch.manual_seed(0)
    C, H, T = 16, 4, 6
    c_attn, c_proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
    ours = copy_from_fused_qkv(MultiHeadAttention(C, H), c_attn, c_proj).eval()
    x, mask = torch.randn(2, T, C), causal_mask(T)
    with torch.no_grad():
        expected = _fused_reference(c_attn, c_proj, x, H, mask)
        torch.testing.assert_close(ours(x, x, x, attn_mask=mask)[0], expected, atol=1e-6, rtol=1e-5)


def test_copy_to_fused_qkv_is_the_inverse():
    torch.manual_seed(1)
    ours = MultiHeadAttention(16, 4)
    c_attn, c_proj = copy_to_fused_qkv(ours, nn.Linear(16, 48), nn.Linear(16, 16))
    back = copy_from_fused_qkv(MultiHeadAttention(16, 4), c_attn, c_proj)
    for (name, a), b in zip(ours.state_dict().items(), back.state_dict().values(), strict=True):
        assert torch.equal(a, b), name


def test_fused_qkv_bad_inputs():
    ours = MultiHeadAttention(16, 4)
    with pytest.raises(
        ValueError,
        match=r"^c_attn must be nn.Linear\(C, 3C\) with C = d_model = 16, got weight of shape \(32, 16\)$",
    ):
        copy_from_fused_qkv(ours, nn.Linear(16, 32), nn.Linear(16, 16))
    with pytest.raises(TypeError, match=r"^c_proj must be a Linear, got ReLU$"):
        copy_to_fused_qkv(ours, nn.Linear(16, 48), nn.ReLU())
    with pytest.raises(
        ValueError, match=r"^c_attn.q_proj.bias: one side has it and the other does not"
    ):
        copy_from_fused_qkv(ours, nn.Linear(16, 48, bias=False), nn.Linear(16, 16))
