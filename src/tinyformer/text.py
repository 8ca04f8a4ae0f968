"""文本 → 词元 → 编号：分词器与词表（第 1、2 章讲解）。

中文没有空格，先要 *分词*（tokenization）才能查表；本书用 jieba。
jieba 第一次使用时会往 stderr 打印 "Building prefix dict ..."，在较旧的 setuptools 上
``import jieba`` 还会发出 ``pkg_resources`` 弃用警告。这些输出会进入笔记本保存的结果、
让 nbval 的比较不稳定，所以这里在导入和首次使用前把它们关掉。
"""

from __future__ import annotations

import logging
import re
import warnings
from collections import Counter
from collections.abc import Iterable, Sequence

with warnings.catch_warnings():
    # 旧版 setuptools 上 jieba 导入 pkg_resources 会告警；与本书无关，静默之。
    warnings.simplefilter("ignore")
    import jieba

jieba.setLogLevel(logging.WARNING)  # 不打印 "Building prefix dict ..." / "Loading model ..."

PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<bos>", "<eos>"
SPECIAL_TOKENS = (PAD, UNK, BOS, EOS)

_EN_TOKEN = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?|\d+|[^\sA-Za-z\d]")


def tokenize_zh(text: str, cut_all: bool = False) -> list[str]:
    """用 jieba 把中文句子切成词（精确模式），去掉空白词元。

    参数:
        text: 要切分的句子。
        cut_all: ``True`` 时用全模式（列出所有可能成词的片段，片段会重叠）。

    例子::

        >>> tokenize_zh("我爱北京天安门")
        ['我', '爱', '北京', '天安门']
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return [tok for tok in jieba.lcut(text, cut_all=cut_all) if tok.strip()]


def tokenize_en(text: str) -> list[str]:
    """把英文句子切成小写的词和标点；``don't`` 这类缩写保持为一个词元。

    例子::

        >>> tokenize_en("He didn't go to Beijing yesterday.")
        ['he', "didn't", 'go', 'to', 'beijing', 'yesterday', '.']
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return _EN_TOKEN.findall(text.lower())


class Vocab:
    """词表：词元 ↔ 编号，前四个编号固定是 ``<pad>``=0、``<unk>``=1、``<bos>``=2、``<eos>``=3。

    其余词元按出现次数从多到少排列（次数相同时按首次出现的顺序），所以同样的语料总得到
    同样的编号。不在词表里的词元编码为 ``<unk>``。

    参数:
        sentences: 词元列表的列表，例如 ``[["我", "爱", "北京"], ...]``。
        min_freq: 出现次数少于它的词元不进词表（默认 1）。

    例子::

        >>> vocab = Vocab([["我", "爱", "北京"], ["我", "爱", "你"]])
        >>> len(vocab), vocab.encode(["我", "爱", "上海"])
        (8, [4, 5, 1])
        >>> vocab.decode([2, 4, 5, 6, 3], strip_special=True)
        ['我', '爱', '北京']
    """

    def __init__(self, sentences: Iterable[Sequence[str]], min_freq: int = 1):
        if isinstance(min_freq, bool) or not isinstance(min_freq, int) or min_freq < 1:
            raise ValueError(f"min_freq must be a positive integer, got min_freq={min_freq!r}")
        counts: Counter[str] = Counter()
        for i, sentence in enumerate(sentences):
            if isinstance(sentence, str):
                raise TypeError(
                    f"sentences must hold lists of tokens, got the str {sentence!r} at index {i}; "
                    "tokenize it first (tokenize_zh / tokenize_en)"
                )
            counts.update(sentence)
        ordered = sorted(
            counts, key=lambda tok: -counts[tok]
        )  # sorted 是稳定的：同频保持首次出现顺序
        self.itos: list[str] = list(SPECIAL_TOKENS) + [
            tok for tok in ordered if counts[tok] >= min_freq and tok not in SPECIAL_TOKENS
        ]
        self.stoi: dict[str, int] = {tok: i for i, tok in enumerate(self.itos)}

    @classmethod
    def from_itos(cls, itos: Sequence[str]) -> Vocab:
        """由编号 → 词元的列表重建词表（读取检查点用）；列表须以四个特殊词元开头、没有重复。

        例子::

            >>> vocab = Vocab([["我", "爱", "北京"]])
            >>> Vocab.from_itos(vocab.itos).stoi == vocab.stoi
            True
        """
        itos = list(itos)
        if tuple(itos[: len(SPECIAL_TOKENS)]) != SPECIAL_TOKENS or len(set(itos)) != len(itos):
            raise ValueError(
                f"itos must start with {list(SPECIAL_TOKENS)} and hold no duplicates, "
                f"got itos[:6]={itos[:6]!r} with {len(itos) - len(set(itos))} duplicates"
            )
        vocab = cls([])
        vocab.itos = itos
        vocab.stoi = {tok: i for i, tok in enumerate(itos)}
        return vocab

    pad_id = property(lambda self: self.stoi[PAD])
    unk_id = property(lambda self: self.stoi[UNK])
    bos_id = property(lambda self: self.stoi[BOS])
    eos_id = property(lambda self: self.stoi[EOS])

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, token: str) -> bool:
        return token in self.stoi

    def encode(
        self, tokens: Sequence[str], add_bos: bool = False, add_eos: bool = False
    ) -> list[int]:
        """词元 → 编号；未登录词变成 ``<unk>`` 的编号。"""
        if isinstance(tokens, str):
            raise TypeError(
                f"tokens must be a list of tokens, not the str {tokens!r}; tokenize it first"
            )
        ids = [self.stoi.get(tok, self.unk_id) for tok in tokens]
        return [self.bos_id] * add_bos + ids + [self.eos_id] * add_eos

    def decode(self, ids: Iterable[int], strip_special: bool = False) -> list[str]:
        """编号 → 词元。``strip_special=True`` 时去掉 ``<pad>``/``<bos>``/``<eos>``，并在 ``<eos>`` 处截断。"""
        tokens = []
        for i in ids:
            i = int(i)
            if not 0 <= i < len(self.itos):
                raise ValueError(f"token id must be in [0, {len(self.itos)}), got {i}")
            tok = self.itos[i]
            if strip_special and tok == EOS:
                break
            if strip_special and tok in (PAD, BOS):
                continue
            tokens.append(tok)
        return tokens

    def unknown(self, tokens: Sequence[str]) -> list[str]:
        """列出不在词表中的词元（用来给读者清楚的提示，而不是悄悄变成 ``<unk>``）。"""
        return [tok for tok in tokens if tok not in self.stoi]

    def __repr__(self) -> str:
        return f"Vocab(size={len(self)})"
