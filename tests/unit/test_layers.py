"""layers.py：编码器层、解码器层与 torch 的同名层（两种 LayerNorm 位置）在拷贝权重后相同。"""

import pytest
import torch

from tests.kit import padded_ids
from tinyformer import DecoderLayer, EncoderLayer, causal_mask, copy_from_torch

B, T, S, C, H, D_FF = 2, 5, 7, 16, 4, 32
PAD = 0
TORCH_ACTIVATIONS = {
    "relu": "relu",
    "gelu": "gelu",
    "gelu_tanh": torch.nn.GELU(approximate="tanh"),
}


def _pair(ours_class, torch_class, norm_first, activation="relu"):
    """一个 torch 的层和拷贝了它权重的我们的层，都在评估模式。"""
    torch.manual_seed(0)
    theirs = torch_class(
        C,
        H,
        D_FF,
        dropout=0.1,
        activation=TORCH_ACTIVATIONS[activation],
        batch_first=True,
        norm_first=norm_first,
    ).eval()
    ours = ours_class(C, H, D_FF, dropout=0.1, norm_first=norm_first, activation=activation)
    return copy_from_torch(ours, theirs).eval(), theirs


@pytest.mark.parametrize("activation", ["relu", "gelu", "gelu_tanh"])
@pytest.mark.parametrize("norm_first", [False, True])
def test_encoder_layer_matches_torch(norm_first, activation):
    ours, theirs = _pair(EncoderLayer, torch.nn.TransformerEncoderLayer, norm_first, activation)
    torch.manual_seed(1)
    x = torch.randn(B, S, C)
    src = padded_ids((S, S - 3))
    out = ours(x, src_key_padding_mask=src == PAD)
    expected = theirs(x, src_key_padding_mask=src == PAD)
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)
    # 没有掩码时也相同
    torch.testing.assert_close(ours(x), theirs(x), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("activation", ["relu", "gelu_tanh"])
@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_matches_torch(norm_first, activation):
    ours, theirs = _pair(DecoderLayer, torch.nn.TransformerDecoderLayer, norm_first, activation)
    torch.manual_seed(1)
    x, memory = torch.randn(B, T, C), torch.randn(B, S, C)
    tgt, src = padded_ids((T, T - 2)), padded_ids((S, S - 3))
    out = ours(
        x,
        memory,
        tgt_mask=causal_mask(T),
        tgt_key_padding_mask=tgt == PAD,
        memory_key_padding_mask=src == PAD,
    )
    expected = theirs(
        x,
        memory,
        tgt_mask=causal_mask(T),  # 同一组掩码，原样传给 torch
        tgt_key_padding_mask=tgt == PAD,
        memory_key_padding_mask=src == PAD,
    )
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)


def test_need_weights_keeps_attention_weights_and_same_output():
    torch.manual_seed(0)
    layer = DecoderLayer(C, H, D_FF).eval()
    x, memory = torch.randn(B, T, C), torch.randn(B, S, C)
    src = padded_ids((S, S - 3))
    fast = layer(x, memory, tgt_mask=causal_mask(T), memory_key_padding_mask=src == PAD)
    assert layer.self_attn_weights is None and layer.cross_attn_weights is None
    layer.need_weights = True
    slow = layer(x, memory, tgt_mask=causal_mask(T), memory_key_padding_mask=src == PAD)
    torch.testing.assert_close(slow, fast, atol=1e-5, rtol=1e-5)
    assert layer.self_attn_weights.shape == (B, H, T, T)
    assert layer.cross_attn_weights.shape == (B, H, T, S)
    assert (layer.cross_attn_weights[1, :, :, S - 3 :] == 0).all()  # 填充位置没有权重
    assert (layer.self_attn_weights.triu(diagonal=1) == 0).all()  # 看不见未来


def test_encoder_layer_keeps_its_weights_when_asked():
    torch.manual_seed(0)
    layer = EncoderLayer(C, H, D_FF).eval()
    x = torch.randn(B, S, C)
    layer.need_weights = True
    layer(x)
    assert layer.self_attn_weights.shape == (B, H, S, S)
