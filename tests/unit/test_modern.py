"""2017 年之后的改动（GPTConfig 的选项）：RMSNorm、RoPE、NoPE、SwiGLU、GQA/MQA、不要偏置。

torch 有的（``nn.RMSNorm``、``F.scaled_dot_product_attention(..., enable_gqa=True)``）与 torch 逐元素比较；
RoPE 与测试里独立写出的复数乘法比较；每一种组合的带缓存生成都与整段重算比较。
坏选项的消息钉在 ``test_bad_inputs.py`` 的表里（``gpt-*``、``rope-*``）；同类的整数参数由 ``test_properties.py`` 抽查。
"""

import itertools

import pytest
import torch
import torch.nn.functional as F

from tests.kit import tiny_gpt
from tinyformer import (
    GPTConfig,
    KVCache,
    LayerNorm,
    MultiHeadAttention,
    RMSNorm,
    RotaryEmbedding,
    SwiGLU,
    causal_mask,
)
from tinyformer.feedforward import swiglu_hidden_size

B, T, C, H, V = 2, 6, 16, 4, 30
D = C // H


def _sharp_gpt(**overrides):
    """tiny_gpt 的权重放大 20 倍：初始化的 N(0, 0.02²) 下注意力几乎均匀、各词的 logits 几乎相同，
    位置和配对上的错误会被藏住。"""
    model = tiny_gpt(**overrides)
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(20)
    return model


# ---- RMSNorm ---------------------------------------------------------------------------------


@pytest.mark.parametrize("eps", [1e-6, 1e-5, 1e-2])
@pytest.mark.parametrize("shape", [(B, T, C), (T, C), (3, 2, 4, C), (1, 1, 8)])
def test_rmsnorm_equals_torch_rmsnorm_with_copied_weight(shape, eps):
    generator = torch.Generator().manual_seed(0)
    d = shape[-1]
    theirs = torch.nn.RMSNorm(d, eps=eps)
    ours = RMSNorm(d, eps=eps)
    with torch.no_grad():
        theirs.weight.copy_(torch.randn(d, generator=generator))
        ours.weight.copy_(theirs.weight)
    x = torch.randn(shape, generator=generator) * 3 + 1
    torch.testing.assert_close(ours(x), theirs(x), atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_rmsnorm_half_precision_equals_torch(dtype):
    torch.manual_seed(0)
    x = (torch.randn(B, T, C) * 100).to(dtype)
    expected = torch.nn.RMSNorm(C, eps=1e-5)(x.float()).to(dtype)  # 同样先在 float32 里算
    torch.testing.assert_close(RMSNorm(C).to(dtype)(x), expected)


def test_rmsnorm_does_not_subtract_the_mean():
    x = torch.full((1, C), 3.0)  # 均值 3、方差 0：LayerNorm 得到 0，RMSNorm 得到 1
    torch.testing.assert_close(RMSNorm(C, eps=1e-12)(x), torch.ones(1, C))
    torch.testing.assert_close(LayerNorm(C)(x), torch.zeros(1, C))


def test_layernorm_without_bias_equals_torch():
    torch.manual_seed(0)
    theirs = torch.nn.LayerNorm(C, bias=False)
    ours = LayerNorm(C, bias=False)
    with torch.no_grad():
        theirs.weight.normal_()
        ours.weight.copy_(theirs.weight)
    assert ours.bias is None and [name for name, _ in ours.named_parameters()] == ["weight"]
    x = torch.randn(B, T, C) * 2 + 1
    torch.testing.assert_close(ours(x), theirs(x), atol=1e-5, rtol=1e-5)


# ---- GQA / MQA -------------------------------------------------------------------------------


def _reference_gqa(mha: MultiHeadAttention, x: torch.Tensor) -> torch.Tensor:
    """分别投影，交给 torch 的 enable_gqa 做分组、is_causal 做因果掩码，再输出投影。"""
    Bx, L, _ = x.shape
    q = mha.q_proj(x).view(Bx, L, H, D).transpose(1, 2)  # (B, H, L, D)
    k = mha.k_proj(x).view(Bx, L, mha.num_kv_heads, D).transpose(1, 2)  # (B, H_kv, L, D)
    v = mha.v_proj(x).view(Bx, L, mha.num_kv_heads, D).transpose(1, 2)
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)  # (B, H, L, D)
    return mha.out_proj(y.transpose(1, 2).reshape(Bx, L, C))


@pytest.mark.parametrize("num_kv_heads", [4, 2, 1])  # MHA、GQA、MQA
@pytest.mark.parametrize("need_weights", [True, False])
def test_gqa_equals_torch_sdpa_enable_gqa(num_kv_heads, need_weights):
    torch.manual_seed(0)
    mha = MultiHeadAttention(C, H, num_kv_heads=num_kv_heads).eval()
    with torch.no_grad():
        for p in mha.parameters():
            p.normal_(0, 0.3)  # 偏置也不为 0，免得它们的错误被藏住
    assert mha.k_proj.weight.shape == mha.v_proj.weight.shape == (num_kv_heads * D, C)
    x = torch.randn(B, T, C)
    out, weights = mha(x, x, x, attn_mask=causal_mask(T), need_weights=need_weights)
    torch.testing.assert_close(out, _reference_gqa(mha, x), atol=1e-5, rtol=1e-5)
    assert weights is None if not need_weights else weights.shape == (B, H, T, T)


@pytest.mark.parametrize("num_kv_heads", [2, 1])
def test_gqa_and_rope_gradients_agree_on_both_paths(num_kv_heads):
    """训练走融合路径（enable_gqa 交给 torch），画图走带权重的路径（显式复制 K、V）：梯度也相同。"""
    torch.manual_seed(0)
    mha = MultiHeadAttention(C, H, num_kv_heads=num_kv_heads, rope=RotaryEmbedding(D, 16))
    x = torch.randn(B, T, C)
    grads = []
    for need_weights in (True, False):
        mha.zero_grad()
        out, _ = mha(x, x, x, attn_mask=causal_mask(T), need_weights=need_weights)
        (out * torch.linspace(-1, 1, C)).sum().backward()
        grads.append({name: p.grad.clone() for name, p in mha.named_parameters()})
    for name in grads[0]:
        torch.testing.assert_close(grads[1][name], grads[0][name], atol=1e-5, rtol=1e-4)
    assert grads[0]["k_proj.weight"].abs().sum() > 0


def test_gqa_query_heads_of_a_group_share_one_key_head():
    """MQA：把查询头 0 的 W^Q 拷给头 1，两个头的注意力权重就完全相同（它们看同一份 K）。"""
    torch.manual_seed(0)
    mha = MultiHeadAttention(C, H, num_kv_heads=1).eval()
    with torch.no_grad():
        mha.q_proj.weight[D : 2 * D] = mha.q_proj.weight[:D]
        mha.q_proj.bias[D : 2 * D] = mha.q_proj.bias[:D]
    x = torch.randn(B, T, C)
    _, weights = mha(x, x, x, attn_mask=causal_mask(T))
    torch.testing.assert_close(weights[:, 1], weights[:, 0])
    assert not torch.allclose(weights[:, 2], weights[:, 0])


# ---- RoPE ------------------------------------------------------------------------------------


def _reference_rope(x: torch.Tensor, start: int, layout: str, base: float = 10000.0):
    """独立写出的 RoPE：第 j 对 (a, b) 当作复数 a + ib，乘以 e^{i·pos·θ_j}，θ_j = base^(-2j/D)。"""
    d = x.shape[-1]
    half = d // 2
    x = x.double()
    if layout == "half":
        a, b = x[..., :half], x[..., half:]
    else:
        a, b = x[..., 0::2], x[..., 1::2]
    z = torch.complex(a, b)  # (..., T, D/2)
    pos = torch.arange(start, start + x.shape[-2], dtype=torch.float64)
    theta = torch.tensor([base ** (-2 * j / d) for j in range(half)], dtype=torch.float64)
    turned = z * torch.polar(torch.ones(len(pos), half, dtype=torch.float64), pos[:, None] * theta)
    if layout == "half":
        return torch.cat([turned.real, turned.imag], dim=-1).float()
    return torch.stack([turned.real, turned.imag], dim=-1).flatten(-2).float()


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("start", [0, 3, 90])
@pytest.mark.parametrize("head_dim", [2, 8, 32])
def test_rope_equals_complex_multiplication(layout, start, head_dim):
    x = torch.randn(B, H, T, head_dim, generator=torch.Generator().manual_seed(0))
    rope = RotaryEmbedding(head_dim, max_len=100, layout=layout)
    torch.testing.assert_close(rope(x, start), _reference_rope(x, start, layout))


def test_rope_refuses_a_negative_start():
    # 负的下标会从表尾切片：以前 start=-1 悄悄返回一个空张量
    with pytest.raises(ValueError, match=r"^start must be >= 0, got start=-1$"):
        RotaryEmbedding(8, max_len=16)(torch.zeros(1, 2, 3, 8), start=-1)


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_rope_score_depends_only_on_the_distance(layout):
    generator = torch.Generator().manual_seed(0)
    q, k = torch.randn(1, 16, generator=generator), torch.randn(1, 16, generator=generator)
    rope = RotaryEmbedding(16, max_len=600, layout=layout)

    def score(m, n):  # 位置 m 的查询与位置 n 的键的点积
        return (rope(q, m) @ rope(k, n).T).item()

    for m, n in [(10, 15), (200, 205), (500, 505)]:
        assert score(m, n) == pytest.approx(score(0, 5), abs=1e-4)
    assert score(0, 6) != pytest.approx(score(0, 5), abs=1e-2)  # 距离变了，分数就变


def test_gpt_rope_layouts_agree_when_query_and_key_rows_are_permuted():
    """两种布局的 GPT：把每个头的 W^Q、W^K 的行按同一个重排换过，输出相同（权重只差这个重排）。"""
    interleaved = _sharp_gpt(position="rope", rope_layout="interleaved")
    half = _sharp_gpt(position="rope", rope_layout="half")
    perm = torch.cat([torch.arange(0, D, 2), torch.arange(1, D, 2)])
    rows = torch.cat([h * D + perm for h in range(H)])  # (C,)：每个头里做同一个重排
    state = interleaved.state_dict()
    for name, tensor in state.items():
        if ".q_proj." in name or ".k_proj." in name:
            state[name] = tensor[rows]
    half.load_state_dict(state)
    ids = torch.randint(0, V, (B, T), generator=torch.Generator().manual_seed(1))
    torch.testing.assert_close(half(ids), interleaved(ids), atol=1e-5, rtol=1e-5)
    half.load_state_dict(interleaved.state_dict())  # 不重排：输出不同
    assert not torch.allclose(half(ids), interleaved(ids), atol=1e-1)


# ---- SwiGLU ----------------------------------------------------------------------------------


def test_swiglu_equals_its_formula():
    torch.manual_seed(0)
    ffn = SwiGLU(C, 24)
    with torch.no_grad():
        for p in ffn.parameters():
            p.normal_(0, 0.5)
    x = torch.randn(B, T, C)
    g = x @ ffn.gate_proj.weight.T + ffn.gate_proj.bias
    u = x @ ffn.up_proj.weight.T + ffn.up_proj.bias
    expected = (g * torch.sigmoid(g) * u) @ ffn.down_proj.weight.T + ffn.down_proj.bias
    torch.testing.assert_close(ffn(x), expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("d_model", [16, 64, 128, 768])
def test_swiglu_default_width_keeps_parameters_comparable(d_model):
    config = GPTConfig(vocab_size=V, d_model=d_model, ffn="swiglu")
    assert config.d_ff == swiglu_hidden_size(d_model) == round(2 / 3 * 4 * d_model)
    mlp, swiglu = 2 * d_model * 4 * d_model, 3 * d_model * config.d_ff  # 权重矩阵的参数
    assert abs(swiglu / mlp - 1) < 0.02


# ---- 不要偏置、NoPE ---------------------------------------------------------------------------


@pytest.mark.parametrize("norm", ["layernorm", "rmsnorm"])
@pytest.mark.parametrize("ffn", ["mlp", "swiglu"])
def test_bias_false_leaves_no_bias_parameters(norm, ffn):
    with_bias = tiny_gpt(norm=norm, ffn=ffn)
    without = tiny_gpt(norm=norm, ffn=ffn, bias=False)
    assert any("bias" in name for name, _ in with_bias.named_parameters())
    assert [name for name, _ in without.named_parameters() if "bias" in name] == []
    assert all(getattr(m, "bias", None) is None for m in without.modules())


def test_rope_and_nope_have_no_position_embedding():
    learned, rope, nope = (tiny_gpt(position=p) for p in ("learned", "rope", "none"))
    assert rope.position_embedding is None and nope.position_embedding is None
    assert learned.position_embedding.weight.shape == (16, C)  # (max_len, C)
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    assert count(learned) - count(rope) == count(learned) - count(nope) == 16 * C  # max_len·C
    assert rope.state_dict().keys() == nope.state_dict().keys()  # cos/sin 表不存进权重


@pytest.mark.parametrize(
    "options",
    [
        {"norm": "rmsnorm"},
        {"position": "rope"},
        {"position": "rope", "rope_layout": "interleaved"},
        {"position": "none"},
        {"ffn": "swiglu"},
        {"num_kv_heads": 1},
        {"bias": False},
        {"qk_norm": True},
        {"activation": "relu2"},
        {"norm": "rmsnorm", "position": "rope", "ffn": "swiglu", "num_kv_heads": 2, "bias": False},
    ],
)
def test_every_parameter_is_trained(options):
    model = tiny_gpt(**options).train()
    ids = torch.randint(0, V, (B, T), generator=torch.Generator().manual_seed(1))
    F.cross_entropy(model(ids[:, :-1]).flatten(0, 1), ids[:, 1:].flatten()).backward()
    untouched = [n for n, p in model.named_parameters() if p.grad is None or not p.grad.any()]
    assert untouched == []


# ---- QK-norm 与 ReLU² -------------------------------------------------------------------------


def test_relu_squared_is_its_formula_inside_the_ffn():
    x = torch.randn(B, T, C, generator=torch.Generator().manual_seed(0))
    ffn = tiny_gpt(activation="relu2").layers[0].ffn
    expected = F.linear(F.relu(F.linear(x, ffn.linear1.weight, ffn.linear1.bias)) ** 2,
                        ffn.linear2.weight, ffn.linear2.bias)  # fmt: skip
    torch.testing.assert_close(ffn(x), expected)


@pytest.mark.parametrize("need_weights", [True, False])
def test_qk_norm_makes_attention_blind_to_the_scale_of_wq_and_wk(need_weights):
    """q、k 各自归一化之后，W^Q、W^K 放大多少倍分数都不变；不归一化时分数跟着放大（softmax 变尖）。"""
    x = torch.randn(B, T, C, generator=torch.Generator().manual_seed(0))
    mask = causal_mask(T)
    for qk_norm, same in ((True, True), (False, False)):
        torch.manual_seed(0)
        mha = MultiHeadAttention(C, H, num_kv_heads=2, qk_norm=qk_norm)
        before = mha(x, x, x, attn_mask=mask, need_weights=need_weights)[0]
        with torch.no_grad():
            mha.q_proj.weight.mul_(30), mha.q_proj.bias.mul_(30)
            mha.k_proj.weight.mul_(7), mha.k_proj.bias.mul_(7)
        after = mha(x, x, x, attn_mask=mask, need_weights=need_weights)[0]
        assert torch.allclose(before, after, atol=1e-3) == same, (
            qk_norm
        )  # RMSNorm 的 eps：差约 4e-5
    norm = MultiHeadAttention(C, H, qk_norm=True).q_norm  # 每个头的 D 维，各头共用
    assert isinstance(norm, RMSNorm) and norm.d_model == D


def test_qk_norm_cached_generation_equals_full_recomputation():
    model = _sharp_gpt(qk_norm=True, position="rope").double()
    ids = torch.randint(0, V, (B, 3), generator=torch.Generator().manual_seed(1))
    full = ids
    for _ in range(4):
        full = torch.cat([full, model(full)[:, -1].argmax(-1, keepdim=True)], dim=1)
    assert torch.equal(model.generate(ids, max_new_tokens=4, greedy=True), full)


# ---- 带缓存的生成：每一种组合 ---------------------------------------------------------------

COMBINATIONS = list(
    itertools.product(
        ["layernorm", "rmsnorm"],
        [("learned", "half"), ("rope", "half"), ("rope", "interleaved"), ("none", "half")],
        ["mlp", "swiglu"],
        [4, 2, 1],
        [True, False],
    )
)


@pytest.mark.parametrize("norm, position, ffn, num_kv_heads, bias", COMBINATIONS)
def test_cached_generation_equals_full_recomputation(norm, position, ffn, num_kv_heads, bias):
    position, layout = position
    model = _sharp_gpt(
        norm=norm,
        position=position,
        rope_layout=layout,
        ffn=ffn,
        num_kv_heads=num_kv_heads,
        bias=bias,
    ).double()  # float64：放大的权重下 float32 的舍入差也会被放大，这里比的是算法，不是舍入
    ids = torch.randint(0, V, (B, 3), generator=torch.Generator().manual_seed(1))
    generated = model.generate(ids, max_new_tokens=5, greedy=True)
    full = ids
    for _ in range(5):  # 不用缓存：每步把整段重新送入
        full = torch.cat([full, model(full)[:, -1].argmax(-1, keepdim=True)], dim=1)
    assert torch.equal(generated, full)
    cache = KVCache()  # logits 本身也一致（位置从缓存长度接着数）
    steps = [model(full[:, :3], cache=cache)]
    steps += [model(full[:, t : t + 1], cache=cache) for t in range(3, full.shape[1])]
    torch.testing.assert_close(torch.cat(steps, dim=1), model(full), atol=1e-9, rtol=1e-9)


@pytest.mark.parametrize("num_kv_heads", [2, 1])
def test_gqa_cache_holds_only_the_kv_heads(num_kv_heads):
    ids = torch.randint(0, V, (B, T), generator=torch.Generator().manual_seed(1))
    caches = {}
    for kv in (H, num_kv_heads):
        caches[kv] = KVCache()
        tiny_gpt(num_kv_heads=kv)(ids, cache=caches[kv])
    assert caches[num_kv_heads].nbytes() * H == caches[H].nbytes() * num_kv_heads
    assert caches[H].nbytes() == 2 * 2 * B * H * T * D * 4  # 2 层 × (K, V) × float32
    model = tiny_gpt(num_kv_heads=num_kv_heads)
    cache = KVCache()
    model(ids, cache=cache)
    key, value = cache.get(model.layers[0].self_attn)
    assert key.shape == value.shape == (B, num_kv_heads, T, D)


def test_config_survives_a_round_trip_through_asdict():
    import dataclasses

    config = GPTConfig(vocab_size=V, norm="rmsnorm", position="rope", ffn="swiglu", num_kv_heads=2)
    assert GPTConfig(**dataclasses.asdict(config)) == config
