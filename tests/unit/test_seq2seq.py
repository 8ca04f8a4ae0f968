"""tinyformer.seq2seq：RNN 编码器–解码器与加性注意力（第 1 章）。"""

import pytest
import torch
from torch import nn

from tinyformer.seq2seq import (
    BOS,
    DIGIT_OFFSET,
    EOS,
    PAD,
    VOCAB_SIZE,
    AdditiveAttention,
    GRUEncoder,
    Seq2Seq,
    copy_accuracy,
    make_copy_batch,
    train_copy_model,
)


def gru_by_hand(rnn: nn.GRU, x: torch.Tensor) -> torch.Tensor:
    """照 GRU 的公式一步一步算（与 nn.GRU 的文档相同的门的顺序 r, z, n），作为独立的参照。"""
    W_ir, W_iz, W_in = rnn.weight_ih_l0.chunk(3)
    W_hr, W_hz, W_hn = rnn.weight_hh_l0.chunk(3)
    b_ir, b_iz, b_in = rnn.bias_ih_l0.chunk(3)
    b_hr, b_hz, b_hn = rnn.bias_hh_l0.chunk(3)
    h = torch.zeros(x.shape[0], rnn.hidden_size)
    states = []
    for t in range(x.shape[1]):
        x_t = x[:, t]
        r = torch.sigmoid(x_t @ W_ir.T + b_ir + h @ W_hr.T + b_hr)
        z = torch.sigmoid(x_t @ W_iz.T + b_iz + h @ W_hz.T + b_hz)
        n = torch.tanh(x_t @ W_in.T + b_in + r * (h @ W_hn.T + b_hn))
        h = (1 - z) * n + z * h
        states.append(h)
    return torch.stack(states, dim=1)


def test_make_copy_batch_layout():
    src, tgt_in, tgt_out = make_copy_batch([4, 2, 3], torch.Generator().manual_seed(0))
    assert src.shape == (3, 4) and tgt_in.shape == tgt_out.shape == (3, 5)
    assert (tgt_in[:, 0] == BOS).all() and torch.equal(tgt_in[:, 1:], src)
    for b, n in enumerate([4, 2, 3]):
        assert ((src[b, :n] >= DIGIT_OFFSET) & (src[b, :n] < VOCAB_SIZE)).all()
        assert (src[b, n:] == PAD).all()
        assert torch.equal(tgt_out[b, :n], src[b, :n]) and tgt_out[b, n] == EOS
        assert (tgt_out[b, n + 1 :] == PAD).all()


def test_encoder_matches_gru_equations_and_ignores_padding():
    torch.manual_seed(0)
    encoder = GRUEncoder(VOCAB_SIZE, embed_size=5, hidden_size=7)
    src, _, _ = make_copy_batch([5, 3], torch.Generator().manual_seed(1))
    states, last = encoder(src)
    expected = gru_by_hand(encoder.rnn, encoder.embed(src))
    torch.testing.assert_close(states, expected, rtol=1e-5, atol=1e-6)
    # 第二句只有 3 个真实数字：最后状态是第 3 个位置的，且与不补齐单独编码时相同
    alone_states, alone_last = encoder(src[1:, :3])
    torch.testing.assert_close(last[1], alone_last[0])
    torch.testing.assert_close(last[0], states[0, 4])


def test_additive_attention_formula_weights_and_mask():
    torch.manual_seed(0)
    attention = AdditiveAttention(query_size=4, key_size=6, hidden_size=5)
    query, keys = torch.randn(2, 4), torch.randn(2, 3, 6)
    mask = torch.tensor([[False, False, False], [False, True, False]])  # True = 遮住
    context, weights = attention(query, keys, mask)
    torch.testing.assert_close(weights.sum(dim=-1), torch.ones(2))
    assert weights[1, 1] == 0
    # 按公式 e_j = v^T tanh(W q + U k_j) 逐个位置算
    for b in range(2):
        scores = torch.stack(
            [
                attention.v(torch.tanh(attention.W(query[b]) + attention.U(keys[b, j])))[0]
                for j in range(3)
            ]
        )
        scores[mask[b]] = float("-inf")
        alpha = torch.softmax(scores, dim=0)
        torch.testing.assert_close(weights[b], alpha)
        torch.testing.assert_close(context[b], (alpha[:, None] * keys[b]).sum(dim=0))
    # 事先投影好的键给出同样的结果
    again, _ = attention(query, keys, mask, projected_keys=attention.U(keys))
    torch.testing.assert_close(again, context)


@pytest.mark.parametrize("attention", [False, True])
def test_seq2seq_teacher_forcing_equals_greedy_steps(attention):
    torch.manual_seed(0)
    model = Seq2Seq(embed_size=8, hidden_size=16, attention=attention).eval()
    src, _, _ = make_copy_batch([6, 4], torch.Generator().manual_seed(2))
    ids, greedy_weights = model.greedy(src, max_len=5)
    # 把贪心的输出当作教师强制的输入，每个位置的 argmax 必须就是贪心选出的下一个词
    tgt_in = torch.cat([torch.full((2, 1), BOS), ids[:, :-1]], dim=1)
    with torch.no_grad():
        logits, weights = model(src, tgt_in)
    assert torch.equal(logits.argmax(dim=-1), ids)
    if attention:
        assert weights.shape == (2, 5, 6)
        torch.testing.assert_close(weights, greedy_weights)
        assert (weights[1, :, 4:] == 0).all()  # 第二句的填充位置没有权重
    else:
        assert weights is None and greedy_weights is None


def test_without_attention_the_decoder_sees_only_the_last_state():
    torch.manual_seed(0)
    model = Seq2Seq(embed_size=8, hidden_size=16, attention=False).eval()
    src = torch.tensor([[3, 4, 5, 6]])
    tgt_in = torch.tensor([[BOS, 3, 4]])
    memory, state = model._encode(src)
    # 把前面各位置的隐藏状态换成噪声，输出不变：解码器只用到 h_S
    states, last, mask, projected = memory
    noisy = (torch.randn_like(states), last, mask, projected)
    out1 = model._step(tgt_in[:, 0], state, memory)[0]
    out2 = model._step(tgt_in[:, 0], state, noisy)[0]
    torch.testing.assert_close(out1, out2)


def test_training_learns_and_restores_threads():
    threads = torch.get_num_threads()
    torch.manual_seed(0)
    model = Seq2Seq(embed_size=8, hidden_size=32, attention=True)
    losses = train_copy_model(model, steps=60, min_len=2, max_len=4, batch_size=32, seed=0)
    assert torch.get_num_threads() == threads
    assert sum(losses[-10:]) / 10 < 0.5 * sum(losses[:10]) / 10
    assert 0.0 <= copy_accuracy(model, 3, num=50) <= 1.0
