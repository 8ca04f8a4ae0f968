"""翻译器：训练好的模型 + 两张词表 + 分词规则——翻译句子、评估、看交叉注意力（“完整模型”一章讲解）。

:class:`Translator` 只做推理：它不训练（见 :func:`tinyformer.translation.training.fit_translator`），不读写文件
（见 :mod:`tinyformer.translation.checkpoint`），也不改全局状态。:func:`new_translator` 按词表大小建一个
未训练的翻译器；给了 ``seed`` 时它在 ``torch.random.fork_rng()`` 里初始化，调用前后全局的随机数
状态不变。
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import sacrebleu
import torch
from torch import Tensor

from .._checks import check_instance, check_int, check_positive_int, check_seed, shorten
from .._random import seeded
from ..decoding import beam_search, greedy_decode
from ..layers import recording_weights
from ..model import Transformer, TransformerConfig
from ..text import Vocab, detokenize_en, pad_sequences
from .corpus import OUT_OF_GRAMMAR, PROPER_NOUNS, corpus_tokenizer, in_grammar


@dataclass(frozen=True)
class Evaluation:
    """在一组句对上评估的结果：完全匹配率（逐字相同的比例）、sacreBLEU 的语料级 BLEU（0–100）、译文与参考译文。"""

    exact_match: float
    bleu: float
    hypotheses: tuple[str, ...]
    references: tuple[str, ...]

    def errors(self) -> list[tuple[int, str, str]]:
        """译错的句子：(下标, 译文, 参考译文) 的列表。"""
        return [
            (i, h, r)
            for i, (h, r) in enumerate(zip(self.hypotheses, self.references, strict=True))
            if h != r
        ]


def score(hypotheses: Sequence[str], references: Sequence[str]) -> Evaluation:
    """译文与参考译文 → :class:`Evaluation`（完全匹配率与 sacreBLEU）。

    例子::

        >>> result = score(["I eat apples.", "He go."], ["I eat apples.", "He goes."])
        >>> result.exact_match, [i for i, _, _ in result.errors()]
        (0.5, [1])
    """
    if len(hypotheses) != len(references) or not references:
        raise ValueError(
            "hypotheses and references must be non-empty and of equal length, "
            f"got {len(hypotheses)} and {len(references)}"
        )
    exact = sum(h == r for h, r in zip(hypotheses, references, strict=True)) / len(references)
    bleu = sacrebleu.corpus_bleu(list(hypotheses), [list(references)]).score
    return Evaluation(exact, bleu, tuple(hypotheses), tuple(references))


class UntranslatableError(ValueError):
    """这句话模型没法翻译：没有词、有词表外的词、或者比模型的位置数还长。

    ``str(err)`` 是英文说明（像 torch 的错误一样）；``reason`` 是问题的种类
    （``"empty"``、``"unknown_words"``、``"too_long"``），``sentence`` 是原句，``details``
    是具体的值（``words``：词表外的词；``count``、``max_len``：词数与上限）。命令行和网页翻译器
    按 ``reason`` 给读者一句中文（:func:`tinyformer.translation.cli.reader_message`）。
    """

    def __init__(self, sentence: str, reason: str, message: str, **details):
        super().__init__(message)
        self.sentence, self.reason, self.details = sentence, reason, details


@dataclass(frozen=True)
class Translation:
    """一句话的译文，连同它可不可信（:meth:`Translator.translate_checked` 返回）。

    句型不在训练语料里时 ``text`` 照样是模型的尝试，``in_grammar`` 为 ``False``，``note`` 是
    ``OUT_OF_GRAMMAR``（否则是空字符串）。``print(translation)`` 打印译文，有提示时下一行是“提示：…”。
    """

    source: str
    text: str
    in_grammar: bool
    note: str

    def __str__(self) -> str:
        return f"{self.text}\n提示：{self.note}" if self.note else self.text


class Translator:
    """中译英翻译器 = :class:`~tinyformer.Transformer` + 源词表 + 目标词表。

    ``tokenizer`` 必须是建 ``src_vocab`` 用的那个分词器（默认语料的 ``corpus_tokenizer``）；``proper_nouns``
    是译文里要大写的专名；``metrics`` 是检查点里存的训练指标；``in_domain(词序列)`` 判断一句话在不在训练数据的
    句型里（默认语料的 ``in_grammar``）。解码前模型切到 ``eval()`` 模式。

    :meth:`translate` 只返回译文；:meth:`translate_checked` 还说明句型在不在训练语料里——
    语料之外的句子模型照样译得很流利，但译文不可信（“完整模型”一章的“分布偏移”）。

    例子::

        >>> from tinyformer import TransformerConfig, Transformer, Vocab
        >>> src_vocab, tgt_vocab = Vocab([["我", "爱", "北京"]]), Vocab([["i", "love", "beijing"]])
        >>> config = TransformerConfig(len(src_vocab), len(tgt_vocab), d_model=16, num_heads=4,
        ...     num_encoder_layers=1, num_decoder_layers=1, d_ff=32, max_len=40)
        >>> translator = Translator(Transformer(config), src_vocab, tgt_vocab)
        >>> isinstance(translator.translate("我爱北京"), str)
        True
        >>> translator.translate("我爱上海")
        Traceback (most recent call last):
        ...
        tinyformer.translation.translator.UntranslatableError: sentence '我爱上海' has words not in the source vocabulary: ['上海']; the model can only translate words it was trained on
    """

    def __init__(
        self,
        model: Transformer,
        src_vocab: Vocab,
        tgt_vocab: Vocab,
        tokenizer: Callable[[str], list[str]] = corpus_tokenizer,
        proper_nouns: Iterable[str] = PROPER_NOUNS,
        metrics: dict | None = None,
        in_domain: Callable[[Sequence[str]], bool] = in_grammar,
    ):
        check_instance("model", model, Transformer)
        check_instance("src_vocab", src_vocab, Vocab)
        check_instance("tgt_vocab", tgt_vocab, Vocab)
        for name, vocab, size in (
            ("src_vocab", src_vocab, model.config.src_vocab_size),
            ("tgt_vocab", tgt_vocab, model.config.tgt_vocab_size),
        ):
            if len(vocab) != size:
                raise ValueError(
                    f"len({name}) must equal the model's {name}_size={size}, got {len(vocab)}"
                )
        if model.config.max_len < 2:  # <bos> 占一个位置，至少还要留一个给译文
            raise ValueError(
                "a translator's model needs max_len >= 2 (<bos> plus at least one word), "
                f"got max_len={model.config.max_len}"
            )
        if not callable(tokenizer):
            raise TypeError(f"tokenizer must be callable, got {type(tokenizer).__name__}")
        if not callable(in_domain):
            raise TypeError(f"in_domain must be callable, got {type(in_domain).__name__}")
        if isinstance(proper_nouns, str):
            raise TypeError(f"proper_nouns must be a list of words, not the str {proper_nouns!r}")
        self.model, self.src_vocab, self.tgt_vocab = model, src_vocab, tgt_vocab
        self.tokenizer = tokenizer
        self.proper_nouns: tuple[str, ...] = tuple(proper_nouns)
        self.metrics: dict = dict(metrics or {})
        self.in_domain = in_domain

    def tokenize(self, sentence: str) -> list[str]:
        """用 ``self.tokenizer`` 切分中文句子；有词表外的词时报错并列出它们（而不是悄悄变成 ``<unk>``）。

        没法翻译时抛出 :class:`UntranslatableError`（``ValueError`` 的子类）。
        """
        tokens = self.tokenizer(sentence)
        if not tokens:
            raise UntranslatableError(
                sentence,
                "empty",
                f"sentence must contain at least one word, got {shorten(sentence)}",
            )
        unknown = list(dict.fromkeys(self.src_vocab.unknown(tokens)))  # 去重，保持顺序
        if unknown:
            shown = (
                repr(unknown)
                if len(unknown) <= 10
                else f"{unknown[:10]!r}… ({len(unknown)} in all)"
            )
            raise UntranslatableError(
                sentence,
                "unknown_words",
                f"sentence {shorten(sentence)} has words not in the source vocabulary: {shown}; "
                "the model can only translate words it was trained on",
                words=unknown,
            )
        limit = self.model.config.max_len
        if len(tokens) > limit:
            raise UntranslatableError(
                sentence,
                "too_long",
                f"sentence {shorten(sentence)} has {len(tokens)} words, but the model reads at "
                f"most max_len={limit}; split it into shorter sentences",
                count=len(tokens),
                max_len=limit,
            )
        return tokens

    def encode(self, sentences: Sequence[str]) -> Tensor:
        """句子列表 → 补齐的源句编号 (B, S)。"""
        return self._encode_tokens([self.tokenize(s) for s in sentences])

    def _encode_tokens(self, token_lists: Sequence[Sequence[str]]) -> Tensor:
        """切好的词 → 补齐的源句编号 (B, S)。"""
        ids = [self.src_vocab.encode(tokens) for tokens in token_lists]
        return pad_sequences(ids, self.model.config.pad_id)

    def decode(self, ids: Tensor) -> list[str]:
        """解码出的目标编号 (B, 1 + L) → 英文句子（去掉特殊词元，再拼回句子）。"""
        return [
            detokenize_en(self.tgt_vocab.decode(row, strip_special=True), self.proper_nouns)
            for row in ids.tolist()
        ]

    def translate_ids(self, src: Tensor, beam_size: int = 1, max_len: int | None = None) -> Tensor:
        """源句编号 (B, S) → 目标编号 (B, 1 + L)；``beam_size=1`` 用贪心解码，否则用束搜索。

        ``max_len``：最多生成多少个词元；默认 32，但不超过模型的位置数（``<bos>`` 占一个）。
        """
        check_positive_int("beam_size", beam_size)
        if max_len is None:
            max_len = min(32, self.model.config.max_len - 1)
        self.model.eval()
        bos, eos = self.tgt_vocab.bos_id, self.tgt_vocab.eos_id
        if beam_size == 1:
            return greedy_decode(self.model, src, bos, eos, max_len=max_len)
        return beam_search(self.model, src, bos, eos, beam_size=beam_size, max_len=max_len)

    def translate(
        self, sentences: str | Sequence[str], beam_size: int = 1, max_len: int | None = None
    ) -> str | list[str]:
        """翻译一句（``str``，返回 ``str``）或多句（列表，返回列表）。

        只返回译文，不说它可不可信；要知道句型在不在训练语料里，用 :meth:`translate_checked`。
        """
        out = self.decode(
            self.translate_ids(self.encode(_sentence_list(sentences)), beam_size, max_len)
        )
        return out[0] if isinstance(sentences, str) else out

    def translate_checked(
        self, sentences: str | Sequence[str], beam_size: int = 1, max_len: int | None = None
    ) -> Translation | list[Translation]:
        """像 :meth:`translate` 一样翻译，但返回 :class:`Translation`：译文，加上句型在不在训练语料里。

        句型不在训练语料里（``self.in_domain`` 说不在）时照样给出模型的译文，``note`` 写明
        "这句话的句型不在训练语料里，译文不可信"。命令行 ``python -m tinyformer.translation translate`` 用的就是它。

        例子::

            >>> from tinyformer.translation.pretrained import load_translator
            >>> result = load_translator().translate_checked("他昨天没在商店买衣服吗？")
            >>> result.in_grammar, result.note
            (False, '这句话的句型不在训练语料里，译文不可信')
        """
        single = isinstance(sentences, str)
        batch = _sentence_list(sentences)
        token_lists = [self.tokenize(sentence) for sentence in batch]  # 每句只切一次
        ids = self.translate_ids(self._encode_tokens(token_lists), beam_size, max_len)
        results = []
        for sentence, tokens, text in zip(batch, token_lists, self.decode(ids), strict=True):
            known = bool(self.in_domain(tokens))
            results.append(Translation(sentence, text, known, "" if known else OUT_OF_GRAMMAR))
        return results[0] if single else results

    def evaluate(
        self,
        pairs: Sequence,
        beam_size: int = 1,
        batch_size: int = 256,
        max_len: int | None = None,
    ) -> Evaluation:
        """在句对（有 ``.zh``、``.en``）上算 完全匹配率 和 sacreBLEU。"""
        check_positive_int("batch_size", batch_size)
        if not pairs:
            raise ValueError("pairs must not be empty")
        hypotheses: list[str] = []
        for i in range(0, len(pairs), batch_size):
            chunk = pairs[i : i + batch_size]
            hypotheses += self.translate([p.zh for p in chunk], beam_size, max_len)
        return score(hypotheses, [p.en for p in pairs])

    @torch.no_grad()
    def cross_attention(
        self, sentence: str, layer: int = -1, beam_size: int = 1
    ) -> tuple[list[str], list[str], Tensor]:
        """翻译 ``sentence``，返回 (中文词元, 英文词元, 交叉注意力权重)。

        把译文（``<bos>`` + 生成的词元）整段送回解码器，读出第 ``layer`` 个解码器层的交叉注意力。
        英文词元是每一步 *生成* 的词（含 ``<eos>``），第 t 行是生成第 t 个词时看源句的分布。

        返回:
            权重形状 (H, T, S)：H 个头，T 个英文词元，S 个中文词元；每行加起来是 1。
        """
        check_int("layer", layer)
        layers = self.model.decoder_layers
        if not -len(layers) <= layer < len(layers):
            raise ValueError(f"layer must be in [-{len(layers)}, {len(layers)}), got layer={layer}")
        src_tokens = self.tokenize(sentence)
        src = self._encode_tokens([src_tokens])  # (1, S)
        out = self.translate_one(src, beam_size)  # <bos> y_1 … y_T：(1, 1 + T)
        with recording_weights(layers[layer]) as (recorded,):
            self.model(src, out[:, :-1])  # 送入 <bos> y_1 … y_{T-1}
        weights = recorded.cross_attn_weights[0]  # (1, H, T, S) -> (H, T, S)
        return src_tokens, self.tgt_vocab.decode(out[0, 1:].tolist()), weights

    def translate_one(self, src: Tensor, beam_size: int = 1) -> Tensor:
        """一句源句 (1, S) → ``<bos>`` + 译文的编号 (1, 1 + T)，截到第一个 ``<eos>``（含）。"""
        out = self.translate_ids(src, beam_size)  # (1, 1 + L)
        produced = out[0, 1:].tolist()
        eos = self.tgt_vocab.eos_id
        return out[:, : 1 + (produced.index(eos) + 1 if eos in produced else len(produced))]

    def __repr__(self) -> str:
        c = self.model.config
        return (
            f"Translator(src_vocab={len(self.src_vocab)}, tgt_vocab={len(self.tgt_vocab)}, "
            f"d_model={c.d_model}, layers={c.num_encoder_layers}+{c.num_decoder_layers})"
        )


def _sentence_list(sentences) -> list[str]:
    """一句（``str``）或多句（列表、元组）→ 句子列表；别的类型报 ``TypeError``。"""
    batch = [sentences] if isinstance(sentences, str) else sentences
    if not isinstance(batch, (list, tuple)) or not all(isinstance(s, str) for s in batch):
        raise TypeError(f"sentences must be a str or a list of str, got {type(sentences).__name__}")
    return list(batch)


def translator_config(
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    d_model: int = 128,
    num_heads: int = 4,
    num_layers: int = 2,
    d_ff: int = 256,
    dropout: float = 0.1,
    max_len: int = 80,
) -> TransformerConfig:
    """按词表大小给出翻译模型的配置：编码器、解码器各 ``num_layers`` 层。

    默认值是“完整模型”一章用的尺寸（约 68 万个参数），在 2 核 CPU 上几分钟内能训练好。
    """
    check_instance("src_vocab", src_vocab, Vocab)
    check_instance("tgt_vocab", tgt_vocab, Vocab)
    return TransformerConfig(
        src_vocab_size=len(src_vocab),
        tgt_vocab_size=len(tgt_vocab),
        d_model=d_model,
        num_heads=num_heads,
        num_encoder_layers=num_layers,
        num_decoder_layers=num_layers,
        d_ff=d_ff,
        dropout=dropout,
        max_len=max_len,
        pad_id=src_vocab.pad_id,
    )


def new_translator(
    src_vocab: Vocab, tgt_vocab: Vocab, seed: int | None = None, **sizes
) -> Translator:
    """建一个新的（未训练的）翻译器，模型尺寸见 :func:`translator_config`（``sizes`` 原样传给它）。

    ``seed=None`` 时像任何 ``nn.Module`` 一样从全局随机数初始化（``torch.manual_seed(0)`` 之后
    调用它，与 ``seed=0`` 得到同样的权重）；给了 ``seed`` 时在 ``torch.random.fork_rng()`` 里用
    ``torch.manual_seed(seed)`` 初始化：同一个 ``seed`` 得到同样的初始权重，全局随机数状态不变。

    例子::

        >>> from tinyformer import Vocab
        >>> src_vocab, tgt_vocab = Vocab([["我", "爱", "北京"]]), Vocab([["i", "love", "beijing"]])
        >>> state = torch.get_rng_state()
        >>> a = new_translator(src_vocab, tgt_vocab, seed=0, d_model=16, d_ff=32)
        >>> b = new_translator(src_vocab, tgt_vocab, seed=0, d_model=16, d_ff=32)
        >>> torch.equal(a.model.output.weight, b.model.output.weight)
        True
        >>> torch.equal(torch.get_rng_state(), state)
        True
    """
    config = translator_config(src_vocab, tgt_vocab, **sizes)
    if seed is None:
        return Translator(Transformer(config), src_vocab, tgt_vocab)
    check_seed("seed", seed)
    with seeded(seed):
        model = Transformer(config)
    return Translator(model, src_vocab, tgt_vocab)
