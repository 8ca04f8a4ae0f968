"""丢弃法（tinyformer.dropout）：与 torch.nn.Dropout 取同样的随机数，输出逐位相同，只是更快。"""

import math

import pytest
import torch
from torch import nn

from tests.kit import needs_torch_bernoulli_stream, tiny_gpt, tiny_transformer
from tinyformer import Dropout
from tinyformer.dropout import dropout


@pytest.mark.parametrize("p", [0.1, 0.15, 0.5, 0.9])
@pytest.mark.parametrize("shape", [(7,), (64, 14, 128), (3, 4, 20, 20)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_bitwise_equal_to_nn_dropout_with_the_same_seed(p, shape, dtype):
    needs_torch_bernoulli_stream()
    x = torch.randn(shape).to(dtype).requires_grad_(True)
    torch.manual_seed(5)
    ours = Dropout(p)(x)
    after_ours = torch.rand(3)  # 之后的随机数状态也相同
    torch.manual_seed(5)
    theirs = nn.Dropout(p)(x)
    after_theirs = torch.rand(3)
    assert torch.equal(ours, theirs) and torch.equal(after_ours, after_theirs)
    (grad_ours,) = torch.autograd.grad(ours.sum(), x)
    (grad_theirs,) = torch.autograd.grad(theirs.sum(), x)
    assert torch.equal(grad_ours, grad_theirs)


def test_training_follows_the_same_trajectory_as_with_nn_dropout():
    needs_torch_bernoulli_stream()
    ours = tiny_transformer(dropout=0.3)
    theirs = tiny_transformer(dropout=0.3)
    for module in list(theirs.modules()):  # 把我们的 Dropout 换回 torch 的
        for name, child in list(module.named_children()):
            if type(child) is Dropout:
                setattr(module, name, nn.Dropout(child.p))
    src = torch.randint(1, 12, (4, 6), generator=torch.Generator().manual_seed(0))
    for model in (ours, theirs):
        model.train()  # 工厂给的是评估模式；换上的 nn.Dropout 是训练模式，这里统一
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        torch.manual_seed(9)
        for _ in range(3):
            optimizer.zero_grad()
            model(src, src).square().mean().backward()
            optimizer.step()
    for a, b in zip(ours.parameters(), theirs.parameters(), strict=True):
        assert torch.equal(a, b)
    # 丢弃确实发生了：训练模式下同一个输入两次前向结果不同
    fresh = tiny_transformer(dropout=0.3).train()
    assert not torch.equal(fresh(src, src), fresh(src, src))


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_drops_a_fraction_p_and_scales_the_rest(p):
    n = 200_000
    torch.manual_seed(0)
    y = Dropout(p)(torch.ones(n))
    assert abs((y == 0).float().mean().item() - p) < 5 * math.sqrt(p * (1 - p) / n)
    assert y.unique().tolist() == pytest.approx([0.0, 1 / (1 - p)])


def test_eval_mode_and_p_zero_return_the_input_itself():
    x = torch.randn(3, 4)
    assert Dropout(0.3).eval()(x) is x
    assert Dropout(0.0)(x) is x


@pytest.mark.parametrize("p", [1.0, -0.1, 1.5, float("nan"), "0.1"])
def test_bad_probability_is_named(p):
    with pytest.raises(ValueError, match=r"p must be in \[0, 1\)"):
        Dropout(p)
    with pytest.raises(ValueError, match=r"p must be in \[0, 1\)"):
        dropout(torch.ones(3), p)


def test_every_dropout_in_the_models_is_ours_and_still_an_nn_dropout():
    for model in (tiny_transformer(dropout=0.1), tiny_gpt(dropout=0.1)):
        found = [m for m in model.modules() if isinstance(m, nn.Dropout)]
        assert found and all(type(m) is Dropout for m in found)
