"""命令行：训练中译英模型、用检查点翻译（“完整模型”一章的“命令行”一节讲解）。

    python -m tinyformer.translation train --seconds 120 --out runs/zh_en.pt
    python -m tinyformer.translation translate --model runs/zh_en.pt "我明天在学校看小说。"

装好本包后，``tinyformer-train`` 与 ``tinyformer-translate`` 是这两个子命令的简写（``pyproject.toml`` 的
``[project.scripts]``，即下面的 :func:`train_command` 与 :func:`translate_command`）。

``train`` 生成语料、训练、在留出的测试集上评估、保存检查点：每 200 步在验证集上评估一次，
保存验证集上最好的那份权重（见 :func:`~tinyformer.translation.training.fit_translator`）。训练时打印进度条
（stderr），最后在 stdout 打印 **一行 JSON** 指标，便于脚本读取，例如::

    {"seed": 0, "steps": 812, "seconds": 61.3, "test_exact_match": 0.999, "test_bleu": 99.9, ...}

``translate`` 每句译文打印一行（:meth:`~tinyformer.translation.translator.Translator.translate_checked`）；
句型不在训练语料里时照样打印译文，再在 stderr 上提示一行“提示：…译文不可信”。

规则：每个错误都是 stderr 上的 **一行** 中文 ``错误：…`` 加非零退出码，从不打印 traceback；
参数在做任何工作之前全部检查完（训练几分钟之后才发现 ``--out`` 写不进去，结果就丢了）。
包里的异常说明是英文的（像 torch 的一样），给读者的中文只在这里写一次：:data:`READER_MESSAGES`
按异常的种类（``reason``）给出中文，:func:`reader_message` 用它；argparse 自己的英文
（``usage:``、缺参数、不认识的参数……）由 :class:`Parser` 换成中文（:data:`ARGPARSE_ZH`）。

退出码（每种错误一个，也写在 ``--help`` 的末尾，:data:`EXIT_CODES`）：

====  ==========================================================================
0     成功；句型不在训练语料里也算成功（照样打印译文，stderr 上另有提示）
1     意外的内部错误（tinyformer 的缺陷，请报告）
2     用法错误：参数缺少、不认识或取值不对，--out 写不进去（开始之前检查）
3     --model 的检查点用不了：不存在、读不出、损坏、不一致或不可信
4     有句子没法翻译（有模型没学过的词、没有词、太长）；其余句子照样翻译
5     读写出错：检查点存不下（例如磁盘满了，原来的文件保持不变）、输出被关闭
130   被 Ctrl-C 中断
143   被 SIGTERM（kill）终止
====  ==========================================================================

- :class:`Parser`：``argparse`` 说中文，出错时只打印一行 ``错误：…``，退出码 2；
- ``positive_int`` 等：给 ``add_argument(type=...)`` 用的检查，nan、inf、超范围的种子都拒绝；
- :func:`writable_file`：输出路径非空、不是文件夹或设备、所在文件夹存在（或能建）且可写；
- :func:`run`：运行 ``main``，把 Ctrl-C、``kill``（SIGTERM）和意外的异常也变成一行错误。
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import math
import re
import shutil
import signal
import sys
import tempfile
import time
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import torch

from .._checks import SEED_LIMIT, shorten
from .checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from .corpus import generate_corpus
from .training import fit_translator
from .translator import UntranslatableError

MAX_THREADS = 1024  # --threads 的上限：远多于任何机器的核数，又挡住 10**9 这样的笔误

EXIT_OK, EXIT_INTERNAL, EXIT_USAGE, EXIT_BAD_MODEL, EXIT_UNTRANSLATABLE, EXIT_IO = range(6)
EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143  # 128 + SIGINT、128 + SIGTERM（shell 的惯例）
EXIT_CODES = {
    EXIT_OK: "成功；句型不在训练语料里也算成功（照样打印译文，stderr 上另有提示）",
    EXIT_INTERNAL: "意外的内部错误（tinyformer 的缺陷，请报告）",
    EXIT_USAGE: "用法错误：参数缺少、不认识或取值不对，--out 写不进去（开始之前检查）",
    EXIT_BAD_MODEL: "--model 的检查点用不了：不存在、读不出、损坏、不一致或不可信",
    EXIT_UNTRANSLATABLE: "有句子没法翻译（有模型没学过的词、没有词、太长）；其余句子照样翻译",
    EXIT_IO: "读写出错：检查点存不下（例如磁盘满了，原来的文件保持不变）、输出被关闭",
    EXIT_INTERRUPTED: "被 Ctrl-C 中断",
    EXIT_TERMINATED: "被 SIGTERM（kill）终止",
}
TRAIN_EXIT_CODES = (0, 1, 2, 5, 130, 143)
TRANSLATE_EXIT_CODES = (0, 1, 2, 3, 4, 5, 130, 143)


def exit_codes_text(codes: Sequence[int]) -> str:
    """``--help`` 末尾的退出码表（只列这个命令用得到的）。"""
    return "退出码：\n" + "\n".join(f"  {code:<3}  {EXIT_CODES[code]}" for code in codes)


# ---------------------------------------------------------------- argparse 说中文
# argparse 的每句话都经过 gettext（``_('usage: ')``）：键是它的原文，值是给读者的中文。
# 只列读者会看到的；给写程序的人的（如 conflicting option string）保持原样。
ARGPARSE_ZH = {
    "usage: ": "用法：",
    "positional arguments": "位置参数",
    "options": "选项",
    "show this help message and exit": "显示这段帮助并退出",
    "argument %(argument_name)s: %(message)s": "参数 %(argument_name)s：%(message)s",
    "the following arguments are required: %s": "缺少必需的参数：%s",
    "unrecognized arguments: %s": "不认识的参数：%s",
    "expected one argument": "需要一个取值",
    "expected at most one argument": "最多只能有一个取值",
    "expected at least one argument": "至少需要一个取值",
    "expected %s argument": "需要 %s 个取值",
    "expected %s arguments": "需要 %s 个取值",
    "invalid choice: %(value)r (choose from %(choices)s)": "无效的选择：%(value)r（可选 %(choices)s）",
    "invalid %(type)s value: %(value)r": "%(value)r 不是合法的 %(type)s 值",
    "ambiguous option: %(option)s could match %(matches)s": "选项 %(option)s 有歧义，可能是 %(matches)s",
    "not allowed with argument %s": "不能与参数 %s 同时使用",
    "one of the arguments %s is required": "参数 %s 必须给出其中之一",
    "ignored explicit argument %r": "这个选项不取值，却给了 %r",
    "unexpected option string: %s": "意外的选项：%s",
    "%(prog)s: error: %(message)s\n": "%(prog)s：错误：%(message)s\n",
}


@contextlib.contextmanager
def _argparse_in_chinese() -> Iterator[None]:
    """在这段代码里让 argparse 的 ``_``/``ngettext`` 查 :data:`ARGPARSE_ZH`；出来时换回原样。

    只在 :class:`Parser` 的方法里用：不改全局的 gettext 设置，别的 argparse 解析器（如 pytest 的）不受影响。
    """
    saved = argparse._, argparse.ngettext

    def ngettext(singular: str, plural: str, n: int) -> str:
        return ARGPARSE_ZH.get(singular if n == 1 else plural, saved[1](singular, plural, n))

    argparse._, argparse.ngettext = (lambda text: ARGPARSE_ZH.get(text, saved[0](text))), ngettext
    try:
        yield
    finally:
        argparse._, argparse.ngettext = saved


_PAD = "\0"  # 占位：让 argparse 按字符数算的宽度等于显示宽度，format_help 最后删掉


def display_width(text: str) -> int:
    """终端里的显示宽度：一个汉字（东亚宽字符）占两列。"""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """按 *显示宽度* 排版的帮助：一个汉字占两列，argparse 却按字符数算。

    - 选项与说明两栏对齐：每个汉字后面补一个占位字符，argparse 的宽度因此就是显示宽度，
      :meth:`Parser.format_help` 最后删掉占位字符；
    - 说明按显示宽度折行，英文词和路径不拆开；用法行（argparse 按字符数折行）留出 8 列余量；
    - ``epilog`` 原样保留换行（退出码表）。
    """

    def __init__(self, prog: str, **kwargs):
        kwargs.setdefault("width", shutil.get_terminal_size().columns - 2 - 8)
        super().__init__(prog, **kwargs)

    def _split_lines(self, text: str, width: int) -> list[str]:
        lines, line = [], ""
        for piece in re.findall(r"[!-~]+|\s+|.", " ".join(text.split())):  # 英文词整段、汉字逐个
            if line and display_width(line + piece) > width:
                lines.append(line.rstrip())
                line = "" if piece.isspace() else piece
            else:
                line += piece
        return [*lines, line.rstrip()] if line.strip() else lines

    def _format_action_invocation(self, action) -> str:
        text = super()._format_action_invocation(action)
        return text + _PAD * sum(unicodedata.east_asian_width(c) in "WF" for c in text)


class Parser(argparse.ArgumentParser):
    """说中文的 ``ArgumentParser``：帮助、用法和错误都是中文；出错时只打印一行 ``错误：…``，退出码 2。"""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", _Formatter)
        with _argparse_in_chinese():
            super().__init__(*args, **kwargs)

    def parse_args(self, args=None, namespace=None):
        with _argparse_in_chinese():
            return super().parse_args(args, namespace)

    def parse_known_args(self, args=None, namespace=None):
        with _argparse_in_chinese():
            return super().parse_known_args(args, namespace)

    def format_usage(self) -> str:
        with _argparse_in_chinese():
            return super().format_usage()

    def format_help(self) -> str:
        with _argparse_in_chinese():
            text = super().format_help().replace(_PAD, "")
        for title in (ARGPARSE_ZH["positional arguments"], ARGPARSE_ZH["options"]):
            text = text.replace(f"\n{title}:\n", f"\n{title}：\n")  # argparse 写半角的 "%s:"
        return text

    def error(self, message: str):
        self.exit(EXIT_USAGE, f"错误：{message}（用 --help 查看用法）\n")


def _parsed(text: str, convert, rule: str, ok, shown=None):
    """``convert(text)``，再要求 ``ok(值)``；不满足时报 ``应为{rule}，得到 …``（给 argparse 的 type=）。"""
    try:
        value = convert(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"应为{rule}，得到 {shorten(text, chinese=True)}"
        ) from None
    if not ok(value):
        got = shown(value) if shown else shorten(text, chinese=True)
        raise argparse.ArgumentTypeError(f"应为{rule}，得到 {got}")
    return value


def positive_int(text: str) -> int:
    """正整数，如 ``--steps``、``--beam-size``。"""
    return _parsed(text, int, "正整数", lambda value: value > 0, shown=str)


def finite_positive_float(text: str) -> float:
    """有限的正数，如 ``--seconds``（``inf`` 会永远训练下去，``nan`` 会在最后才出错）。"""
    return _parsed(text, float, "有限的正数", lambda value: 0 < value < math.inf)


def seed(text: str) -> int:
    """随机种子：[0, 2**32) 内的整数。"""
    digits = text.strip().removeprefix("-").removeprefix("+")
    try:
        value = int(text) if len(digits) < 20 or not digits.isdigit() else SEED_LIMIT  # 太长=超范围
    except ValueError:
        raise argparse.ArgumentTypeError(f"应为整数，得到 {shorten(text, chinese=True)}") from None
    if not 0 <= value < SEED_LIMIT:
        raise argparse.ArgumentTypeError(
            f"应在 [0, 2**32) = [0, {SEED_LIMIT}) 之内，得到 {shorten(text, chinese=True)}"
        )
    return value


# 操作系统的错误（OSError.errno）→ 中文；strerror 是 C 库的英文
OS_ERRORS_ZH = {
    errno.ENOENT: "文件或文件夹不存在",
    errno.EACCES: "没有权限",
    errno.EPERM: "不允许这个操作",
    errno.EROFS: "文件系统是只读的",
    errno.ENOSPC: "磁盘满了",
    errno.EDQUOT: "超出了磁盘配额",
    errno.EFBIG: "文件太大（超出了系统的限制）",
    errno.ENAMETOOLONG: "文件名太长",
    errno.EISDIR: "这是一个文件夹",
    errno.ENOTDIR: "路径里有一段不是文件夹",
    errno.EEXIST: "已经有同名的文件",
    errno.EIO: "设备读写出错",
    errno.EPIPE: "输出被关闭了（例如管道另一端的程序已经退出）",
    errno.ELOOP: "符号链接太多层",
    errno.EINVAL: "参数不合法",
}


def os_reason(err: OSError) -> str:
    """``OSError`` → 一句中文原因（不认识的 errno 写出它的名字）。"""
    if err.errno in OS_ERRORS_ZH:
        return OS_ERRORS_ZH[err.errno]
    name = errno.errorcode.get(err.errno, "") if err.errno is not None else ""
    return f"系统错误 {name or type(err).__name__}"


def writable_file(parser: argparse.ArgumentParser, option: str, text: str) -> Path:
    """检查输出文件 ``text`` 现在就能写；不能写时 ``parser.error``。

    所在文件夹不存在时建好它（与保存时一样）；试着在那里建一个临时文件——原子写入
    正是要在同一个文件夹里建临时文件再改名。
    """
    if not text.strip():
        parser.error(f"{option} 应为文件路径，得到 {text!r}")
    path, shown = Path(text), shorten(text, 200, chinese=True)  # 路径通常较长：多保留一些
    try:
        if path.is_dir():
            parser.error(f"{option} {shown} 是一个文件夹；请给出它里面的文件路径")
        if path.exists() and not path.is_file():
            parser.error(f"{option} {shown} 不是普通文件（是 /dev/full 这样的设备？）")
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path.parent):
            pass
    except OSError as err:  # 没有权限、只读、/proc 下面、名字太长……
        parser.error(f"{option} {shown} 写不进去：{os_reason(err)}")
    return path


# ---------------------------------------------------------------- 包里的异常 → 给读者的中文
# (异常类型, reason) → 中文说明；花括号里填异常的 details（与英文说明用同样的值）。
# 英文说明在 checkpoint.REASONS 和 Translator.tokenize 里；两边的键由测试核对。
READER_MESSAGES = {
    (CheckpointError, "not_a_file"): "不是普通文件（是文件夹还是设备？）",
    (CheckpointError, "empty"): "是空的（0 字节）：保存时被打断了？",
    (
        CheckpointError,
        "compressed",
    ): "被改动过：有 {count} 个压缩过的 zip 成员（第一个是 {first!r}），torch.save 从不压缩",
    (
        CheckpointError,
        "too_big",
    ): "声称有 {total} 字节的内容，文件本身只有 {size} 字节，超过上限 {limit}",
    (CheckpointError, "unreadable"): "读不出来（被截断了，或者不是 torch.save 写的）",
    (
        CheckpointError,
        "damaged",
    ): "已损坏：zip 成员 {member!r} 的 CRC-32 校验对不上（保存之后有字节被改过）",
    (CheckpointError, "unsafe"): "含有张量、数字和字符串以外的对象（{name}），"
    "torch.load(weights_only=True) 拒绝了它，里面的代码没有运行",
    (
        CheckpointError,
        "not_a_checkpoint",
    ): "不是 tinyformer 翻译器的检查点（应有 format={format!r}）",
    (CheckpointError, "keys"): "的键不对：缺少 {missing}，多出 {unexpected}",
    (CheckpointError, "metrics"): "的指标不是以字符串为键的字典",
    (CheckpointError, "metric_type"): "的指标 {name!r} 是 {type}；指标只能是数字、字符串或布尔值",
    (CheckpointError, "config_type"): "的配置是 {type}，应为字典",
    (CheckpointError, "config_fields"): "的配置字段不对：缺少 {missing}，多出 {unexpected}",
    (CheckpointError, "config_invalid"): "的配置不合法：字段 {field} 的取值建不成模型",
    (CheckpointError, "config_limit"): "的配置 {field}={value} 超过上限 {limit}",
    (CheckpointError, "positional_limit"): "的配置 max_len × d_model = {max_len} × {d_model} "
    "超过位置编码表的上限 {limit}",
    (CheckpointError, "vocab_type"): "的 {key} 是 {type}，应为字符串列表",
    (CheckpointError, "vocab_size"): "的 {key} 有 {count} 项，配置却说 {size}",
    (
        CheckpointError,
        "vocab_invalid",
    ): "的 {key} 不是合法的词表（开头应是特殊词元，且没有重复的词）",
    (CheckpointError, "pad_id"): "的配置 pad_id={pad_id}，{key} 里 <pad> 却是 {vocab_pad_id}："
    "真正的词会被当成补齐位遮掉",
    (CheckpointError, "state_dict_type"): "的 state_dict 不是“字符串 → 张量”的字典",
    (CheckpointError, "state_dict_keys"): "的权重与配置不符：缺少 {missing_count} 个键 {missing}，"
    "多出 {unexpected_count} 个键 {unexpected}",
    (CheckpointError, "weight_shape"): "的权重 {name!r} 形状 {shape}、类型 {dtype}，"
    "配置要的是形状 {want_shape}、类型 {want_dtype}",
    (CheckpointError, "non_finite"): "的权重 {name!r} 里有 {count} 个非有限数（nan 或 inf）",
    (
        CheckpointError,
        "tied_differ",
    ): "设了 tie_output=True，共享的权重 {name!r} 与 {other!r} 却不相等",
    (CheckpointError, "layout"): "的权重 {name!r} 是 layout={layout}、device={device}；"
    "权重只能是 CPU 上的稠密张量",
    (CheckpointError, "strided"): "的权重 {name!r} 步长 {strides}、形状 {shape}：权重必须是连续的"
    "（不能是展开的视图）",
    (
        CheckpointError,
        "storage",
    ): "的权重 {name!r} 形状 {shape} 要 {needed} 字节，它的存储只有 {held} 字节",
    (CheckpointError, "shared"): "的权重 {name!r} 与 {other!r} 共用存储；只有共享的那一对权重可以",
    (UntranslatableError, "empty"): "句子里没有词",
    (UntranslatableError, "unknown_words"): "有模型没学过的词 {words}，模型只能翻译训练语料里的词",
    (UntranslatableError, "too_long"): "句子太长，超过了模型的位置数 max_len，请拆成短句",
}


def reader_message(err: Exception) -> str:
    """包里的异常 → 给读者的一行中文（命令行在它前面加“错误：”）。

    :class:`~tinyformer.translation.checkpoint.CheckpointError` 与
    :class:`~tinyformer.translation.translator.UntranslatableError` 按 ``reason`` 查 :data:`READER_MESSAGES`；
    ``OSError`` 按 errno（:data:`OS_ERRORS_ZH`）。别的异常是意外：说出它的类型和怎样看到 traceback。
    """
    if isinstance(err, CheckpointError):
        template = READER_MESSAGES[CheckpointError, err.reason]
        return f"检查点 {shorten(err.path, 200, chinese=True)} {template.format(**err.details)}"
    if isinstance(err, UntranslatableError):
        template = READER_MESSAGES[UntranslatableError, err.reason]
        return f"无法翻译 {shorten(err.sentence, chinese=True)}：{template.format(**err.details)}"
    if isinstance(err, FileNotFoundError) and err.filename is not None:
        return f"找不到 {shorten(str(err.filename), 200, chinese=True)}"
    if isinstance(err, OSError):
        where = (
            f" {shorten(str(err.filename), 200, chinese=True)}" if err.filename is not None else ""
        )
        return f"读写出错{where}：{os_reason(err)}"
    return (
        f"意外的内部错误 {type(err).__name__}（tinyformer 的缺陷，请报告）；"
        "在 Python 里调用 tinyformer.translation.cli.main([...同样的参数]) 可以看到 traceback"
    )


def cannot_translate(sentence: str, err: ValueError) -> str:
    """``Translator.tokenize`` 的异常 → 给读者的一行中文（命令行和网页翻译器用同一句话）。"""
    if isinstance(err, UntranslatableError):
        return reader_message(err)
    return f"无法翻译 {shorten(sentence, chinese=True)}：{reader_message(err)}"


# ---------------------------------------------------------------- 运行
class Terminated(Exception):
    """收到 SIGTERM（``kill``）：像 Ctrl-C 一样展开调用栈，原子写入因此能删掉临时文件。"""


def _on_sigterm(signum, frame):
    raise Terminated


def run(main: Callable[[], object]) -> int:
    """运行 ``main()``，返回退出码（:data:`EXIT_CODES`）；任何失败都只在 stderr 上打印一行 ``错误：…``。"""
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        result = main()
    except KeyboardInterrupt:
        print("错误：被中断（Ctrl-C）；没有写出新文件，原有的文件保持不变", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Terminated:
        print("错误：被终止（SIGTERM）；没有写出新文件，原有的文件保持不变", file=sys.stderr)
        return EXIT_TERMINATED
    except OSError as err:
        _print_error(reader_message(err))
        return EXIT_IO
    except Exception as err:  # noqa: BLE001 - 规则是不打印 traceback：意外的错误也只写一行
        _print_error(reader_message(err))
        return EXIT_INTERNAL
    finally:
        signal.signal(signal.SIGTERM, previous)
    return result if isinstance(result, int) else EXIT_OK


def _print_error(message: str) -> None:
    """stderr 上一行 ``错误：…``；stderr 也关掉了时什么也不做（没有地方可说了）。"""
    with contextlib.suppress(OSError):
        print(f"错误：{message}", file=sys.stderr, flush=True)


def train_main(argv: Sequence[str] | None = None) -> dict:
    """``train`` 子命令（``python -m tinyformer.translation train``）：返回打印的指标。"""
    parser = Parser(
        prog="python -m tinyformer.translation train",
        description="训练一个中译英 Transformer（语料由语法离线生成），评估并保存检查点。",
        epilog=exit_codes_text(TRAIN_EXIT_CODES),
    )
    parser.add_argument(
        "--seed", type=seed, metavar="种子", default=0,
        help="语料划分、初始化和打乱顺序的种子（默认 0）",
    )  # fmt: skip
    parser.add_argument(
        "--steps", type=positive_int, metavar="步数", default=None, help="最多训练多少步"
    )
    parser.add_argument(
        "--seconds",
        type=finite_positive_float,
        metavar="秒数",
        default=None,
        help="最多训练多少秒（墙钟时间；都不给时默认 120）",
    )
    parser.add_argument(
        "--out", metavar="路径", default="runs/zh_en.pt", help="检查点路径（默认 runs/zh_en.pt）"
    )
    parser.add_argument(
        "--beam-size", type=positive_int, metavar="束宽", default=1,
        help="评估时的束宽（默认 1 = 贪心）",
    )  # fmt: skip
    parser.add_argument(
        "--threads", type=positive_int, metavar="线程数", default=None,
        help="torch 的线程数（默认不改）",
    )  # fmt: skip
    parser.add_argument("--no-progress", action="store_true", help="不显示进度条")
    args = parser.parse_args(argv)
    # 训练之前检查完所有参数：训练几分钟后才发现写不进去，结果就丢了
    out = writable_file(parser, "--out", args.out)
    if args.threads is not None and args.threads > MAX_THREADS:
        parser.error(f"--threads 应不大于 {MAX_THREADS}，得到 {args.threads}")
    start = time.perf_counter()
    corpus = generate_corpus(seed=args.seed)
    tgt_size = len(corpus.build_vocabs()[1])
    if args.beam_size > tgt_size:
        parser.error(f"--beam-size 应不大于目标词表的大小 {tgt_size}，得到 {args.beam_size}")
    if args.steps is None and args.seconds is None:
        args.seconds = 120.0
    if args.threads is not None:
        torch.set_num_threads(args.threads)

    translator, history, corpus, best = fit_translator(
        args.seed, args.steps, args.seconds, progress=not args.no_progress, corpus=corpus
    )
    test = translator.evaluate(corpus.test, beam_size=args.beam_size)
    valid = translator.evaluate(corpus.valid, beam_size=args.beam_size)
    metrics = {
        "seed": args.seed,
        "steps": history.steps,
        "train_seconds": round(history.seconds, 1),
        "final_loss": round(history.losses[-1], 4),
        "best_step": best["best_step"],
        "valid_exact_match": round(valid.exact_match, 4),
        "valid_bleu": round(valid.bleu, 2),
        "test_exact_match": round(test.exact_match, 4),
        "test_bleu": round(test.bleu, 2),
        "test_sentences": len(corpus.test),
        "beam_size": args.beam_size,
        "seconds": round(time.perf_counter() - start, 1),
        "checkpoint": str(out),
    }
    try:
        save_checkpoint(translator, out, **{k: v for k, v in metrics.items() if k != "checkpoint"})
    except OSError as err:  # 例如磁盘满了：原子写入保证 out 上原来的文件还在
        _print_error(
            f"检查点 {shorten(str(out), 200, chinese=True)} 写不进去（{os_reason(err)}），那里原来的文件保持不变。"
            f"指标：{json.dumps(metrics, ensure_ascii=False)}"
        )
        raise SystemExit(EXIT_IO) from None
    print(json.dumps(metrics, ensure_ascii=False), flush=True)
    return metrics


def translate_main(argv: Sequence[str] | None = None) -> int:
    """``translate`` 子命令（``python -m tinyformer.translation translate``）：返回退出码（:data:`EXIT_CODES`）。

    不给 ``--model`` 时用随包发布的权重（:mod:`tinyformer.translation.pretrained`），并在 stderr 上说一声。
    以 ``-`` 开头的句子放在 ``--`` 之后（``-- "-我明天去北京。"``）；不像选项的（``-我…``）也直接收下。
    每句用 :meth:`~tinyformer.translation.translator.Translator.translate_checked` 翻译：句型不在训练语料里时
    照样打印模型的译文，再在 stderr 上提示“这句话的句型不在训练语料里，译文不可信”（退出码仍是 0）。
    """
    parser = Parser(
        prog="python -m tinyformer.translation translate",
        description="用训练好的模型把中文句子译成英文。",
        epilog="以 - 开头的句子放在 -- 之后，例如：\n"
        '  python -m tinyformer.translation translate -- "-我明天去北京。"\n\n'
        + exit_codes_text(TRANSLATE_EXIT_CODES),
    )
    parser.add_argument(
        "--model",
        metavar="路径",
        help="python -m tinyformer.translation train 保存的检查点（默认：随包发布的权重 tinyformer.translation.pretrained）",
    )
    parser.add_argument(
        "--beam-size", type=positive_int, metavar="束宽", default=1,
        help="束宽（默认 1 = 贪心解码）",
    )  # fmt: skip
    parser.add_argument("sentences", nargs="*", metavar="句子", help="要翻译的中文句子")
    args, rest = parser.parse_known_args(argv)
    options = [arg for arg in rest if arg.startswith("--") or arg[1:2].isascii()]
    if options:
        parser.error(ARGPARSE_ZH["unrecognized arguments: %s"] % " ".join(options))
    sentences = [*args.sentences, *rest]  # rest：以 - 开头、但不像选项的句子，如 "-我"
    if not sentences:
        parser.error(ARGPARSE_ZH["the following arguments are required: %s"] % "句子")
    try:
        if args.model is None:
            from .pretrained import STEPS, load_translator

            translator = load_translator()
            print(
                f"提示：没有给 --model，使用随包发布的权重（训练 {max(STEPS)} 步，tinyformer.translation.pretrained）",
                file=sys.stderr,
            )
        else:
            translator = load_checkpoint(args.model)
    except (OSError, CheckpointError) as err:
        _print_error(reader_message(err))
        return EXIT_BAD_MODEL
    if args.beam_size > len(translator.tgt_vocab):
        parser.error(
            f"--beam-size 应不大于目标词表的大小 {len(translator.tgt_vocab)}，得到 {args.beam_size}"
        )
    status = EXIT_OK
    for sentence in sentences:
        try:
            result = translator.translate_checked(sentence, beam_size=args.beam_size)
        except UntranslatableError as err:
            _print_error(cannot_translate(sentence, err))
            status = EXIT_UNTRANSLATABLE
            continue
        print(result.text, flush=True)
        if result.note:
            print(f"提示：{shorten(sentence, chinese=True)}：{result.note}", file=sys.stderr)
    return status


COMMANDS = {"train": train_main, "translate": translate_main}


def main(argv: Sequence[str] | None = None):
    """``python -m tinyformer.translation {train,translate} ...``：把其余参数交给子命令。"""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] in (["-h"], ["--help"]):
        print(
            "用法：python -m tinyformer.translation {train,translate} [参数]\n"
            "  train      训练中译英模型（= tinyformer-train）\n"
            "  translate  用检查点翻译（= tinyformer-translate）\n"
            "每个子命令的参数见 python -m tinyformer.translation train --help 等。"
        )
        return EXIT_OK
    if not argv or argv[0] not in COMMANDS:
        Parser(prog="python -m tinyformer.translation").error(
            f"第一个参数应是命令 {' 或 '.join(COMMANDS)}，"
            f"得到 {shorten(argv[0], chinese=True) if argv else '（什么也没有）'}"
        )
    return COMMANDS[argv[0]](argv[1:])


def train_command() -> int:
    """控制台命令 ``tinyformer-train``（``pyproject.toml`` 的 ``[project.scripts]``）。"""
    return run(train_main)


def translate_command() -> int:
    """控制台命令 ``tinyformer-translate``（``pyproject.toml`` 的 ``[project.scripts]``）。"""
    return run(translate_main)
