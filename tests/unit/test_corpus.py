"""corpus.py 的测试：确定性、划分、留出搭配、英文形态、jieba 分词、还原句子、词表。

形态检查用的是测试里手写的英语知识（下面的 ENGLISH_VERBS 和人称规则），不是从被测模块
的输出里抄来的期望值。
"""

import dataclasses
import hashlib
import os
import subprocess
import sys

import pytest

from tinyformer.text import ZhTokenizer, detokenize_en, tokenize_en
from tinyformer.translation.corpus import (
    HELD_OUT,
    MOODS,
    PROPER_NOUNS,
    Pair,
    all_pairs,
    corpus_tokenizer,
    generate_corpus,
    is_held_out,
)

# 英语动词：原形 → (第三人称单数, 过去式)，按英语语法独立写出，用来核对生成的句子。
ENGLISH_VERBS = {
    "eat": ("eats", "ate"),
    "drink": ("drinks", "drank"),
    "read": ("reads", "read"),
    "watch": ("watches", "watched"),
    "buy": ("buys", "bought"),
    "write": ("writes", "wrote"),
    "do": ("does", "did"),
    "study": ("studies", "studied"),
    "listen": ("listens", "listened"),
    "visit": ("visits", "visited"),
    "make": ("makes", "made"),
    "clean": ("cleans", "cleaned"),
    "go": ("goes", "went"),
}
BASE = set(ENGLISH_VERBS)
THIRD = {third for third, _ in ENGLISH_VERBS.values()}
PAST = {past for _, past in ENGLISH_VERBS.values()}
PAST_TIMES = {"昨天": ["yesterday"], "上周": ["last", "week"]}
FUTURE_TIMES = {"明天": ["tomorrow"], "下周": ["next", "week"]}


def third_singular(subject: str) -> bool:
    """中文主语是否第三人称单数：不是“我”“你”，也不带复数的“们”。"""
    return subject not in ("我", "你") and not subject.endswith("们")


def verbs_in(tokens):
    return [t for t in tokens if t in BASE | THIRD | PAST]


@pytest.fixture(scope="module")
def corpus():
    return generate_corpus(seed=0)


@pytest.fixture(scope="module")
def pairs(corpus):
    return corpus.train + corpus.valid + corpus.test


def digest(corpus) -> str:
    text = "\n".join(
        f"{name}\t{p.zh}\t{p.en}"
        for name in ("train", "valid", "test")
        for p in getattr(corpus, name)
    )
    return hashlib.sha256(text.encode()).hexdigest()


# ---------------------------------------------------------------- 确定性与划分


def test_same_seed_same_corpus_other_seed_other_split(corpus):
    assert generate_corpus(seed=0) == corpus
    other = generate_corpus(seed=1)
    assert other.train != corpus.train and other.valid != corpus.valid
    # 换种子只改变随机划分与顺序，不改变留出的测试句
    assert set(other.test) == set(corpus.test)
    assert set(other.train + other.valid) == set(corpus.train + corpus.valid)


def test_independent_of_python_hash_seed(corpus):
    # 子进程换一个哈希种子重新生成。为了快，子进程不执行 tinyformer/__init__.py（它导入
    # torch），而是把包目录当作命名空间直接导入 corpus（它只依赖 text；translation/__init__.py 不导入任何东西）。
    package_dir = os.path.dirname(
        os.path.dirname(sys.modules["tinyformer.translation.corpus"].__file__)
    )
    code = (
        "import hashlib, sys, types\n"
        "package = types.ModuleType('tinyformer')\n"
        f"package.__path__ = [{package_dir!r}]\n"
        "sys.modules['tinyformer'] = package\n"
        "from tinyformer.translation.corpus import generate_corpus\n"
        "c = generate_corpus(seed=0)\n"
        "text = '\\n'.join(f'{n}\\t{p.zh}\\t{p.en}' for n in ('train', 'valid', 'test')"
        " for p in getattr(c, n))\n"
        "print(hashlib.sha256(text.encode()).hexdigest())\n"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == digest(corpus)


def test_sizes(corpus):
    total = len(corpus.train) + len(corpus.valid) + len(corpus.test)
    assert 3000 <= total <= 20000
    assert len(corpus.valid) == round(0.05 * (len(corpus.train) + len(corpus.valid)))
    assert len(corpus.test) >= 500
    assert len(all_pairs()) == total


def test_splits_disjoint_and_no_duplicates(corpus):
    splits = [corpus.train, corpus.valid, corpus.test]
    for split in splits:
        assert len(set(split)) == len(split)
    for i in range(3):
        for j in range(i + 1, 3):
            assert not {p.zh for p in splits[i]} & {p.zh for p in splits[j]}


def test_same_chinese_never_two_english(pairs):
    translation = {}
    for p in pairs:
        assert translation.setdefault(p.zh, p.en) == p.en


# ---------------------------------------------------------------- 留出的搭配


def test_held_out_combinations_only_in_test(corpus):
    assert corpus.held_out == HELD_OUT
    for p in corpus.train + corpus.valid:
        for slot_a, value_a, slot_b, value_b in HELD_OUT:
            assert not (getattr(p, slot_a) == value_a and getattr(p, slot_b) == value_b)
    for p in corpus.test:
        assert any(getattr(p, a) == va and getattr(p, b) == vb for a, va, b, vb in HELD_OUT), p
    # 每个搭配在测试集里都真的出现
    for combination in HELD_OUT:
        assert any(is_held_out(p, [combination]) for p in corpus.test), combination


def test_held_out_parts_seen_in_train(corpus):
    for slot_a, value_a, slot_b, value_b in HELD_OUT:
        assert any(getattr(p, slot_a) == value_a for p in corpus.train)
        assert any(getattr(p, slot_b) == value_b for p in corpus.train)


def test_vocab_from_train_only_covers_test(corpus):
    src_vocab, tgt_vocab = corpus.build_vocabs()
    for p in corpus.valid + corpus.test:
        assert src_vocab.unknown(corpus_tokenizer(p.zh)) == []
        assert tgt_vocab.unknown(tokenize_en(p.en)) == []
    # 只用训练集：把训练集换成一句话，词表就只剩这句话的词
    tiny = dataclasses.replace(corpus, train=corpus.train[:1])
    src_tiny, tgt_tiny = tiny.build_vocabs()
    assert len(src_tiny) == 4 + len(set(corpus_tokenizer(corpus.train[0].zh)))
    assert len(tgt_tiny) == 4 + len(set(tokenize_en(corpus.train[0].en)))


def test_custom_held_out():
    corpus = generate_corpus(held_out=[("subject", "他", "time", "明天")])
    assert corpus.test and all(p.subject == "他" and p.time == "明天" for p in corpus.test)


# ---------------------------------------------------------------- 形态与词序


def test_tense_from_time_word(pairs):
    for p in pairs:
        tokens = tokenize_en(p.en)
        verbs = verbs_in(tokens)
        if p.time in PAST_TIMES:
            assert "will" not in tokens and "won't" not in tokens, p
            if p.mood == "affirmative":
                assert len(verbs) == 1 and verbs[0] in PAST, p
            else:  # didn't / did ... + 原形
                assert ("didn't" in tokens) == (p.mood == "negative"), p
                assert tokens[0] == "did" or "didn't" in tokens, p
                assert verbs[-1] in BASE, p
        elif p.time in FUTURE_TIMES:
            assert "will" in tokens or "won't" in tokens, p
            assert verbs[-1] in BASE and not set(verbs) & (PAST - BASE), p
        else:  # 每天或没有时间词：一般现在时
            assert not {"will", "won't", "didn't", "did"} & set(tokens), p


def test_agreement_in_present_tense(pairs):
    for p in pairs:
        if p.time in PAST_TIMES or p.time in FUTURE_TIMES:
            continue
        tokens = tokenize_en(p.en)
        third = third_singular(p.subject)
        if p.mood == "affirmative":
            (verb,) = verbs_in(tokens)
            assert verb in (THIRD if third else BASE), p
            if third:
                assert verb.endswith("s"), p
        elif p.mood == "negative":
            assert ("doesn't" if third else "don't") in tokens, p
            assert verbs_in(tokens)[-1] in BASE, p
        else:
            assert tokens[0] == ("does" if third else "do"), p


def test_negation_and_questions(pairs):
    for p in pairs:
        tokens = tokenize_en(p.en)
        negative_en = {"don't", "doesn't", "didn't", "won't"} & set(tokens)
        if p.mood == "negative":
            assert len(negative_en) == 1, p
            assert ("没" if p.time in PAST_TIMES else "不") in p.zh_words, p
            assert p.time != "每天", p  # 否定范围在两种语言里不同，语法不造这种句子
        else:
            assert not negative_en and "不" not in p.zh_words and "没" not in p.zh_words, p
        if p.mood == "question":
            assert p.zh.endswith("吗？") and p.en.endswith("?"), p
            assert tokens[0] in {"do", "does", "did", "will"}, p
        else:
            assert p.zh.endswith("。") and p.en.endswith("."), p
        # 中文过去时的肯定句（含疑问）在动词后带“了”，否定句不带
        assert ("了" in p.zh_words) == (p.time in PAST_TIMES and p.mood != "negative"), p


def test_word_order_time_and_place(pairs):
    """中文：主语 时间 …… 地点 动词 宾语；英文：…… 宾语 地点 时间。"""
    times_en = {"每天": ["every", "day"], **PAST_TIMES, **FUTURE_TIMES}
    places_en = {"在家": "at", "在学校": "at", "在商店": "at"}  # 其余地点用 in
    for p in pairs:
        words = list(p.zh_words)
        tokens = tokenize_en(p.en)[:-1]  # 去掉句末标点
        if p.time:
            i = words.index(p.time)
            assert "".join(words[:i]) == p.subject, p  # 时间紧跟主语
            assert tokens[-len(times_en[p.time]) :] == times_en[p.time], p  # 英文时间在句末
        if p.place:
            j = max(i for i in range(len(words)) if "".join(words[:i]).endswith(p.place))
            after = "".join(words[j:]).replace("了", "", 1)
            assert after.startswith(p.action), p  # 地点紧挨在动词宾语之前
            preposition = len(tokens) - 1 - tokens[::-1].index(places_en.get(p.place, "in"))
            last_verb = max(i for i, t in enumerate(tokens) if t in BASE | THIRD | PAST)
            assert preposition > last_verb + 1, p  # 英文地点在动词和宾语之后


def test_moods_and_i_capitalized(pairs):
    assert {p.mood for p in pairs} == set(MOODS)
    for p in pairs:
        assert p.en[0].isupper()
        assert " i " not in f" {p.en} "
        if p.subject == "我":
            assert p.en.startswith("I ")


# ---------------------------------------------------------------- jieba 分词


def test_jieba_segments_every_sentence_as_the_grammar_intends(pairs):
    for p in pairs:
        assert "".join(p.zh_words) == p.zh
        assert corpus_tokenizer(p.zh) == list(p.zh_words), p.zh
    # 语料之外的句子照 jieba 的词典切（只多切开“不/没 + 单字动词”，见 test_global_state.py）
    assert corpus_tokenizer("我爱北京天安门") == ["我", "爱", "北京", "天安门"]


def test_own_dictionary_segments_exactly_as_jieba_and_builds_quietly(capfd):
    # 每个分词器有自己的一份 jieba 词典，分词与 jieba 的全局分词器逐词相同；建词典时 stderr 上什么也没有，
    # jieba 的日志级别原样留着
    import jieba

    reference = jieba.Tokenizer()
    reference.initialize()
    capfd.readouterr()
    level = jieba.default_logger.level
    ours = ZhTokenizer()
    texts = [
        "我们在BP石油公司的4S店里看见一只猴子偂偷吃了QQ糖。",
        "中文没有空格，先要分词才能查表；本书用jieba。",
        "缩放点积注意力把每个查询与所有键做点积，除以√d_k后做softmax。",
    ]
    for text in texts:
        assert ours(text) == [w for w in reference.lcut(text) if w.strip()]
        assert ours(text, cut_all=True) == [
            w for w in reference.lcut(text, cut_all=True) if w.strip()
        ]
        assert ours(text, search=True) == [w for w in reference.lcut_for_search(text) if w.strip()]
    assert capfd.readouterr().err == "" and jieba.default_logger.level == level
    assert ours._tokenizer().FREQ == reference.FREQ and ours._tokenizer().total == reference.total


# ---------------------------------------------------------------- 还原英文句子


def test_detokenize_round_trip(pairs):
    for p in pairs:
        tokens = tokenize_en(p.en)
        assert detokenize_en(tokens, PROPER_NOUNS) == p.en
        assert tokenize_en(detokenize_en(tokens, PROPER_NOUNS)) == tokens


def test_detokenize_rules():
    assert detokenize_en(["i", "will", "go", "to", "beijing", "tomorrow", "."], ["Beijing"]) == (
        "I will go to Beijing tomorrow."
    )
    assert detokenize_en(["does", "mary", "study", "english", "?"], PROPER_NOUNS) == (
        "Does Mary study English?"
    )
    assert detokenize_en(["i", "went", "to", "beijing", "."]) == "I went to beijing."
    assert detokenize_en(["he", "didn't", "go", ".", "she", "went", "."]) == (
        "He didn't go. She went."
    )
    assert detokenize_en([]) == ""
    assert detokenize_en(["."]) == "."
    with pytest.raises(TypeError, match="tokens must be a list of tokens"):
        detokenize_en("i went .")


def test_pair_repr_shows_only_the_sentences():
    words = ("我", "吃", "苹果", "。")
    pair = Pair("我吃苹果。", "I eat apples.", words, "我", "", "affirmative", "吃苹果", "")
    assert repr(pair) == "Pair(zh='我吃苹果。', en='I eat apples.')"


def test_in_grammar_decides_membership_exactly():
    from tinyformer.translation.corpus import grammar_sentences, in_grammar

    pairs = all_pairs()
    assert len(grammar_sentences()) == len(pairs)  # 每句的词序列都不同
    assert all(in_grammar(pair.zh_words) for pair in pairs)
    assert in_grammar("我明天去北京。") and in_grammar(["我", "明天", "去", "北京", "。"])
    # 语法之外：否定疑问句、否定配“每天”、“我”的疑问句、缺句号、多一个词；每个词都在词表里
    for sentence in (
        "他昨天没在商店买衣服吗？",
        "我每天不喝绿茶。",
        "我明天去北京吗？",
        "我明天去北京",
        "我我明天去北京。",
    ):
        assert not in_grammar(sentence), sentence
    with pytest.raises(TypeError, match=r"words must be a str or a sequence of str"):
        in_grammar([1, 2])
