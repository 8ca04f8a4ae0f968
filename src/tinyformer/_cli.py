"""两个命令行（中译英 :mod:`tinyformer.translation.cli`、写诗 :mod:`tinyformer.poetry.cli`）共用的部分。

- 退出码：每种错误一个（:data:`EXIT_CODES`）；
- 给读者的中文：包里的异常说明是英文的（像 torch 的一样），中文只写在这里——权重文件按
  ``WeightsError.reason`` 查 :data:`WEIGHTS_ZH`，操作系统的错误按 ``errno`` 查 :data:`OS_ERRORS`；
  原因写进同一行（文件为什么不能用），不只说“用不了”；
- 在做任何工作之前检查参数：:func:`number`、:func:`writable_file`（训练几分钟后才发现写不进去，结果就丢了）；
- :func:`run`：任何失败都只在 stderr 上打印一行 ``错误：…``，从不打印 traceback。
"""

from __future__ import annotations

import contextlib
import errno
import re
import signal
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import NoReturn

from ._checks import shorten
from .weights import WeightsError

EXIT_OK, EXIT_INTERNAL, EXIT_USAGE, EXIT_BAD_MODEL, EXIT_IO = 0, 1, 2, 3, 5
EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143  # 128 + SIGINT、128 + SIGTERM（shell 的惯例）

WEIGHTS_ZH = {  # WeightsError.reason → 中文（"unsafe"：convert 拒绝的 pickle）
    "missing": "不存在",
    "permission": "没有读取权限",
    "not_a_file": "不是普通文件",  # 后面接着 CAUSE_ZH 里的具体原因
    "pickle": "是 torch.save 写的 pickle 文件：读它可能运行文件里的代码，不安全，所以不读。"
    "旧的检查点可以这样转换：python -m tinyformer.translation convert 旧.pt 新.safetensors",
    "unsafe": "不安全：它的 pickle 要调用 {name}，torch.load(weights_only=True) 拒绝了它，"
    "里面的代码没有运行",
    "damaged": "已损坏或被截断",
    "metadata": "不是本书的检查点，或者里面的配置、词表不对",
    "mismatch": "里的权重与它的配置不符",
}
NAMES = ("name", "first", "second", "member", "key")  # 这几项是名字：加引号引用
CAUSE_ZH = {  # WeightsError.cause → 具体的原因（接在上面那句后面），{…} 取自 WeightsError.details
    "empty_path": "路径是空的",
    "through_a_file": "路径里有一段是文件，不是文件夹",
    "os_error": "{os}",
    "directory": "是文件夹",
    "fifo": "是命名管道（FIFO），不打开它：打开会一直等到有人往里写",
    "char_device": "是字符设备",
    "block_device": "是块设备",
    "socket": "是套接字",
    "special": "是特殊文件",
    "empty": "有 0 个字节（空文件，或 /proc 下那种读起来另有含义的特殊文件）",
    "not_safetensors": "不是有效的 safetensors 文件（头不对或数据不全）",
    "not_mappable": "不能映射进内存（/sys 下那种特殊文件）",
    "digest": "数据区与文件里记下的 SHA-256 不符",
    "non_finite": "张量 {name} 里有 {count} 个 nan 或 inf",
    "tied_differ": "{first} 与 {second} 在模型里是同一个张量，文件里的两份却不相等",
    "not_torch_save": "不是 torch.save 写的检查点（或已被截断）",
    "zip_duplicate": "zip 里有 {count} 个同名的成员 {member}（torch.load 只会悄悄读其中一个）",
    "zip_crc": "zip 成员 {member} 的 CRC 校验不符：torch.save 写完之后被改坏了",
    "no_metadata": "safetensors 文件里没有本包的元数据",
    "bad_json": "元数据不是 JSON 对象",
    "format": "格式标记不是本书的翻译器",
    "missing_key": "元数据里缺少 {key}",
    "config": "按里面的配置建不出模型",
    "vocab": "字表 itos 不对（特殊符号之后须是互不相同的单个字符）",
    "vocab_size": "配置说 vocab_size={config}，字表却有 {itos} 项",
    "buffers": "按配置，位置表要 max_len × d_model = {max_len} × {d_model}（{size}），文件里的张量却只有"
    " {held}：max_len 太大？",
    "not_tensor": "state_dict 里的 {name} 不是张量",
    "missing_tensor": "模型的 {name} 不在文件里",
    "extra_tensor": "文件里的 {name} 不在模型里",
    "shape": "{name} 的形状在文件里是 {file}，模型里是 {model}",
    "dtype": "{name} 在文件里是 {file}，模型里是 {model}",
}

OS_ERRORS = {  # OSError.errno → 中文（strerror 是 C 库的英文）
    errno.ENOENT: "文件或文件夹不存在", errno.EACCES: "没有权限", errno.EPERM: "不允许这个操作",
    errno.EROFS: "文件系统是只读的", errno.ENOSPC: "磁盘满了", errno.EDQUOT: "超出了磁盘配额",
    errno.EFBIG: "文件太大（超出了系统的限制）", errno.ENAMETOOLONG: "文件名太长",
    errno.EISDIR: "这是一个文件夹", errno.ENOTDIR: "路径里有一段不是文件夹",
    errno.EEXIST: "已经有同名的文件", errno.EIO: "设备读写出错", errno.ELOOP: "符号链接太多层",
    errno.EPIPE: "输出被关闭了（例如管道另一端的程序已经退出）", errno.EINVAL: "参数不合法",
}  # fmt: skip


def os_reason(err: OSError) -> str:
    """``OSError`` → 一句中文原因（不认识的 errno 写出它的名字和 C 库的说明）。"""
    if err.errno in OS_ERRORS:
        return OS_ERRORS[err.errno]
    name = errno.errorcode.get(err.errno or 0, "") or type(err).__name__
    return f"系统错误 {name}" + (f"（{err.strerror}）" if err.strerror else "")


def reader_message(err: Exception, program: str) -> str:
    """包里的异常 → 给读者的一行中文（:func:`run` 在它前面加“错误：”）；``program`` 是命令行的模块名。"""
    if isinstance(err, WeightsError):
        found = re.search(r"asks to call (\S+);", err.message)  # convert 拒绝的 pickle
        key = "unsafe" if err.reason == "pickle" and found else err.reason
        text = WEIGHTS_ZH[key].format(name=found.group(1) if found else "")
        if err.cause in CAUSE_ZH:  # 为什么：哪个张量、什么形状、几个 nan……
            details = {k: shorten(v, 80) if k in NAMES else v for k, v in err.details.items()}
            if err.cause == "os_error":
                details["os"] = os_reason(OSError(err.details.get("errno"), ""))
            text += "：" + CAUSE_ZH[err.cause].format(**details)
            if err.details.get("more"):
                text += f"（另有 {err.details['more']} 处不符）"
        return f"权重文件 {shorten(err.path, 200, chinese=True)} {text}"
    if isinstance(err, OSError):
        where = f" {shorten(str(err.filename), 200, chinese=True)}" if err.filename else ""
        return f"读写出错{where}：{os_reason(err)}"
    return (
        f"意外的内部错误 {type(err).__name__}（tinyformer 的缺陷，请报告）；"
        f"在 Python 里调用 {program}.main([...同样的参数]) 可以看到 traceback"
    )


# ---------------------------------------------------------------- 参数
def print_error(message: str) -> None:
    """stderr 上一行 ``错误：…``；stderr 也关掉了时什么也不做（没有地方可说了）。"""
    with contextlib.suppress(OSError):
        print(f"错误：{message}", file=sys.stderr, flush=True)


def usage_error(message: str) -> NoReturn:
    """我们自己发现的用法错误：一行中文，退出码 2。"""
    print_error(f"{message}（用 --help 查看用法）")
    raise SystemExit(EXIT_USAGE)


def number(option: str, text: str | None, convert, rule: str, ok):
    """``convert(text)`` 且 ``ok(值)``；否则用法错误“{option} 应为{rule}，得到 …”。``None`` 原样返回。"""
    if text is None:
        return None
    try:
        value = convert(text) if len(text) < 100 else None  # 5000 位的数不必读
    except ValueError:
        value = None
    if value is None or not ok(value):
        usage_error(f"{option} 应为{rule}，得到 {shorten(text, chinese=True)}")
    return value


def writable_file(option: str, text: str) -> Path:
    """输出文件现在就能写（所在文件夹不存在时建好，并试着在那里建一个临时文件）；否则用法错误。"""
    path, shown = Path(text), shorten(text, 200, chinese=True)
    if not text.strip():
        usage_error(f"{option} 应为文件路径，得到 {text!r}")
    try:
        if path.is_dir() or (path.exists() and not path.is_file()):
            usage_error(f"{option} {shown} 不是普通文件的路径（是文件夹或设备）")
        folder = next(p for p in path.absolute().parents if p.exists())  # 最近的已有的一层
        if not folder.is_dir():  # mkdir 会说“已经有同名的文件”：真正的原因是这一层不是文件夹
            usage_error(
                f"{option} {shown} 写不进去：{shorten(str(folder), 200, chinese=True)} 不是文件夹"
            )
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path.parent):
            pass
    except OSError as err:  # 没有权限、只读、/proc 下面、名字太长……
        usage_error(f"{option} {shown} 写不进去：{os_reason(err)}")
    return path


# ---------------------------------------------------------------- 运行
class Terminated(Exception):
    """收到 SIGTERM（``kill``）：像 Ctrl-C 一样展开调用栈，原子写入因此能删掉临时文件。"""


def _on_sigterm(signum, frame):
    raise Terminated


def run(main: Callable[[], object], describe: Callable[[Exception], str]) -> int:
    """运行 ``main()``，返回退出码；任何失败都只在 stderr 上打印一行 ``错误：{describe(异常)}``。

    用法错误（:func:`usage_error`）是 ``SystemExit``，照常穿过这里。
    """
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        result = main()
    except KeyboardInterrupt:
        print_error("被中断（Ctrl-C）；没有写出新文件，原有的文件保持不变")
        return EXIT_INTERRUPTED
    except Terminated:
        print_error("被终止（SIGTERM）；没有写出新文件，原有的文件保持不变")
        return EXIT_TERMINATED
    except WeightsError as err:
        print_error(describe(err))
        return EXIT_BAD_MODEL
    except OSError as err:
        print_error(describe(err))
        return EXIT_IO
    except Exception as err:  # noqa: BLE001 - 规则是不打印 traceback：意外的错误也只写一行
        print_error(describe(err))
        return EXIT_INTERNAL
    finally:
        signal.signal(signal.SIGTERM, previous)
    return result if isinstance(result, int) else EXIT_OK
