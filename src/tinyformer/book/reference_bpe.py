"""核对 :class:`~tinyformer.bpe.ByteBPE` 的两个参考：每步重数的朴素循环（:func:`naive_train`），以及配置成
做同一件事的 Hugging Face ``tokenizers`` 字节级 BPE（“中文的字节级 BPE”一章）。

只有该章与测试用到它；``tokenizers`` 在用到时才导入。要让两边的算法重合，需要三处配置：

- ``ByteLevel(add_prefix_space=False, use_regex=False)``：不在开头补空格，也不按 GPT-2 的正则把文本
  切成词——与我们一样，一段文本整体是一个字节序列；
- 训练器的 ``initial_alphabet=ByteLevel.alphabet()``：256 个字节都进词表，即使语料里没出现
  （否则词表只含见过的字节，编号全都错开）；
- ``min_frequency`` 用默认的 0。

编号：``tokenizers`` 的词表先放 256 个字节——按 GPT-2 给字节配的字符（:func:`~tinyformer.bpe.gpt2_byte_to_unicode`）
**排序**——然后第 k 次合并是 256 + k。所以两边合并出的词元编号相同，字节的编号差一个固定的置换
（:func:`byte_ids`）。
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from itertools import pairwise

from ..bpe import gpt2_byte_to_unicode, merge_pair

__all__ = ["byte_ids", "naive_train", "reference_tokenizer", "train_reference"]


def naive_train(texts: Sequence[str], vocab_size: int) -> list[tuple[int, int]]:
    """每一步把所有相邻对重新数一遍的 BPE（慢，但一眼能看对；该章手写的就是它）；平手取编号对最小的。

    :meth:`ByteBPE.train <tinyformer.bpe.ByteBPE.train>` 只更新合并处附近的计数，合并表必须与它逐条相同
    （``tests/unit/test_bpe.py``）；``benchmarks/bench_bpe.py`` 比较两者的用时。
    """
    words = [list(t.encode("utf-8")) for t in texts]
    merges: list[tuple[int, int]] = []
    while len(merges) < vocab_size - 256:
        counts = Counter(p for w in words for p in pairwise(w))
        if not counts or max(counts.values()) < 2:
            break
        best = min(counts, key=lambda p: (-counts[p], p))
        merges.append(best)
        words = [merge_pair(w, best, 255 + len(merges)) for w in words]
    return merges


def _byte_level(model):
    """把 ``tokenizers`` 的 BPE 模型包成上面说的字节级分词器：整段文本一个字节序列。"""
    from tokenizers import Tokenizer, decoders, pre_tokenizers

    tokenizer = Tokenizer(model)
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tokenizer.decoder = decoders.ByteLevel()
    return tokenizer


def train_reference(texts: Sequence[str], vocab_size: int, pre_tokenizer=None):
    """用 ``tokenizers`` 训练一个字节级 BPE，返回 (``tokenizers.Tokenizer``, 它的合并表)。

    ``pre_tokenizer`` 换掉上面说的预处理（真实分词器的对照表比较几种预切分，``tools/real_tokenizers.py``）；
    默认不换。

    合并表是 GPT-2 写法（每条两个词元的文本），可直接交给 :meth:`ByteBPE.from_gpt2_merges`。
    在整个训练集上，``tokenizers`` 的训练器要占约 400 MB 内存：该章读长实验存下的合并表
    （:func:`reference_tokenizer`），不现场学。
    """
    from tokenizers import models, pre_tokenizers, trainers

    tokenizer = _byte_level(models.BPE())
    if pre_tokenizer is not None:
        tokenizer.pre_tokenizer = pre_tokenizer
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer)
    merges = [tuple(m) for m in json.loads(tokenizer.to_str())["model"]["merges"]]
    return tokenizer, merges


def reference_tokenizer(merges: Sequence[tuple[str, str]]):
    """不训练：用 :func:`train_reference` 学到的合并表（GPT-2 写法）直接搭出同一个 ``tokenizers.Tokenizer``。

    词表与训练器给的相同：先是 256 个字节（按 GPT-2 的字符排序），第 k 次合并出的词元是 256 + k。
    """
    from tokenizers import models

    tokens = [gpt2_byte_to_unicode()[b] for b in byte_ids()] + [a + b for a, b in merges]
    vocab = {token: i for i, token in enumerate(tokens)}
    return _byte_level(models.BPE(vocab=vocab, merges=[tuple(m) for m in merges]))


def byte_ids() -> list[int]:
    """``tokenizers`` 的编号 0–255 各是哪个字节：按 GPT-2 给字节配的字符排序。

    我们的编号 i（i < 256 时就是字节 i）在 ``tokenizers`` 里是 ``byte_ids().index(i)``；合并出的词元两边同号。
    """
    table = gpt2_byte_to_unicode()
    return sorted(range(256), key=lambda b: table[b])
