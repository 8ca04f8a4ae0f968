"""positional.py：编码表等于逐元素循环算出的公式；PE(pos + k) = M(k) · PE(pos)。"""

import math

import pytest
import torch

from tinyformer import PositionalEncoding, shift_matrix, sinusoidal_encoding


def _loop_encoding(positions, d_model, base=10000.0):
    """论文公式的逐元素 Python 循环：维度 2i 和 2i+1 共用 ω_i = 1 / base^(2i/d_model)。"""
    table = []
    for pos in positions:
        row = []
        for j in range(d_model):
            two_i = j - j % 2
            angle = pos / base ** (two_i / d_model)
            row.append(math.sin(angle) if j % 2 == 0 else math.cos(angle))
        table.append(row)
    return torch.tensor(table, dtype=torch.float32)


@pytest.mark.parametrize("d_model", [4, 16, 7, 1])
@pytest.mark.parametrize("base", [10000.0, 100.0])
def test_table_equals_python_loop(d_model, base):
    pe = sinusoidal_encoding(50, d_model, base)
    assert pe.dtype == torch.float32 and pe.shape == (50, d_model)
    torch.testing.assert_close(pe, _loop_encoding(range(50), d_model, base), atol=1e-6, rtol=0)


def test_worked_example_d_model_4():
    # 第 3 章的 d_model=4 例子：PE(1) = [sin 1, cos 1, sin 0.01, cos 0.01]
    pe = sinusoidal_encoding(3, 4)
    expected = [math.sin(1), math.cos(1), math.sin(0.01), math.cos(0.01)]
    torch.testing.assert_close(pe[1], torch.tensor(expected))


def test_large_positions_stay_accurate():
    # 角度在 float64 中计算：位置很大时仍与 math.sin/cos 一致到 float32 的精度
    d_model, pos = 8, 99_999
    pe = sinusoidal_encoding(pos + 1, d_model)
    torch.testing.assert_close(pe[pos:], _loop_encoding([pos], d_model), atol=1e-6, rtol=0)


@pytest.mark.parametrize("d_model", [2, 8, 16])
def test_shift_matrix_moves_every_position_by_k(d_model):
    pe = sinusoidal_encoding(300, d_model).double()
    for k in [0, 1, 2, 5, 17, 50, 123]:
        M = shift_matrix(k, d_model).double()
        pos = torch.arange(0, 300 - k)
        shifted = pe[pos] @ M.T  # 每行 PE(pos) 左乘 M(k)：(N, C) @ (C, C) -> (N, C)
        torch.testing.assert_close(shifted, pe[pos + k], atol=1e-5, rtol=0)


def test_shift_matrix_negative_k_is_the_inverse():
    M, M_back = shift_matrix(7, 16).double(), shift_matrix(-7, 16).double()
    torch.testing.assert_close(M_back @ M, torch.eye(16, dtype=torch.float64), atol=1e-6, rtol=0)


def test_shift_matrix_is_block_diagonal_rotation():
    k, d_model = 3, 8
    M = shift_matrix(k, d_model).double()
    for i in range(d_model // 2):
        w = k / 10000.0 ** (2 * i / d_model)
        block = M[2 * i : 2 * i + 2, 2 * i : 2 * i + 2]
        expected = torch.tensor([[math.cos(w), math.sin(w)], [-math.sin(w), math.cos(w)]])
        torch.testing.assert_close(block, expected.double(), atol=1e-6, rtol=0)
        off_block = M[2 * i : 2 * i + 2].clone()
        off_block[:, 2 * i : 2 * i + 2] = 0
        assert (off_block == 0).all()
    # 旋转矩阵是正交的
    torch.testing.assert_close(M @ M.T, torch.eye(d_model, dtype=torch.float64), atol=1e-6, rtol=0)


def test_positional_encoding_adds_the_table_with_offset():
    pos = PositionalEncoding(16, max_len=20)
    assert pos.pe.shape == (20, 16)
    torch.manual_seed(0)
    x = torch.randn(2, 5, 16)
    torch.testing.assert_close(pos(x), x + sinusoidal_encoding(20, 16)[:5])
    torch.testing.assert_close(pos(x, start=10), x + sinusoidal_encoding(20, 16)[10:15])
    # 一次整段 = 分两段，后一段用 start 偏移
    torch.testing.assert_close(torch.cat([pos(x[:, :2]), pos(x[:, 2:], start=2)], 1), pos(x))


def test_positional_encoding_buffer_and_dropout():
    pos = PositionalEncoding(16, max_len=20, dropout=0.5)
    assert "pe" in dict(pos.named_buffers()) and "pe" not in pos.state_dict()
    assert len(list(pos.parameters())) == 0
    x = torch.ones(2, 5, 16)
    pos.eval()
    torch.testing.assert_close(pos(x), x + pos.pe[:5])
    pos.train()
    torch.manual_seed(0)
    out = pos(x)
    kept = out != 0
    torch.testing.assert_close(out[kept], 2 * (x + pos.pe[:5])[kept])  # 保留的放大 1/(1-p)
    assert (~kept).any()
