"""对任意形状和掩码都该成立的性质（hypothesis 抽例子；issue 48）：固定形状的测试只看见它们写下的那几种。

- 多头注意力对任意 B、T、S、头数、头宽和任意掩码（每行至少留一个键）与 ``torch.nn.MultiheadAttention`` 相同；
- 被遮住的键和值换成什么都不改变输出；
- GPT 是因果的：改动位置 t 之后的词，位置 ≤ t 的 logits 不变；
- ``padding_mask``、``causal_mask`` 就是它们的定义；
- 入口处的整数参数：任何不是正整数的值都被拒绝，消息是 "arg must be a positive integer, got arg=值"。

抽样固定（``derandomize``）、不写 ``.hypothesis/`` 数据库：每台机器、每次运行抽同样的例子。
"""

import math

import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import tinyformer as tf
from tests.kit import tiny_gpt

PROPERTY = settings(max_examples=40, deadline=None, derandomize=True, database=None)


@st.composite
def attention_case(draw):
    """(B, T, S, H, head_dim, key_padding_mask (B, S), attn_mask (T, S))：每个查询至少能看见键 0。"""
    B, T, S = draw(st.integers(1, 3)), draw(st.integers(1, 5)), draw(st.integers(1, 6))
    H, D = draw(st.integers(1, 4)), draw(st.integers(1, 4))

    def bools(*shape):
        flat = draw(st.lists(st.booleans(), min_size=math.prod(shape), max_size=math.prod(shape)))
        mask = torch.tensor(flat, dtype=torch.bool).reshape(shape)
        mask[..., 0] = False  # 键 0 永远可见：整行被遮住时 torch 的结果不可用（nan）
        return mask

    return B, T, S, H, D, bools(B, S), bools(T, S)


@PROPERTY
@given(attention_case(), st.booleans())
def test_multi_head_attention_equals_torch_for_any_shape_and_mask(case, need_weights):
    B, T, S, H, D, key_padding_mask, attn_mask = case
    C = H * D
    torch.manual_seed(0)
    theirs = torch.nn.MultiheadAttention(C, H, batch_first=True).eval()
    ours = tf.copy_from_torch(tf.MultiHeadAttention(C, H), theirs).eval()
    q, kv = torch.randn(B, T, C), torch.randn(B, S, C)
    masks = dict(key_padding_mask=key_padding_mask, attn_mask=attn_mask)
    out, weights = ours(q, kv, kv, need_weights=need_weights, **masks)
    expected, expected_weights = theirs(q, kv, kv, average_attn_weights=False, **masks)
    assert out.shape == (B, T, C)
    torch.testing.assert_close(out, expected, atol=1e-5, rtol=1e-5)
    if need_weights:
        assert weights.shape == (B, H, T, S)
        torch.testing.assert_close(weights, expected_weights, atol=1e-5, rtol=1e-5)


@PROPERTY
@given(attention_case())
def test_masked_keys_and_values_do_not_change_the_output(case):
    B, T, S, H, D, key_padding_mask, attn_mask = case
    torch.manual_seed(0)
    mha = tf.MultiHeadAttention(H * D, H).eval()
    q, kv = torch.randn(B, T, H * D), torch.randn(B, S, H * D)
    out, _ = mha(q, kv, kv, key_padding_mask=key_padding_mask)
    changed = kv.clone()
    changed[key_padding_mask] = 1e4  # 被遮住的位置换成大得离谱的值
    assert torch.allclose(
        mha(q, changed, changed, key_padding_mask=key_padding_mask)[0], out, atol=1e-5
    )
    # attn_mask 遮住的 (查询, 键) 对：只遮住的键（每个查询都看不见的列）可以任意改
    hidden = attn_mask.all(0)  # (S,)
    changed = kv.clone()
    changed[:, hidden] = -1e4
    before = mha(q, kv, kv, attn_mask=attn_mask)[0]
    assert torch.allclose(mha(q, changed, changed, attn_mask=attn_mask)[0], before, atol=1e-5)


@PROPERTY
@given(st.integers(1, 16), st.data())
def test_gpt_is_causal_for_any_length_and_position(length, data):
    model = tiny_gpt()  # 词表 30，max_len 16
    ids = torch.tensor([data.draw(st.lists(st.integers(0, 29), min_size=length, max_size=length))])
    t = data.draw(st.integers(0, length - 1))
    later = data.draw(
        st.lists(st.integers(0, 29), min_size=length - t - 1, max_size=length - t - 1)
    )
    changed = ids.clone()
    changed[0, t + 1 :] = torch.tensor(later, dtype=torch.long)
    with torch.no_grad():
        torch.testing.assert_close(model(changed)[:, : t + 1], model(ids)[:, : t + 1])


@PROPERTY
@given(st.integers(1, 4), st.integers(1, 8), st.integers(0, 3), st.data())
def test_padding_mask_is_ids_equal_to_pad(B, S, pad_id, data):
    ids = torch.tensor(data.draw(st.lists(st.lists(st.integers(0, 3), min_size=S, max_size=S),
                                          min_size=B, max_size=B)))  # fmt: skip
    mask = tf.padding_mask(ids, pad_id)
    assert mask.dtype == torch.bool and torch.equal(mask, ids == pad_id)


@PROPERTY
@given(st.integers(1, 12), st.integers(0, 12))
def test_causal_mask_hides_exactly_the_future(T, start):
    mask = tf.causal_mask(T, start=start)
    i, j = torch.arange(T)[:, None] + start, torch.arange(T + start)[None, :]
    assert mask.shape == (T, T + start) and torch.equal(mask, j > i)


# 不是正整数的值：0 和负数、任何 float（含 nan、inf）、bool（Python 里 True 也是 int）、None、字符串
NOT_POSITIVE_INTEGERS = st.one_of(
    st.integers(max_value=0),
    st.floats(),  # 2.0 也不行：尺寸是 int
    st.booleans(),
    st.none(),
    st.text(max_size=5),
    st.integers(1, 9).map(str),
)  # fmt: skip
DOORS = {  # 入口：用一个值调用它；参数名
    "MultiHeadAttention(d_model=…)": (lambda v: tf.MultiHeadAttention(v, 1), "d_model"),
    "MultiHeadAttention(num_heads=…)": (lambda v: tf.MultiHeadAttention(8, v), "num_heads"),
    "GPTConfig(vocab_size=…)": (lambda v: tf.GPTConfig(vocab_size=v), "vocab_size"),
    "GPTConfig(num_layers=…)": (lambda v: tf.GPTConfig(vocab_size=10, num_layers=v), "num_layers"),
    "GPTConfig(max_len=…)": (lambda v: tf.GPTConfig(vocab_size=10, max_len=v), "max_len"),
    "TransformerConfig(d_ff=…)": (
        lambda v: tf.TransformerConfig(src_vocab_size=10, tgt_vocab_size=10, d_ff=v), "d_ff"),
    "GPT.generate(max_new_tokens=…)": (
        lambda v: tiny_gpt().generate(torch.ones(1, 2, dtype=torch.long), max_new_tokens=v), "max_new_tokens"),
    "GPT.generate(top_k=…)": (
        lambda v: tiny_gpt().generate(torch.ones(1, 2, dtype=torch.long), 2, top_k=v), "top_k"),
    "causal_mask(T=…)": (lambda v: tf.causal_mask(v), "T"),
}  # fmt: skip


@pytest.mark.parametrize("door", DOORS)
@settings(max_examples=25, deadline=None, derandomize=True, database=None)
@given(value=NOT_POSITIVE_INTEGERS)
def test_a_door_refuses_every_non_positive_integer_by_name(door, value):
    call, arg = DOORS[door]
    assume(not (value is None and arg == "top_k"))  # top_k=None：不截断，是合法的
    with pytest.raises((TypeError, ValueError)) as info:
        call(value)
    assert str(info.value) == f"{arg} must be a positive integer, got {arg}={value!r}"
