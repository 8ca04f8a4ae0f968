"""全唐诗语料、字表与两个基线（“只有解码器”一章讲解）。

语料随包发布在 ``data/``：由 ``python -m tools.poetry_corpus`` 从 npm ``chinese-poetry@2.0.1`` 生成
（繁体经 OpenCC 转简体，只留五言、七言的绝句和律诗，按诗划分），来历见 ``data/provenance.json``。
一行一首诗，例如 ``雨声乱灯影，明灭在空堦。并枉五言赠，知同万里怀。``。

**什么算一个"字"（每字比特数的分母）**：模型读入 ``<bos>``，然后依次预测诗里的每一个字符——
汉字和标点 ，。 都算——最后预测 ``<eos>``。所以一首 n 个字符的诗贡献 n + 1 个预测，
模型（``training.evaluate``）和下面两个基线用的是同一套预测、同一个字表
（训练集里出现不到 :data:`MIN_COUNT` 次的字都记作 ``<unk>``，预测 ``<unk>`` 也算一次预测）。
"""

from __future__ import annotations

import gzip
import math
from collections import Counter
from collections.abc import Iterator, Sequence
from importlib.resources import files
from itertools import pairwise

from .._checks import shorten

__all__ = [
    "BOS",
    "EOS",
    "MIN_COUNT",
    "PAD",
    "SPLITS",
    "UNK",
    "Vocab",
    "bigram_bits_per_char",
    "load_split",
    "unigram_bits_per_char",
]

PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<bos>", "<eos>"
SPECIALS = (PAD, UNK, BOS, EOS)  # 编号 0、1、2、3
# 训练集里出现不到 2 次的字记作 <unk>：只见过一次的字学不出什么，留给 <unk> 去学"生僻字"
MIN_COUNT = 2
SPLITS = ("train", "valid", "test")
_DATA = files("tinyformer.poetry") / "data"


def load_split(split: str) -> list[str]:
    """随包发布的一个划分：``"train"``（33,135 首）、``"valid"`` 或 ``"test"``（各 1,000 首），一首一个字符串。"""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got split={split!r}")
    plain, packed = _DATA / f"{split}.txt", _DATA / f"{split}.txt.gz"
    raw = plain.read_bytes() if plain.is_file() else gzip.decompress(packed.read_bytes())
    return raw.decode("utf-8").splitlines()


class Vocab:
    """字表：``<pad> <unk> <bos> <eos>`` 在前（编号 0–3），其余的字按训练集里的次数从多到少、
    次数相同按码位排列。

    例子::

        >>> vocab = Vocab.build(["春眠不觉晓，", "春风不度玉门关。"], min_count=2)
        >>> vocab.itos
        ['<pad>', '<unk>', '<bos>', '<eos>', '不', '春']
        >>> vocab.encode("春眠不觉晓", bos=True, eos=True)
        [2, 5, 1, 4, 1, 1, 3]
        >>> vocab.decode([2, 5, 1, 4, 3])
        '春<unk>不'
    """

    def __init__(self, itos: Sequence[str]):
        if list(itos[: len(SPECIALS)]) != list(SPECIALS):
            raise ValueError(f"itos must start with {SPECIALS}, got {list(itos[:4])}")
        self.itos = list(itos)
        self.stoi = {s: i for i, s in enumerate(self.itos)}
        self.pad_id, self.unk_id, self.bos_id, self.eos_id = range(4)

    @classmethod
    def from_itos(cls, itos: Sequence[str]) -> Vocab:
        """由检查点里的字表（编号 → 字）重建；四个特殊词元之后须是互不相同的单个字符。

        写诗的检查点是逐字的模型（:meth:`encode` 一个字符一个字符地查表）。文件里的字表可能被改过：
        重复的字让 ``stoi`` 悄悄只记后一个编号，多字符的"字"、数字永远编不到，都在这里拒绝。
        （``Vocab(...)`` 本身也装 jieba 的词、BPE 的字节串，所以这条规则只在读检查点时用。）

        例子::

            >>> Vocab.from_itos(["<pad>", "<unk>", "<bos>", "<eos>", "春", "花"]).stoi["花"]
            5
            >>> Vocab.from_itos(["<pad>", "<unk>", "<bos>", "<eos>", "春", "花", "春"])
            Traceback (most recent call last):
            ...
            ValueError: itos entries after the 4 specials must be distinct one-character strings, got itos[6]='春', a duplicate of itos[4]
        """
        vocab = cls(itos)  # 先查开头的四个特殊词元
        rule = "itos entries after the 4 specials must be distinct one-character strings"
        first: dict[str, int] = {}
        for i, ch in enumerate(vocab.itos[len(SPECIALS) :], start=len(SPECIALS)):
            if not isinstance(ch, str) or len(ch) != 1:
                what = f"{len(ch)} characters" if isinstance(ch, str) else type(ch).__name__
                raise ValueError(f"{rule}, got itos[{i}]={shorten(ch)} ({what})")
            if ch in first:
                raise ValueError(f"{rule}, got itos[{i}]={ch!r}, a duplicate of itos[{first[ch]}]")
            first[ch] = i
        return vocab

    @classmethod
    def build(cls, poems: Sequence[str], min_count: int = MIN_COUNT) -> Vocab:
        """由 ``poems`` 里每个字符的次数建字表：出现不到 ``min_count`` 次的不收。"""
        counts = Counter(ch for poem in poems for ch in poem)
        kept = sorted(
            (c for c, n in counts.items() if n >= min_count), key=lambda c: (-counts[c], c)
        )
        return cls([*SPECIALS, *kept])

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, ch: str) -> bool:
        return ch in self.stoi and ch not in SPECIALS

    def encode(self, text: str, bos: bool = False, eos: bool = False) -> list[int]:
        """逐字符编号，字表外的字 → ``<unk>``；``bos``/``eos`` 时两头加上 ``<bos>``/``<eos>``。"""
        ids = [self.stoi.get(ch, self.unk_id) for ch in text]
        return [self.bos_id] * bos + ids + [self.eos_id] * eos

    def decode(self, ids: Sequence[int]) -> str:
        """编号 → 字符串，遇到 ``<eos>`` 停，跳过 ``<pad>``、``<bos>``；``<unk>`` 原样写出。"""
        out = []
        for i in ids:
            if i == self.eos_id:
                break
            if i not in (self.pad_id, self.bos_id):
                out.append(self.itos[i])
        return "".join(out)


# ---------------------------------------------------------------- 基线：不用神经网络能做到多好


def _targets(poems: Sequence[str], vocab: Vocab) -> Iterator[list[int]]:
    """逐首给出 ``<bos> 字… <eos>`` 的编号：第 0 个是条件，其余每个都是一次预测。

    逐首生成而不是一次建好整个列表：训练集三万多首诗的编号列表约占 20 MB，计数时用不着同时留着它们。
    """
    return (vocab.encode(poem, bos=True, eos=True) for poem in poems)


def _unigram(train: Sequence[str], vocab: Vocab) -> list[float]:
    """加一平滑的单字概率：p(w) = (c(w) + 1) / (N + V')，w 取能被预测的 V' 个符号（除 <pad>、<bos>）。"""
    counts = Counter(i for ids in _targets(train, vocab) for i in ids[1:])
    outcomes = len(vocab) - 2
    total = sum(counts.values())
    return [
        0.0 if i in (vocab.pad_id, vocab.bos_id) else (counts[i] + 1) / (total + outcomes)
        for i in range(len(vocab))
    ]


def unigram_bits_per_char(train: Sequence[str], poems: Sequence[str], vocab: Vocab) -> float:
    r"""加一平滑的单字模型在 ``poems`` 上的每字比特数：:math:`-\frac{1}{N}\sum \log_2 p(w)`。

    例子（字表 <pad> <unk> <bos> <eos> 春 花，训练集"春春花"：c(春)=2, c(花)=1, c(<eos>)=1, N=4, V'=4）::

        >>> vocab = Vocab(["<pad>", "<unk>", "<bos>", "<eos>", "春", "花"])
        >>> round(unigram_bits_per_char(["春春花"], ["春"], vocab), 6)  # p(春)=3/8, p(<eos>)=2/8
        1.707519
    """
    p = _unigram(train, vocab)
    bits = [-math.log2(p[i]) for ids in _targets(poems, vocab) for i in ids[1:]]
    return sum(bits) / len(bits)


def bigram_bits_per_char(
    train: Sequence[str], poems: Sequence[str], vocab: Vocab, lam: float = 0.7
) -> float:
    r"""插值二元模型的每字比特数：:math:`p(w \mid v) = \lambda\, c(v, w) / c(v) + (1 - \lambda)\, p_1(w)`。

    :math:`p_1` 是加一平滑的单字概率；:math:`c(v)` 是 v 作为前一个符号的次数（含 <bos>），为 0 时只用
    :math:`p_1`。λ = 0.7 是在验证集上挑的一个整数十分位（在验证集上 0.6–0.8 之间相差不到 0.03 比特）。

    例子（同上的字表与训练集；c(<bos>,春)=1, c(<bos>)=1）::

        >>> vocab = Vocab(["<pad>", "<unk>", "<bos>", "<eos>", "春", "花"])
        >>> p_spring = 0.7 * 1 / 1 + 0.3 * 3 / 8
        >>> p_end = 0.7 * 0 / 2 + 0.3 * 2 / 8  # c(春)=2：春→春、春→花
        >>> round(bigram_bits_per_char(["春春花"], ["春"], vocab), 6)
        2.018263
        >>> round(-(math.log2(p_spring) + math.log2(p_end)) / 2, 6)
        2.018263
    """
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"lam must be in [0, 1], got lam={lam!r}")
    p1 = _unigram(train, vocab)
    # 只数 poems 里出现的对 (v, w) 的 c(v, w)：训练集有约 39 万种不同的对，全数一遍的 Counter 约占 55 MB，
    # 而测试集的一千首诗只有约 3 万种
    wanted = {pair for ids in _targets(poems, vocab) for pair in pairwise(ids)}
    pairs = Counter()  # c(v, w)
    context = Counter()  # c(v)：v 作为前一个符号的次数
    for ids in _targets(train, vocab):
        pairs.update(pair for pair in pairwise(ids) if pair in wanted)
        context.update(ids[:-1])
    bits = []
    for ids in _targets(poems, vocab):
        for v, w in zip(ids[:-1], ids[1:], strict=True):
            if context[v] == 0:
                p = p1[w]
            else:
                p = lam * pairs[v, w] / context[v] + (1 - lam) * p1[w]
            bits.append(-math.log2(p))
    return sum(bits) / len(bits)
