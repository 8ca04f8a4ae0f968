"""丢弃法（tinyformer.dropout）：第 6 章从零写的展品，与 torch.nn.Dropout 在分布上相同；模型里用 nn.Dropout。"""

import math

import pytest
import torch
from torch import nn

from tests.kit import tiny_gpt, tiny_transformer
from tinyformer import Dropout
from tinyformer.dropout import dropout


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_agrees_with_nn_dropout_in_distribution(p, dtype):
    """两者的随机数不必相同（torch 的 bernoulli_ 在某些 CPU 上用 MKL 的随机数流），比较的是分布：
    置 0 的比例都在 p 的 5 个标准差 sqrt(p(1-p)/n) 之内，留下的值都是 1/(1-p)（按 dtype 舍入），
    均值都在期望的 5 个标准差 sqrt(p/((1-p)n)) 之内（期望不变），梯度就是同一个掩码除以 1 − p。"""
    n = 200_000
    x = torch.ones(n, dtype=dtype, requires_grad=True)
    for module in (Dropout(p), nn.Dropout(p)):
        torch.manual_seed(5)
        y = module(x)
        zeros = (y == 0).float().mean().item()
        assert abs(zeros - p) < 5 * math.sqrt(p * (1 - p) / n)
        kept = torch.tensor(1 / (1 - p), dtype=dtype).item()
        assert y[y != 0].unique().tolist() == [kept]
        # 期望 (1-p)·kept：float32/64 下就是 1，bfloat16 下差 1/(1-p) 的舍入（p = 0.1 时 0.2 %）
        expected_mean = (1 - p) * kept
        assert abs(y.double().mean().item() - expected_mean) < 5 * math.sqrt(p / ((1 - p) * n))
        (grad,) = torch.autograd.grad(y.sum(), x)
        assert torch.equal(grad, y.detach())  # 输入全是 1：梯度就是 m_i / (1 - p)


def test_eval_mode_and_p_zero_return_the_input_itself():
    x = torch.randn(3, 4)
    assert Dropout(0.3).eval()(x) is x
    assert Dropout(0.0)(x) is x


@pytest.mark.parametrize("p", [1.0, -0.1, 1.5, float("nan"), "0.1"])
def test_bad_probability_is_named(p):
    with pytest.raises(ValueError, match=r"p must be in \[0, 1\)"):
        dropout(torch.ones(3), p)


def test_the_models_use_torchs_nn_dropout():
    for model in (tiny_transformer(dropout=0.1), tiny_gpt(dropout=0.1)):
        found = [m for m in model.modules() if isinstance(m, nn.Dropout)]
        assert found and all(type(m) is nn.Dropout for m in found)
    # 丢弃确实发生了：训练模式下同一个输入两次前向结果不同
    src = torch.randint(1, 12, (4, 6), generator=torch.Generator().manual_seed(0))
    fresh = tiny_transformer(dropout=0.3).train()
    assert not torch.equal(fresh(src, src), fresh(src, src))
