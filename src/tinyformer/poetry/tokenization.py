"""同一份全唐诗，三种切法：逐字、jieba 分词、字节级 BPE；同样预算的 GPT 比每字比特数（“中文的字节级 BPE”一章）。

三种切法都写成"一首诗 → 一个词元列表"，再用"只有解码器"一章的 :class:`~tinyformer.poetry.corpus.Vocab`
给词元编号（``Vocab`` 对任何可哈希的词元都成立：字、词、BPE 词元的字节串）。于是训练、评估都原样用
:mod:`tinyformer.poetry.training`，只有两处不同：

- 位置嵌入的长度 ``max_len`` 取最长的一首诗切出的词元数 + 2（BPE 词表小时一首诗的词元比字多）；
- :func:`bits_per_char`：每个词元的比特数换算成 **每字** 的比特数——总比特数除以字数，
  字数的算法与"只有解码器"一章相同（每首诗的字符，含标点，再加一个 ``<eos>``）。

长的实验（``python -m tools.bpe_lab``）的结果随包发布在 ``data/bpe_lab.json``；该章读它作图，
并现场重跑一小段（:func:`train_gpt` 的前几步）核对。
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from importlib.resources import files

from .._random import seeded
from ..bpe import ByteBPE
from ..gpt import GPT, GPTConfig
from ..text import tokenize_zh
from .corpus import SPECIALS, Vocab
from .training import TrainResult, evaluate, train

__all__ = [
    "Tokenizer",
    "bits_per_char",
    "lab_results",
    "make_tokenizer",
    "shipped_bpe",
    "train_gpt",
]


class Tokenizer:
    """一种切法：``split(poem)`` 给出词元列表，``vocab`` 给词元编号。用 :func:`make_tokenizer` 建。

    - ``"char"``：逐字，字表就是"只有解码器"一章的（训练集里不到 2 次的字记作 ``<unk>``）；
    - ``"jieba"``：jieba 精确模式分词，词表收训练集里至少 2 次的词，其余的词记作 ``<unk>``；
    - ``"bpe"``：字节级 BPE（``bpe``），词元是字节串，词表含全部 256 个字节与每一次合并，
      所以任何文本都没有 ``<unk>``。
    """

    def __init__(self, kind: str, vocab: Vocab, bpe: ByteBPE | None = None):
        self.kind, self.vocab, self.bpe = kind, vocab, bpe
        self.name = f"bpe{len(bpe)}" if bpe is not None else kind

    @classmethod
    def for_bpe(cls, bpe: ByteBPE) -> Tokenizer:
        """一份已经学好的合并表 → 切法（词表：4 个特殊词元，然后 ``bpe`` 的编号依次后移 4 位）。"""
        return cls("bpe", Vocab([*SPECIALS, *bpe.vocab]), bpe)

    def split(self, poem: str) -> list:
        """一首诗 → 词元列表（字、词，或 BPE 词元的字节串）。"""
        if self.kind == "char":
            return list(poem)
        if self.kind == "jieba":
            return tokenize_zh(poem)
        return [self.bpe.vocab[i] for i in self.bpe.encode(poem)]


def make_tokenizer(name: str, train_poems: Sequence[str]) -> Tokenizer:
    """``"char"``、``"jieba"`` 或 ``"bpe<词表大小>"``（如 ``"bpe512"``）→ 在 ``train_poems`` 上建好的切法。"""
    if name.startswith("bpe") and name[3:].isdigit():
        return Tokenizer.for_bpe(ByteBPE.train(train_poems, int(name[3:])))
    if name == "char":
        return Tokenizer("char", Vocab.build(train_poems))
    if name == "jieba":
        return Tokenizer("jieba", Vocab.build([tokenize_zh(poem) for poem in train_poems]))
    raise ValueError(f"name must be 'char', 'jieba' or 'bpe<vocab size>', got name={name!r}")


def bits_per_char(model: GPT, poems: Sequence[str], tokenizer: Tokenizer) -> float:
    r"""模型在 ``poems`` 上的每字比特数：:math:`\frac{\text{总比特数}}{\sum_{\text{诗}} (\text{字数} + 1)}`。

    :func:`~tinyformer.poetry.training.evaluate` 给出每个预测（词元或 ``<eos>``）的平均比特数，
    乘以预测数就是总比特数；分母是字数（每首诗的字符 + ``<eos>``），与切法无关，所以不同切法可比。
    """
    pieces = [tokenizer.split(poem) for poem in poems]
    per_token = evaluate(model, pieces, tokenizer.vocab)
    predictions = sum(len(p) + 1 for p in pieces)
    characters = sum(len(poem) + 1 for poem in poems)
    return per_token * predictions / characters


def train_gpt(
    tokenizer: Tokenizer,
    train_poems: Sequence[str],
    steps: int,
    max_len: int,
    d_model: int = 64,
    num_layers: int = 2,
    num_heads: int = 4,
    batch_size: int = 32,
    lr: float = 3e-3,
    warmup: int = 15,
    seed: int = 0,
    accumulate: int = 1,
) -> tuple[GPT, TrainResult]:
    """用 ``tokenizer`` 切好 ``train_poems``，训练一个小 GPT ``steps`` 步（每 10 步记一次训练损失）。

    不同切法只差词表大小（嵌入表与输出层的行数）和 ``max_len``：块的参数、步数、每步的诗数、数据顺序都相同。
    训练损失 ``train_bpc`` 是 **每个词元** 的比特数（不同切法之间不可比）；可比的是 :func:`bits_per_char`。
    预热的步数 ``warmup`` 是固定的（不随 ``steps`` 变），所以只跑前 ``warmup`` 步的现场实验与长实验的
    前 ``warmup`` 步学习率相同、数据相同，训练损失应当一致。``accumulate``：每步分几份算梯度
    （见 :func:`~tinyformer.poetry.training.train`；梯度相同到舍入，激活值的内存约为 1/``accumulate``）。
    """
    pieces = [tokenizer.split(poem) for poem in train_poems]
    with seeded(seed):
        model = GPT(
            GPTConfig(
                vocab_size=len(tokenizer.vocab), max_len=max_len, d_model=d_model,
                num_heads=num_heads, num_layers=num_layers,
            )
        )  # fmt: skip
    result = train(
        model, tokenizer.vocab, pieces, pieces[:50], steps, seed=seed, batch_size=batch_size,
        lr=lr, warmup=warmup, log_every=10, eval_every=10**9, accumulate=accumulate,
    )  # fmt: skip
    return model, result


def lab_results(name: str = "bpe_lab") -> dict:
    """随包发布的实验结果 ``data/<name>.json``，带来历：``bpe_lab``（``python -m tools.bpe_lab`` 写的）
    或 ``real_tokenizers``（真实分词器的对照表，``python -m tools.real_tokenizers``）。"""
    if name not in ("bpe_lab", "real_tokenizers"):
        raise ValueError(f"name must be 'bpe_lab' or 'real_tokenizers', got {name!r}")
    return json.loads((files("tinyformer.poetry") / "data" / f"{name}.json").read_text("utf-8"))


def shipped_bpe() -> ByteBPE:
    """实验里在训练集上学到的、词表 1,024 的字节级 BPE（合并表存在 ``data/bpe_lab.json`` 里）。"""
    return ByteBPE(lab_results()["merges"]["1024"])
