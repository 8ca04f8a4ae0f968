"""两个命令行工具（``tinyformer.train``、``tinyformer.translate``）共用的部分（第 8 章讲解的命令行）。

规则：每个错误都是 stderr 上的 **一行** ``错误：…`` 加非零退出码，从不打印 traceback；
参数在做任何工作之前全部检查完（训练几分钟之后才发现 ``--out`` 写不进去，结果就丢了）。

- :class:`Parser`：``argparse`` 的错误（缺参数、类型不对）也只打印一行 ``错误：…``，退出码 2；
- ``positive_int`` 等：给 ``add_argument(type=...)`` 用的检查，nan、inf、超范围的种子都拒绝；
- :func:`writable_file`：输出路径非空、不是文件夹或设备、所在文件夹存在（或能建）且可写；
- :func:`run`：运行 ``main``，把 Ctrl-C、``kill``（SIGTERM）和意外的异常也变成一行错误。
"""

from __future__ import annotations

import argparse
import math
import signal
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from ._checks import SEED_LIMIT, shorten


class Parser(argparse.ArgumentParser):
    """出错时只打印一行 ``错误：…``（不打印 usage），退出码 2。"""

    def error(self, message: str):
        self.exit(2, f"错误：{message}（用 --help 查看用法）\n")


def positive_int(text: str) -> int:
    """正整数，如 ``--steps``、``--beam-size``。"""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be a positive integer, got {shorten(text)}"
        ) from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def finite_positive_float(text: str) -> float:
    """有限的正数，如 ``--seconds``（``inf`` 会永远训练下去，``nan`` 会在最后才出错）。"""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be a finite positive number, got {shorten(text)}"
        ) from None
    if not 0 < value < math.inf:
        raise argparse.ArgumentTypeError(f"must be a finite positive number, got {shorten(text)}")
    return value


def seed(text: str) -> int:
    """随机种子：[0, 2**32) 内的整数。"""
    digits = text.strip().removeprefix("-").removeprefix("+")
    try:
        value = int(text) if len(digits) < 20 or not digits.isdigit() else SEED_LIMIT  # 太长=超范围
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, got {shorten(text)}") from None
    if not 0 <= value < SEED_LIMIT:
        raise argparse.ArgumentTypeError(
            f"must be in [0, 2**32) = [0, {SEED_LIMIT}), got {shorten(text)}"
        )
    return value


def writable_file(parser: argparse.ArgumentParser, option: str, text: str) -> Path:
    """检查输出文件 ``text`` 现在就能写；不能写时 ``parser.error``。

    所在文件夹不存在时建好它（与保存时一样）；试着在那里建一个临时文件——原子写入
    正是要在同一个文件夹里建临时文件再改名。
    """
    if not text.strip():
        parser.error(f"{option} must be a file path, got {text!r}")
    path, shown = Path(text), shorten(text, 200)  # 路径通常较长：多保留一些
    try:
        if path.is_dir():
            parser.error(f"{option} {shown} is a directory; give a file path inside it")
        if path.exists() and not path.is_file():
            parser.error(f"{option} {shown} is not a regular file (a device such as /dev/full?)")
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path.parent):
            pass
    except OSError as err:  # 没有权限、只读、/proc 下面、名字太长……
        parser.error(f"{option} {shown} cannot be written: {err.strerror or err}")
    return path


class Terminated(Exception):
    """收到 SIGTERM（``kill``）：像 Ctrl-C 一样展开调用栈，原子写入因此能删掉临时文件。"""


def _on_sigterm(signum, frame):
    raise Terminated


def run(main: Callable[[], object]) -> int:
    """运行 ``main()``，返回退出码；任何失败都只在 stderr 上打印一行 ``错误：…``。"""
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        result = main()
    except KeyboardInterrupt:
        print("错误：被中断（Ctrl-C）；没有写出新文件，原有的文件保持不变", file=sys.stderr)
        return 130
    except Terminated:
        print("错误：被终止（SIGTERM）；没有写出新文件，原有的文件保持不变", file=sys.stderr)
        return 143
    except (OSError, ValueError, TypeError) as err:
        print(f"错误：{err}", file=sys.stderr)
        return 1
    except Exception as err:  # noqa: BLE001 - 规则是不打印 traceback：意外的错误也只写一行
        print(
            f"错误：意外的内部错误 {type(err).__name__}: {shorten(str(err), 200)}", file=sys.stderr
        )
        return 1
    finally:
        signal.signal(signal.SIGTERM, previous)
    return result if isinstance(result, int) else 0
