"""normalization.py：从零实现的 LayerNorm 与 torch.nn.LayerNorm 相同。"""

import pytest
import torch

from tinyformer import LayerNorm, copy_from_torch

B, T, C = 2, 5, 16


@pytest.mark.parametrize("eps", [1e-5, 1e-2])
def test_matches_torch_layer_norm_with_copied_weights(eps):
    torch.manual_seed(0)
    theirs = torch.nn.LayerNorm(C, eps=eps)
    with torch.no_grad():
        theirs.weight.normal_()
        theirs.bias.normal_()
    ours = copy_from_torch(LayerNorm(C, eps=eps), theirs)
    x = torch.randn(B, T, C) * 3 + 1
    torch.testing.assert_close(ours(x), theirs(x), atol=1e-5, rtol=1e-5)


def test_eps_is_inside_the_square_root():
    x = torch.tensor([[0.0, 2.0]])  # 均值 1，有偏方差 1
    eps = 3.0
    y = LayerNorm(2, eps=eps)(x)
    torch.testing.assert_close(y, torch.tensor([[-1.0, 1.0]]) / (1 + eps) ** 0.5)


def test_parameters_and_gradients():
    norm = LayerNorm(C)
    assert [name for name, _ in norm.named_parameters()] == ["weight", "bias"]
    assert (norm.weight == 1).all() and (norm.bias == 0).all()
    norm(torch.randn(B, T, C)).pow(2).sum().backward()
    assert norm.weight.grad is not None and norm.bias.grad is not None


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("mean, std", [(0.0, 1.0), (100.0, 3.0), (-2000.0, 0.5)])
def test_half_precision_matches_torch(dtype, mean, std):
    # 统计量在 float32 里算，与 torch.nn.LayerNorm 一样；只差最后转回 dtype 时的舍入
    torch.manual_seed(0)
    theirs = torch.nn.LayerNorm(C)
    with torch.no_grad():
        theirs.weight.normal_()
        theirs.bias.normal_()
    ours = copy_from_torch(LayerNorm(C), theirs).to(dtype)
    theirs = theirs.to(dtype)
    x = (torch.randn(B, T, C) * std + mean).to(dtype)
    y = ours(x)
    assert y.dtype == dtype
    resolution = torch.finfo(dtype).eps  # 1 附近相邻两个数的间距
    scale = theirs(x).float().abs().clamp(min=1)
    assert ((y.float() - theirs(x).float()).abs() / scale).max() <= resolution


def test_fp16_variance_does_not_overflow():
    # (512 - 256)² = 65536 超出 fp16 的最大值 65504：在 fp16 里求方差得 inf，归一化成全 0
    x = torch.tensor([0.0, 512.0, 0.0, 512.0], dtype=torch.float16)
    expected = torch.tensor([-1.0, 1.0, -1.0, 1.0], dtype=torch.float16)
    assert torch.equal(LayerNorm(4).half()(x), expected)
    assert torch.equal(torch.nn.LayerNorm(4).half()(x), expected)


def test_float32_path_follows_the_formula():
    # float32 输入直接交给 F.layer_norm 的融合内核：与逐项写出的公式相同（到浮点舍入）
    torch.manual_seed(0)
    norm = LayerNorm(C)
    with torch.no_grad():
        norm.weight.normal_()
        norm.bias.normal_()
    x = torch.randn(B, T, C) * 3 + 1
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    expected = norm.weight * ((x - mean) / torch.sqrt(var + norm.eps)) + norm.bias
    torch.testing.assert_close(norm(x), expected, atol=1e-6, rtol=0)
    assert norm(x).dtype == torch.float32
