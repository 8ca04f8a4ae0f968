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
import re
from array import array
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
    "kneser_ney_bits_per_char",
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


HAN_SLOT = "字"  # 形状里“这里是一个字”（任何不是标点、不是 <eos> 的符号，<unk> 也算）


def _shape_allows(prefix: str) -> frozenset[str]:
    """绝句或律诗的形状下，``prefix`` 之后能接什么：:data:`HAN_SLOT`、``"，"``、``"。"``、:data:`EOS` 的子集。

    第一句写完之前不知道是五言还是七言：第 5 个字之后可以是“，”也可以是字；此后每句一样长，
    句末的标点、第 4 句之后可以结束也可以接着写成律诗、第 8 句之后必须结束，都已确定。

    例子::

        >>> sorted(_shape_allows("白日依山尽")), sorted(_shape_allows("白日依山尽，黄河"))
        (['字', '，'], ['字'])
        >>> sorted(_shape_allows("白日依山尽，黄河入海流。欲穷千里目，更上一层楼。"))
        ['<eos>', '字']
    """
    done = len(re.findall("[，。]", prefix))  # 写完的句数
    current = len(re.split("[，。]", prefix)[-1])  # 正在写的句已有几个字
    if done == 0:
        return frozenset({HAN_SLOT, "，"} if current == 5 else {HAN_SLOT if current < 7 else "，"})
    width = len(re.split("[，。]", prefix)[0])
    if current == width:
        return frozenset({"，" if done % 2 == 0 else "。"})
    if current == 0 and done in (4, 8):
        return frozenset({HAN_SLOT, EOS} if done == 4 else {EOS})
    return frozenset({HAN_SLOT})


def kneser_ney_bits_per_char(
    train: Sequence[str], poems: Sequence[str], vocab: Vocab, order: int = 5, shape: bool = True
) -> float:
    r"""修正的插值 Kneser–Ney n 元模型（Chen & Goodman 1999）在 ``poems`` 上的每字比特数。

    神经网络之前，语言模型的标准做法就是它（机器翻译、语音识别用了二十年，KenLM 的默认）：
    看前 n − 1 个符号（不越过诗的开头）。第 k 阶（k 个符号的 n 元组 hw，h 是 k − 1 个符号的上文）：

    .. math::

        p_k(w \mid h) = \frac{c_k(hw) - D(c_k(hw)) + \gamma_k(h)\, p_{k-1}(w \mid h')}{c_k(h\cdot)},
        \qquad \gamma_k(h) = \sum_{w} D(c_k(hw))

    h′ 是 h 去掉最前面一个符号；:math:`c_k(h\cdot) = \sum_w c_k(hw)`；训练集里没见过 h 时
    :math:`p_k = p_{k-1}`；:math:`p_0 = 1/V'`（V′ 个能被预测的符号，与单字基线相同）。
    每一阶减掉的折扣正好是留给低一阶的质量 γ，所以每一阶都是归一的分布。

    - 最高阶的 :math:`c_n` 是次数；低阶的 :math:`c_k(g)` 是 **接续数**：g 前面出现过几种不同的符号
      （Kneser–Ney 的要点：低阶只在高阶没见过的上文里说话，该问的是“这个字跟在多少种字后面出现过”，
      而不是“出现过多少次”）。以 ``<bos>`` 开头的 n 元组前面不可能有符号，用次数。
    - 折扣按次数分三档：:math:`D(0) = 0`，:math:`D(r) = r - (r + 1)\, Y n_{r+1} / n_r`（r = 1, 2，
      3 及以上用 r = 3），:math:`Y = n_1 / (n_1 + 2 n_2)`，:math:`n_r` 是 :math:`c_k = r` 的 k 元组有几种。
    - ``shape=True`` 时模型还知道 **形状**（:func:`_shape_allows`）：只在形状允许的符号上重新归一，
      形状定死的位置（句末的 ，。、第 8 句后的 ``<eos>``）不花比特。GPT 得自己学会这些，给基线也配上，
      比较才公平。

    训练文本太少、某一阶的 :math:`n_1 … n_4` 有 0 时折扣没有定义，直接拒绝::

        >>> vocab = Vocab(["<pad>", "<unk>", "<bos>", "<eos>", "，", "。", "春", "花"])
        >>> kneser_ney_bits_per_char(["春春花"], ["春"], vocab, order=2)
        Traceback (most recent call last):
        ...
        ValueError: too little training text for Kneser-Ney discounts: order 2 has n_1..n_4 = [4, 0, 0, 0] (n-grams seen once, twice, 3 and 4 times), each must be positive
    """
    import torch  # 只有这个基线用到：几百万个 n 元组，向量化地数

    if order < 1:
        raise ValueError(f"order must be at least 1, got order={order!r}")
    V = len(vocab)
    if V**order >= 2**63:
        raise ValueError(f"V**order must fit in int64, got V={V}, order={order}")
    # 被评估的每个位置：它之前最近的 order − 1 个符号（不够的地方填 0，由 depth 挡住）与要预测的符号
    where = [(ids, t) for ids in _targets(poems, vocab) for t in range(1, len(ids))]
    context = torch.tensor(
        [[ids[j] if j >= 0 else 0 for j in range(t - order + 1, t)] for ids, t in where]
    )
    depth = torch.tensor([t for _, t in where])  # 上文有几个符号（含 <bos>）
    target = torch.tensor([ids[t] for ids, t in where])
    marks = [vocab.stoi[s] for s in ("，", "。", EOS)]  # 形状要问的三个符号

    def history(k: int) -> torch.Tensor:
        """每个位置第 k 阶的上文（最近的 k − 1 个符号）的编码。"""
        h = torch.zeros(len(where), dtype=torch.int64)
        for i in range(order - k, order - 1):
            h = h * V + context[:, i]
        return h

    stream = array("q")  # 所有训练诗的编号首尾相接；<bos> 只在每首诗的开头
    for ids in _targets(train, vocab):
        stream.extend(ids)
    stream = torch.frombuffer(stream, dtype=torch.int64)  # (N,)

    def grams(k: int) -> torch.Tensor:
        """训练集里不越过诗界的 k 元组，每个编成一个整数 Σ id_i · V^(k−1−i)。"""
        n = len(stream) - k + 1
        code = stream[:n].clone()
        inside = torch.ones(n, dtype=torch.bool)
        for i in range(1, k):  # 第 2 个符号起不能是 <bos>：否则跨进了下一首诗（或在预测 <bos>）
            code = code * V + stream[i : i + n]
            inside &= stream[i : i + n] != vocab.bos_id
        return code[inside] if k > 1 else code[code != vocab.bos_id]

    tables = {}  # k → (k 元组, c_k, 上文, c_k(h·), Σ_w D(c_k(hw)), D)，只留评估时查得到的，按编码排好序
    higher = None
    for k in range(order, 0, -1):
        gram, count = torch.unique(grams(k), return_counts=True)
        if higher is not None:  # 低阶用接续数：高一阶的不同 k+1 元组里，以 g 结尾的有几个
            suffix, cont = torch.unique(higher % V**k, return_counts=True)
            starts = gram // V ** (k - 1) == vocab.bos_id  # 以 <bos> 开头：前面不可能有符号，用次数
            count = torch.where(starts, count, 0).index_put_(
                (torch.searchsorted(gram, suffix),), cont
            )
        n = [(count == r).sum().item() for r in range(1, 5)]  # n_1 … n_4
        if 0 in n:
            raise ValueError(
                f"too little training text for Kneser-Ney discounts: order {k} has "
                f"n_1..n_4 = {n} (n-grams seen once, twice, 3 and 4 times), each must be positive"
            )
        y = n[0] / (n[0] + 2 * n[1])
        discount = torch.tensor(
            [0.0] + [r - (r + 1) * y * n[r] / n[r - 1] for r in (1, 2, 3)], dtype=torch.float64
        )
        contexts, which = torch.unique(gram // V, return_inverse=True)
        total = torch.zeros(len(contexts), dtype=torch.int64).index_add_(0, which, count)
        # 留给低阶的质量 Σ_w D(c_k(hw))：每个上文的折扣加起来
        spare = torch.zeros(len(contexts), dtype=torch.float64).index_add_(
            0, which, discount[count.clamp(max=3)]
        )
        h = history(k)
        asked = torch.cat([h * V + target, *(h * V + m for m in marks)])  # 评估时要查的 k 元组
        keep, seen = torch.isin(gram, asked), torch.isin(contexts, h)
        tables[k] = (gram[keep], count[keep], contexts[seen], total[seen], spare[seen], discount)
        higher = gram

    def lookup(keys: torch.Tensor, sorted_keys: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        """``values`` 里与 ``keys`` 对应的值；``sorted_keys`` 里没有的键给 0。"""
        at = torch.searchsorted(sorted_keys, keys)  # (M,)
        found = at < len(sorted_keys)
        found[found.clone()] = sorted_keys[at[found]] == keys[found]
        return torch.where(found, values[at.clamp(max=len(values) - 1)], 0)

    def prob(w: torch.Tensor) -> torch.Tensor:
        """每个位置上 p_order(w | 上文)，从 p_0 一阶一阶插值上去。"""
        p = torch.full(w.shape, 1.0 / (V - 2), dtype=torch.float64)
        for k in range(1, order + 1):
            gram, count, contexts, total, spare, discount = tables[k]
            h = history(k)
            seen = lookup(h, contexts, total)
            c = lookup(h * V + w, gram, count)
            mixed = (c - discount[c.clamp(max=3)] + lookup(h, contexts, spare) * p) / seen.clamp(
                min=1
            )
            p = torch.where((seen > 0) & (depth >= k - 1), mixed, p)
        return p

    p = prob(target)
    if shape:  # 只在形状允许的符号上重新归一：p / Σ_{允许的 u} p(u)
        mass = {
            s: prob(torch.full_like(target, m))
            for s, m in zip(("，", "。", EOS), marks, strict=True)
        }
        mass[HAN_SLOT] = 1 - sum(mass.values())  # “一个字”= 其余所有符号
        allowed = [_shape_allows(poem[:t]) for poem in poems for t in range(len(poem) + 1)]
        p = p / sum(torch.tensor([s in a for a in allowed]) * mass[s] for s in mass)
    return float(-torch.log2(p).mean())
