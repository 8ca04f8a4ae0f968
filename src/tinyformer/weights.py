"""权重文件：safetensors 加一段 JSON（“完整模型”一章讲解，中译英与写诗两个应用都用它）。

``torch.save`` 写的是 pickle：读它就是让文件告诉 Python 去构造哪些对象，一个恶意文件可以让
``pickle`` 调用 ``os.system``。safetensors（Hugging Face 为"别人给的权重"设计的格式）只有两部分：

1. 开头 8 个字节是小端整数 n，接着 n 个字节的 JSON 头：每个张量的名字、dtype、形状和它在数据区里
   的起止字节，外加一个字符串到字符串的 ``__metadata__``；
2. 数据区：各张量的原始字节，一个挨一个，不压缩。

读它不执行任何代码；库在读数据之前核对头里的起止字节恰好铺满数据区、互不重叠、与形状一致，
所以被截断或拼错的文件读不进来。模型的配置、词表这些"建模型要用的东西"以 JSON 放在
``__metadata__`` 的 ``"tinyformer"`` 键下：先只读头（:func:`read_metadata`）建好模型，再
:func:`load_weights` 按名字、形状严格装入（``load_state_dict(strict=True)``）。

共享的权重（输出层与词嵌入共用一个矩阵）只存一份：safetensors 不许两个名字指向同一块内存，
``safetensors.torch.load_model`` 装入时认得出这种共享。写文件用 :func:`~tinyformer.atomic.atomic_write`。
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load, load_model, save
from torch import nn

from .atomic import atomic_write

__all__ = ["WeightsError", "load_weights", "open_for_reading", "read_metadata", "save_weights"]

METADATA_KEY = "tinyformer"
DIGEST_KEY = "sha256"  # 数据区的 SHA-256（十六进制），读时核对


class WeightsError(ValueError):
    """权重文件读不进来，``reason`` 说原因的种类，消息写明文件和原因。

    ``reason`` 取 ``"missing"``（没有这个文件）、``"permission"``（没有读权限）、
    ``"not_a_file"``（是文件夹等）、``"pickle"``（``torch.save`` 写的 pickle 文件，不读）、
    ``"damaged"``（不是 safetensors 文件，或被截断、改坏了）、``"metadata"``（没有本包的 JSON，
    或 JSON 不对）、``"mismatch"``（张量的名字或形状与模型不符）。
    """

    def __init__(self, path: str | os.PathLike, reason: str, message: str):
        super().__init__(f"{os.fspath(path)!r}: {message}")
        self.path, self.reason, self.message = os.fspath(path), reason, message


def save_weights(
    path: str | os.PathLike, model: nn.Module, metadata: dict, dtype: torch.dtype | None = None
) -> None:
    """把 ``model`` 的参数和缓冲区连同 ``metadata``（能写成 JSON 的 dict）原子地写进 ``path``。

    ``dtype`` 给出时，浮点张量换成它再存（网页用的 ``torch.float16``：文件小一半）。

    例子::

        >>> import tempfile, pathlib, torch
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "tiny.safetensors"
        >>> save_weights(path, torch.nn.Linear(3, 2), {"in": 3, "out": 2})
        >>> read_metadata(path)
        {'in': 3, 'out': 2}
        >>> model = torch.nn.Linear(3, 2)
        >>> load_weights(path, model)
    """
    tensors, seen = {}, set()
    for name, tensor in model.state_dict().items():
        storage = (tensor.untyped_storage().data_ptr(), tensor.storage_offset(), tensor.shape)
        if storage in seen:  # 共享的权重（如输出层 = 词嵌入）只存第一个名字
            continue
        seen.add(storage)
        if dtype is not None and tensor.is_floating_point():
            tensor = tensor.to(dtype)
        tensors[name] = tensor.detach().cpu().contiguous()
    header = {METADATA_KEY: json.dumps(metadata, ensure_ascii=False)}
    body = save(tensors, metadata=header)
    body = body[8 + int.from_bytes(body[:8], "little") :]  # 数据区与元数据无关
    # 数据区的 SHA-256：safetensors 不查数据本身，一个翻转的字节会悄悄变成另一个权重
    data = save(tensors, metadata={**header, DIGEST_KEY: hashlib.sha256(body).hexdigest()})
    with atomic_write(path) as file:
        file.write(_sorted_header(data))


def _sorted_header(data: bytes) -> bytes:
    """同一个头按键排好重写：safetensors 写 ``__metadata__`` 的各键时顺序不定，排好之后同样的权重写出同样的字节。

    头的长度补空格到 8 的倍数（与 safetensors 自己的写法相同，数据区按 8 字节对齐）。
    """
    n = int.from_bytes(data[:8], "little")
    header = json.dumps(json.loads(data[8 : 8 + n]), separators=(",", ":"), sort_keys=True)
    text = header.encode("utf-8")
    text += b" " * (-len(text) % 8)
    return len(text).to_bytes(8, "little") + text + data[8 + n :]


def read_metadata(path: str | os.PathLike) -> dict:
    """只读 ``path`` 的头，返回 :func:`save_weights` 存进去的 ``metadata``。"""
    try:
        with safe_open(_readable(path), framework="pt") as file:
            header = file.metadata() or {}
    except SafetensorError as error:
        raise _damaged(path, error) from None
    if METADATA_KEY not in header:
        raise WeightsError(path, "metadata", "a safetensors file without tinyformer's metadata")
    try:
        metadata = json.loads(header[METADATA_KEY])
    except json.JSONDecodeError as error:
        raise WeightsError(path, "metadata", f"its metadata is not valid JSON ({error})") from None
    if not isinstance(metadata, dict):
        raise WeightsError(path, "metadata", "its metadata is not a JSON object")
    return metadata


def load_weights(path: str | os.PathLike, model: nn.Module) -> None:
    """把 ``path`` 里的张量装进 ``model``：名字与形状必须与 ``model.state_dict()`` 一一对应。"""
    data = Path(_readable(path)).read_bytes()
    try:
        with safe_open(str(path), framework="pt") as file:
            digest = (file.metadata() or {}).get(DIGEST_KEY)
    except SafetensorError as error:
        raise _damaged(path, error) from None
    start = 8 + int.from_bytes(data[:8], "little")
    if digest is not None and hashlib.sha256(data[start:]).hexdigest() != digest:
        raise WeightsError(path, "damaged", "its tensor data does not match its SHA-256 (damaged)")
    expected = model.state_dict()
    for name, tensor in load(data).items():  # load_state_dict 会悄悄换 dtype（int64 → float32）
        if name in expected and tensor.dtype != expected[name].dtype:
            raise WeightsError(
                path,
                "mismatch",
                f"{name!r} has dtype {tensor.dtype}, the model {expected[name].dtype}",
            )
    try:
        load_model(model, str(path), strict=True)
    except SafetensorError as error:
        raise _damaged(path, error) from None
    except RuntimeError as error:  # strict 装入：缺的、多的名字，或形状不符
        detail = " ".join(str(error).split())  # torch 逐个列出不符的张量：只留开头
        detail = detail if len(detail) <= 300 else f"{detail[:300]}… ({len(detail)} characters)"
        raise WeightsError(path, "mismatch", f"does not match the model: {detail}") from None


@contextlib.contextmanager
def open_for_reading(path: str | os.PathLike) -> Iterator[BinaryIO]:
    """以二进制方式打开 ``path`` 读；没有这个文件、没有读权限、是文件夹时抛出写明原因的 :class:`WeightsError`。"""
    try:
        file = Path(path).open("rb")
    except FileNotFoundError:
        raise WeightsError(path, "missing", "no such file") from None
    except PermissionError:
        raise WeightsError(path, "permission", "permission denied") from None
    except IsADirectoryError:
        raise WeightsError(path, "not_a_file", "is a directory, not a weights file") from None
    with file:
        yield file


def _readable(path: str | os.PathLike) -> str:
    """``path`` 是一个能读的普通文件；否则给出真正的原因。pickle 文件在这里就拦下，不去解析。"""
    path = Path(path)
    with open_for_reading(path) as file:
        start = file.read(8)
        regular = stat.S_ISREG(os.fstat(file.fileno()).st_mode)
    if not regular:  # /dev/null、管道……
        raise WeightsError(path, "not_a_file", "is not a regular file (a device or a pipe?)")
    # torch.save 的 zip，或旧式 pickle（\x80 + 协议号 2–5）。safetensors 的头长度也可能以 \x80 开头，
    # 但它小于 2**32，后 4 个字节是 0；旧式 torch.save 在那里是它的魔数
    legacy_pickle = start[:1] == b"\x80" and start[1:2] in b"\x02\x03\x04\x05" and any(start[4:])
    if start[:4] == b"PK\x03\x04" or legacy_pickle:
        raise WeightsError(
            path,
            "pickle",
            "a torch.save (pickle) file: unsafe to load, since unpickling can run code; "
            "tinyformer reads safetensors files only",
        )
    return str(path)


def _damaged(path: str | os.PathLike, error: SafetensorError) -> WeightsError:
    return WeightsError(
        path, "damaged", f"not a valid safetensors file (truncated or damaged: {error})"
    )
