"""optim.py：AdamW 与 torch.optim.AdamW / Adam（CPU 上的默认实现）逐位相同，包括参数组、每步改学习率、
某几步没有梯度的参数；错的超参数在构造时就报出来。"""

import pytest
import torch

from tests.kit import tiny_transformer
from tinyformer.optim import AdamW, Muon, newton_schulz


def train_steps(make_optimizer, steps=12):
    """新建同一个小模型，在随机的复制任务上训练几步，返回训练后的参数。

    学习率每步变（像预热）；第一个参数前三步没有梯度（它的步数 t 要比别的参数少三）。"""
    model = tiny_transformer().train()
    optimizer = make_optimizer(model)
    first = next(model.parameters())
    g = torch.Generator().manual_seed(1)
    for step in range(steps):
        for group in optimizer.param_groups:
            group["lr"] = 1e-3 * (step + 1)
        src = torch.randint(3, 12, (4, 5), generator=g)  # (B, S)
        logits = model(src, src)  # (B, T, V)
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), src.flatten())
        optimizer.zero_grad()
        loss.backward()
        if step < 3:
            first.grad = None
        optimizer.step()
    return [p.detach() for p in model.parameters()]


def same(a, b):
    return all(torch.equal(x, y) for x, y in zip(a, b, strict=True))


@pytest.mark.parametrize("weight_decay", [0.0, 0.1])
def test_adamw_equals_torch_adamw_bit_for_bit_with_parameter_groups(weight_decay):
    def groups(model):  # 第 9 章的分法：矩阵衰减，偏置和 LayerNorm 不衰减
        decay = [p for p in model.parameters() if p.dim() >= 2]
        rest = [p for p in model.parameters() if p.dim() < 2]
        return [
            {"params": decay, "weight_decay": weight_decay},
            {"params": rest, "weight_decay": 0.0},
        ]

    ours = train_steps(lambda m: AdamW(groups(m), betas=(0.9, 0.95)))
    theirs = train_steps(lambda m: torch.optim.AdamW(groups(m), betas=(0.9, 0.95)))
    assert same(ours, theirs)
    other = train_steps(lambda m: AdamW(groups(m), betas=(0.9, 0.9)))
    assert not same(ours, other)  # 比较真能分出不同


def test_without_weight_decay_it_is_torch_adam():
    kwargs = {"betas": (0.9, 0.98), "eps": 1e-9}  # 论文的 Adam（第 8 章）
    ours = train_steps(lambda m: AdamW(m.parameters(), weight_decay=0.0, **kwargs))
    assert same(ours, train_steps(lambda m: torch.optim.Adam(m.parameters(), **kwargs)))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"lr": -1.0}, "lr"),
        ({"eps": float("nan")}, "eps"),
        ({"betas": (0.9, 1.0)}, "betas"),
        ({"betas": 0.9}, "betas"),
        ({"betas": ("0.9", 0.99)}, "betas"),
        ({"weight_decay": -0.1}, "weight_decay"),
    ],
)
def test_bad_hyperparameters_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        AdamW([torch.nn.Parameter(torch.zeros(2))], **kwargs)


def test_betas_may_be_a_list_as_in_torch():
    w = torch.nn.Parameter(torch.zeros(2))
    assert AdamW([w], betas=[0.9, 0.95]).param_groups[0]["betas"] == [0.9, 0.95]


W = torch.nn.Parameter(torch.zeros(2))


@pytest.mark.parametrize(
    "params, error, message",
    [
        ([], ValueError, "empty parameter list"),
        ((p for p in torch.nn.ReLU().parameters()), ValueError, "empty parameter list"),
        (torch.nn.Linear(2, 2), TypeError, r"model\.parameters\(\)"),
        (torch.zeros(2, requires_grad=True), TypeError, "iterable of tensors"),
        ([1.0, 2.0], TypeError, "optimizes tensors"),
        ([{"params": [W], "lr": float("inf")}], ValueError, "lr"),  # 组里的超参数也检查
        # torch.optim 也拒绝：同一个参数出现两次，每一步会被更新两次
        ([{"params": [W]}, {"params": [W], "weight_decay": 0.0}], ValueError, "appears twice"),
        # 非叶子张量的 .grad 永远是 None：它永远不会被更新（torch.optim 同一句话拒绝）
        ([W * 2], ValueError, "^can't optimize a non-leaf Tensor$"),
    ],
)
def test_bad_params_and_groups_are_refused(params, error, message):
    with pytest.raises(error, match=message):
        AdamW(params)


@pytest.mark.parametrize("set_to_none", [True, False])
def test_zero_grad_means_what_it_means_in_torch(set_to_none):
    ours, theirs = (torch.nn.Parameter(torch.ones(3)) for _ in range(2))
    for p, optimizer in ((ours, AdamW([ours])), (theirs, torch.optim.AdamW([theirs]))):
        (p * 2).sum().backward()
        optimizer.zero_grad(set_to_none=set_to_none)
    assert (ours.grad is None) == (theirs.grad is None) == set_to_none
    if not set_to_none:
        assert torch.equal(ours.grad, theirs.grad) and not ours.grad.any()


def muon_steps(make_optimizer, shape, steps=6):
    """同一个矩阵、同一串随机梯度走几步，返回走完的矩阵。"""
    torch.manual_seed(0)
    W = torch.nn.Parameter(torch.randn(shape))
    optimizer = make_optimizer([W])
    g = torch.Generator().manual_seed(1)
    for _ in range(steps):
        W.grad = torch.randn(shape, generator=g)
        optimizer.step()
    return W.detach()


@pytest.mark.parametrize("shape", [(8, 3), (3, 8), (16, 16)])
@pytest.mark.parametrize("nesterov", [True, False])
def test_muon_equals_torch_muon_up_to_bfloat16(shape, nesterov):
    kwargs = {"lr": 0.02, "weight_decay": 0.1, "momentum": 0.9, "nesterov": nesterov}
    ours = muon_steps(lambda p: Muon(p, **kwargs), shape)
    theirs = muon_steps(lambda p: torch.optim.Muon(p, **kwargs), shape)
    # torch 的迭代用 bfloat16（8 位尾数，相对误差约 0.4 %）：每步的差不到 lr 的 5 %
    assert (ours - theirs).abs().max() < 0.05 * kwargs["lr"] * 6
    other = muon_steps(lambda p: Muon(p, **{**kwargs, "nesterov": not nesterov}), shape)
    assert (ours - other).abs().max() > 0.05 * kwargs["lr"] * 6  # 比较真能分出不同


def test_newton_schulz_sends_singular_values_near_one():
    G = torch.randn(32, 64, generator=torch.Generator().manual_seed(0))
    G = G @ torch.diag(torch.logspace(-3, 2, 64))  # 奇异值跨五个数量级
    U, s, Vh = torch.linalg.svd(G, full_matrices=False)
    X = newton_schulz(G)
    after = torch.diagonal(U.T @ X @ Vh.T)  # 同一组奇异向量上的新奇异值
    assert torch.allclose(U.T @ X @ Vh.T, torch.diag(after), atol=1e-4)  # 奇异向量不变
    ratio = s / s.norm()  # 除以 ‖G‖_F 之后的奇异值
    big = ratio >= 2e-3  # 五步能推到 1 附近的：不小于 ‖G‖_F 的 0.2 %（这里 32 个里有 26 个）
    assert big.sum() == 26 and after[big].min() > 0.6 and after[big].max() < 1.25, after
    assert (
        after[ratio < 1e-3].max() < 0.6
    )  # 更小的还在路上：五步在 0 附近的斜率 a⁵ ≈ 485 只够放大这么多


@pytest.mark.parametrize(
    "params, kwargs, message",
    [
        (
            [torch.nn.Parameter(torch.zeros(3))],
            {},
            r"2-D weight matrices, got a parameter of shape \(3,\)",
        ),
        (
            [torch.nn.Parameter(torch.zeros(2, 2))],
            {"momentum": 1.0},
            r"momentum must be in \[0, 1\), got momentum=1.0",
        ),
        ([torch.nn.Parameter(torch.zeros(2, 2))], {"lr": -0.1}, "lr"),
    ],
)
def test_muon_refuses_what_it_cannot_update(params, kwargs, message):
    with pytest.raises(ValueError, match=message):
        Muon(params, **kwargs)
