"""中译英任务的数据：由一个小语法离线生成的平行语料（“完整模型”一章讲解）。

“完整模型”一章要在 CPU 上几分钟内训练出一个真正的中译英 Transformer，并在 *从没见过的句子* 上
评估它。本模块不下载任何东西，而是用一个小语法把所有句子枚举出来：

    中文：主语 + 时间 + (不/没) + 在某地 + 动词 (+了) + 宾语 (+吗) + 。/？
    英文：(助动词) + 主语 + 动词(按时态和人称变形) + 宾语 + 地点 + 时间 + . / ?

两种语言的差别正是翻译模型要学的东西：

- 词序：中文的时间、地点在动词前，英文在宾语后（我明天在学校看小说 →
  I will read novels at school tomorrow）；疑问句英文要把助动词提到句首。
- 时态由时间词决定：昨天/上周 → 过去式（不规则的 ate、bought、went ……），
  明天/下周 → will，每天或没有时间词 → 一般现在时。
- 主谓一致：he drinks / they drink，he doesn't / they don't。
- 否定：现在时 不 → don't/doesn't，过去 没 → didn't，将来 不 → won't；
  中文的过去肯定句在动词后加“了”，否定句不加。
- 同一个中文动词按宾语译成不同的英文：看小说 → read novels，看电影 → watch movies，
  写作业 → do homework。

**留出的测试集**：``HELD_OUT`` 列出若干 *搭配*（例如“她 + 喝绿茶”“昨天 + 买衣服”）。
含有任一搭配的句子全部进测试集，训练集和验证集里一句也没有；但每个词本身都在训练集里
出现过很多次。所以测试分数衡量的是模型能否把学过的规则 *组合* 到新搭配上，而不是记忆。
验证集则从其余句子里随机抽取，与训练集同分布。

**分词**：语法里每个中文词条用空格标出 jieba 应当切出的词（如 ``"我 的 朋友"``、
``"学生 们"``、``"在家"``），测试逐句检查 ``corpus_tokenizer`` 的结果与语法的词序列完全一致。
词都选成 jieba 默认词典能按意图切开的：像“喝茶”“看书”“踢足球”这类会被粘成一个词、
加“了”后又拆开的动宾组合，特意没有选用；“小红”“李华”会和后面的动词粘在一起
（“小红去”），所以人名用“小明”“玛丽”。唯一躲不开的是否定词：jieba 会把“不去”“不吃”
“没买”粘成一个词，而“不”“没”要随时态译成 don't/doesn't/won't/didn't，必须单独成词。
所以语料有自己的分词器 ``corpus_tokenizer``（:class:`~tinyformer.text.ZhTokenizer`）：它把
``JIEBA_SPLITS`` 里的每个“否定词 + 单字动词”强制切开，只改它自己的 jieba 词典，第一次分词时
才建好。词表、训练数据和翻译器都用它；``tinyformer.tokenize_zh`` 与 jieba 的全局词典不受影响。
"""

from __future__ import annotations

import functools
import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..text import Vocab, ZhTokenizer, detokenize_en, tokenize_en

# ---------------------------------------------------------------------------------------
# 词典。中文键里的空格标出词的边界（jieba 应切出的词）；句子里去掉空格。
# ---------------------------------------------------------------------------------------

# 主语 → (英文, 是否第三人称单数)。第三人称单数决定 drinks / doesn't / does。
SUBJECTS: dict[str, tuple[str, bool]] = {
    "我": ("I", False),
    "你": ("you", False),
    "他": ("he", True),
    "她": ("she", True),
    "我们": ("we", False),
    "你们": ("you", False),
    "他们": ("they", False),
    "老师": ("the teacher", True),
    "学生 们": ("the students", False),
    "我 的 朋友": ("my friend", True),
    "小明": ("Xiaoming", True),
    "玛丽": ("Mary", True),
}

# 不造疑问句的主语：“我喝绿茶吗？”“我们吃苹果吗？”在两种语言里都很别扭。
NO_QUESTION_SUBJECTS = ("我", "我们")

# 时间词 → (英文, 时态)。空字符串表示句中没有时间词（一般现在时，表示习惯）。
TIMES: dict[str, tuple[str, str]] = {
    "": ("", "present"),
    "每天": ("every day", "present"),
    "昨天": ("yesterday", "past"),
    "上周": ("last week", "past"),
    "明天": ("tomorrow", "future"),
    "下周": ("next week", "future"),
}

# 地点（“在……”）→ 英文介词短语。jieba 把“在家”当成一个词，这里照实写。
PLACES: dict[str, str] = {
    "在家": "at home",
    "在 学校": "at school",
    "在 公园": "in the park",
    "在 图书馆": "in the library",
    "在 北京": "in Beijing",
    "在 商店": "at the store",
}

# 英文动词的变形：原形 → (第三人称单数, 过去式)。不规则变化全部明写在这里。
VERB_FORMS: dict[str, tuple[str, str]] = {
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

_HOME, _SCHOOL, _PARK, _LIBRARY, _BEIJING, _STORE = PLACES

# 动作（中文第一个词是动词，其余是宾语）→ (英文，第一个词是动词原形；可搭配的地点)。
# 地点只配合理的组合（在商店买水果，不在图书馆吃面条）；“去……”类动作本身就含去向，不再加地点。
ACTIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "吃 苹果": ("eat apples", (_HOME, _SCHOOL, _PARK, _BEIJING)),
    "吃 面条": ("eat noodles", (_HOME, _SCHOOL, _BEIJING)),
    "喝 绿茶": ("drink green tea", (_HOME, _SCHOOL, _PARK, _BEIJING)),
    "看 小说": ("read novels", (_HOME, _SCHOOL, _PARK, _LIBRARY, _BEIJING)),
    "看 电影": ("watch movies", (_HOME, _SCHOOL, _BEIJING)),
    "买 衣服": ("buy clothes", (_STORE, _BEIJING)),
    "买 水果": ("buy fruit", (_STORE, _BEIJING)),
    "写 小说": ("write novels", (_HOME, _SCHOOL, _LIBRARY, _BEIJING)),
    "写 作业": ("do homework", (_HOME, _SCHOOL, _LIBRARY)),
    "学习 中文": ("study Chinese", (_HOME, _SCHOOL, _LIBRARY, _BEIJING)),
    "学习 英语": ("study English", (_HOME, _SCHOOL, _LIBRARY, _BEIJING)),
    "听 音乐": ("listen to music", (_HOME, _PARK, _BEIJING)),
    "拜访 朋友": ("visit friends", (_BEIJING,)),
    "做 蛋糕": ("make cakes", (_HOME, _SCHOOL)),
    "打扫 房间": ("clean the room", ()),
    "去 北京": ("go to Beijing", ()),
    "去 上海": ("go to Shanghai", ()),
    "去 学校": ("go to school", ()),
    "去 公园": ("go to the park", ()),
    "去 图书馆": ("go to the library", ()),
    "去 商店": ("go to the store", ()),
}

MOODS = ("affirmative", "negative", "question")

# 否定词 × 单字动词（“不吃”是 jieba 词典里的词，“不去”“没买”是 HMM 新词发现的结果；见模块说明）：
# ``ZhTokenizer(splits=...)`` 用 jieba 文档里“强制切开”的办法（``suggest_freq``）切开它们
JIEBA_SPLITS: tuple[tuple[str, str], ...] = tuple(
    (negation, verb)
    for negation in ("不", "没")
    for verb in dict.fromkeys(action.split()[0] for action in ACTIONS)
    if len(verb) == 1
)
corpus_tokenizer = ZhTokenizer(splits=JIEBA_SPLITS)
"""语料的中文分词器：jieba 的默认词典 + 切开 ``JIEBA_SPLITS``（词表、训练、翻译器都用它）。"""

# 留出的搭配：(槽位, 值, 槽位, 值)。槽位是 Pair 的字段名，值是不带空格的中文（mood 除外）。
# 含有任一搭配的句子只出现在测试集里。
HELD_OUT: tuple[tuple[str, str, str, str], ...] = (
    ("subject", "她", "action", "喝绿茶"),  # 主语 × 动作：she drinks green tea
    ("subject", "我们", "action", "去上海"),  # 主语 × 动作：we go to Shanghai
    ("time", "昨天", "action", "买衣服"),  # 时间 × 动作：bought clothes yesterday
    ("time", "明天", "action", "看电影"),  # 时间 × 动作：will watch movies tomorrow
    ("place", "在图书馆", "action", "写作业"),  # 地点 × 动作：do homework in the library
    ("subject", "玛丽", "mood", "negative"),  # 主语 × 句式：Mary doesn't/didn't/won't ...
    ("subject", "学生们", "time", "下周"),  # 主语 × 时间：the students will ... next week
)

_SLOTS = ("subject", "time", "mood", "action", "place")

# 英文里要大写的专名（I 以外）：词典里本来就大写的词（Beijing、Xiaoming、Chinese ……），交给
# ``detokenize_en(tokens, PROPER_NOUNS)`` 还原大小写。
PROPER_NOUNS: tuple[str, ...] = tuple(
    dict.fromkeys(
        word
        for phrase in [
            *(english for english, _ in SUBJECTS.values()),
            *PLACES.values(),
            *(english for english, _ in ACTIONS.values()),
        ]
        for word in phrase.split()
        if word[0].isupper() and word != "I"
    )
)


def _surface(key: str) -> str:
    """词典键 → 句中的写法（去掉标词界的空格）。"""
    return key.replace(" ", "")


@dataclass(frozen=True)
class Pair:
    """一个句对，以及生成它的语法槽位（槽位不进 ``repr``）。

    ``zh_words`` 是语法给出的中文词序列，``corpus_tokenizer(zh)`` 应当与之完全相同；槽位是不带空格的
    中文（没有时间词或地点时为 ``""``），``mood`` 是 :data:`MOODS` 之一。

    例子::

        >>> pair = generate_corpus().train[0]
        >>> pair.zh == "".join(pair.zh_words), pair.mood in MOODS
        (True, True)
    """

    zh: str
    en: str
    zh_words: tuple[str, ...] = field(repr=False)
    subject: str = field(repr=False)
    time: str = field(repr=False)
    mood: str = field(repr=False)
    action: str = field(repr=False)
    place: str = field(repr=False)


def _make_pair(subject: str, time: str, mood: str, action: str, place: str) -> Pair:
    """按语法规则造出一个句对（参数是词典键，带空格）。"""
    subject_en, third_singular = SUBJECTS[subject]
    time_en, tense = TIMES[time]
    verb_zh, *object_zh = action.split()
    verb, object_en = ACTIONS[action][0].split(" ", 1)
    verb_3sg, verb_past = VERB_FORMS[verb]

    # 中文：主语 时间 (不/没) 地点 动词 (了) 宾语 (吗) 标点
    negation = ("没" if tense == "past" else "不") if mood == "negative" else ""
    perfective = "了" if tense == "past" and mood != "negative" else ""
    zh_words = [
        *subject.split(),
        *time.split(),
        *negation.split(),
        *place.split(),
        verb_zh,
        *perfective.split(),
        *object_zh,
        *(["吗", "？"] if mood == "question" else ["。"]),
    ]

    # 英文：先定动词短语，再按 (助动词) 主语 动词 宾语 地点 时间 排列。
    if mood == "question":
        auxiliary = {"past": "did", "future": "will"}.get(tense, "does" if third_singular else "do")
        head, verb_phrase = [auxiliary], [verb]
    elif mood == "negative":
        auxiliary = {"past": "didn't", "future": "won't"}.get(
            tense, "doesn't" if third_singular else "don't"
        )
        head, verb_phrase = [], [auxiliary, verb]
    elif tense == "past":
        head, verb_phrase = [], [verb_past]
    elif tense == "future":
        head, verb_phrase = [], ["will", verb]
    else:
        head, verb_phrase = [], [verb_3sg if third_singular else verb]
    en_text = " ".join([*head, subject_en, *verb_phrase, object_en, PLACES.get(place, ""), time_en])
    en_tokens = tokenize_en(en_text) + ["?" if mood == "question" else "."]

    return Pair(
        zh="".join(zh_words),
        en=detokenize_en(en_tokens, PROPER_NOUNS),
        zh_words=tuple(zh_words),
        subject=_surface(subject),
        time=time,
        mood=mood,
        action=_surface(action),
        place=_surface(place),
    )


def all_pairs() -> list[Pair]:
    """按固定顺序枚举语法能生成的全部句对（与随机种子无关）。

    排除三类不自然的组合：否定句不配“每天”（“我每天不喝绿茶”译成 "I don't drink green tea
    every day" 会变成“并非每天都喝”，两种语言的否定范围不同）；“我”“我们”不造疑问句；
    每个动作只配 ``ACTIONS`` 里列出的地点。

    例子::

        >>> pairs = all_pairs()
        >>> len(pairs), pairs[0]
        (12480, Pair(zh='我吃苹果。', en='I eat apples.'))
    """
    return list(_enumerate_pairs())


@functools.cache
def _enumerate_pairs() -> tuple[Pair, ...]:  # Pair 不可变，缓存的元组可以共享
    pairs = []
    for subject in SUBJECTS:
        for time in TIMES:
            for mood in MOODS:
                if mood == "negative" and time == "每天":
                    continue
                if mood == "question" and subject in NO_QUESTION_SUBJECTS:
                    continue
                for action, (_, places) in ACTIONS.items():
                    for place in ("", *places):
                        pairs.append(_make_pair(subject, time, mood, action, place))
    return tuple(pairs)


OUT_OF_GRAMMAR = "这句话的句型不在训练语料里，译文不可信"


@functools.cache
def grammar_sentences() -> frozenset[tuple[str, ...]]:
    """语法能生成的全部中文句子，每句是它的词序列（``corpus_tokenizer`` 切出的样子）。"""
    return frozenset(pair.zh_words for pair in _enumerate_pairs())


def in_grammar(words: Sequence[str] | str) -> bool:
    """一句话是否在训练语料的语法里：它的词序列恰好是语法生成的某一句（精确判断，不是猜）。

    ``words`` 是切好的词序列，或者一个中文句子（先用 ``corpus_tokenizer`` 切分）。模型只见过这
    12480 句的句型（测试集的句子也在语法里，只是没参加训练）；语法之外的句子——哪怕每个词都在
    词表里——是 *分布外*（out of distribution）的输入，模型照样会给出一句流利的译文，但它不可信。

    例子::

        >>> in_grammar("我明天去北京。"), in_grammar("他昨天没在商店买衣服吗？")
        (True, False)
    """
    if isinstance(words, str):
        words = corpus_tokenizer(words)
    if not all(isinstance(word, str) for word in words):
        raise TypeError(f"words must be a str or a sequence of str, got {words!r:.60}")
    return tuple(words) in grammar_sentences()


def is_held_out(pair: Pair, held_out: Sequence[tuple[str, str, str, str]] = HELD_OUT) -> bool:
    """句对是否含有 ``held_out`` 中的某个搭配（两个槽位同时取到指定的值）。

    例子::

        >>> pairs = {p.zh: p for p in all_pairs()}
        >>> is_held_out(pairs["她每天喝绿茶。"]), is_held_out(pairs["他每天喝绿茶。"])
        (True, False)
    """
    return any(
        getattr(pair, slot_a) == value_a and getattr(pair, slot_b) == value_b
        for slot_a, value_a, slot_b, value_b in held_out
    )


def _check_held_out(held_out: Sequence[tuple[str, str, str, str]]) -> None:
    """检查每个搭配的槽位名和取值都存在于语法中。"""
    values = {slot: {getattr(p, slot) for p in _enumerate_pairs()} - {""} for slot in _SLOTS}
    for combination in held_out:
        if isinstance(combination, str) or len(combination) != 4:
            raise ValueError(
                "held_out must hold (slot, value, slot, value) tuples, "
                f"got held_out entry {combination!r}"
            )
        for slot, value in (combination[:2], combination[2:]):
            if slot not in values:
                raise ValueError(
                    f"held_out slot must be one of {_SLOTS}, got slot={slot!r} in {combination!r}"
                )
            if value not in values[slot]:
                raise ValueError(
                    f"held_out value {value!r} is not a {slot} of the grammar "
                    f"(one of {sorted(values[slot])}), in {combination!r}"
                )


@dataclass(frozen=True)
class TranslationCorpus:
    """训练/验证/测试三份句对（验证集与训练集同分布；测试集是所有含留出搭配的句子），以及划分它们用的
    留出搭配（格式同 ``HELD_OUT``）和种子。由 ``generate_corpus`` 创建。"""

    train: tuple[Pair, ...]
    valid: tuple[Pair, ...]
    test: tuple[Pair, ...]
    held_out: tuple[tuple[str, str, str, str], ...]
    seed: int

    def build_vocabs(self) -> tuple[Vocab, Vocab]:
        """只用训练集建 ``(src_vocab, tgt_vocab)``：中文用 ``corpus_tokenizer``，英文用 ``tokenize_en`` 切分。

        例子::

            >>> src_vocab, tgt_vocab = generate_corpus().build_vocabs()
            >>> len(src_vocab), len(tgt_vocab)
            (61, 94)
        """
        src_vocab = Vocab(corpus_tokenizer(p.zh) for p in self.train)
        tgt_vocab = Vocab(tokenize_en(p.en) for p in self.train)
        return src_vocab, tgt_vocab

    def describe(self) -> str:
        """用中文概述语料：各份大小、最大长度（词元数）和留出的搭配。

        例子::

            >>> print(generate_corpus().describe())  # doctest: +ELLIPSIS
            训练 10877 句，验证 572 句，测试 1031 句
            最长：中文 11 个词，英文 12 个词（不含 <bos>/<eos>）
            测试集 = 含以下任一搭配的句子（训练、验证集中没有）：
              subject=她 + action=喝绿茶
            ...
        """
        pairs = self.train + self.valid + self.test
        lines = [
            f"训练 {len(self.train)} 句，验证 {len(self.valid)} 句，测试 {len(self.test)} 句",
            # zh_words 与 corpus_tokenizer 的结果相同（测试逐句检查），省去再跑一遍 jieba
            f"最长：中文 {max(len(p.zh_words) for p in pairs)} 个词，"
            f"英文 {max(len(tokenize_en(p.en)) for p in pairs)} 个词（不含 <bos>/<eos>）",
            "测试集 = 含以下任一搭配的句子（训练、验证集中没有）：",
        ]
        lines += [f"  {a}={va} + {b}={vb}" for a, va, b, vb in self.held_out]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (
            f"TranslationCorpus(seed={self.seed}, train={len(self.train)}, "
            f"valid={len(self.valid)}, test={len(self.test)})"
        )


def generate_corpus(
    seed: int = 0,
    valid_fraction: float = 0.05,
    held_out: Sequence[tuple[str, str, str, str]] = HELD_OUT,
) -> TranslationCorpus:
    """生成中译英语料并划分训练/验证/测试集。

    含 ``held_out`` 中任一搭配的句子组成测试集；其余句子用 ``random.Random(seed)`` 打乱，
    前 ``valid_fraction`` 作验证集，剩下的作训练集；测试集也用同一个随机数发生器打乱。
    不依赖全局随机状态，也不依赖 Python 的哈希种子。

    ``valid_fraction`` 在 [0, 1) 内；``held_out`` 是 ``(槽位, 值, 槽位, 值)`` 的搭配，留出后测试集的每个词
    仍须在训练集里出现过，否则报错。

    例子::

        >>> corpus = generate_corpus(seed=0)
        >>> corpus
        TranslationCorpus(seed=0, train=10877, valid=572, test=1031)
        >>> corpus.test[0]
        Pair(zh='老师明天看电影。', en='The teacher will watch movies tomorrow.')
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got seed={seed!r}")
    if not 0 <= valid_fraction < 1:
        raise ValueError(f"valid_fraction must be in [0, 1), got valid_fraction={valid_fraction}")
    held_out = tuple(tuple(c) for c in held_out)
    _check_held_out(held_out)

    rng = random.Random(seed)
    pairs = all_pairs()
    test = [p for p in pairs if is_held_out(p, held_out)]
    rest = [p for p in pairs if not is_held_out(p, held_out)]
    rng.shuffle(rest)
    rng.shuffle(test)
    num_valid = round(valid_fraction * len(rest))
    valid, train = rest[:num_valid], rest[num_valid:]

    # 组合泛化的前提：测试句里的每个词都在训练集里见过。
    seen = {w for p in train for w in p.zh_words + tuple(tokenize_en(p.en))}
    unseen = sorted({w for p in test for w in p.zh_words + tuple(tokenize_en(p.en))} - seen)
    if unseen:
        raise ValueError(
            f"held_out removes every training sentence containing {unseen}; "
            "hold out fewer combinations so that each word still appears in train"
        )
    return TranslationCorpus(
        train=tuple(train), valid=tuple(valid), test=tuple(test), held_out=held_out, seed=seed
    )
