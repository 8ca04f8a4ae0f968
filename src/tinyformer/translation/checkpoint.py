"""检查点：把 :class:`~tinyformer.translation.translator.Translator` 存进文件、从文件读回（“完整模型”一章讲解）。

检查点是一个 safetensors 文件（:mod:`tinyformer.weights`）：张量是模型的权重，JSON 元数据是
建模型要的一切——配置、两张词表的 ``itos`` 列表和训练指标::

    {"format": "tinyformer-translator-2", "config": {...}, "src_itos": [...], "tgt_itos": [...],
     "metrics": {...}}

读取时先只读文件头里的元数据，限制配置里位置表的大小（:func:`~tinyformer.weights.build_checked`）后建模型，
再在读数据之前把文件头里张量的名字、形状、dtype 与模型逐个比较，核对 SHA-256 后逐个张量装入
（:func:`~tinyformer.weights.load_weights`）：读文件不执行
任何代码，一个配置写着 ``max_len=10**8`` 的小文件也不能让机器去分配十几 GB。这里另外核对两类结果会
悄悄出错的问题：``pad_id`` 与词表的 ``<pad>`` 不同（真正的词会被当成补齐位遮掉），权重里有 nan 或 inf
（写诗的检查点也一样，在 :mod:`tinyformer.weights` 里查）。

旧的 ``torch.save``（pickle）检查点不再直接读——读 pickle 就是让文件决定构造哪些对象。
:func:`convert_checkpoint` 用 ``torch.load(weights_only=True)`` 把它转换成新格式（一行命令）::

    python -m tinyformer.translation convert OLD.pt NEW.safetensors

转换出的文件带着 SHA-256，以后读它的人都会相信它，所以转换之前先核对旧文件：zip 里每个成员的 CRC、
没有同名的两个成员，共享的矩阵（输出层 = 目标词嵌入）在旧的 ``state_dict`` 里的两份相等。

任何问题都是一个写明文件和原因的 :class:`~tinyformer.weights.WeightsError`（``ValueError`` 的子类），
它的 ``reason`` 是原因的种类，命令行据此给读者一句中文。
"""

from __future__ import annotations

import dataclasses
import numbers
import os
import pickle
import re
import zipfile
from collections import Counter
from pathlib import Path

import torch

from .._checks import check_instance, shorten
from ..model import Transformer, TransformerConfig
from ..text import Vocab
from ..weights import (
    WeightsError,
    build_checked,
    check_float32,
    load_tensors,
    load_weights,
    open_for_reading,
    read_metadata,
    save_weights,
)
from .translator import Translator

__all__ = ["CONVERT_COMMAND", "convert_checkpoint", "load_checkpoint", "save_checkpoint"]

FORMAT = "tinyformer-translator-2"
CONVERT_COMMAND = "python -m tinyformer.translation convert OLD.pt NEW.safetensors"


def save_checkpoint(translator: Translator, path: str | os.PathLike, **metrics) -> None:
    """把 ``translator`` 存成检查点：权重，加上配置、两张词表和数字或字符串指标（如 ``exact_match=0.99``）。

    文件是原子地写的：写到一半被打断、磁盘满了，``path`` 上原来的文件都原封不动。所在的文件夹
    不存在时先建好。numpy 的数（``np.float64(12.5)``）存成 Python 的 ``float``/``int``。
    模型的权重必须是 float32（``.half()`` 过的先 ``.float()``）：读回时按配置建的是 float32 模型。

    例子::

        >>> import tempfile, pathlib
        >>> from tinyformer import Vocab
        >>> from tinyformer.translation.translator import new_translator
        >>> translator = new_translator(Vocab([["我"]]), Vocab([["i"]]), seed=0, d_model=16, d_ff=32)
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "m.safetensors"
        >>> save_checkpoint(translator, path, bleu=12.5)
        >>> load_checkpoint(path).metrics
        {'bleu': 12.5}
    """
    check_instance("translator", translator, Translator)
    check_float32("translator.model", translator.model)  # 读回时建的是 float32 模型
    metadata = {
        "format": FORMAT,
        "config": dataclasses.asdict(translator.model.config),
        "src_itos": list(translator.src_vocab.itos),
        "tgt_itos": list(translator.tgt_vocab.itos),
        "metrics": {name: _plain_metric(name, value) for name, value in metrics.items()},
    }
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    save_weights(path, translator.model, metadata)


def load_checkpoint(path: str | os.PathLike) -> Translator:
    """读取 :func:`save_checkpoint` 存的检查点，返回 eval 模式的翻译器；旧的 ``.pt`` 文件的
    :class:`~tinyformer.weights.WeightsError` 里写着转换命令。"""
    try:
        metadata = read_metadata(path)
    except WeightsError as error:
        if error.reason == "pickle":  # 旧格式：告诉读者怎样转换
            raise WeightsError(
                path, "pickle", f"{error.message}; if it is an old tinyformer "
                f"checkpoint, convert it with: {CONVERT_COMMAND}",
            ) from None  # fmt: skip
        raise
    if metadata.get("format") != FORMAT:
        raise WeightsError(
            path, "metadata", f"is not a tinyformer translator (format={FORMAT!r})", "format"
        )
    translator = build_checked(path, lambda: _build(path, metadata), *_positions(metadata))
    load_weights(path, translator.model)
    return translator


def convert_checkpoint(source: str | os.PathLike, target: str | os.PathLike) -> Translator:
    """把旧的 ``torch.save`` 检查点 ``source`` 转换成 safetensors 检查点 ``target``；返回翻译器。

    ``torch.load(weights_only=True)`` 只重建张量、数字、字符串、列表和字典：pickle 想调用任何函数
    （如 ``os.system``）都被拒绝，什么也不运行，抛出 ``reason="pickle"`` 的 :class:`WeightsError`。
    torch.load 不核对 zip 的 CRC，也不管同名的成员，所以先由 :func:`_check_zip` 核对；装入时共享的
    矩阵两份必须相等（:func:`~tinyformer.weights.load_tensors`）。
    """
    try:
        # 文件对象：torch.load 不再按扩展名另选读法
        with open_for_reading(source, "a torch.save checkpoint") as file:
            _check_zip(source, file)
            old = torch.load(file, map_location="cpu", weights_only=True)
    except WeightsError:
        raise
    except pickle.UnpicklingError as error:
        found = re.search(r"GLOBAL (\S+)", str(error))  # pickle 想调用一个函数：正是要挡住的
        if found is None:
            raise WeightsError(
                source, "damaged", "not a torch.save checkpoint", "not_torch_save"
            ) from None
        raise WeightsError(
            source, "pickle", f"unsafe: its pickle asks to call {found.group(1)}; refused by "
            "torch.load(weights_only=True), nothing in it was run",
        ) from None  # fmt: skip
    except Exception as error:  # noqa: BLE001 - 截断、随机字节：torch 抛出 RuntimeError、EOFError……
        detail = shorten(" ".join(str(error).split()[:12]), 120)
        raise WeightsError(
            source,
            "damaged",
            f"not a torch.save checkpoint (truncated or damaged: {detail})",
            "not_torch_save",
        ) from None
    if not isinstance(old, dict) or not isinstance(old.get("state_dict"), dict):
        raise WeightsError(
            source, "metadata", "is not an old tinyformer translator checkpoint", "format"
        )
    state = old["state_dict"]
    for name, tensor in state.items():
        if not isinstance(tensor, torch.Tensor):
            raise WeightsError(
                source, "metadata", f"its state_dict entry {shorten(name)} is not a tensor "
                f"(got {type(tensor).__name__})", "not_tensor", name=shorten(name),
            )  # fmt: skip
    translator = build_checked(source, lambda: _build(source, old), *_positions(old), tensors=state)
    load_tensors(source, translator.model, state)
    save_checkpoint(translator, target, **translator.metrics)
    return translator


def _check_zip(source, file) -> None:
    """``torch.save`` 的 zip：没有同名的两个成员，每个成员的 CRC 都对；读完把 ``file`` 倒回开头。

    torch.load 两样都不查：一个翻转的字节悄悄变成另一个权重，同名的两份只读其中一份。旧式（非 zip）的
    ``torch.save`` 文件没有校验和，这里没有什么可查。
    """
    if file.read(4) != b"PK\x03\x04":
        file.seek(0)
        return
    file.seek(0)
    with zipfile.ZipFile(file) as archive:
        names = Counter(info.filename for info in archive.infolist())
        twice = [name for name, count in names.items() if count > 1]
        if twice:
            raise WeightsError(
                source, "damaged", f"its zip archive holds {names[twice[0]]} members named "
                f"{twice[0]!r} (torch.load would read one of them silently)",
                "zip_duplicate", member=twice[0], count=names[twice[0]],
            )  # fmt: skip
        bad = archive.testzip()
        if bad is not None:
            raise WeightsError(
                source, "damaged", f"CRC mismatch in member {bad!r} of its zip archive: "
                "the file was damaged after torch.save wrote it", "zip_crc", member=bad,
            )  # fmt: skip
    file.seek(0)


def _positions(metadata: dict) -> tuple:
    """元数据里配置的 (max_len, d_model)，原样（还没检查过；缺了就是 None）。"""
    config = metadata.get("config")
    config = config if isinstance(config, dict) else {}
    return config.get("max_len"), config.get("d_model")


def _build(path, metadata: dict) -> Translator:
    """按元数据建一次模型和翻译器（权重还没装入）；元数据不对时说明是哪一项。"""
    try:
        config = TransformerConfig(**metadata["config"])
        vocabs = [Vocab.from_itos(metadata[key]) for key in ("src_itos", "tgt_itos")]
        for key, vocab in zip(("src_itos", "tgt_itos"), vocabs, strict=True):
            if vocab.pad_id != config.pad_id:  # 否则真正的词会被当成补齐位遮掉，没有任何报错
                raise ValueError(
                    f"config pad_id={config.pad_id} but <pad> is id {vocab.pad_id} in {key}"
                )
        metrics = {k: _plain_metric(k, v) for k, v in metadata.get("metrics", {}).items()}
        translator = Translator(Transformer(config), *vocabs, metrics=metrics)
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        if isinstance(error, KeyError):
            raise WeightsError(
                path, "metadata", f"has an invalid translator description: missing {error}",
                "missing_key", key=error.args[0],
            ) from None  # fmt: skip
        raise WeightsError(
            path, "metadata", f"has an invalid translator description: {error}", "config"
        ) from None
    translator.model.eval()
    return translator


def _plain_metric(name: str, value) -> float | int | str | bool:
    """指标 → Python 自带的 int/float/str/bool（JSON 只认这些）。"""
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
