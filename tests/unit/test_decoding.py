"""decoding.py：缓存与完整重算的词元相同；束宽 1 等于贪心；大束宽等于穷举的最优；参数检查。"""

import itertools

import pytest
import torch

from tests.kit import tiny_transformer
from tinyformer.decoding import beam_search, greedy_decode, length_penalty

BOS, EOS, PAD = 2, 3, 0


def make_model(tgt_vocab_size=12, seed=0, max_len=80):
    return tiny_transformer(
        seed, src_vocab_size=10, tgt_vocab_size=tgt_vocab_size, num_encoder_layers=2,
        num_decoder_layers=2, dropout=0.1, max_len=max_len,
    )  # fmt: skip


# 第二句有填充：源端填充掩码必须一路传到交叉注意力
SRC = torch.tensor([[4, 5, 6, 7], [8, 9, 0, 0], [5, 5, 4, 0]])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_greedy_cached_equals_full_recomputation(seed):
    model = make_model(seed=seed)
    cached = greedy_decode(model, SRC, BOS, EOS, max_len=20, use_cache=True)
    full = greedy_decode(model, SRC, BOS, EOS, max_len=20, use_cache=False)
    assert torch.equal(cached, full)


def test_greedy_64_tokens_without_stopping():
    model = make_model()
    out = greedy_decode(model, SRC, BOS, EOS, max_len=64, stop_at_eos=False)
    assert out.shape == (3, 65)
    assert torch.equal(out, greedy_decode(model, SRC, BOS, EOS, 64, False, stop_at_eos=False))


def test_greedy_matches_stepwise_argmax_and_pads_after_eos():
    model = make_model()
    out = greedy_decode(model, SRC, BOS, EOS, max_len=15)
    memory = model.encode(SRC)
    for b in range(SRC.shape[0]):
        row = out[b].tolist()
        end = row.index(EOS) if EOS in row else len(row) - 1
        assert all(tok == PAD for tok in row[end + 1 :])
        for t in range(1, end + 1):  # 每一步都是给定前缀时的 argmax
            logits = model.decode(
                out[b : b + 1, :t], memory[b : b + 1], memory_key_padding_mask=SRC[b : b + 1] == PAD
            )
            assert logits[0, -1].argmax().item() == row[t]


@pytest.mark.parametrize("seed", [0, 1])
def test_beam_size_one_equals_greedy(seed):
    model = make_model(seed=seed)
    greedy = greedy_decode(model, SRC, BOS, EOS, max_len=12)
    assert torch.equal(beam_search(model, SRC, BOS, EOS, beam_size=1, max_len=12), greedy)


def test_beam_cached_equals_full_recomputation():
    model = make_model(seed=3)
    cached = beam_search(model, SRC, BOS, EOS, beam_size=4, max_len=12, use_cache=True)
    full = beam_search(model, SRC, BOS, EOS, beam_size=4, max_len=12, use_cache=False)
    assert torch.equal(cached, full)


def sequence_log_prob(model, src, tokens):
    """log P(tokens | src)，tokens 不含 <bos>。"""
    tgt = torch.tensor([[BOS, *tokens]])
    log_p = torch.log_softmax(model(src, tgt[:, :-1]), dim=-1)[0]  # (T, V)
    return sum(log_p[t, tok].item() for t, tok in enumerate(tokens))


@pytest.mark.parametrize("alpha", [0.0, 0.6])
def test_wide_beam_finds_the_exhaustive_optimum(alpha):
    # 目标词表只有 6 个词元、最多 3 步：束宽 36 = 6² 时束搜索保留了全部前缀，结果就是穷举的最优解
    model = make_model(tgt_vocab_size=6, seed=4)
    src = torch.tensor([[4, 5, 6]])
    max_len, vocab = 3, range(6)
    candidates = []
    for length in range(1, max_len + 1):
        for tokens in itertools.product(vocab, repeat=length):
            ended = EOS in tokens
            if ended and tokens.index(EOS) != length - 1:
                continue  # <eos> 只能在最后
            if not ended and length < max_len:
                continue  # 没有 <eos> 的只能是到达长度上限的
            score = sequence_log_prob(model, src, tokens) / length_penalty(length, alpha).item()
            candidates.append((score, tokens))
    best = max(candidates)[1]
    out = beam_search(model, src, BOS, EOS, beam_size=36, max_len=max_len, alpha=alpha)
    row = out[0, 1:].tolist()
    assert tuple(row[: len(best)]) == best and all(t == PAD for t in row[len(best) :])


def test_length_penalty_formula():
    assert length_penalty(1, 0.0).item() == 1.0
    assert length_penalty(1, 1.0).item() == pytest.approx(1.0)
    assert length_penalty(7, 1.0).item() == pytest.approx(2.0)
    assert length_penalty(10, 0.5).item() == pytest.approx((15 / 6) ** 0.5)
