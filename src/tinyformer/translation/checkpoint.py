"""检查点：把 :class:`~tinyformer.translation.translator.Translator` 存进文件、从文件读回（“完整模型”一章讲解）。

检查点是一个只含张量、数字、字符串、列表和字典的 ``dict``：模型配置、两张词表的
``itos`` 列表、``state_dict`` 和训练指标。所以读取时可以用 ``torch.load(..., weights_only=True)``，
它只会重建这些类型，不会执行检查点里的任意代码。

检查点可能是坏的（写到一半、被截断、某个字节翻转了）或者是故意构造的（配置里 ``max_len=2**31``
会让位置编码表要 16 GiB；12 KB 的文件里放形状很大、步长为 0 的视图；1.5 MB 的压缩炸弹
解压成 1.5 GiB）。所以读一个检查点的代价要与文件本身的大小相当，:func:`load_checkpoint`
按这个顺序检查，全部通过才建模型：

1. 文件是 ``torch.save`` 写的 zip：每个成员都不压缩（``torch.save`` 从不压缩，压缩的成员只能是
   别人改过的），总大小有上限；每个成员的 CRC-32 都对得上（``zipfile.ZipFile.testzip``，
   翻转一个字节就能查出来）。这些都在 ``torch.load`` 之前，只读 zip 的目录和数据本身。
2. ``torch.load(weights_only=True)``：只重建张量、数字、字符串、列表和字典，不执行代码。
3. 键和类型；指标只能是数字、字符串或布尔值（不能是张量）；配置在合理范围内，
   ``pad_id`` 与词表的 ``<pad>`` 相同。
4. 每个权重都是 CPU 上普通的稠密张量（不是稀疏、meta 张量），连续，它的存储真的装得下它的
   全部元素（挡住步长为 0 的"展开"视图），除了共享的输出层与目标端嵌入，没有两个权重共用存储：
   于是模型要的内存不超过文件里真有的字节。然后才比较形状、dtype，检查有限数，
   共享的两个权重相等。

任何一项不对都是一个写明文件和问题的 :class:`CheckpointError`（``ValueError`` 的子类）：它的
``reason`` 是问题的种类（:data:`REASONS` 的键），``details`` 是具体的值，命令行据此给读者一句中文。:func:`save_checkpoint` 用
:func:`~tinyformer.atomic.atomic_write` 写文件，写到一半被打断时旧文件原封不动。
"""

from __future__ import annotations

import dataclasses
import errno
import io
import numbers
import re
import zipfile
from pathlib import Path
from typing import NoReturn

import torch
from torch import Tensor

from .._checks import check_instance, shorten
from ..atomic import atomic_write
from ..model import Transformer, TransformerConfig
from ..text import Vocab
from .translator import Translator

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
# zip 里全部成员解开后的总大小：不超过文件本身的大小（torch.save 不压缩，成员就是原样的字节）
# 加上一点余量，也不超过一个绝对上限。
MAX_UNCOMPRESSED_BYTES = 4 * 2**30


# 读检查点失败的每一种原因 → 英文说明（``details`` 填进花括号）。命令行的中文说明按同样的键
# 写在 tinyformer.translation.cli.READER_MESSAGES 里。
REASONS = {
    "not_a_file": "is not a regular file (a directory or a device?)",
    "empty": "is empty (0 bytes): was its save interrupted?",
    "compressed": "has {count} compressed zip members (first {first!r}); torch.save stores them "
    "uncompressed, so this file was altered",
    "too_big": "claims {total} bytes of content in a {size}-byte file, above the limit {limit}",
    "unreadable": "could not be read (truncated, or not written by torch.save): {error}",
    "damaged": "is damaged: zip member {member!r} fails its CRC-32 check "
    "(bytes changed after it was saved)",
    "unsafe": "holds objects other than tensors, numbers and strings ({name}); refused by "
    "torch.load(weights_only=True), nothing in it was run",
    "not_a_checkpoint": "is not a tinyformer translator checkpoint (expected format={format!r})",
    "keys": "has missing keys {missing} and unexpected keys {unexpected}",
    "metrics": "has metrics that are not a dict with str keys: {value}",
    "metric_type": "has metrics[{name!r}] of type {type}; metrics must be numbers, strings or "
    "bools",
    "config_type": "has a config of type {type}, expected a dict",
    "config_fields": "has config with missing fields {missing} and unknown fields {unexpected}",
    "config_invalid": "has an invalid config: {error}",
    "config_limit": "has config {field}={value}, above the limit {limit}",
    "positional_limit": "has config max_len * d_model = {max_len} * {d_model}, above the limit "
    "{limit} for the positional table",
    "vocab_type": "has {key} of type {type}, expected a list of str",
    "vocab_size": "has {count} entries in {key} but config says {size}",
    "vocab_invalid": "has an invalid {key}: {error}",
    "pad_id": "has config pad_id={pad_id} but <pad> is id {vocab_pad_id} in {key}: real words "
    "would be masked out as padding",
    "state_dict_type": "has a state_dict that is not a dict of str -> tensor",
    "state_dict_keys": "has a state_dict that does not fit its config: {missing_count} missing "
    "keys {missing}, {unexpected_count} unexpected keys {unexpected}",
    "weight_shape": "has state_dict[{name!r}] of shape {shape} and dtype {dtype}, but its config "
    "needs shape {want_shape} and dtype {want_dtype}",
    "non_finite": "has {count} non-finite values (nan or inf) in state_dict[{name!r}]",
    "tied_differ": "has tie_output=True but state_dict[{name!r}] and state_dict[{other!r}] "
    "differ: tied weights must be equal",
    "layout": "has state_dict[{name!r}] with layout={layout}, device={device}; weights must be "
    "dense CPU tensors",
    "strided": "has state_dict[{name!r}] with strides {strides} for shape {shape}: weights must "
    "be contiguous (not expanded views)",
    "storage": "has state_dict[{name!r}] of shape {shape} needing {needed} bytes in a storage of "
    "{held} bytes",
    "shared": "has state_dict[{name!r}] sharing its storage with state_dict[{other!r}]; only "
    "tied weights may share",
}


class CheckpointError(ValueError):
    """检查点读不出来或不可信。``str(err)`` 是英文说明：``checkpoint '路径' …``。

    属性:
        path: 检查点的路径（``str``）。
        reason: 问题的种类，:data:`REASONS` 的一个键（如 ``"damaged"``、``"config_limit"``）。
        details: 填进说明的具体值（如 ``{"field": "max_len", "value": 2**31, "limit": 65536}``）。
    """

    def __init__(self, path: str | Path, reason: str, **details):
        self.path, self.reason, self.details = str(path), reason, details
        super().__init__(f"checkpoint {self.path!r} {REASONS[reason].format(**details)}")


def save_checkpoint(translator: Translator, path: str | Path, **metrics) -> None:
    """把 ``translator`` 存成检查点：配置、两张词表、权重，以及数字或字符串指标（如 ``exact_match=0.99``）。

    文件是原子地写的（:func:`~tinyformer.atomic.atomic_write`）：写到一半被打断、磁盘满了，
    ``path`` 上原来的检查点都原封不动。``path`` 所在的文件夹不存在时先建好。
    numpy 的数（``np.float64(12.5)``）存成 Python 的 ``float``/``int``，读回时才能通过
    ``weights_only=True``。
    """
    check_instance("translator", translator, Translator)
    checkpoint = {
        "format": CHECKPOINT_FORMAT,
        "config": dataclasses.asdict(translator.model.config),
        "src_itos": list(translator.src_vocab.itos),
        "tgt_itos": list(translator.tgt_vocab.itos),
        "state_dict": translator.model.state_dict(),
        "metrics": {name: _plain_metric(name, value) for name, value in metrics.items()},
    }
    # 先在内存里序列化，再一次写进文件：磁盘满时 write 抛出清楚的 OSError（直接写文件时
    # torch 的 zip 写入器把它包成 "unexpected pos 64 vs 0" 这样的 RuntimeError）
    buffer = io.BytesIO()
    torch.save(checkpoint, buffer)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path) as file:
        file.write(buffer.getbuffer())


def load_checkpoint(path: str | Path, map_location: str | torch.device = "cpu") -> Translator:
    """读取 :func:`save_checkpoint` 存的检查点（``weights_only=True``：不执行检查点里的代码）。

    先检查再建模型（见模块说明）；文件不存在时抛出 ``FileNotFoundError``，其余一切问题
    （读不出、不是本书的检查点、缺键、配置越界、形状不符、权重有 nan/inf）都是
    :class:`CheckpointError`（``ValueError("checkpoint '路径' …")``）。
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(errno.ENOENT, "no checkpoint at this path", str(path))
    _check_zip(path)
    checkpoint = _read_checkpoint(path, map_location)
    metrics = _checked_metrics(path, checkpoint["metrics"])
    config = _checked_config(path, checkpoint)
    src_vocab = _checked_vocab(path, checkpoint, "src_itos", config.src_vocab_size)
    tgt_vocab = _checked_vocab(path, checkpoint, "tgt_itos", config.tgt_vocab_size)
    for key, vocab in (("src_itos", src_vocab), ("tgt_itos", tgt_vocab)):
        if vocab.pad_id != config.pad_id:
            _refuse(path, "pad_id", pad_id=config.pad_id, vocab_pad_id=vocab.pad_id, key=key)
    state_dict = _checked_state_dict(path, checkpoint["state_dict"], config)
    model = Transformer(config)
    model.load_state_dict(state_dict)
    model.eval()
    return Translator(model, src_vocab, tgt_vocab, metrics=metrics)


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


def _refuse(path: Path, reason: str, **details) -> NoReturn:
    """读检查点失败的唯一出口：一个写明文件和问题的 :class:`CheckpointError`。"""
    raise CheckpointError(path, reason, **details)


def _check_zip(path: Path) -> None:
    """zip 的目录与每个成员的 CRC-32：在 ``torch.load`` 之前、不解压任何东西就挡住压缩炸弹和被改过的字节。"""
    if not path.is_file():
        _refuse(path, "not_a_file")
    size = path.stat().st_size
    if size == 0:
        _refuse(path, "empty")
    try:
        with zipfile.ZipFile(path) as archive:
            members = archive.infolist()
            compressed = [m.filename for m in members if m.compress_type != zipfile.ZIP_STORED]
            if compressed:
                _refuse(path, "compressed", count=len(compressed), first=compressed[0])
            total = sum(m.file_size for m in members)
            limit = min(size + 2**20, MAX_UNCOMPRESSED_BYTES)
            if total > limit:
                _refuse(path, "too_big", total=total, size=size, limit=limit)
            damaged = archive.testzip()  # 逐个读出成员、核对 CRC-32；返回第一个坏成员的名字
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError) as err:
        _refuse(path, "unreadable", error=f"{type(err).__name__}: {str(err)[:120]}")
    if damaged is not None:
        _refuse(path, "damaged", member=damaged)


def _checked_metrics(path: Path, metrics) -> dict:
    """指标：str 键 → 数字、字符串或布尔值（save_checkpoint 只存这些）。"""
    if not isinstance(metrics, dict) or not all(isinstance(k, str) for k in metrics):
        _refuse(path, "metrics", value=shorten(metrics))
    for name, value in metrics.items():
        if not isinstance(value, (int, float, str, bool)):
            _refuse(path, "metric_type", name=name, type=type(value).__name__)
    return metrics


def _read_checkpoint(path: Path, map_location) -> dict:
    """读出检查点的 dict，检查格式和键；读不出来（截断、空文件、随机字节、pickle 代码）时说明原因。"""
    try:
        checkpoint = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as err:  # noqa: BLE001 - torch 会抛出 RuntimeError、EOFError、UnpicklingError……
        text = str(err)
        if "Unsupported global" in text:  # pickle 想调用一个函数或建一个类：这正是要挡住的
            found = re.search(r"GLOBAL (\S+)", text)
            _refuse(path, "unsafe", name=found.group(1) if found else "a Python object")
        # 随机字节被当成 pickle 时 torch 的消息很长，有用的只是 "Unsupported operand N" 那一句
        found = re.search(r"Unsupported operand \S+", text)
        detail = found.group(0) if found else (text.splitlines() or [""])[0]
        shown = f"{detail[:120]}{'…' if len(detail) > 120 else ''}"
        _refuse(path, "unreadable", error=f"{type(err).__name__}: {shown}")
    if not isinstance(checkpoint, dict) or checkpoint.get("format") != CHECKPOINT_FORMAT:
        _refuse(path, "not_a_checkpoint", format=CHECKPOINT_FORMAT)
    missing = [k for k in CHECKPOINT_KEYS if k not in checkpoint]
    unexpected = sorted(str(k) for k in checkpoint if k not in CHECKPOINT_KEYS)
    if missing or unexpected:
        _refuse(path, "keys", missing=missing, unexpected=unexpected)
    return checkpoint


def _checked_config(path: Path, checkpoint: dict) -> TransformerConfig:
    """配置：字段齐全、类型和取值合法（TransformerConfig 自己检查）、不超过 CONFIG_LIMITS。"""
    raw = checkpoint["config"]
    if not isinstance(raw, dict):
        _refuse(path, "config_type", type=type(raw).__name__)
    fields = [f.name for f in dataclasses.fields(TransformerConfig)]
    missing = [k for k in fields if k not in raw]
    unexpected = sorted(str(k) for k in raw if k not in fields)
    if missing or unexpected:
        _refuse(path, "config_fields", missing=missing, unexpected=unexpected)
    try:
        config = TransformerConfig(**raw)
    except (TypeError, ValueError) as err:
        _refuse(path, "config_invalid", error=str(err), field=_field_named(str(err), fields))
    for name, limit in CONFIG_LIMITS.items():
        if getattr(config, name) > limit:
            _refuse(path, "config_limit", field=name, value=getattr(config, name), limit=limit)
    if config.max_len * config.d_model > MAX_POSITIONAL_TABLE:
        _refuse(
            path,
            "positional_limit",
            max_len=config.max_len,
            d_model=config.d_model,
            limit=MAX_POSITIONAL_TABLE,
        )
    return config


def _field_named(message: str, fields: list[str]) -> str:
    """``TransformerConfig`` 的错误说明以出错的字段名开头（"d_model must be …"）：取出它。"""
    found = re.match(r"\w+", message)
    return found.group(0) if found and found.group(0) in fields else "config"


def _checked_vocab(path: Path, checkpoint: dict, key: str, size: int) -> Vocab:
    itos = checkpoint[key]
    if not isinstance(itos, list) or not all(isinstance(tok, str) for tok in itos):
        _refuse(path, "vocab_type", key=key, type=type(itos).__name__)
    if len(itos) != size:
        _refuse(path, "vocab_size", count=len(itos), key=key, size=size)
    try:
        return Vocab.from_itos(itos)
    except ValueError as err:
        _refuse(path, "vocab_invalid", key=key, error=str(err))


def _checked_state_dict(path: Path, state_dict, config: TransformerConfig) -> dict:
    """权重：键、形状、dtype 与按 config 建的模型一致，全是有限数。

    "应有的形状"来自在 meta 设备上建的模型：它只有形状、没有数据，不占内存。
    config 已经过 CONFIG_LIMITS，建它很快。
    """
    if not isinstance(state_dict, dict) or not all(
        isinstance(k, str) and isinstance(v, Tensor) for k, v in state_dict.items()
    ):
        _refuse(path, "state_dict_type")
    _check_storages(path, state_dict, config)
    with torch.device("meta"):
        expected = Transformer(config).state_dict()
    missing = [k for k in expected if k not in state_dict]
    unexpected = [k for k in state_dict if k not in expected]
    if missing or unexpected:
        _refuse(
            path,
            "state_dict_keys",
            missing_count=len(missing),
            missing=missing[:3],
            unexpected_count=len(unexpected),
            unexpected=unexpected[:3],
        )
    for name, tensor in state_dict.items():
        want = expected[name]
        if tensor.shape != want.shape or tensor.dtype != want.dtype:
            _refuse(
                path,
                "weight_shape",
                name=name,
                shape=tuple(tensor.shape),
                dtype=tensor.dtype,
                want_shape=tuple(want.shape),
                want_dtype=want.dtype,
            )
        bad = int((~torch.isfinite(tensor)).sum())
        if bad:
            _refuse(path, "non_finite", count=bad, name=name)
    if config.tie_output and not torch.equal(state_dict[_TIED[0]], state_dict[_TIED[1]]):
        _refuse(path, "tied_differ", name=_TIED[0], other=_TIED[1])
    return state_dict


_TIED = ("output.weight", "tgt_embed.embedding.weight")  # tie_output=True 时是同一个参数


def _check_storages(path: Path, state_dict: dict, config: TransformerConfig) -> None:
    """每个权重都是 CPU 上连续的稠密张量，它的存储装得下它；除共享的一对外不共用存储。

    这样模型要的内存就是文件里真有的字节：一个步长为 0 的视图（``torch.zeros(1).expand(n)``）
    只占 4 字节，却声称有 n 个元素，在这里就被挡住，不会在后面被展开成 n 个数。
    """
    owners: dict[int, str] = {}
    for name, tensor in state_dict.items():
        if tensor.layout != torch.strided or tensor.is_meta or tensor.device.type != "cpu":
            _refuse(path, "layout", name=name, layout=tensor.layout, device=tensor.device)
        if tensor.is_quantized or not tensor.is_contiguous():
            _refuse(path, "strided", name=name, strides=tensor.stride(), shape=tuple(tensor.shape))
        needed = (tensor.storage_offset() + tensor.numel()) * tensor.element_size()
        held = tensor.untyped_storage().nbytes()
        if needed > held:
            _refuse(path, "storage", name=name, shape=tuple(tensor.shape), needed=needed, held=held)
        pointer = tensor.untyped_storage().data_ptr()
        other = owners.setdefault(pointer, name)
        if other != name and not (config.tie_output and {other, name} == set(_TIED)):
            _refuse(path, "shared", name=name, other=other)
