"""training.py：批量的右移与填充、标签平滑的交叉熵等于 torch 的、预热学习率、训练可复现。"""

import copy

import pytest
import torch
import torch.nn.functional as F

from tests.kit import tiny_transformer
from tinyformer.translation.corpus import generate_corpus
from tinyformer.translation.training import (
    encode_pairs,
    iterate_batches,
    label_smoothed_cross_entropy,
    make_batch,
    make_optimizer,
    pad_sequences,
    train,
    warmup_lr,
)

BOS, EOS = 2, 3
EXAMPLES = [([4, 5, 6], [BOS, 7, 8, 9, EOS]), ([5], [BOS, 8, EOS]), ([6, 4], [BOS, 9, 9, EOS])]


def test_make_batch_shifts_target_by_one_and_pads():
    batch = make_batch(EXAMPLES, pad_id=0)
    assert batch.src.shape == (3, 3) and batch.tgt_in.shape == batch.tgt_out.shape == (3, 4)
    for b, (src, tgt) in enumerate(EXAMPLES):
        assert batch.src[b, : len(src)].tolist() == src
        assert (batch.src[b, len(src) :] == 0).all()
        # 教师强制：第 t 个位置输入 y_{t-1}，要预测 y_t
        assert batch.tgt_in[b, : len(tgt) - 1].tolist() == tgt[:-1]
        assert batch.tgt_out[b, : len(tgt) - 1].tolist() == tgt[1:]
        assert (batch.tgt_out[b, len(tgt) - 1 :] == 0).all()


def test_iterate_batches_covers_every_example_once_and_is_reproducible():
    examples = [([i + 4], [BOS, i + 4, EOS]) for i in range(10)]

    def order(seed):
        batches = iterate_batches(
            examples, 4, shuffle=True, generator=torch.Generator().manual_seed(seed)
        )
        return [row[0] for batch in batches for row in batch.src.tolist()]

    assert sorted(order(0)) == list(range(4, 14))
    assert order(0) == order(0) and order(0) != order(1)
    sizes = [b.src.shape[0] for b in iterate_batches(examples, 4)]
    assert sizes == [4, 4, 2]


def test_encode_pairs_adds_bos_eos_on_target_only():
    corpus = generate_corpus()
    src_vocab, tgt_vocab = corpus.build_vocabs()
    ((src, tgt),) = encode_pairs(corpus.train[:1], src_vocab, tgt_vocab)
    assert src_vocab.decode(src) == list(corpus.train[0].zh_words)
    assert tgt[0] == tgt_vocab.bos_id and tgt[-1] == tgt_vocab.eos_id
    assert tgt_vocab.bos_id not in src[1:]


@pytest.mark.parametrize("ignore_index", [-100, 0, 7])
@pytest.mark.parametrize("smoothing", [0.0, 0.1, 0.3])
def test_ignore_index_like_torch_cross_entropy(ignore_index, smoothing):
    # torch 的惯例是 ignore_index=-100：它不是合法编号，取 log p 之前必须先遮住
    torch.manual_seed(0)
    logits = torch.randn(3, 6, 11)
    target = torch.randint(0, 11, (3, 6))
    target[0, 4:] = ignore_index
    target[2, 1] = ignore_index
    ours = label_smoothed_cross_entropy(logits, target, smoothing, ignore_index=ignore_index)
    reference = F.cross_entropy(
        logits.reshape(-1, 11),
        target.reshape(-1),
        label_smoothing=smoothing,
        ignore_index=ignore_index,
    )
    torch.testing.assert_close(ours, reference)
    # 被忽略的位置不影响损失：改掉那里的 logits，损失不变
    logits[0, 4:] = 100.0
    again = label_smoothed_cross_entropy(logits, target, smoothing, ignore_index=ignore_index)
    torch.testing.assert_close(again, ours)


def test_label_smoothing_minimum_is_the_smoothed_distribution():
    # 标签平滑的损失在 p = q 时最小（此时等于 q 的熵），而不是在 one-hot 时
    V, eps = 5, 0.1
    q = torch.full((V,), eps / V)
    q[2] += 1 - eps
    at_q = label_smoothed_cross_entropy(q.log()[None], torch.tensor([2]), eps, ignore_index=0)
    entropy = -(q * q.log()).sum()
    torch.testing.assert_close(at_q, entropy)
    confident = torch.tensor([[-20.0, -20.0, 20.0, -20.0, -20.0]])
    assert label_smoothed_cross_entropy(confident, torch.tensor([2]), eps, 0) > at_q


def test_warmup_lr_rises_linearly_then_decays_as_inverse_sqrt():
    d, warmup = 512, 4000
    peak = warmup_lr(warmup, d, warmup)
    assert peak == pytest.approx((d * warmup) ** -0.5)
    assert warmup_lr(1000, d, warmup) == pytest.approx(peak * 1000 / warmup)
    assert warmup_lr(16000, d, warmup) == pytest.approx(peak / 2)  # 步数 ×4，学习率 ÷2
    lrs = [warmup_lr(n, d, warmup) for n in range(1, 10000)]
    assert max(lrs) == lrs[warmup - 1]


def test_optimizer_uses_paper_adam_and_schedule():
    (group,) = make_optimizer(torch.nn.Linear(4, 4)).param_groups
    assert (group["betas"], group["eps"], group["weight_decay"]) == ((0.9, 0.98), 1e-9, 0.0)
    history = train(
        tiny_model(), EXAMPLES, max_steps=20, batch_size=3, warmup=10, lr_factor=2.0, progress=False
    )
    assert history.lrs == pytest.approx([warmup_lr(n, 16, 10, 2.0) for n in range(1, 21)])


def tiny_model():
    return tiny_transformer(src_vocab_size=10, tgt_vocab_size=10).train()


def test_training_is_reproducible_and_fits_a_tiny_set():
    def run():
        return train(
            tiny_model(),
            EXAMPLES,
            max_steps=80,
            batch_size=3,
            warmup=10,
            smoothing=0.0,
            lr_factor=0.2,
            progress=False,
        )

    first, second = run(), run()
    assert first.losses == second.losses and first.steps == 80
    assert len(first.lrs) == 80 and first.lrs[9] == max(first.lrs)
    assert sum(first.losses[-10:]) / 10 < 0.05  # 三个句对被背下来了


def test_a_shorter_run_is_the_start_of_a_longer_one():
    """随包发布的检查点是各自独立的 --steps N 训练：学习率与总步数无关，dropout 与数据顺序只看种子，
    所以同一台机器上短的训练与长的训练的前 N 步逐位相同。"""
    snapshot = {}

    def grab(step, model):
        if step == 6:
            snapshot.update(copy.deepcopy(model.state_dict()))
        return False

    def run(steps, callback=None):
        model = tiny_transformer(src_vocab_size=10, tgt_vocab_size=10, dropout=0.1).train()
        history = train(
            model,
            EXAMPLES,
            max_steps=steps,
            batch_size=2,
            warmup=10,
            progress=False,
            callback=callback,
        )
        return model, history

    short, short_history = run(6)
    _, long_history = run(15, grab)
    assert long_history.lrs[:6] == short_history.lrs
    assert long_history.losses[:6] == short_history.losses
    state = short.state_dict()
    assert state.keys() == snapshot.keys()
    assert all(torch.equal(state[name], snapshot[name]) for name in state)


def test_training_stops_when_callback_says_so():
    calls = []
    history = train(
        tiny_model(),
        EXAMPLES,
        max_steps=50,
        progress=False,
        callback=lambda step, model: calls.append(step) or step == 7,
    )
    assert history.steps == 7 and calls == list(range(1, 8))


def test_pad_sequences_reads_a_generator_once():
    # 生成器只能读一遍：结果与列表相同，不是空张量
    torch.testing.assert_close(
        pad_sequences((s for s in [[5, 6], [7]]), 0), torch.tensor([[5, 6], [7, 0]])
    )
