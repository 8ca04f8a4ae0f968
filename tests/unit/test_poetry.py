"""tinyformer.poetry：语料与来历、字表、基线、批、采样、藏头诗、缓存、评估、命令行、随包权重、多进程梯度。"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
from collections import Counter

import pytest
import torch
import torch.multiprocessing as mp

from tests.kit import TINY_POEMS, captured, deadline, tiny_poet
from tinyformer.optim import Muon
from tinyformer.poetry import cli, corpus, evaluation, pretrained, sampling, training
from tinyformer.poetry.checkpoint import load_checkpoint, save_checkpoint
from tinyformer.poetry.corpus import Vocab

# ---------------------------------------------------------------- 语料


def test_corpus_files_match_their_provenance():
    record = json.loads((corpus._DATA / "provenance.json").read_text(encoding="utf-8"))
    assert record["integrity"].startswith("sha512-") and "MIT" in record["licence"]
    assert "MIT License" in (corpus._DATA / "LICENSE").read_text(encoding="utf-8")
    for split in corpus.SPLITS:
        poems = corpus.load_split(split)
        expected = record["splits"][split]
        assert len(poems) == expected["poems"]
        assert sum(map(len, poems)) == expected["characters"]
        text = "".join(p + "\n" for p in poems).encode("utf-8")
        assert hashlib.sha256(text).hexdigest() == expected["sha256"]
    assert [record["splits"][s]["poems"] for s in ("test", "valid")] == [1000, 1000]


def test_corpus_is_simplified_regulated_verse_split_by_poem():
    splits = {s: corpus.load_split(s) for s in corpus.SPLITS}
    text = "".join("".join(p) for p in splits.values())
    traditional_only = "國為說東風無來時們長門與書開關聽見車馬鳥雲愛龍歸聲"
    assert [ch for ch in traditional_only if ch in text] == []
    assert all(evaluation.format_valid(p) for poems in splits.values() for p in poems)
    seen = [set(poems) for poems in splits.values()]
    # 同一首诗只在一个划分里
    assert not (seen[0] & seen[1] or seen[0] & seen[2] or seen[1] & seen[2])
    assert sum(map(len, seen)) == sum(map(len, splits.values()))  # 没有重复


def _twin_finder(pool: list[str]):
    """独立写一遍 twins 的规则：每句的每个位置换成 *，查同样“挖空”的句（不用半句索引）。"""
    theirs = [evaluation.clauses(p) for p in pool]
    index: dict[str, set[int]] = {}
    for j, poem_clauses in enumerate(theirs):
        for clause in poem_clauses:
            for pos in range(len(clause)):
                index.setdefault(clause[:pos] + "*" + clause[pos + 1 :], set()).add(j)

    def has_twin(poem: str) -> bool:
        mine = evaluation.clauses(poem)
        partners: dict[int, tuple[set[int], set[int]]] = {}
        for k, clause in enumerate(mine):
            masks = (clause[:p] + "*" + clause[p + 1 :] for p in range(len(clause)))
            for j in set().union(*(index.get(mask, ()) for mask in masks)):
                for m, other in enumerate(theirs[j]):
                    if len(other) == len(clause) and sum(map(str.__ne__, clause, other)) <= 1:
                        partners.setdefault(j, (set(), set()))[0].add(k)
                        partners[j][1].add(m)
        return any(
            2 * len(a) >= len(mine) or 2 * len(b) >= len(theirs[j])
            for j, (a, b) in partners.items()
        )

    return has_twin


def test_no_test_or_validation_poem_has_a_twin_in_train():
    train = corpus.load_split("train")
    held_out = corpus.load_split("test") + corpus.load_split("valid")
    has_twin = _twin_finder(train)
    assert [p for p in held_out if has_twin(p)] == []
    # 规则找得到：一首测试诗改一个字放进训练集，就查出来
    poem = held_out[0]
    variant = ("风" if poem[0] != "风" else "雨") + poem[1:]
    assert _twin_finder(train[:100] + [variant])(poem)


def test_twins_are_poems_sharing_half_their_clauses_up_to_one_character():
    jueju = "白日依山尽，黄河入海流。欲穷千里目，更上一层楼。"
    cases = [
        ("白日依山近，黄河入海流。此时愁更远，谁识我心忧。", True),  # 两句，其中一句差一个字
        ("白日依山尽，江水向东流。明月照高楼，流光正徘徊。", False),  # 只共用一句
        ("白月依山近，黄河入海流。此时愁更远，谁识我心忧。", False),  # 差两个字的句不算伙伴
        ("黄河入海流，白日依山尽。此时愁更远，谁识我心忧。", True),  # 位置不限
        ("白日依山尽，黄河入海流。欲穷千里目，更上一层楼。"
         "此时愁更远，谁识我心忧。明月照高楼，流光正徘徊。", True),  # 绝句的四句都在律诗里
    ]  # fmt: skip
    for other, expected in cases:
        assert (list(evaluation.twins([jueju], [other])) == [(0, 0)]) is expected, other
        assert (list(evaluation.twins([other, jueju])) == [(0, 1)]) is expected, other


# ---------------------------------------------------------------- 字表与基线


def test_vocabulary_keeps_characters_seen_at_least_min_count_times():
    vocab = Vocab.build(["春花春", "花月", "雪"], min_count=2)
    assert vocab.itos == ["<pad>", "<unk>", "<bos>", "<eos>", "春", "花"]  # 次数相同按码位
    assert vocab.encode("春雪月", bos=True, eos=True) == [2, 4, 1, 1, 3]
    assert "春" in vocab and "雪" not in vocab and "<bos>" not in vocab
    assert vocab.decode([2, 4, 5, 3, 4]) == "春花"  # 遇到 <eos> 停
    assert corpus.MIN_COUNT == 2
    with pytest.raises(ValueError, match=r"itos must start with"):
        Vocab(["春", "<pad>"])


def test_baselines_equal_a_hand_computation():
    vocab = Vocab(["<pad>", "<unk>", "<bos>", "<eos>", "春", "花"])
    train, test = ["春春花", "花"], ["花春"]
    # 预测：训练集 春 春 花 <eos> 花 <eos>：c(春)=2 c(花)=2 c(<eos>)=2 c(<unk>)=0，N=6，V'=4
    p1 = {"春": 3 / 10, "花": 3 / 10, "<eos>": 3 / 10}
    unigram = -(math.log2(p1["花"]) + math.log2(p1["春"]) + math.log2(p1["<eos>"])) / 3
    assert corpus.unigram_bits_per_char(train, test, vocab) == pytest.approx(unigram, abs=1e-12)
    # 前一个符号的次数：<bos>:2（→春, →花），春:2（→春, →花），花:2（→<eos> 两次）
    p = [
        0.7 * 1 / 2 + 0.3 * p1["花"],
        0.7 * 0 / 2 + 0.3 * p1["春"],
        0.7 * 0 / 2 + 0.3 * p1["<eos>"],
    ]
    bigram = -sum(map(math.log2, p)) / 3
    assert corpus.bigram_bits_per_char(train, test, vocab) == pytest.approx(bigram, abs=1e-12)
    with pytest.raises(ValueError, match=r"lam must be in \[0, 1\], got lam=1.5"):
        corpus.bigram_bits_per_char(train, test, vocab, lam=1.5)


class _KneserNey:
    """修正的插值 Kneser–Ney，照 Chen & Goodman (1999) 用字典逐条写出，与向量化的实现对照。"""

    def __init__(self, train, vocab, order):
        self.order, self.outcomes = (
            order,
            [i for i in range(len(vocab)) if i not in (0, vocab.bos_id)],
        )
        self.bos = vocab.bos_id
        raw = {k: Counter() for k in range(1, order + 1)}
        for ids in corpus._targets(train, vocab):
            for t in range(1, len(ids)):  # 每个被预测的位置，每一阶
                for k in range(1, min(order, t + 1) + 1):
                    raw[k][tuple(ids[t - k + 1 : t + 1])] += 1
        self.c = {order: raw[order]}
        for k in range(1, order):
            left = Counter(g[1:] for g in raw[k + 1])  # 不同的左邻有几个
            self.c[k] = Counter({g: raw[k][g] if g[0] == self.bos else left[g] for g in raw[k]})
        self.d = {}
        for k, c in self.c.items():
            n = [sum(v == r for v in c.values()) for r in (1, 2, 3, 4)]
            y = n[0] / (n[0] + 2 * n[1])
            self.d[k] = [
                0,
                1 - 2 * y * n[1] / n[0],
                2 - 3 * y * n[2] / n[1],
                3 - 4 * y * n[3] / n[2],
            ]
        self.rows = {k: {} for k in self.c}  # 上文 → {w: c}
        for k, c in self.c.items():
            for g, v in c.items():
                self.rows[k].setdefault(g[:-1], {})[g[-1]] = v

    def p(self, history, w):
        p = 1 / len(self.outcomes)
        for k in range(1, min(self.order, len(history) + 1) + 1):
            row = self.rows[k].get(tuple(history[len(history) - k + 1 :]) if k > 1 else ())
            if row:
                d = self.d[k]
                gamma = sum(d[min(v, 3)] for v in row.values())
                c = row.get(w, 0)
                p = (c - d[min(c, 3)] + gamma * p) / sum(row.values())
        return p


def test_kneser_ney_equals_the_textbook_formulas_and_each_distribution_sums_to_one():
    train, valid = corpus.load_split("train")[:400], corpus.load_split("valid")[:20]
    vocab = Vocab.build(train)
    for order in (2, 3):
        reference = _KneserNey(train, vocab, order)
        bits = []
        for ids in corpus._targets(valid, vocab):
            for t in range(1, len(ids)):
                bits.append(-math.log2(reference.p(ids[:t], ids[t])))
        ours = corpus.kneser_ney_bits_per_char(train, valid, vocab, order=order, shape=False)
        assert ours == pytest.approx(sum(bits) / len(bits), abs=1e-9)
        ids = vocab.encode(valid[0], bos=True)
        for t in (1, 4, 6):  # 见过和没见过的上文
            assert sum(reference.p(ids[:t], w) for w in reference.outcomes) == pytest.approx(1)
    # 形状：句末的标点不花比特，其余位置只在允许的符号上归一，所以每字比特数只会更少
    with_shape = corpus.kneser_ney_bits_per_char(train, valid, vocab, order=3)
    assert with_shape < ours
    assert corpus._shape_allows(valid[0][:5]) == {"字", "，"} and len(valid[0].split("，")[0]) in (
        5,
        7,
    )


def test_model_bits_per_char_counts_the_same_predictions_as_the_baselines():
    model, vocab = tiny_poet()
    x, y = training.make_batch(TINY_POEMS, vocab)
    assert int((y != vocab.pad_id).sum()) == sum(len(p) + 1 for p in TINY_POEMS)
    # 均匀分布的模型：每个预测 log2 V 比特
    uniform = torch.nn.Linear(1, 1)
    uniform.forward = lambda ids, cache=None: torch.zeros(*ids.shape, len(vocab))
    uniform.parameters = model.parameters
    assert training.evaluate(uniform, TINY_POEMS, vocab) == pytest.approx(math.log2(len(vocab)))


def test_batches_pad_at_the_end_and_group_similar_lengths():
    vocab = Vocab.build(TINY_POEMS, min_count=1)
    x, y = training.make_batch(["春风", "花"], vocab)
    assert x[1].tolist() == [vocab.bos_id, vocab.stoi["花"], vocab.eos_id]
    assert y[1].tolist() == [vocab.stoi["花"], vocab.eos_id, vocab.pad_id]
    poems = ["春" * n for n in (1, 9, 2, 8, 3, 7, 4, 6)]
    stream = training.batches(poems, 2, torch.Generator().manual_seed(0), chunk=4)
    epoch = [next(stream) for _ in range(4)]
    assert sorted(p for b in epoch for p in b) == sorted(poems)  # 一轮里每首恰好一次
    assert all(abs(len(a) - len(b)) <= 2 for a, b in epoch)  # 排序后再切：一批里长短相近


def test_learning_rate_warms_up_then_decays_to_the_floor():
    lrs = [training.lr_at(s, 100, 1.0, 10) for s in range(100)]
    assert lrs[9] == 1.0 and lrs[0] == 0.1 and lrs[-1] == pytest.approx(0.1)
    assert all(a >= b for a, b in zip(lrs[9:], lrs[10:], strict=False))


def test_wsd_holds_the_peak_then_decays_linearly_over_the_last_fifth():
    lrs = [training.lr_at(s, 100, 1.0, 10, schedule="wsd") for s in range(100)]
    assert lrs[:10] == [training.lr_at(s, 100, 1.0, 10) for s in range(10)]  # 同样的预热
    assert lrs[9:80] == [1.0] * 71 and lrs[-1] == pytest.approx(0.1)
    steps = [a - b for a, b in zip(lrs[79:], lrs[80:], strict=False)]  # 最后 20 步每步降一样多
    assert steps == pytest.approx([0.9 / 20] * 20)
    with pytest.raises(
        ValueError, match=r"schedule must be one of 'cosine', 'wsd', got schedule='linear'"
    ):
        _train(steps=1, warmup=1, log_every=1, eval_every=1, schedule="linear")


def _train(steps, warmup, log_every, eval_every, accumulate=1, schedule="cosine"):
    """(模型, 训练结果)：种子 3 的 tiny_poet 在 TINY_POEMS × 4 上训练，批量 4。"""
    model, vocab = tiny_poet(seed=3)
    result = training.train(
        model, vocab, TINY_POEMS * 4, TINY_POEMS, steps=steps, batch_size=4, warmup=warmup,
        log_every=log_every, eval_every=eval_every, accumulate=accumulate, schedule=schedule,
    )  # fmt: skip
    return model, result


def test_training_is_deterministic_and_lowers_the_loss():
    (a, ra), (b, rb) = _train(30, 5, 10, 30), _train(30, 5, 10, 30)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))
    assert ra.log == rb.log and [r["step"] for r in ra.log] == [10, 20, 30]
    assert ra.valid[-1]["valid_bpc"] < ra.log[0]["train_bpc"]


def test_muon_updates_the_block_matrices_and_adamw_the_rest(monkeypatch):
    given = []
    monkeypatch.setattr(
        training, "Muon", lambda params, **kw: given.extend(params) or Muon(params, **kw)
    )
    model, vocab = tiny_poet(seed=3)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    result = training.train(
        model, vocab, TINY_POEMS * 4, TINY_POEMS, steps=30, batch_size=4, warmup=5,
        log_every=10, eval_every=30, muon_lr=0.02,
    )  # fmt: skip
    names = {id(p): n for n, p in model.named_parameters()}
    blocks = sorted(n for n in names.values() if n.startswith("layers.") and n.endswith("weight")
                    and before[n].dim() == 2)  # fmt: skip
    assert sorted(names[id(p)] for p in given) == blocks and blocks  # 嵌入（兼输出层）不在其中
    assert all(not torch.equal(before[n], p) for n, p in model.named_parameters())  # 都更新了
    assert result.valid[-1]["valid_bpc"] < result.log[0]["train_bpc"]


def test_accumulated_shares_train_like_the_whole_batch():
    # accumulate=A：每步分 A 份前向、反向，梯度相加——与整批一起算的相同（到舍入），只是激活值少占内存
    (whole, r1), (halves, r2), (singles, r4) = (_train(6, 2, 3, 10, a) for a in (1, 2, 4))
    for other, log in ((halves, r2.log), (singles, r4.log)):
        for p, q in zip(whole.parameters(), other.parameters(), strict=True):
            torch.testing.assert_close(q, p, rtol=0, atol=1e-5)
        assert [r["train_bpc"] for r in log] == pytest.approx([r["train_bpc"] for r in r1.log])
    model, vocab = tiny_poet(seed=3)
    with pytest.raises(ValueError, match="accumulate must be at most batch_size, got accumulate=5"):
        training.train(model, vocab, TINY_POEMS, TINY_POEMS, steps=1, batch_size=4, accumulate=5)
    with pytest.raises(ValueError, match="accumulate"):
        training.train(model, vocab, TINY_POEMS, TINY_POEMS, steps=1, batch_size=4, accumulate=0)


# ---------------------------------------------------------------- 采样


def test_top_k_and_top_p_keep_exactly_the_allowed_set():
    logits = torch.randn(50, generator=torch.Generator().manual_seed(0))
    probs = torch.softmax(logits, dim=-1)
    kept = sampling.next_distribution(logits, top_k=7) > 0
    assert set(kept.nonzero().flatten().tolist()) == set(probs.topk(7).indices.tolist())
    for p in (0.1, 0.5, 0.9, 1.0):
        filtered = sampling.next_distribution(logits, top_p=p)
        order = probs.argsort(descending=True)
        n = int((probs[order].cumsum(0) - probs[order] < p).sum())  # 最小的、累加到 p 的前缀
        assert set((filtered > 0).nonzero().flatten().tolist()) == set(order[:n].tolist())
        assert filtered.sum().item() == pytest.approx(1.0)
        assert torch.allclose(filtered[order[:n]], probs[order[:n]] / probs[order[:n]].sum())
    with pytest.raises(ValueError, match=r"top_p must be in \(0, 1\], got top_p=0"):
        sampling.next_distribution(logits, top_p=0)


@pytest.mark.parametrize("temperature", [1e-300, 1e300])
def test_a_temperature_that_would_make_nan_is_refused(temperature):
    logits = torch.tensor([3.0, 1.0, float("-inf")])  # 被禁的字是 -inf，与 write 里的一样
    assert torch.softmax(logits / temperature, dim=-1).isnan().any()  # 不查时的结局
    message = (
        r"^temperature must be in \[0\.001, 1000\.0\] \(beyond it float32 logits / temperature"
    )
    with pytest.raises(ValueError, match=message):
        sampling.next_distribution(logits, temperature)


def test_greedy_with_the_cache_equals_greedy_without():
    model, vocab = tiny_poet(seed=1)
    cached = sampling.write(model, vocab, prefix="春风", greedy=True)
    full = sampling.write(model, vocab, prefix="春风", greedy=True, use_cache=False)
    assert cached.text == full.text and cached.text.startswith("春风")
    for a, b in zip(cached.choices, full.choices, strict=True):
        assert [c for c, _ in a] == [c for c, _ in b]
        assert [p for _, p in a] == pytest.approx([p for _, p in b], abs=1e-4)


def test_acrostic_forces_its_characters_at_the_start_of_each_clause():
    model, vocab = tiny_poet(seed=2, max_len=64)
    for seed in range(5):
        poem = sampling.write(
            model, vocab, acrostic="秋月花鸟", generator=torch.Generator().manual_seed(seed)
        )
        parts = evaluation.clauses(poem.text)
        assert [c[0] for c in parts] == list("秋月花鸟"), poem.text
        assert poem.text[-1] in "，。"  # 写满 4 句就结束
        assert poem.choices[0] == [("秋", 1.0)]
    with pytest.raises(ValueError, match=r"characters not in the vocabulary: 'X'"):
        sampling.write(model, vocab, acrostic="秋月花X")


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"acrostic": ""}, ValueError, r"acrostic must have at least one character, got acrostic=''"),
        ({"acrostic": "，，，，"}, ValueError,
         r"acrostic must be characters that begin a clause, not punctuation: '，' in acrostic='，，，，'"),
        ({"acrostic": "春花" * 10}, ValueError,
         r"acrostic is too long for the model's context: 20 clauses of up to 7 characters and a mark "
         r"need 162 positions, max_len=40 \(at most 4 characters\)"),
        ({"acrostic": list("春花秋月")}, TypeError, r"acrostic must be a str or None, got list"),
        ({"prefix": "春" * 39}, ValueError,
         r"prefix is too long for the model's context: 39 characters, at most max_len - 2 = 38"),
        ({"show": -1}, ValueError, r"show must be >= 0, got show=-1"),
        ({"greedy": "no"}, TypeError, r"greedy must be a bool, got greedy='no'"),  # 以前：真值，贪心
        ({"generator": 5}, TypeError, r"generator must be a Generator or None, got int"),
    ],
    ids=["empty", "punctuation", "longer-than-context", "a-list", "prefix-longer-than-context",
         "show-negative", "greedy-a-string", "generator-an-int"],
)  # fmt: skip
def test_write_refuses_an_acrostic_or_prefix_it_cannot_honour(kwargs, error, message):
    model, vocab = tiny_poet(max_len=40)
    with pytest.raises(error, match=f"^{message}$"):
        sampling.write(model, vocab, **kwargs)


def test_write_refuses_a_vocabulary_from_another_checkpoint():
    model, _ = tiny_poet()  # 字表 24 项
    other = Vocab.build([*TINY_POEMS, "龙虎"], min_count=1)  # 26 项：编号对不上字
    message = r"^vocab has 26 entries but the model's vocab_size=24: they come from different checkpoints$"
    with pytest.raises(ValueError, match=message):
        sampling.write(model, other)
    poem = sampling.write(
        model, Vocab.build(TINY_POEMS, min_count=1), show=10**6
    )  # show 大于字表：全列出
    assert all(len(step) in (1, 24) for step in poem.choices)


def test_an_acrostic_is_never_cut_by_the_context():
    # 未训练的模型常写出很长的句子：位置数不够时这一句提前结束，每个藏头字都有自己的一句，最后一句有标点
    model, vocab = tiny_poet(seed=3, max_len=34)  # 34 = <bos> + 4 句 × 8 + <eos>：刚好允许 4 个字
    cut = 0
    for seed in range(20):
        generator = torch.Generator().manual_seed(seed)
        poem = sampling.write(model, vocab, acrostic="春花秋月", generator=generator)
        assert [c[0] for c in evaluation.clauses(poem.text)] == list("春花秋月"), poem.text
        assert poem.text[-1] in "，。", poem.text
        cut += len(poem.text) + 1 == model.config.max_len  # 用满了位置数：约束起了作用
    assert cut > 0  # 这些样本里确有要提前结束句子的


def test_sampling_is_reproducible_with_a_generator_and_never_writes_specials():
    model, vocab = tiny_poet(seed=4)
    a = sampling.write(model, vocab, generator=torch.Generator().manual_seed(7), top_k=5)
    b = sampling.write(model, vocab, generator=torch.Generator().manual_seed(7), top_k=5)
    assert a == b and "<" not in a.text
    assert all(len(step) == 5 for step in a.choices)


# ---------------------------------------------------------------- 评估


@pytest.mark.parametrize(
    "poem, valid",
    [
        ("白日依山尽，黄河入海流。欲穷千里目，更上一层楼。", True),
        ("故人西辞黄鹤楼，烟花三月下扬州。孤帆远影碧空尽，唯见长江天际流。", True),
        ("春眠不觉晓，处处闻啼鸟。夜来风雨声，花落知多少。" * 2, True),  # 8 句
        ("白日依山尽，黄河入海流。", False),  # 2 句
        ("春眠不觉晓，处处闻啼鸟。夜来风雨声，花落知多少。" * 3, False),  # 12 句
        ("白日依山尽，黄河入海流。欲穷千里目，更上一层高楼。", False),  # 长短不一
        ("白日依山尽。黄河入海流，欲穷千里目，更上一层楼。", False),  # 标点错位
        ("白日依山尽，黄河入海流。欲穷千里目，更上一层楼", False),  # 没有结尾的 。
        ("白日依山尽，黄河入海流。欲穷千里目，更上一层□。", False),  # 非汉字
        ("白日依山盡，黄河入海流。欲穷千里目，更上一层楼。", True),  # 繁体字也是汉字：形状只看字数
    ],
)
def test_format_valid(poem, valid):
    assert evaluation.format_valid(poem) is valid


def test_lines_copied_counts_whole_clauses_found_in_training():
    train = ["白日依山尽，黄河入海流。欲穷千里目，更上一层楼。"]
    samples = ["白日依山尽，江水向东流。", "黄河入海流，山尽。"]
    assert evaluation.lines_copied(samples, train) == 2 / 4  # "山尽" 是子串，不算整句
    assert evaluation.lines_copied([], train) == 0


def test_meter_rate_counts_compliant_poems_and_refuses_none():
    # 《乌衣巷》：斜 与 家 在普通话里不押韵，在平水韵里同属下平声六麻
    poems = ["朱雀桥边野草花，乌衣巷口夕阳斜。旧时王谢堂前燕，飞入寻常百姓家。", "不成诗"]
    assert evaluation.meter(poems[0]).groups == ("下平声六麻",)
    assert evaluation.meter_rate(poems) == 0.5
    with pytest.raises(ValueError, match=r"^meter_rate needs at least one poem, got none$"):
        evaluation.meter_rate([])


# ---------------------------------------------------------------- 检查点与命令行


@pytest.fixture
def tiny_checkpoint(tmp_path):
    model, vocab = tiny_poet(seed=5)
    path = tmp_path / "tiny.safetensors"
    save_checkpoint(path, model, vocab, metrics={"steps": 0})
    return path, model, vocab


def test_checkpoint_round_trip(tiny_checkpoint):
    path, model, vocab = tiny_checkpoint
    loaded, loaded_vocab, metadata = load_checkpoint(path)
    assert loaded_vocab.itos == vocab.itos and metadata["metrics"] == {"steps": 0}
    assert all(
        torch.equal(a, b)
        for a, b in zip(model.state_dict().values(), loaded.state_dict().values(), strict=True)
    )


def test_cli_generates_one_poem_per_line(tiny_checkpoint):
    path = str(tiny_checkpoint[0])
    argv = ["generate", "--model", path, "--n", "3", "--acrostic", "春花秋月"]
    code, out, err = captured(lambda: cli.run(argv))
    assert code == 0 and err == "" and len(out.splitlines()) == 3
    assert all(line[0] == "春" for line in out.splitlines())


# 坏参数与坏权重文件：一行中文、退出码 2 或 3，钉在 test_bad_inputs.py 的表里（CLI 表的 poetry 行）；
# 下面是训练的参数：都在第一步之前查出（train 被换成一个一调用就失败的函数）
TRAIN = ["train", "--steps", "1", "--out"]
BAD_TRAIN = [
    ("out-under-a-file", [*TRAIN, "{t}/file.txt/m.safetensors"],
     r"--out '{t}/file.txt/m.safetensors' 写不进去：'{t}/file.txt' 不是文件夹"),
    ("out-a-folder", [*TRAIN, "{t}"], r"--out '{t}' 不是普通文件的路径（是文件夹或设备）"),
    ("batch-larger-than-the-corpus", [*TRAIN, "{t}/m.safetensors", "--batch-size", "40000"],
     r"--batch-size 40000 大于训练集的诗数 \d+"),
    ("d-model-6", [*TRAIN, "{t}/m.safetensors", "--d-model", "6"],
     r"--d-model 应为头数 4 的倍数（每个头 d_model/4 维），得到 6"),
    ("lr-huge", [*TRAIN, "{t}/m.safetensors", "--lr", "1e30"],
     r"--lr 应为 \(0, 1\] 之内的数，得到 '1e30'"),
    ("model-too-large", [*TRAIN, "{t}/m.safetensors", "--d-model", "65536"],
     r"模型太大：GPT with .* would need about .* of memory, more than this machine has .*；减小 --d-model 或 --layers"),
    ("threads-huge", [*TRAIN, "{t}/m.safetensors", "--threads", "1000000000"],
     r"--threads 应为不大于 1024 的正整数，得到 '1000000000'"),
]  # fmt: skip


@pytest.mark.parametrize("argv, message", [c[1:] for c in BAD_TRAIN], ids=[c[0] for c in BAD_TRAIN])
def test_train_refuses_bad_arguments_before_its_first_step(argv, message, tmp_path, monkeypatch):
    (tmp_path / "file.txt").write_text("x")
    monkeypatch.setattr(cli, "train", lambda *a, **k: pytest.fail("trained"))
    argv = [a.replace("{t}", str(tmp_path)) for a in argv]
    code, out, err = captured(lambda: cli.run(argv))
    assert (code, out) == (cli.EXIT_USAGE, "") and err.count("\n") == 1, err
    message = message.replace("{t}", str(tmp_path))
    assert re.fullmatch(f"错误：{message}（用 --help 查看用法）\n", err), err


def test_train_makes_the_out_folder_and_an_interrupted_run_writes_nothing(tmp_path, monkeypatch):
    out = tmp_path / "runs" / "poetry.safetensors"  # 文档里的命令：runs/ 还不存在
    for error, code, line in (
        (KeyboardInterrupt(), 130, "错误：被中断（Ctrl-C）；没有写出新文件，原有的文件保持不变\n"),
        (FloatingPointError("the loss is nan at step 2 (training diverged)"), 2,
         "错误：训练发散，没有保存权重：the loss is nan at step 2 (training diverged)；"
         "试试更小的 --lr（现在是 0.003）\n"),
    ):  # fmt: skip

        def fail(*args, error=error, **kwargs):
            assert out.parent.is_dir()  # 文件夹在训练之前就建好了
            raise error

        monkeypatch.setattr(cli, "train", fail)
        code_, stdout, err = captured(lambda: cli.run(["train", "--steps", "1", "--out", str(out)]))
        assert (code_, stdout, err) == (code, "", line)
        assert list(out.parent.iterdir()) == []


def test_batches_larger_than_the_corpus_are_refused_at_once():
    model, vocab = tiny_poet()
    message = r"^batch_size must be at most the number of poems, got batch_size=4 for 3 poems$"
    with deadline(10), pytest.raises(ValueError, match=message):  # 以前：while True 空转
        training.train(model, vocab, TINY_POEMS + TINY_POEMS[:1], TINY_POEMS, steps=1, batch_size=4)
    with pytest.raises(ValueError, match=message):  # 调用时就查，不等第一个 next()
        training.batches(["春", "花", "月"], 4, torch.Generator())


def test_bits_per_char_of_no_poems_is_refused_not_divided_by_zero():
    model, vocab = tiny_poet()
    message = r"^poems must hold at least one poem, got an empty list$"
    for call in (
        lambda: training.evaluate(model, [], vocab),
        lambda: training.make_batch([], vocab),
    ):
        with pytest.raises(ValueError, match=message):
            call()
    with pytest.raises(
        ValueError, match=r"^valid_poems must hold at least one poem, got an empty list$"
    ):
        training.train(model, vocab, TINY_POEMS * 4, [], steps=1, batch_size=2)


def test_training_that_diverges_stops_instead_of_saving_nan():
    model, vocab = tiny_poet()
    with pytest.raises(
        FloatingPointError, match=r"^the loss is nan at step 2 \(training diverged\)$"
    ):
        training.train(
            model, vocab, TINY_POEMS * 4, TINY_POEMS, steps=5, batch_size=2, lr=1e30, warmup=1
        )


def test_cli_names_a_torchrun_process_without_its_own_gpu(monkeypatch):
    """一块 GPU 上 ``torchrun --nproc_per_node=2 ... --device cuda``：第二个进程没有卡（CUDA 会说 invalid device ordinal）。"""
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    argv = ["train", "--steps", "1", "--out", "x", "--device", "cuda"]
    code, out, err = captured(lambda: cli.run(argv))
    assert code == cli.EXIT_USAGE and out == "" and err.count("\n") == 1
    assert err.startswith(
        "错误：--device cuda：torchrun 的第 1 号进程（LOCAL_RANK）没有自己的 GPU，这台机器只有 1 块"
    )


# ---------------------------------------------------------------- 随包发布的权重


def test_shipped_weights_load_and_meet_the_recorded_thresholds():
    record = pretrained.provenance()
    train, evaluated = record["metrics"], record["evaluate"]
    assert record["command"].startswith("python -m tinyformer.poetry train --steps")
    assert train["train_seconds"] <= 30 * 60  # 这台 2 核机器上 30 分钟以内（ship_poetry_weights）
    # 测试集上比最强的 n 元模型（Kneser–Ney，同一份训练集）低 ≥ 8 %；默认设置下 ≥ 95 % 的样本形状合格
    assert evaluated["test_bits_per_char"] <= 0.92 * evaluated["kneser_ney_bits_per_char"]
    assert evaluated["kneser_ney_bits_per_char"] < evaluated["bigram_bits_per_char"]
    assert evaluated["format_valid"] >= 0.95
    assert evaluated["test_bits_per_char"] == train["test_bits_per_char"]
    model, vocab = pretrained.load_model()
    _, _, metadata = load_checkpoint(pretrained.weights_path())
    assert metadata["metrics"] == train and not model.training
    assert (
        len(vocab) == model.config.vocab_size == len(Vocab.build(corpus.load_split("train")).itos)
    )


# ---------------------------------------------------------------- 多进程（DDP，gloo，CPU）


def _ddp_worker(rank: int, world: int, store: str, out: str) -> None:
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
    model, vocab = tiny_poet(seed=6)
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    loss, _ = training.batch_loss(ddp, TINY_POEMS * 2 + ["春风", "花落鸟啼声"], vocab, rank, world)
    loss.backward()  # DDP 在这里把各进程的梯度取平均
    if rank == 0:
        torch.save({n: p.grad for n, p in model.named_parameters()}, out)
    dist.destroy_process_group()


def test_two_processes_on_half_batches_give_the_gradients_of_one_process(tmp_path):
    out = tmp_path / "grads.pt"
    os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
    mp.spawn(_ddp_worker, args=(2, str(tmp_path / "store"), str(out)), nprocs=2, join=True)
    ddp_grads = torch.load(out)
    model, vocab = tiny_poet(seed=6)
    loss, _ = training.batch_loss(model, TINY_POEMS * 2 + ["春风", "花落鸟啼声"], vocab)
    loss.backward()
    for name, p in model.named_parameters():
        # 两个进程的份额字数不同（20+12+… 对 12+…）：缩放之后仍与整批平均相同，只差求和顺序
        assert torch.allclose(ddp_grads[name], p.grad, rtol=1e-5, atol=1e-7), name
