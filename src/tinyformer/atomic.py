"""原子写文件：要么写完整的新文件，要么原来的文件原封不动（“完整模型”一章存检查点时用到）。

直接 ``torch.save(obj, path)`` 会先把 ``path`` 截成 0 字节再往里写：写到一半被 Ctrl-C、
``kill`` 打断，或者磁盘满了，旧的好检查点就没了，新的也读不出来。这里的做法是标准的三步：

1. 在 **同一个文件夹** 里建一个临时文件，把内容全部写进去；
2. ``flush`` + ``os.fsync``：确认数据真的落到了磁盘上；
3. ``os.replace(临时文件, path)``：同一个文件系统里的改名是原子的——别的进程看到的 ``path``
   要么是旧文件，要么是完整的新文件，不会是半个。

写的过程中出了任何异常（包括 ``KeyboardInterrupt``）都会删掉临时文件、原样抛出异常。
进程被 ``SIGKILL`` 杀死时来不及删除，文件夹里会留下一个 ``.<文件名>.*.tmp``，但 ``path`` 仍是旧文件。
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO


def _umask() -> int:
    mask = os.umask(0)  # 只能"设置并返回旧值"地读 umask，读完立刻还原
    os.umask(mask)
    return mask


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike) -> Iterator[BinaryIO]:
    """以二进制方式"原子地"写 ``path``：``with`` 块正常结束才替换旧文件。

    参数:
        path: 目标文件。它所在的文件夹必须已经存在；``path`` 已存在时必须是普通文件。

    例子::

        >>> import tempfile, pathlib
        >>> target = pathlib.Path(tempfile.mkdtemp()) / "stats.json"
        >>> with atomic_write(target) as f:
        ...     _ = f.write(b'{"seconds": 1.5}')
        >>> target.read_bytes()
        b'{"seconds": 1.5}'
        >>> try:
        ...     with atomic_write(target) as f:
        ...         _ = f.write(b"half a fi")
        ...         raise KeyboardInterrupt
        ... except KeyboardInterrupt:
        ...     pass
        >>> target.read_bytes()  # 写到一半被打断：旧内容原封不动
        b'{"seconds": 1.5}'
    """
    path = Path(path)
    if path.exists() and not path.is_file():
        # 例如 /dev/full 或一个文件夹：os.replace 会把设备文件换掉，或者失败得莫名其妙
        raise ValueError(f"path must be a regular file, got path={str(path)!r}")
    # 临时文件名 = "." + 文件名的前 100 个字符 + 随机串 + ".tmp"：文件名本身接近 255 字节的上限时，
    # 整个文件名做前缀会让临时文件名超长（OSError: File name too long）
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:100]}.", suffix=".tmp")
    try:
        # mkstemp 建的文件权限是 0600；换成与普通新文件一样的权限（0666 去掉 umask）
        if hasattr(os, "fchmod"):  # Windows 没有 fchmod，也没有这个问题
            os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as file:
            yield file
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    if hasattr(os, "O_DIRECTORY"):  # POSIX：让"改名"这件事本身也落盘
        dir_fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
