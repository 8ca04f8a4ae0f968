"""权重文件：safetensors 加一段 JSON（“完整模型”一章讲解，中译英与写诗两个应用都用它）。

``torch.save`` 写的是 pickle：读它就是让文件告诉 Python 去构造哪些对象，一个恶意文件可以让
``pickle`` 调用 ``os.system``。safetensors（Hugging Face 为"别人给的权重"设计的格式）只有两部分：

1. 开头 8 个字节是小端整数 n，接着 n 个字节的 JSON 头：每个张量的名字、dtype、形状和它在数据区里
   的起止字节，外加一个字符串到字符串的 ``__metadata__``；
2. 数据区：各张量的原始字节，一个挨一个，不压缩。

读它不执行任何代码；库在读数据之前核对头里的起止字节恰好铺满数据区、互不重叠、与形状一致，
所以被截断或拼错的文件读不进来。模型的配置、词表这些"建模型要用的东西"以 JSON 放在
``__metadata__`` 的 ``"tinyformer"`` 键下。读一个检查点分三步，每一步都在花内存之前核对：

1. :func:`read_metadata` 只读头，拿到配置；
2. :func:`build_checked` 先限制配置里唯一不受文件约束的尺寸 max_len（位置表的大小），再建模型
   ——一个 30 KB 的文件不能让读者的机器去分配 12 GB；
3. :func:`load_weights` 先按头核对名字、形状与 dtype（不符时一个字节的数据也不读），一块一块地核对
   数据区的 SHA-256，然后逐个张量拷进模型：多占的内存只是正在拷的那一个张量，装入的每个浮点数都必须有限。

共享的权重（输出层与词嵌入共用一个矩阵）只存一份：safetensors 不许两个名字指向同一块内存。
写文件用 :func:`~tinyformer.atomic.atomic_write`。
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import stat
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import BinaryIO, TypeVar

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save
from torch import Tensor, nn

from ._checks import _bytes_text
from .atomic import atomic_write

__all__ = [
    "WeightsError",
    "build_checked",
    "check_float32",
    "load_tensors",
    "load_weights",
    "open_for_reading",
    "read_metadata",
    "save_weights",
]

METADATA_KEY = "tinyformer"
DIGEST_KEY = "sha256"  # 数据区的 SHA-256（十六进制），读时核对
SAFETENSORS = "a valid safetensors file"  # 消息里说文件不是什么："not a valid safetensors file (…)"
CHUNK_BYTES = 2**20  # 核对 SHA-256 时每次读 1 MiB：不必把数据区整个读进内存
# 模型自己算、文件里没有的缓冲区（正弦位置编码 pe、RoPE 的 cos/sin，都是 max_len × 维数）最多能占
# 多大。配置里的 max_len 没有别的东西约束它（其余尺寸都要与文件里的张量对得上），所以规则是：
# 不超过 64 MiB（C=16 时 max_len 可到 2**20，C=512 时 32768），或者不超过文件里张量的字节数
# ——大模型的长位置表由它自己的大小来担保。
COMPUTED_BUFFER_BYTES = 64 * 2**20
# safetensors 头里的 dtype 名 → torch 的 dtype（本包只存这些；别的名字原样写进消息）
SAFETENSORS_DTYPES = {
    "F64": torch.float64,
    "F32": torch.float32,
    "F16": torch.float16,
    "BF16": torch.bfloat16,
    "I64": torch.int64,
    "I32": torch.int32,
    "I16": torch.int16,
    "I8": torch.int8,
    "U8": torch.uint8,
    "BOOL": torch.bool,
}
# 不是普通文件时的说法：os.stat 的类型位 → 消息里的名字、WeightsError.cause
FILE_KINDS = (
    (stat.S_ISDIR, "a directory", "directory"),
    (stat.S_ISFIFO, "a named pipe (FIFO)", "fifo"),
    (stat.S_ISCHR, "a character device", "char_device"),
    (stat.S_ISBLK, "a block device", "block_device"),
    (stat.S_ISSOCK, "a socket", "socket"),
)

Built = TypeVar("Built")


class WeightsError(ValueError):
    """权重文件读不进来，``reason`` 说原因的种类，消息写明文件和具体原因。

    ``reason`` 取 ``"missing"``（没有这个文件，或路径是空的）、``"permission"``（没有读权限）、
    ``"not_a_file"``（是文件夹、命名管道、设备等）、``"pickle"``（``torch.save`` 写的 pickle 文件，不读）、
    ``"damaged"``（不是 safetensors 文件，或被截断、改坏了，或有 nan/inf）、``"metadata"``（没有本包的
    JSON，或 JSON 不对）、``"mismatch"``（张量的名字、形状或 dtype 与模型不符）。

    ``cause`` 是具体的原因（如 ``"fifo"``、``"non_finite"``、``"shape"``），``details`` 是它的参数（张量名、
    形状、个数……）：命令行按它们写出中文的原因（``tinyformer._cli.CAUSE_ZH``），不用从英文里去拆。
    """

    def __init__(
        self,
        path: str | os.PathLike,
        reason: str,
        message: str,
        cause: str | None = None,
        **details,
    ):
        super().__init__(f"{os.fspath(path)!r}: {message}")
        self.path, self.reason, self.message = os.fspath(path), reason, message
        self.cause, self.details = cause, details


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


def check_float32(name: str, model: nn.Module) -> None:
    """存检查点之前调用：``model`` 的浮点参数和缓冲区都必须是 float32，否则抛 ``TypeError``。

    读检查点时按配置建的是 float32 模型，:func:`load_weights` 不会悄悄换 dtype，所以一个 ``.half()``
    过的模型存得下去却读不回来。网页用的半精度文件是有意的：它们用 ``save_weights(..., dtype=torch.float16)``
    另写，不经过这里。

    例子::

        >>> import torch
        >>> check_float32("model", torch.nn.Linear(3, 2).half())
        Traceback (most recent call last):
        ...
        TypeError: model must hold float32 weights to be saved as a checkpoint (the loader builds a float32 model), got 'weight' with dtype=torch.float16; call model.float() first
    """
    for key, tensor in model.state_dict().items():
        if tensor.is_floating_point() and tensor.dtype != torch.float32:
            raise TypeError(
                f"{name} must hold float32 weights to be saved as a checkpoint (the loader builds "
                f"a float32 model), got {key!r} with dtype={tensor.dtype}; call {name}.float() first"
            )


def read_metadata(path: str | os.PathLike) -> dict:
    """只读 ``path`` 的头，返回 :func:`save_weights` 存进去的 ``metadata``。"""
    with _safe_open(path) as file:
        header = file.metadata() or {}
    if METADATA_KEY not in header:
        raise WeightsError(
            path, "metadata", "a safetensors file without tinyformer's metadata", "no_metadata"
        )
    try:
        metadata = json.loads(header[METADATA_KEY])
    except json.JSONDecodeError as error:
        raise WeightsError(
            path, "metadata", f"its metadata is not valid JSON ({error})", "bad_json"
        ) from None
    if not isinstance(metadata, dict):
        raise WeightsError(path, "metadata", "its metadata is not a JSON object", "bad_json")
    return metadata


def build_checked(
    path: str | os.PathLike,
    build: Callable[[], Built],
    max_len,
    d_model,
    tensors: Mapping[str, Tensor] | None = None,
) -> Built:
    """先查配置里的 ``max_len`` 有没有大得离谱，再调用 ``build()`` 建模型（权重未装入）并返回它。

    配置的别的尺寸都要与文件里的张量对得上（:func:`load_weights` 在读数据之前按头核对），只有
    ``max_len`` 没有东西约束：位置表（学到的位置嵌入、正弦编码、RoPE 的 cos/sin）都是 max_len × d_model
    量级，一个 30 KB 的文件可以要一张 12 GB 的表。规则：max_len·d_model 个 float32 不超过
    ``max(64 MiB, 文件里张量的字节数)``，否则抛 ``reason="metadata"``。两个值不是整数时不查（``build()``
    自己会拒绝）。不在 ``meta`` 设备上先建一次：meta 张量上的运算会导入 ``torch._dynamo``，常驻内存多 70 MB。

    参数:
        path: safetensors 文件（给了 ``tensors`` 时只用来写进消息）。
        build: 按元数据建模型（或包着模型的对象，如翻译器）的函数；元数据不对时应自己抛
            :class:`WeightsError`。
        max_len, d_model: 元数据里配置的这两项（原样，还没检查过）。
        tensors: 已读进内存的张量（转换旧检查点时），代替文件头。

    例子::

        >>> import tempfile, pathlib, torch
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "tiny.safetensors"
        >>> save_weights(path, torch.nn.Linear(3, 2), {"in": 3, "out": 2})
        >>> build_checked(path, lambda: torch.nn.Linear(3, 2), max_len=1000, d_model=16)
        Linear(in_features=3, out_features=2, bias=True)
        >>> build_checked(path, lambda: None, max_len=10**8, d_model=16)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        tinyformer.weights.WeightsError: '...': its config asks for position tables of max_len × d_model = 100000000 × 16 (6.0 GiB as float32) ...
    """
    if tensors is None:
        held = _header(path)[0]
    else:
        held = {name: (tuple(t.shape), t.dtype) for name, t in tensors.items()}
    integers = all(isinstance(v, int) and not isinstance(v, bool) for v in (max_len, d_model))
    if integers and max_len > 0 and d_model > 0:
        table = 4 * max_len * d_model
        held_bytes = sum(
            math.prod(shape) * (dtype.itemsize if isinstance(dtype, torch.dtype) else 1)
            for shape, dtype in held.values()
        )
        if table > max(COMPUTED_BUFFER_BYTES, held_bytes):
            raise WeightsError(
                path,
                "metadata",
                f"its config asks for position tables of max_len × d_model = {max_len} × {d_model} "
                f"({_bytes_text(table)} as float32) that the file does not justify; at most "
                f"{_bytes_text(COMPUTED_BUFFER_BYTES)} is allowed, or as much as the file's "
                f"{_bytes_text(held_bytes)} of tensors when that is more: is max_len too large?",
                "buffers",
                max_len=max_len,
                d_model=d_model,
                size=_bytes_text(table),
                held=_bytes_text(held_bytes),
            )
    return build()


def load_weights(path: str | os.PathLike, model: nn.Module) -> None:
    """把 ``path`` 里的张量装进 ``model``：名字、形状与 dtype 必须与 ``model.state_dict()`` 一一对应。

    先只读头核对名字、形状与 dtype（不符时一个字节的数据也不读），再一块一块地核对数据区的
    SHA-256，最后逐个张量拷进 ``model``：内存里只有模型这一份权重，加上正在拷的一个张量。
    张量里有 nan 或 inf 时抛 ``reason="damaged"``；这时 ``model`` 可能已装入了一部分，不要再用它。
    """
    held, digest, data_start = _header(path)
    _compare(path, model, held)
    if digest is not None:
        _check_digest(path, data_start, digest)
    with _safe_open(path) as tensors:  # 逐个张量读出、拷进模型：多占的内存只是一个张量
        _copy(path, model, held, lambda name, target: target.copy_(tensors.get_tensor(name)))


def load_tensors(path: str | os.PathLike, model: nn.Module, tensors: Mapping[str, Tensor]) -> None:
    """把已读进内存的 ``tensors``（旧检查点的 ``state_dict``）装进 ``model``，核对与 :func:`load_weights` 相同。

    ``state_dict`` 里共享的权重有两个名字，两份必须相等（``load_state_dict`` 会悄悄留下后一份）；
    ``path`` 只用来写进消息。
    """
    held = {name: (tuple(t.shape), t.dtype) for name, t in tensors.items()}
    _compare(path, model, held)
    _copy(path, model, held, lambda name, target: target.copy_(tensors[name]))


@contextlib.contextmanager
def open_for_reading(
    path: str | os.PathLike, expected: str = "a weights file"
) -> Iterator[BinaryIO]:
    """以二进制方式打开 ``path`` 读；不是能读的普通文件时抛出写明原因的 :class:`WeightsError`。

    打开之前先 ``os.stat``（跟随符号链接）：打开一个命名管道（FIFO）会一直等到有人往里写，
    所以管道、文件夹、设备、套接字在打开之前就被拒绝。大小为 0 的文件也不打开（``reason="damaged"``，
    消息是 ``not {expected} (it has 0 bytes: ...)``）：它要么是空的，要么是 /proc 下那种报不出大小、
    读起来另有含义的特殊文件（读 /proc/kmsg 会一直等下去），都不是权重文件。
    """
    _check_regular_file(path, expected)
    try:
        file = Path(path).open("rb")
    except PermissionError:  # stat 不要读权限，open 要
        raise WeightsError(path, "permission", "permission denied") from None
    except OSError:  # 在 stat 与 open 之间被删掉或换掉了：再查一次，说出它现在是什么
        _check_regular_file(path, expected)
        raise
    with file:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):  # 在 stat 与 open 之间被换掉了
            raise WeightsError(
                path, "not_a_file", "is not a regular file, not a weights file", "special"
            )
        yield file


def _check_regular_file(path: str | os.PathLike, expected: str) -> None:
    """``path`` 是一个大小不为 0 的普通文件（只 stat，不打开）；否则抛出写明它是什么的 :class:`WeightsError`。"""
    if os.fspath(path) in ("", b""):  # Path("") 是 "."：会被说成"当前文件夹是个文件夹"
        raise WeightsError(path, "missing", "an empty path, not a file name", "empty_path")
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise WeightsError(path, "missing", "no such file") from None
    except NotADirectoryError:
        raise WeightsError(
            path, "missing", "no such file (a part of the path is a file)", "through_a_file"
        ) from None
    except PermissionError:
        raise WeightsError(path, "permission", "permission denied") from None
    except OSError as error:  # 名字太长、符号链接成环……
        raise WeightsError(
            path, "missing", f"cannot be reached ({error.strerror})", "os_error", errno=error.errno
        ) from None
    for is_kind, kind, cause in FILE_KINDS:
        if is_kind(info.st_mode):
            raise WeightsError(path, "not_a_file", f"is {kind}, not a weights file", cause)
    if not stat.S_ISREG(info.st_mode):
        raise WeightsError(
            path, "not_a_file", "is not a regular file, not a weights file", "special"
        )
    if info.st_size == 0:
        raise WeightsError(
            path,
            "damaged",
            f"not {expected} (it has 0 bytes: an empty file, or a special file like those "
            "under /proc)",
            "empty",
        )


def _readable(path: str | os.PathLike) -> str:
    """``path`` 是一个能读的普通文件；否则给出真正的原因。pickle 文件在这里就拦下，不去解析。"""
    with open_for_reading(path, SAFETENSORS) as file:
        try:
            start = file.read(8)
        except OSError as error:
            raise WeightsError(
                path, "damaged", f"not {SAFETENSORS} (reading it fails: {error.strerror})",
                "os_error", errno=error.errno,
            ) from None  # fmt: skip
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
    return str(Path(path))


@contextlib.contextmanager
def _safe_open(path: str | os.PathLike):
    """``safe_open(path)``，safetensors 与操作系统的错误都变成 ``reason="damaged"`` 的 :class:`WeightsError`。"""
    try:
        with safe_open(_readable(path), framework="pt") as file:
            yield file
    except SafetensorError as error:
        raise WeightsError(
            path, "damaged", f"not {SAFETENSORS} (truncated or damaged: {error})", "not_safetensors"
        ) from None
    except OSError as error:  # safetensors 映射不进内存的特殊文件（/sys 下的……）
        raise WeightsError(
            path,
            "damaged",
            f"not {SAFETENSORS} (it cannot be memory-mapped: {error})",
            "not_mappable",
        ) from None


def _header(path: str | os.PathLike) -> tuple[dict, str | None, int]:
    """只读头：({名字: (形状, dtype)}, 数据区的 SHA-256 或 None, 数据区从第几个字节开始)。

    形状与 dtype 从 safetensors 取：它打开文件时已核对过头里的起止字节恰好铺满数据区、与形状一致。
    """
    with _safe_open(path) as file:
        held = {}
        for name in file.keys():
            tensor = file.get_slice(name)
            dtype = tensor.get_dtype()
            held[name] = (tuple(tensor.get_shape()), SAFETENSORS_DTYPES.get(dtype, dtype))
        digest = (file.metadata() or {}).get(DIGEST_KEY)
    with open_for_reading(path, SAFETENSORS) as raw:
        n = int.from_bytes(raw.read(8), "little")  # 头的长度：数据区从 8 + n 开始
    return held, digest, 8 + n


def _check_digest(path: str | os.PathLike, data_start: int, digest: str) -> None:
    """数据区的 SHA-256 必须等于头里记下的：一块一块地读，不把整个数据区放进内存。"""
    sha, chunk = hashlib.sha256(), bytearray(CHUNK_BYTES)
    with open_for_reading(path, SAFETENSORS) as file:
        file.seek(data_start)
        while n := file.readinto(chunk):
            sha.update(memoryview(chunk)[:n])
    if sha.hexdigest() != digest:
        raise WeightsError(
            path, "damaged", "its tensor data does not match its SHA-256 (damaged)", "digest"
        )


def _tied_groups(model: nn.Module) -> list[list[str]]:
    """``model.state_dict()`` 的名字按"是不是同一个张量"分组：共享的权重（输出层 = 词嵌入）一组有两个名字。

    按对象认（``keep_vars=True`` 给出参数本身，共享的权重是同一个对象）。
    组里的第一个名字就是 :func:`save_weights` 存的那个。
    """
    groups: dict[int, list[str]] = {}
    for name, tensor in model.state_dict(keep_vars=True).items():
        groups.setdefault(id(tensor), []).append(name)
    return list(groups.values())


def _shape_text(shape) -> str:
    return f"({', '.join(map(str, shape))}{',' if len(shape) == 1 else ''})"


def _compare(path: str | os.PathLike, model: nn.Module, held: dict) -> None:
    """``held``（{名字: (形状, dtype)}）与 ``model.state_dict()`` 一一对应；否则指出第一处不符，并数出其余几处。"""
    expected = model.state_dict(keep_vars=True)
    problems = []  # (英文, cause, details)
    for group in _tied_groups(model):
        present = [name for name in group if name in held]
        if not present:
            problems.append(
                (
                    f"the model's {group[0]!r} is not in the file",
                    "missing_tensor",
                    {"name": group[0]},
                )
            )
        for name in present:
            shape, dtype = held[name]
            tensor = expected[name]
            if shape != tuple(tensor.shape):
                file, ours = _shape_text(shape), _shape_text(tensor.shape)
                problems.append(
                    (f"{name!r} has shape {file} in the file, {ours} in the model", "shape",
                     {"name": name, "file": file, "model": ours})
                )  # fmt: skip
            elif dtype != tensor.dtype:  # load_state_dict 会悄悄换 dtype（int64 → float32）
                problems.append(
                    (f"{name!r} has dtype {dtype} in the file, {tensor.dtype} in the model", "dtype",
                     {"name": name, "file": str(dtype), "model": str(tensor.dtype)})
                )  # fmt: skip
    problems += [
        (f"the file's {name!r} is not in the model", "extra_tensor", {"name": name})
        for name in held
        if name not in expected
    ]
    if problems:
        (text, cause, details), n = problems[0], len(problems) - 1
        more = f" (and {n} more difference{'s' * (n > 1)})" if n else ""
        raise WeightsError(
            path, "mismatch", f"does not match the model: {text}{more}", cause, **details, more=n
        )


@torch.no_grad()
def _copy(
    path: str | os.PathLike,
    model: nn.Module,
    held: dict,
    fill: Callable[[str, Tensor], object],
) -> None:
    """逐个张量 ``fill(名字, 目标)``：把文件里叫这个名字的张量写进目标（:func:`_compare` 已核对过形状、dtype）。

    每个浮点张量都必须有限；共享的权重在文件里有几个名字时，几份必须相等。
    """
    expected = model.state_dict(keep_vars=True)
    for group in _tied_groups(model):
        loaded = None
        for name in (name for name in group if name in held):
            target = expected[name]
            if loaded is None:
                fill(name, target)
                bad = _non_finite(target)
                if bad:
                    raise WeightsError(
                        path, "damaged", f"has {bad} non-finite values (nan or inf) in {name!r}",
                        "non_finite", name=name, count=bad,
                    )  # fmt: skip
                loaded = name
                continue
            other = torch.empty_like(target)
            fill(name, other)
            if not torch.equal(other, target):
                raise WeightsError(
                    path,
                    "damaged",
                    f"holds different values for {loaded!r} and {name!r}, which the model ties "
                    "(one shared tensor): refusing to keep one of them silently",
                    "tied_differ",
                    first=loaded,
                    second=name,
                )


def _non_finite(tensor: Tensor) -> int:
    """``tensor`` 里 nan 与 ±inf 的个数（整数张量为 0）。"""
    return int((~torch.isfinite(tensor)).sum()) if tensor.is_floating_point() else 0
