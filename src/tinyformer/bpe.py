"""字节级 BPE：从零训练合并表，按合并表编码、解码（“中文的字节级 BPE”一章讲解）。

*字节对编码*（byte pair encoding，BPE；Sennrich 等 2016）从最小的单位出发：这里是 UTF-8 的 256 个
字节（GPT-2 的做法，Radford 等 2019），所以任何字符串都能编码，没有 ``<unk>``。一个汉字是 3 个字节，
例如 ``"春".encode() == b"\\xe6\\x98\\xa5"``。

**训练** 反复做同一件事：数一数相邻两个词元组成的 *对* 各出现多少次，把最多的那一对合并成一个新词元，
记进合并表（第 k 次合并得到编号 256 + k 的词元）。出现次数相同时取 **编号对 (a, b) 最小** 的那一对
（先比 a，再比 b；字节的编号就是字节的值）——与 Hugging Face ``tokenizers`` 的训练器是同一条规则，
只是它给 256 个字节排的编号不同（见该章）。

**预切分**：没有。一段文本（例如一首诗）整体是一个字节序列，合并可以跨过汉字的边界和标点，
但不跨过两段文本（训练时给的是文本的列表）。

**编码** 把文本变成字节，然后反复找出序列里 **排名最靠前**（最早学到）的相邻对，把它的所有出现从左到右
合并，直到序列里没有合并表里的对。这与"按排名依次套用每一条合并"结果相同。**解码** 把每个词元换回它的
字节，拼起来按 UTF-8 解码。

例子::

    >>> bpe = ByteBPE.train(["春眠不觉晓", "春风不度玉门关"], vocab_size=260)
    >>> bpe.merges  # 春 = e6 98 a5、不 = e4 b8 8d 各出现两次：四个对都是 2 次，按编号对从小到大
    [(152, 165), (184, 141), (228, 257), (230, 256)]
    >>> bpe.encode("春不")
    [259, 258]
    >>> bpe.decode(bpe.encode("春眠不觉晓"))
    '春眠不觉晓'
"""

from __future__ import annotations

import heapq
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from itertools import pairwise

__all__ = ["ByteBPE", "gpt2_byte_to_unicode", "merge_pair"]

Pair = tuple[int, int]


def gpt2_byte_to_unicode() -> dict[int, str]:
    """GPT-2 给 256 个字节各配的一个可打印字符（Hugging Face ``tokenizers`` 的 ``ByteLevel`` 也用它）。

    可打印的字节（``!``–``~``、``¡``–``¬``、``®``–``ÿ``）用自己；其余 68 个（空白、控制字符……）按顺序
    借用 U+0100 起的字符。这样合并表能写成文本文件，例如汉字"春"的三个字节写作 ``æĺ¥``。

    例子::

        >>> table = gpt2_byte_to_unicode()
        >>> "".join(table[b] for b in "春".encode("utf-8"))
        'æĺ¥'
        >>> table[ord(" ")]
        'Ġ'
    """
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1)]
    printable += range(ord("®"), ord("ÿ") + 1)
    table, borrowed = {}, 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + borrowed)
            borrowed += 1
    return table


def merge_pair(ids: Sequence[int], pair: Pair, new_id: int) -> list[int]:
    """把 ``ids`` 里 ``pair`` 的每一次出现（从左到右，不重叠）换成 ``new_id``。

    例子::

        >>> merge_pair([1, 2, 1, 2, 2], (1, 2), 9)
        [9, 9, 2]
        >>> merge_pair([5, 5, 5], (5, 5), 9)  # 重叠时从左边先合并
        [9, 5]
    """
    out, i = [], 0
    while i < len(ids):
        if i + 1 < len(ids) and (ids[i], ids[i + 1]) == pair:
            out.append(new_id)
            i += 2
        else:
            out.append(ids[i])
            i += 1
    return out


class ByteBPE:
    """字节级 BPE 分词器：合并表 ``merges``（第 k 条得到编号 256 + k），词表 ``len(self)`` = 256 + 合并数。

    参数:
        merges: 合并表，每条是两个已有词元的编号 (a, b)，按学到的先后排列。

    属性:
        vocab: 编号 → 这个词元代表的字节串（``vocab[i]`` 是 ``bytes``）。

    例子::

        >>> bpe = ByteBPE([(230, 152)])
        >>> bpe.vocab[256]
        b'\\xe6\\x98'
        >>> bpe.encode("春")  # b'\\xe6\\x98\\xa5'：前两个字节合并，第三个留着
        [256, 165]
    """

    def __init__(self, merges: Sequence[Pair]):
        self.merges = [tuple(pair) for pair in merges]
        self.vocab = [bytes([b]) for b in range(256)]
        self.ranks: dict[Pair, int] = {}
        for k, (a, b) in enumerate(self.merges):
            new_id = 256 + k
            if not (0 <= a < new_id and 0 <= b < new_id):
                raise ValueError(
                    f"merge {k} must join two existing tokens (ids below {new_id}), got {(a, b)}"
                )
            if (a, b) in self.ranks:
                raise ValueError(f"merge {k} repeats merge {self.ranks[a, b]}: {(a, b)}")
            self.ranks[a, b] = new_id
            self.vocab.append(self.vocab[a] + self.vocab[b])

    def __len__(self) -> int:
        return len(self.vocab)

    @classmethod
    def from_gpt2_merges(cls, merges: Iterable[tuple[str, str]]) -> ByteBPE:
        """读 GPT-2 / ``tokenizers`` 写法的合并表：每条是两个词元的文本（字节经 :func:`gpt2_byte_to_unicode`）。

        例子::

            >>> ByteBPE.from_gpt2_merges([("æ", "ĺ"), ("æĺ", "¥")]).encode("春")
            [257]
        """
        to_byte = {ch: b for b, ch in gpt2_byte_to_unicode().items()}
        ids = {bytes([b]): b for b in range(256)}  # 字节串 → 编号
        pairs = []
        for k, (left, right) in enumerate(merges):
            try:
                parts = [bytes(to_byte[ch] for ch in part) for part in (left, right)]
                a, b = ids[parts[0]], ids[parts[1]]
            except KeyError:
                raise ValueError(
                    f"merge {k} {(left, right)} uses a token that no earlier merge made"
                ) from None
            pairs.append((a, b))
            ids[parts[0] + parts[1]] = 256 + k
        return cls(pairs)

    # ------------------------------------------------------------------ 训练

    @classmethod
    def train(cls, texts: Iterable[str], vocab_size: int) -> ByteBPE:
        """在 ``texts``（一段一个字符串，合并不跨段）上学 ``vocab_size - 256`` 次合并。

        每一步取出现次数最多的相邻对，次数相同取编号对 (a, b) 最小的；没有任何对出现两次以上时提前停下。

        为了快，次数不在每一步重数，而是 **增量更新**：合并 (a, b) 的一次出现 ``x a b y`` → ``x n y``
        只改动四个对——(x, a)、(b, y) 各减一，(x, n)、(n, y) 各加一（再加上 (a, b) 自己减一）。
        最大值用一个堆找：次数变了就压入新的 (−次数, 对)，取出时次数已过时的条目丢掉。
        相同的文本只存一份、记下出现次数（全唐诗里有重复的诗）。
        """
        if isinstance(texts, str):
            raise TypeError("texts must be a list of strings (one per text), got a single str")
        if not isinstance(vocab_size, int) or vocab_size < 256:
            raise ValueError(f"vocab_size must be an int >= 256 (the bytes), got {vocab_size!r}")
        counted = Counter(texts)
        words = [list(text.encode("utf-8")) for text in counted]  # 每段文本：词元编号的列表
        freq = list(counted.values())  # 这段文本出现几次

        counts: Counter[Pair] = Counter()  # 对 → 全语料里出现的次数
        # 对 → 可能含有它的文本的序号（只增不减，可以重复）
        where: defaultdict[Pair, list[int]] = defaultdict(list)
        for w, word in enumerate(words):
            for pair in pairwise(word):
                counts[pair] += freq[w]
                where[pair].append(w)
        heap = [(-n, pair) for pair, n in counts.items()]
        heapq.heapify(heap)

        merges: list[Pair] = []
        while len(merges) < vocab_size - 256 and heap:
            negative, pair = heapq.heappop(heap)
            if counts[pair] != -negative:
                continue  # 过时的条目：这个对的次数后来变了，新的次数另有条目
            if -negative < 2:
                break  # 剩下的对都只出现一次，合并它们只是把语料背下来
            new_id = 256 + len(merges)
            merges.append(pair)
            changed: set[Pair] = set()
            for w in set(where.pop(pair)):
                changed |= _merge_in_place(words[w], pair, new_id, freq[w], counts, where, w)
            for p in changed:
                if counts[p] > 0:
                    heapq.heappush(heap, (-counts[p], p))
        return cls(merges)

    # ------------------------------------------------------------------ 编码、解码

    def encode(self, text: str) -> list[int]:
        """文本 → 词元编号：UTF-8 字节，然后每次合并排名最靠前的相邻对，直到没有可合并的。

        例子::

            >>> ByteBPE([(104, 105)]).encode("hi!")
            [256, 33]
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        ids = list(text.encode("utf-8"))
        while len(ids) >= 2:
            # 序列里所有的相邻对中，合并表里最早学到的那个（不在表里的排在最后）
            pair = min(pairwise(ids), key=lambda p: self.ranks.get(p, _NEVER))
            if pair not in self.ranks:
                break
            ids = merge_pair(ids, pair, self.ranks[pair])
        return ids

    def decode(self, ids: Iterable[int]) -> str:
        """词元编号 → 文本：拼起每个词元的字节，按 UTF-8 解码（不成字的字节会报错）。"""
        data = bytearray()
        for i in ids:
            if not 0 <= i < len(self.vocab):
                raise ValueError(f"token id must be in [0, {len(self.vocab)}), got {i}")
            data += self.vocab[i]
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise ValueError(
                f"ids do not form valid UTF-8 ({error.reason} at byte {error.start}); "
                "a sequence cut in the middle of a character cannot be decoded alone"
            ) from None

    def steps(self, text: str) -> list[list[int]]:
        """编码的每一步：第 0 项是字节，之后每合并一次记一项，最后一项就是 ``encode(text)``。"""
        ids = list(text.encode("utf-8"))
        history = [ids]
        while len(ids) >= 2:
            pair = min(pairwise(ids), key=lambda p: self.ranks.get(p, _NEVER))
            if pair not in self.ranks:
                break
            ids = merge_pair(ids, pair, self.ranks[pair])
            history.append(ids)
        return history


_NEVER = float("inf")  # 不在合并表里的对的排名


def _merge_in_place(
    word: list[int],
    pair: Pair,
    new_id: int,
    freq: int,
    counts: Counter[Pair],
    where: defaultdict[Pair, list[int]],
    w: int,
) -> set[Pair]:
    """在第 ``w`` 段文本 ``word`` 里就地合并 ``pair``（从左到右），增量更新 ``counts``、``where``。

    返回次数变过的对。左边的邻居取合并之后的值，所以 ``a a a a`` 合并 (a, a) 得到 ``n n``，
    计数也与重新数一遍相同（单元测试逐步核对）。
    """
    a, b = pair
    changed = set()
    i = 0
    while True:
        try:
            i = word.index(a, i)  # 下一个 a
        except ValueError:
            return changed
        if i + 1 >= len(word) or word[i + 1] != b:
            i += 1
            continue
        # x a b y → x n y
        counts[pair] -= freq
        if i > 0:
            x = word[i - 1]
            counts[x, a] -= freq
            counts[x, new_id] += freq
            where[x, new_id].append(w)
            changed |= {(x, a), (x, new_id)}
        if i + 2 < len(word):
            y = word[i + 2]
            counts[b, y] -= freq
            counts[new_id, y] += freq
            where[new_id, y].append(w)
            changed |= {(b, y), (new_id, y)}
        word[i : i + 2] = [new_id]
        i += 1
