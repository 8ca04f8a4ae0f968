"""attention.py：与 torch 的实现逐元素比较；全被遮住的行为 0；融合路径与带权重路径一致。"""

import math

import pytest
import torch
import torch.nn.functional as F

from tests.kit import needs_torch_bernoulli_stream, padded_ids
from tinyformer import (
    MultiHeadAttention,
    attention_with_weights,
    causal_mask,
    copy_from_torch,
    padding_mask,
)
from tinyformer.attention import _attend, _attend_fused

B, T, S, C, H = 2, 5, 7, 16, 4
D = C // H
PAD = 0


def _padding(length, pad_tail):
    """第二句末尾 pad_tail 个填充的掩码摆成注意力掩码的形状 (B, 1, 1, S)，True = 遮住。"""
    return padding_mask(padded_ids((length, length - pad_tail)), PAD)[:, None, None, :]


def _mha_pair(bias=True):
    torch.manual_seed(0)
    theirs = torch.nn.MultiheadAttention(C, H, bias=bias, batch_first=True).eval()
    ours = copy_from_torch(MultiHeadAttention(C, H, bias=bias), theirs).eval()
    return ours, theirs


BATCH_SHAPES = [(), (1,), (3,), (2, 1), (1, 4), (2, 4), (5, 1, 4), (2, 3, 4)]


def test_batch_dims_broadcast_exactly_as_torch():
    # 每一对批量维的形状：能广播时输出的批量维与 torch.broadcast_shapes 相同，不能时是一个说清原因的错误
    for a in BATCH_SHAPES:
        for b in BATCH_SHAPES:
            query, key = torch.randn(*a, 2, 8), torch.randn(*b, 3, 8)
            try:
                expected = tuple(torch.broadcast_shapes(a, b))
            except RuntimeError:
                with pytest.raises(ValueError, match="must broadcast"):
                    attention_with_weights(query, key, key)
            else:
                out, weights = attention_with_weights(query, key, key)
                assert out.shape == (*expected, 2, 8) and weights.shape == (*expected, 2, 3)


def test_sdpa_matches_formula_written_out():
    torch.manual_seed(0)
    q, k, v = torch.randn(B, H, T, D), torch.randn(B, H, S, D), torch.randn(B, H, S, 3)
    out, weights = attention_with_weights(q, k, v)
    scores = torch.einsum("bhtd,bhsd->bhts", q, k) / math.sqrt(D)
    expected_weights = scores.exp() / scores.exp().sum(-1, keepdim=True)
    torch.testing.assert_close(weights, expected_weights)
    torch.testing.assert_close(out, torch.einsum("bhts,bhsv->bhtv", expected_weights, v))


@pytest.mark.parametrize(
    "mask_name",
    ["none", "causal", "padding", "padding&causal", "random"],
)
def test_sdpa_matches_torch_functional(mask_name):
    torch.manual_seed(0)
    q, k, v = torch.randn(B, H, T, D), torch.randn(B, H, T, D), torch.randn(B, H, T, D)
    masks = {
        "none": None,
        "causal": causal_mask(T),
        "padding": _padding(T, 2),
        "padding&causal": _padding(T, 2) | causal_mask(T),
        "random": (torch.rand(B, H, T, T) > 0.5) & ~torch.eye(T, dtype=torch.bool),
    }
    mask = masks[mask_name]
    out, weights = attention_with_weights(q, k, v, mask=mask)
    # F.sdpa 的 bool attn_mask：True = 可以关注，所以传 ~mask
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=None if mask is None else ~mask)
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(weights.sum(-1), torch.ones(B, H, T))
    if mask is not None:
        assert (weights[mask.expand_as(weights)] == 0).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_fully_masked_rows_are_zero_not_nan(dtype):
    torch.manual_seed(0)
    q, k, v = (torch.randn(B, H, T, D, dtype=dtype) for _ in range(3))
    mask = causal_mask(T).expand(B, H, T, T).clone()
    mask[0, :, 2] = True  # 第 0 句第 2 行：没有一个可关注的键
    out, weights = attention_with_weights(q, k, v, mask=mask)
    assert out.dtype == dtype and not out.isnan().any() and not weights.isnan().any()
    assert (weights[0, :, 2] == 0).all() and (out[0, :, 2] == 0).all()
    # 其余各行仍是正常的概率分布
    row_sums = weights.float().sum(-1)
    row_sums[0, :, 2] = 1.0
    torch.testing.assert_close(row_sums, torch.ones(B, H, T), atol=1e-2, rtol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_fully_masked_rows_zero_in_both_paths(dtype, need_weights):
    torch.manual_seed(0)
    mha = MultiHeadAttention(C, H, bias=False).to(dtype)
    x = torch.randn(B, T, C, dtype=dtype)
    mask = torch.zeros(B, 1, T, T, dtype=torch.bool)
    mask[1] = True  # 第二句的每一行都被整行遮住
    out, _ = mha(x, x, x, attn_mask=mask, need_weights=need_weights)
    assert not out.isnan().any()
    assert (out[1] == 0).all()  # 没有偏置时，注意力输出 0 经 out_proj 仍是 0


@pytest.mark.parametrize("num_kv_heads", [H, 1])
@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_empty_query_or_keys(num_kv_heads, need_weights):
    """T = 0 给出空输出；S = 0 时每一行都没有键可看，按全被遮住的行的规定输出 0。"""
    mha = MultiHeadAttention(C, H, bias=False, num_kv_heads=num_kv_heads)
    x, empty = torch.randn(B, T, C), torch.randn(B, 0, C)
    out, _ = mha(empty, x, x, need_weights=need_weights)
    assert out.shape == (B, 0, C)
    out, _ = mha(x, empty, empty, need_weights=need_weights)
    assert out.shape == (B, T, C) and (out == 0).all()


@pytest.mark.parametrize("dropout", [0.0, 0.1])
def test_fully_masked_rows_have_finite_gradients(dropout):
    torch.manual_seed(0)
    mha = MultiHeadAttention(C, H, dropout=dropout)  # 训练模式；两条路径都试
    x = torch.randn(B, T, C, requires_grad=True)
    mask = causal_mask(T).expand(B, 1, T, T).clone()
    mask[0, 0, 0] = True
    for need_weights in (True, False):
        x.grad = None
        mha.zero_grad()
        out, _ = mha(x, x, x, attn_mask=mask, need_weights=need_weights)
        out.sum().backward()
        assert torch.isfinite(x.grad).all()
        assert all(torch.isfinite(p.grad).all() for p in mha.parameters())


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("mask_name", ["none", "causal", "padding", "padding&causal"])
def test_mha_self_attention_matches_torch(mask_name, bias):
    ours, theirs = _mha_pair(bias)
    torch.manual_seed(1)
    x = torch.randn(B, T, C)
    ids = padded_ids((T, T - 2))
    # 同名、同义的两个参数（True = 遮住），原样传给两边
    attn_mask, key_padding_mask = {
        "none": (None, None),
        "causal": (causal_mask(T), None),
        "padding": (None, padding_mask(ids, PAD)),
        "padding&causal": (causal_mask(T), padding_mask(ids, PAD)),
    }[mask_name]
    out, weights = ours(x, x, x, attn_mask=attn_mask, key_padding_mask=key_padding_mask)
    expected, expected_weights = theirs(
        x,
        x,
        x,
        attn_mask=attn_mask,
        key_padding_mask=key_padding_mask,
        average_attn_weights=False,
    )
    assert weights.shape == (B, H, T, T)
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(weights, expected_weights, atol=1e-5, rtol=1e-5)


def test_mha_compared_with_torch_on_rows_that_are_not_fully_masked():
    ours, theirs = _mha_pair()
    torch.manual_seed(1)
    x = torch.randn(B, T, C)
    ids = padded_ids((T, T))
    ids[1, 0] = PAD  # 第二句第 0 行只能看见位置 0，而它是填充：整行被遮住
    mask = padding_mask(ids, PAD)[:, None, None, :] | causal_mask(T)  # (B, 1, T, T)
    out, _ = ours(x, x, x, attn_mask=causal_mask(T), key_padding_mask=ids == PAD)
    expected, _ = theirs(x, x, x, attn_mask=causal_mask(T), key_padding_mask=ids == PAD)
    live = ~mask.all(-1)[:, 0]  # (B, T)：至少有一个没被遮住的键的行
    assert not live.all()
    torch.testing.assert_close(out[live], expected[live], atol=1e-5, rtol=1e-5)
    # torch 在整行被遮住处的结果不可用（NaN 或 0，随版本而变）；我们的是 0 经 out_proj 的偏置
    torch.testing.assert_close(out[~live], ours.out_proj.bias.expand_as(out[~live]))


@pytest.mark.parametrize(
    "mask",
    [
        None,
        causal_mask(T),
        _padding(T, 2) | causal_mask(T),
        torch.ones(B, 1, 1, T, dtype=torch.bool),  # 所有行都被整行遮住
    ],
    ids=["none", "causal", "padding&causal", "all-masked"],
)
def test_mha_fused_path_equals_weights_path(mask):
    torch.manual_seed(0)
    mha = MultiHeadAttention(C, H)
    x = torch.randn(B, T, C)
    with_weights, weights = mha(x, x, x, attn_mask=mask, need_weights=True)
    fused, no_weights = mha(x, x, x, attn_mask=mask, need_weights=False)
    assert weights is not None and no_weights is None
    torch.testing.assert_close(fused, with_weights, atol=1e-5, rtol=1e-5)


def test_mask_2d_and_4d_forms_agree():
    torch.manual_seed(0)
    mha = MultiHeadAttention(C, H)
    x = torch.randn(B, T, C)
    out_2d, _ = mha(x, x, x, attn_mask=causal_mask(T))
    out_4d, _ = mha(x, x, x, attn_mask=causal_mask(T).expand(B, H, T, T))
    torch.testing.assert_close(out_2d, out_4d)


def test_self_attention_without_positions_is_permutation_equivariant():
    # 第 3 章：没有位置编码时，打乱词序只会让输出跟着打乱
    torch.manual_seed(0)
    mha = MultiHeadAttention(C, H)
    x = torch.randn(B, T, C)
    perm = torch.randperm(T)
    out, _ = mha(x, x, x)
    out_perm, _ = mha(x[:, perm], x[:, perm], x[:, perm])
    torch.testing.assert_close(out_perm, out[:, perm], atol=1e-6, rtol=1e-5)


def test_sdpa_dropout_drops_and_rescales_weights():
    torch.manual_seed(0)
    q, k, v = torch.randn(B, H, T, D), torch.randn(B, H, S, D), torch.randn(B, H, S, D)
    _, weights = attention_with_weights(q, k, v)
    _, dropped_weights = attention_with_weights(q, k, v, dropout_p=0.5)
    dropped = dropped_weights == 0
    assert dropped.any() and not dropped.all()
    # 没被丢弃的权重放大 1 / (1 - p) = 2 倍
    torch.testing.assert_close(dropped_weights[~dropped], 2 * weights[~dropped])


@pytest.mark.parametrize("mask_name", ["none", "causal", "padding&causal", "fully-masked-row"])
def test_training_paths_agree_with_the_same_seed(mask_name):
    """训练时（dropout > 0）的两条路径：公式一行一行写出来的 _attend（权重上 F.dropout）与融合路径
    （F.scaled_dot_product_attention 在自己的计算里丢弃）。同一个种子下 torch 丢弃同样的位置，所以输出
    和对 Q/K/V 的梯度只差浮点舍入。容差 atol = rtol = 1e-5：两边求和的顺序不同（QKᵀ/√D 对
    (Q·D^-1/4)(K·D^-1/4)），float32 下差几个 ulp；而 √D 用错（例如除以 D）时差 0.1 以上。"""
    needs_torch_bernoulli_stream()
    torch.manual_seed(0)
    q, k, v = (torch.randn(B, H, T, D, requires_grad=True) for _ in range(3))
    masks = {
        "none": None,
        "causal": causal_mask(T),
        "padding&causal": _padding(T, 2) | causal_mask(T),
        "fully-masked-row": causal_mask(T).expand(B, 1, T, T).clone(),
    }
    mask = masks[mask_name]
    if mask_name == "fully-masked-row":
        mask[0, 0, 1] = True  # 第 0 句第 1 行没有可关注的键
    results = []
    for attend in (lambda *args: _attend(*args)[0], _attend_fused):
        torch.manual_seed(7)
        out = attend(q, k, v, mask, 0.1)  # 位置参数：mask、dropout_p
        results.append((out, *torch.autograd.grad(out.square().sum(), (q, k, v))))
    assert not torch.allclose(results[0][0], _attend(q, k, v, mask, 0.0)[0])  # 确实丢弃了
    for ours, theirs in zip(*results, strict=True):
        torch.testing.assert_close(ours, theirs, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("need_weights", [True, False])
def test_mha_attention_dropout_only_in_training(need_weights):
    torch.manual_seed(0)
    mha = MultiHeadAttention(C, H, dropout=0.5)
    x = torch.randn(B, T, C)
    mha.eval()
    out, _ = mha(x, x, x, need_weights=need_weights)
    torch.testing.assert_close(mha(x, x, x, need_weights=need_weights)[0], out)
    mha.train()
    assert not torch.allclose(mha(x, x, x, need_weights=need_weights)[0], out)


def test_fused_projection_equals_separate_projections():
    # 自注意力（同一个张量）与交叉注意力（key 是 value）走一次拼起来的矩阵乘法；
    # 传入三个相等但不同的张量时走三次分开的投影：结果应当相同
    torch.manual_seed(0)
    mha = MultiHeadAttention(C, H)
    x, memory = torch.randn(B, T, C), torch.randn(B, S, C)
    fused, fused_weights = mha(x, x, x)
    separate, separate_weights = mha(x, x.clone(), x.clone())
    torch.testing.assert_close(fused, separate)
    torch.testing.assert_close(fused_weights, separate_weights)
    cross, _ = mha(x, memory, memory)
    torch.testing.assert_close(cross, mha(x, memory, memory.clone())[0])


def test_state_dict_keeps_one_linear_layer_per_projection():
    # 章节和检查点按这些名字拷贝权重：融合投影不能改变参数的名字和形状
    shapes = {name: tuple(p.shape) for name, p in MultiHeadAttention(C, H).state_dict().items()}
    assert shapes == {
        f"{proj}.{kind}": (C, C) if kind == "weight" else (C,)
        for proj in ("q_proj", "k_proj", "v_proj", "out_proj")
        for kind in ("weight", "bias")
    }
