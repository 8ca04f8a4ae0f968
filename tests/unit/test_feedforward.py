"""feedforward.py：NewGELU 与 torch 的 tanh 近似 GELU 相同；FFN 等于它的公式。"""

import math

import pytest
import torch
import torch.nn.functional as F

from tinyformer import NewGELU, PositionWiseFFN

B, T, C, D_FF = 2, 5, 16, 64


def test_new_gelu_matches_torch_tanh_gelu():
    x = torch.linspace(-6, 6, 1001)
    torch.testing.assert_close(
        NewGELU()(x), torch.nn.GELU(approximate="tanh")(x), atol=1e-6, rtol=0
    )


def test_new_gelu_is_close_to_but_not_exactly_erf_gelu():
    x = torch.linspace(-4, 4, 801)
    difference = (NewGELU()(x) - F.gelu(x)).abs().max()
    assert 0 < difference < 1e-3


@pytest.mark.parametrize(
    "activation, function",
    [
        ("relu", torch.relu),
        ("gelu", lambda h: 0.5 * h * (1 + torch.erf(h / math.sqrt(2)))),
        ("gelu_tanh", lambda h: F.gelu(h, approximate="tanh")),
    ],
)
def test_ffn_equals_its_formula(activation, function):
    torch.manual_seed(0)
    ffn = PositionWiseFFN(C, D_FF, activation=activation)
    x = torch.randn(B, T, C)
    W1, b1, W2, b2 = ffn.linear1.weight, ffn.linear1.bias, ffn.linear2.weight, ffn.linear2.bias
    expected = function(x @ W1.T + b1) @ W2.T + b2
    torch.testing.assert_close(ffn(x), expected, atol=1e-5, rtol=1e-5)


def test_ffn_takes_any_leading_dimensions():
    """逐位置：(T, C) 与 (B, T, C) 一样收，结果就是逐行计算。"""
    torch.manual_seed(0)
    ffn = PositionWiseFFN(C, D_FF)
    x = torch.randn(T, C)
    torch.testing.assert_close(ffn(x), ffn(x[None])[0])
    torch.testing.assert_close(ffn(x[0]), ffn(x)[0])


def test_ffn_dropout_only_in_training():
    torch.manual_seed(0)
    ffn = PositionWiseFFN(C, D_FF, dropout=0.5)
    x = torch.randn(B, T, C)
    ffn.eval()
    torch.testing.assert_close(ffn(x), ffn(x))
    ffn.train()
    assert not torch.allclose(ffn(x), ffn(x))
