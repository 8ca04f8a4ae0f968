"""翻译器：把训练好的模型和两张词表包在一起——翻译句子、评估、看交叉注意力、存取检查点（第 8 章讲解）。

检查点是一个只含张量、数字、字符串、列表和字典的 ``dict``：模型配置、两张词表的
``itos`` 列表、``state_dict`` 和训练指标。所以读取时可以用 ``torch.load(..., weights_only=True)``，
它只会重建这些类型，不会执行检查点里的任意代码。

检查点可能是坏的（写到一半、被截断、别的文件）或者是故意构造的（配置里 ``max_len=2**31``
会让位置编码表要 16 GiB）。所以 :meth:`Translator.load` 先逐项检查，全部通过才建模型：
键和类型、配置在合理范围内、每个权重的形状与配置一致、权重都是有限数。任何一项不对都是
一个写明文件和问题的 ``ValueError``。写检查点用 :func:`~tinyformer.atomic.atomic_write`，
写到一半被打断时旧文件原封不动。
"""

from __future__ import annotations

import dataclasses
import io
import numbers
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import sacrebleu
import torch
from torch import Tensor

from ._checks import check_instance, check_int, check_positive_int, check_seed, shorten
from .atomic import atomic_write
from .decoding import beam_search, greedy_decode
from .model import Transformer, TransformerConfig
from .text import Vocab, tokenize_zh
from .training import pad_sequences
from .translation import detokenize_en

CHECKPOINT_FORMAT = "tinyformer-translator-1"
CHECKPOINT_KEYS = ("format", "config", "src_itos", "tgt_itos", "state_dict", "metrics")

# 读检查点时配置的上限：远大于本书用到的尺寸，又让一个坏文件没法要走几个 GiB 的内存。
# 层数、维数、词表大小还要与文件里的权重形状一致；位置编码表不存在文件里，所以另有
# max_len × d_model 的上限（建表时要 8 字节 × 这么多个 float64）。
CONFIG_LIMITS = {
    "src_vocab_size": 1_000_000,
    "tgt_vocab_size": 1_000_000,
    "d_model": 8192,
    "num_heads": 1024,
    "num_encoder_layers": 256,
    "num_decoder_layers": 256,
    "d_ff": 65536,
    "max_len": 65536,
}
MAX_POSITIONAL_TABLE = 2**24  # max_len × d_model 的上限（float64 时 128 MiB）


@dataclass(frozen=True)
class Evaluation:
    """在一组句对上评估的结果。

    属性:
        exact_match: 译文与参考译文逐字相同的比例。
        bleu: sacreBLEU 的语料级 BLEU（0–100）。
        hypotheses: 模型的译文。
        references: 参考译文。
    """

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


class Translator:
    """中译英翻译器 = :class:`~tinyformer.Transformer` + 源词表 + 目标词表。

    参数:
        model: 训练好的模型（本类会把它切到 ``eval()`` 模式后再解码）。
        src_vocab: 中文词表（``tokenize_zh`` 的词元）。
        tgt_vocab: 英文词表（``tokenize_en`` 的词元）。

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
        ValueError: sentence '我爱上海' has words not in the source vocabulary: ['上海']; the model can only translate words it was trained on
    """

    def __init__(self, model: Transformer, src_vocab: Vocab, tgt_vocab: Vocab):
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
        self.model, self.src_vocab, self.tgt_vocab = model, src_vocab, tgt_vocab
        self.metrics: dict = {}  # load() 填入检查点里存的训练指标

    @classmethod
    def build(
        cls,
        src_vocab: Vocab,
        tgt_vocab: Vocab,
        d_model: int = 128,
        num_heads: int = 4,
        num_layers: int = 2,
        d_ff: int = 256,
        dropout: float = 0.1,
        max_len: int = 80,
        seed: int = 0,
    ) -> Translator:
        """按词表大小建一个新的（未训练的）小模型：编码器、解码器各 ``num_layers`` 层。

        默认值是第 8 章用的尺寸（约 68 万个参数），在 2 核 CPU 上几分钟内能训练好；
        初始化用 ``torch.manual_seed(seed)``，所以同一个 ``seed`` 得到同样的初始权重。
        """
        check_seed("seed", seed)
        config = TransformerConfig(
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
        torch.manual_seed(seed)
        return cls(Transformer(config), src_vocab, tgt_vocab)

    def tokenize(self, sentence: str) -> list[str]:
        """用 jieba 切分中文句子；有词表外的词时报错并列出它们（而不是悄悄变成 ``<unk>``）。"""
        tokens = tokenize_zh(sentence)
        if not tokens:
            raise ValueError(f"sentence must contain at least one word, got {shorten(sentence)}")
        unknown = list(dict.fromkeys(self.src_vocab.unknown(tokens)))  # 去重，保持顺序
        if unknown:
            shown = (
                repr(unknown)
                if len(unknown) <= 10
                else f"{unknown[:10]!r}…（共 {len(unknown)} 个）"
            )
            raise ValueError(
                f"sentence {shorten(sentence)} has words not in the source vocabulary: {shown}; "
                "the model can only translate words it was trained on"
            )
        limit = self.model.config.max_len
        if len(tokens) > limit:
            raise ValueError(
                f"sentence {shorten(sentence)} has {len(tokens)} words, but the model reads at "
                f"most max_len={limit}; split it into shorter sentences"
            )
        return tokens

    def encode(self, sentences: Sequence[str]) -> Tensor:
        """句子列表 → 补齐的源句编号 (B, S)。"""
        ids = [self.src_vocab.encode(self.tokenize(s)) for s in sentences]
        return pad_sequences(ids, self.model.config.pad_id)

    def decode(self, ids: Tensor) -> list[str]:
        """解码出的目标编号 (B, 1 + L) → 英文句子（去掉特殊词元，再拼回句子）。"""
        return [
            detokenize_en(self.tgt_vocab.decode(row, strip_special=True)) for row in ids.tolist()
        ]

    def translate_ids(self, src: Tensor, beam_size: int = 1, max_len: int = 32) -> Tensor:
        """源句编号 (B, S) → 目标编号 (B, 1 + L)；``beam_size=1`` 用贪心解码，否则用束搜索。"""
        check_positive_int("beam_size", beam_size)
        self.model.eval()
        bos, eos = self.tgt_vocab.bos_id, self.tgt_vocab.eos_id
        if beam_size == 1:
            return greedy_decode(self.model, src, bos, eos, max_len=max_len)
        return beam_search(self.model, src, bos, eos, beam_size=beam_size, max_len=max_len)

    def translate(
        self, sentences: str | Sequence[str], beam_size: int = 1, max_len: int = 32
    ) -> str | list[str]:
        """翻译一句（``str``，返回 ``str``）或多句（列表，返回列表）。"""
        single = isinstance(sentences, str)
        batch = [sentences] if single else sentences
        if not isinstance(batch, (list, tuple)) or not all(isinstance(s, str) for s in batch):
            raise TypeError(
                f"sentences must be a str or a list of str, got {type(sentences).__name__}"
            )
        out = self.decode(self.translate_ids(self.encode(batch), beam_size, max_len))
        return out[0] if single else out

    def evaluate(
        self, pairs: Sequence, beam_size: int = 1, batch_size: int = 256, max_len: int = 32
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
        src = self.encode([sentence])  # (1, S)
        out = self.translate_ids(src, beam_size)  # (1, 1 + L)
        produced = out[0, 1:].tolist()
        eos = self.tgt_vocab.eos_id
        length = produced.index(eos) + 1 if eos in produced else len(produced)
        tgt_in = out[:, :length]  # <bos> y_1 … y_{L-1}：(1, T)
        target = layers[layer]
        target.need_weights = True
        try:
            self.model(src, tgt_in)
            weights = target.cross_attn_weights[0]  # (1, H, T, S) -> (H, T, S)
        finally:
            target.need_weights = False
        tgt_tokens = self.tgt_vocab.decode(produced[:length])
        return src_tokens, tgt_tokens, weights

    def save(self, path: str | Path, **metrics) -> None:
        """存成检查点：配置、两张词表、权重，以及数字或字符串指标（如 ``exact_match=0.99``）。

        文件是原子地写的（:func:`~tinyformer.atomic.atomic_write`）：写到一半被打断、磁盘满了，
        ``path`` 上原来的检查点都原封不动。``path`` 所在的文件夹不存在时先建好。
        numpy 的数（``np.float64(12.5)``）存成 Python 的 ``float``/``int``，读回时才能通过
        ``weights_only=True``。
        """
        checkpoint = {
            "format": CHECKPOINT_FORMAT,
            "config": dataclasses.asdict(self.model.config),
            "src_itos": list(self.src_vocab.itos),
            "tgt_itos": list(self.tgt_vocab.itos),
            "state_dict": self.model.state_dict(),
            "metrics": {name: _plain_metric(name, value) for name, value in metrics.items()},
        }
        # 先在内存里序列化，再一次写进文件：磁盘满时 write 抛出清楚的 OSError（直接写文件时
        # torch 的 zip 写入器把它包成 "unexpected pos 64 vs 0" 这样的 RuntimeError）
        buffer = io.BytesIO()
        torch.save(checkpoint, buffer)
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        with atomic_write(path) as file:
            file.write(buffer.getbuffer())

    @classmethod
    def load(cls, path: str | Path, map_location: str | torch.device = "cpu") -> Translator:
        """读取 :meth:`save` 存的检查点（``weights_only=True``：不执行检查点里的代码）。

        先检查再建模型（见模块说明）；文件不存在时抛出 ``FileNotFoundError``，其余一切问题
        （读不出、不是本书的检查点、缺键、配置越界、形状不符、权重有 nan/inf）都是
        ``ValueError("checkpoint '路径' …")``。
        """
        path = Path(path)
        if not path.exists():
            raise FileNotFoundError(f"no checkpoint at path={str(path)!r}")
        checkpoint = _read_checkpoint(path, map_location)
        config = _checked_config(path, checkpoint)
        src_vocab = _checked_vocab(path, checkpoint, "src_itos", config.src_vocab_size)
        tgt_vocab = _checked_vocab(path, checkpoint, "tgt_itos", config.tgt_vocab_size)
        state_dict = _checked_state_dict(path, checkpoint["state_dict"], config)
        metrics = checkpoint["metrics"]
        if not isinstance(metrics, dict) or not all(isinstance(k, str) for k in metrics):
            _refuse(path, f"has metrics that are not a dict with str keys: {shorten(metrics)}")
        model = Transformer(config)
        model.load_state_dict(state_dict)
        model.eval()
        translator = cls(model, src_vocab, tgt_vocab)
        translator.metrics = metrics
        return translator

    def __repr__(self) -> str:
        c = self.model.config
        return (
            f"Translator(src_vocab={len(self.src_vocab)}, tgt_vocab={len(self.tgt_vocab)}, "
            f"d_model={c.d_model}, layers={c.num_encoder_layers}+{c.num_decoder_layers})"
        )


def _plain_metric(name: str, value) -> float | int | str | bool:
    """指标 → Python 自带的 int/float/str/bool（``weights_only=True`` 只认这些）。"""
    if isinstance(value, (str, bool)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    raise TypeError(
        f"metrics must be numbers or strings, got {name}={shorten(value)} "
        f"of type {type(value).__name__}"
    )


def _refuse(path: Path, problem: str) -> NoReturn:
    """读检查点失败的唯一出口：一个写明文件和问题的 ValueError。"""
    raise ValueError(f"checkpoint {str(path)!r} {problem}")


def _read_checkpoint(path: Path, map_location) -> dict:
    """读出检查点的 dict，检查格式和键；读不出来（截断、空文件、随机字节、pickle 代码）时说明原因。"""
    if not path.is_file():
        _refuse(path, "is not a regular file (a directory or a device?)")
    if path.stat().st_size == 0:
        _refuse(path, "is empty (0 bytes): was its save interrupted?")
    try:
        checkpoint = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as err:  # noqa: BLE001 - torch 会抛出 RuntimeError、EOFError、UnpicklingError……
        text = str(err)
        if "Unsupported global" in text:  # pickle 想调用一个函数或建一个类：这正是要挡住的
            found = re.search(r"GLOBAL (\S+)", text)
            _refuse(
                path,
                "holds objects other than tensors, numbers and strings "
                f"({found.group(1) if found else 'a Python object'}); refused by "
                "torch.load(weights_only=True), nothing in it was run",
            )
        # 随机字节被当成 pickle 时 torch 的消息很长，有用的只是 "Unsupported operand N" 那一句
        found = re.search(r"Unsupported operand \S+", text)
        detail = found.group(0) if found else (text.splitlines() or [""])[0]
        _refuse(
            path,
            "could not be read (truncated, or not written by torch.save): "
            f"{type(err).__name__}: {detail[:120]}{'…' if len(detail) > 120 else ''}",
        )
    if not isinstance(checkpoint, dict) or checkpoint.get("format") != CHECKPOINT_FORMAT:
        _refuse(
            path,
            f"is not a tinyformer translator checkpoint (expected format={CHECKPOINT_FORMAT!r})",
        )
    missing = [k for k in CHECKPOINT_KEYS if k not in checkpoint]
    unexpected = sorted(str(k) for k in checkpoint if k not in CHECKPOINT_KEYS)
    if missing or unexpected:
        _refuse(path, f"has missing keys {missing} and unexpected keys {unexpected}")
    return checkpoint


def _checked_config(path: Path, checkpoint: dict) -> TransformerConfig:
    """配置：字段齐全、类型和取值合法（TransformerConfig 自己检查）、不超过 CONFIG_LIMITS。"""
    raw = checkpoint["config"]
    if not isinstance(raw, dict):
        _refuse(path, f"has a config of type {type(raw).__name__}, expected a dict")
    fields = [f.name for f in dataclasses.fields(TransformerConfig)]
    missing = [k for k in fields if k not in raw]
    unexpected = sorted(str(k) for k in raw if k not in fields)
    if missing or unexpected:
        _refuse(path, f"has config with missing fields {missing} and unknown fields {unexpected}")
    try:
        config = TransformerConfig(**raw)
    except (TypeError, ValueError) as err:
        _refuse(path, f"has an invalid config: {err}")
    for name, limit in CONFIG_LIMITS.items():
        if getattr(config, name) > limit:
            _refuse(path, f"has config {name}={getattr(config, name)}, above the limit {limit}")
    if config.max_len * config.d_model > MAX_POSITIONAL_TABLE:
        _refuse(
            path,
            f"has config max_len * d_model = {config.max_len} * {config.d_model}, above the limit "
            f"{MAX_POSITIONAL_TABLE} for the positional table",
        )
    return config


def _checked_vocab(path: Path, checkpoint: dict, key: str, size: int) -> Vocab:
    itos = checkpoint[key]
    if not isinstance(itos, list) or not all(isinstance(tok, str) for tok in itos):
        _refuse(path, f"has {key} of type {type(itos).__name__}, expected a list of str")
    if len(itos) != size:
        _refuse(path, f"has {len(itos)} entries in {key} but config says {size}")
    try:
        return Vocab.from_itos(itos)
    except ValueError as err:
        _refuse(path, f"has an invalid {key}: {err}")


def _checked_state_dict(path: Path, state_dict, config: TransformerConfig) -> dict:
    """权重：键、形状、dtype 与按 config 建的模型一致，全是有限数。

    "应有的形状"来自在 meta 设备上建的模型：它只有形状、没有数据，不占内存。
    config 已经过 CONFIG_LIMITS，建它很快。
    """
    if not isinstance(state_dict, dict) or not all(
        isinstance(k, str) and isinstance(v, Tensor) for k, v in state_dict.items()
    ):
        _refuse(path, "has a state_dict that is not a dict of str -> tensor")
    with torch.device("meta"):
        expected = Transformer(config).state_dict()
    missing = [k for k in expected if k not in state_dict]
    unexpected = [k for k in state_dict if k not in expected]
    if missing or unexpected:
        _refuse(
            path,
            f"has a state_dict that does not fit its config: {len(missing)} missing keys "
            f"{missing[:3]}, {len(unexpected)} unexpected keys {unexpected[:3]}",
        )
    for name, tensor in state_dict.items():
        want = expected[name]
        if tensor.shape != want.shape or tensor.dtype != want.dtype:
            _refuse(
                path,
                f"has state_dict[{name!r}] of shape {tuple(tensor.shape)} and dtype {tensor.dtype}, "
                f"but its config needs shape {tuple(want.shape)} and dtype {want.dtype}",
            )
        bad = int((~torch.isfinite(tensor)).sum())
        if bad:
            _refuse(path, f"has {bad} non-finite values (nan or inf) in state_dict[{name!r}]")
    return state_dict
