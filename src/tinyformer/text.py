"""文本 → 词元 → 编号：分词器与词表（“Transformer 总览”一章、“词嵌入”一章讲解；``pad_sequences`` 与
``detokenize_en`` 是“完整模型”一章的批量与还原句子用的）。

中文没有空格，先要 *分词*（tokenization）才能查表；本书用 jieba。分词器是一个显式的对象
:class:`ZhTokenizer`：它有 **自己的** jieba 词典（``jieba.Tokenizer()``），第一次使用时才建好，
对它的调整（“完整模型”一章要把“不去”“没买”切开）只改它自己，不碰 jieba 的全局词典 ``jieba.dt``。
所以导入本包的任何模块都不改变全局状态：jieba 的词典、日志级别，torch 的随机数都原封不动。

中文分词有三个入口，名字说明各是什么：

- :class:`ZhTokenizer` 是 **类**：每个实例有自己的 jieba 词典，``splits`` 指定要强制切开的组合；
- :func:`tokenize_zh` 是 **函数**：用 jieba 的默认词典（本模块的一个不加 ``splits`` 的实例）切分，
  各章讲分词、建词表时用它；
- ``tinyformer.translation.corpus.corpus_tokenizer`` 是中译英 **语料的那个实例**：默认词典外加切开“不去”“没买”
  这类否定组合，语料的词表、训练和翻译器都用它。

分词器的词典由 jieba 自己建（``jieba.Tokenizer.initialize``，读 jieba 缓存在临时文件夹里的词典，约半秒；
一个分词器约占 60 MB），建的时候把 jieba 的日志调到只报警告，免得它往 stderr 打印 "Building prefix dict ..."，
建好再调回来。在较旧的 setuptools 上 ``import jieba`` 会发出 ``pkg_resources`` 弃用警告，
它会进入笔记本保存的结果、让 nbval 的比较不稳定，所以导入时屏蔽那条警告。
"""

from __future__ import annotations

import logging
import operator
import re
import threading
import warnings
from collections import Counter
from collections.abc import Iterable, Sequence

import torch
from torch import Tensor

from ._checks import shorten

with warnings.catch_warnings():
    # 旧版 setuptools 上 jieba 导入 pkg_resources 会告警；与本书无关，静默之。
    warnings.simplefilter("ignore")
    import jieba

PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<bos>", "<eos>"
SPECIAL_TOKENS = (PAD, UNK, BOS, EOS)

_EN_TOKEN = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?|\d+|[^\sA-Za-z\d]")


class ZhTokenizer:
    """中文分词器：一个自己拥有 jieba 词典的对象（“Transformer 总览”一章；“完整模型”一章用 ``splits``）。

    jieba 的模块级函数（``jieba.lcut``）共用一个全局词典 ``jieba.dt``，谁改了它，别处的分词
    也跟着变。这里每个分词器有自己的 ``jieba.Tokenizer()``，第一次分词时才建好（读 jieba 的
    词典文件，约 1 秒），重复调用不会重建；建好之后对它的调整只影响这个分词器。

    参数:
        splits: 要强制切开的组合，如 ``[("不", "去")]``：“不去”永远切成“不 / 去”。做法与
            ``jieba.suggest_freq(("不", "去"), tune=True)`` 相同（把整词的词频压到不高于分开时），
            只是改在本分词器自己的词典上；jieba 把新词发现（HMM）强制切开的表是全局的，所以
            这一步由本类在分词结果上完成。

    例子::

        >>> tokenize = ZhTokenizer(splits=[("不", "去")])
        >>> tokenize("他明天不去北京"), tokenize_zh("他明天不去北京")
        (['他', '明天', '不', '去', '北京'], ['他', '明天', '不去', '北京'])
    """

    def __init__(self, splits: Iterable[Sequence[str]] = ()):
        splits = tuple(tuple(segment) for segment in splits)
        for segment in splits:
            if len(segment) < 2 or not all(isinstance(part, str) and part for part in segment):
                raise ValueError(
                    "splits must hold sequences of at least two non-empty str, "
                    f"got the entry {segment!r}"
                )
        self.splits: tuple[tuple[str, ...], ...] = splits
        self._jieba: jieba.Tokenizer | None = None
        self._force_split: dict[str, tuple[str, ...]] = {}
        self._lock = threading.Lock()

    def _tokenizer(self) -> jieba.Tokenizer:
        """本分词器的 jieba 词典：第一次调用时建好并做 ``splits`` 的调整（幂等）。"""
        with self._lock:
            if self._jieba is None:
                self._jieba = self._build()
            return self._jieba

    def _build(self) -> jieba.Tokenizer:
        tokenizer = jieba.Tokenizer()
        level = jieba.default_logger.level  # jieba 建词典时在 DEBUG 级别往 stderr 打印几行
        jieba.default_logger.setLevel(logging.WARNING)
        try:
            tokenizer.initialize()
        finally:
            jieba.default_logger.setLevel(level)
        for segment in self.splits:
            word = "".join(segment)
            freq = tokenizer.suggest_freq(segment, tune=False)  # 只算词频，不改任何词典
            # 与 Tokenizer.add_word(word, freq) 相同，只是词频为 0 时不写 jieba 的全局强制切分表
            tokenizer.FREQ[word] = freq
            tokenizer.total += freq
            for end in range(1, len(word)):
                tokenizer.FREQ.setdefault(word[:end], 0)
            if freq == 0:
                self._force_split[word] = segment
        return tokenizer

    def __call__(self, text: str, cut_all: bool = False, search: bool = False) -> list[str]:
        """把 ``text`` 切成词（默认精确模式），去掉空白词元。

        参数:
            text: 要切分的句子。
            cut_all: ``True`` 时用全模式（列出所有可能成词的片段，片段会重叠）。
            search: ``True`` 时用搜索引擎模式（在精确模式上再把长词切出短词）。
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        if cut_all and search:
            raise ValueError("cut_all and search are two different modes; give at most one")
        tokenizer = self._tokenizer()
        if search:
            pieces = tokenizer.lcut_for_search(text)
        else:
            pieces = tokenizer.lcut(text, cut_all=cut_all)
        tokens: list[str] = []
        for piece in pieces:
            if piece.strip():
                tokens += self._force_split.get(piece, (piece,))
        return tokens

    def __repr__(self) -> str:
        return f"ZhTokenizer(splits={len(self.splits)})"


_DEFAULT_ZH = ZhTokenizer()


def tokenize_zh(text: str, cut_all: bool = False, search: bool = False) -> list[str]:
    """用 jieba 的默认词典把中文句子切成词（精确模式），去掉空白词元。

    由本模块自己的 :class:`ZhTokenizer` 完成（不用、也不改 jieba 的全局词典）。

    参数:
        text: 要切分的句子。
        cut_all: ``True`` 时用全模式（列出所有可能成词的片段，片段会重叠）。
        search: ``True`` 时用搜索引擎模式（在精确模式上再把长词切出短词）。

    例子::

        >>> tokenize_zh("我爱北京天安门")
        ['我', '爱', '北京', '天安门']
        >>> tokenize_zh("中华人民共和国", search=True)
        ['中华', '华人', '人民', '共和', '共和国', '中华人民共和国']
    """
    return _DEFAULT_ZH(text, cut_all=cut_all, search=search)


def tokenize_en(text: str) -> list[str]:
    """把英文句子切成小写的词和标点；``don't`` 这类缩写保持为一个词元。

    例子::

        >>> tokenize_en("He didn't go to Beijing yesterday.")
        ['he', "didn't", 'go', 'to', 'beijing', 'yesterday', '.']
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    return _EN_TOKEN.findall(text.lower())


ATTACH_LEFT = frozenset(".,?!;:")  # detokenize_en：紧贴前一个词的标点
SENTENCE_END = frozenset(".?!")  # detokenize_en：其后的词大写


def capitalization(proper_nouns: Iterable[str] = ()) -> dict[str, str]:
    """小写词元 → 还原后的写法：``i`` → ``I``，以及每个专名（``detokenize_en`` 与网页翻译器共用）。

    例子::

        >>> capitalization(["Beijing"])
        {'i': 'I', 'beijing': 'Beijing'}
    """
    return {"i": "I", **{word.lower(): word for word in proper_nouns}}


def detokenize_en(tokens: Sequence[str], proper_nouns: Iterable[str] = ()) -> str:
    """``tokenize_en`` 的逆：把小写的英文词元拼回句子（“完整模型”一章）。

    标点贴住前一个词，句首和 ``i`` 大写，``proper_nouns`` 里的词（如 ``"Beijing"``）按它的写法
    还原。对只含这些专名的句子 ``s``，``tokenize_en(detokenize_en(tokenize_en(s), 专名)) ==
    tokenize_en(s)``。模型的输出先经 ``Vocab.decode(..., strip_special=True)`` 去掉特殊词元，
    再用它拼成句子交给 sacreBLEU。

    参数:
        tokens: 词元列表，如 ``['i', 'will', 'go', 'to', 'beijing', 'tomorrow', '.']``。
        proper_nouns: 要大写的专名（“完整模型”一章的语料见 ``tinyformer.translation.corpus.PROPER_NOUNS``）。

    例子::

        >>> detokenize_en(["i", "will", "go", "to", "beijing", "tomorrow", "."], ["Beijing"])
        'I will go to Beijing tomorrow.'
        >>> detokenize_en(["does", "mary", "study", "chinese", "?"], ["Mary", "Chinese"])
        'Does Mary study Chinese?'
    """
    if isinstance(tokens, str):
        raise TypeError(f"tokens must be a list of tokens, not the str {tokens!r}")
    if isinstance(proper_nouns, str):
        raise TypeError(f"proper_nouns must be a list of words, not the str {proper_nouns!r}")
    capitalized = capitalization(proper_nouns)
    words: list[str] = []
    start_of_sentence = True
    for tok in tokens:
        if tok in ATTACH_LEFT and words:
            words[-1] += tok
        else:
            word = capitalized.get(tok, tok)
            if start_of_sentence:
                word = word[:1].upper() + word[1:]
            words.append(word)
        start_of_sentence = tok in SENTENCE_END
    return " ".join(words)


def _check_tokens(name: str, tokens) -> None:
    """词元必须是 str：数字或 None 进了词表，编码、解码都会悄悄出错。"""
    for tok in tokens:
        if not isinstance(tok, str):
            raise TypeError(
                f"{name} must hold str tokens, got {tok!r:.60} of type {type(tok).__name__}"
            )


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
        if isinstance(sentences, str) or not isinstance(sentences, Iterable):
            raise TypeError(
                f"sentences must be an iterable of token lists, got {type(sentences).__name__}"
            )
        counts: Counter[str] = Counter()
        for i, sentence in enumerate(sentences):
            if isinstance(sentence, str):
                raise TypeError(
                    f"sentences must hold lists of tokens, got the str {shorten(sentence)} at index {i}; "
                    "tokenize it first (tokenize_zh / tokenize_en)"
                )
            counts.update(sentence)
        ordered = sorted(
            counts, key=lambda tok: -counts[tok]
        )  # sorted 是稳定的：同频保持首次出现顺序
        _check_tokens("sentences", ordered)
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
        _check_tokens("itos", itos)
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
                f"tokens must be a list of tokens, not the str {shorten(tokens)}; tokenize it first"
            )
        ids = [self.stoi.get(tok, self.unk_id) for tok in tokens]
        return [self.bos_id] * add_bos + ids + [self.eos_id] * add_eos

    def decode(self, ids: Iterable[int], strip_special: bool = False) -> list[str]:
        """编号 → 词元。``strip_special=True`` 时去掉 ``<pad>``/``<bos>``/``<eos>``，并在 ``<eos>`` 处截断。"""
        if isinstance(ids, Tensor) and ids.dim() != 1:
            raise ValueError(
                f"ids must be one sequence (1-D), got a tensor of shape {tuple(ids.shape)}"
            )
        tokens = []
        for i in ids:
            if isinstance(i, Tensor) and (i.dtype.is_floating_point or i.dtype.is_complex):
                raise TypeError(f"ids must be integers, got {i.item()!r}")
            try:
                i = operator.index(i)
            except TypeError:
                raise TypeError(f"ids must be integers, got {i!r:.60}") from None
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


def pad_sequences(sequences: Sequence[Sequence[int]], pad_id: int) -> Tensor:
    """把长短不一的编号序列用 ``pad_id`` 在右边补齐成 (N, 最长长度) 的张量（“编码器与解码器”一章、“完整模型”一章）。

    例子::

        >>> pad_sequences([[5, 6, 7], [8]], pad_id=0)
        tensor([[5, 6, 7],
                [8, 0, 0]])
    """
    sequences = [list(s) for s in sequences]  # 生成器也只读一遍
    if not sequences:
        raise ValueError("sequences must not be empty")
    width = max(len(s) for s in sequences)
    return torch.tensor([list(s) + [pad_id] * (width - len(s)) for s in sequences])  # (N, width)
