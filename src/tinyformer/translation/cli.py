"""命令行：训练中译英模型、用检查点翻译、转换旧检查点（“完整模型”一章的“命令行”一节讲解）。

    python -m tinyformer.translation train --seconds 120 --out runs/zh_en.safetensors
    python -m tinyformer.translation translate --model runs/zh_en.safetensors "我明天在学校看小说。"
    python -m tinyformer.translation convert OLD.pt NEW.safetensors

``tinyformer-train``、``tinyformer-translate`` 是前两个的简写（``pyproject.toml`` 的 ``[project.scripts]``）。
参数在做任何工作之前全部检查完；我们的错误是 stderr 上一行中文 ``错误：…``（包里的异常按 ``reason``
查 :data:`tinyformer._cli.WEIGHTS_ZH`、:data:`SENTENCE_ZH`），argparse 自己发现的用法错误照它的样子打印；从不打印
traceback。每种错误一个退出码（:data:`EXIT_CODES`，也列在 ``--help`` 的末尾）。
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Callable, Sequence
from functools import partial

import torch

from .. import _cli
from .._checks import SEED_LIMIT, shorten
from .._cli import (
    EXIT_BAD_MODEL,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_IO,
    EXIT_OK,
    EXIT_TERMINATED,
    EXIT_USAGE,
    number,
    os_reason,
    print_error,
    usage_error,
    writable_file,
)
from .checkpoint import convert_checkpoint, load_checkpoint, save_checkpoint
from .corpus import generate_corpus
from .pretrained import STEPS, checkpoint_path
from .training import train_and_score
from .translator import UntranslatableError

MAX_THREADS = 1024  # --threads 的上限：远多于任何机器的核数，又挡住 10**9 这样的笔误

EXIT_UNTRANSLATABLE = 4  # 其余的退出码两个命令行共用（tinyformer._cli）
EXIT_CODES = {
    EXIT_OK: "成功；句型不在训练语料里也算成功（照样打印译文，stderr 上另有提示）",
    EXIT_INTERNAL: "意外的内部错误（tinyformer 的缺陷，请报告）",
    EXIT_USAGE: "用法错误：参数缺少、不认识或取值不对，输出文件写不进去（开始之前检查）",
    EXIT_BAD_MODEL: "权重文件用不了：不存在、没有读权限、是 pickle、损坏或与模型不符",
    EXIT_UNTRANSLATABLE: "有句子没法翻译（有模型没学过的词、没有词、太长）；其余句子照样翻译",
    EXIT_IO: "读写出错：检查点存不下（例如磁盘满了，原来的文件保持不变）、输出被关闭",
    EXIT_INTERRUPTED: "被 Ctrl-C 中断",
    EXIT_TERMINATED: "被 SIGTERM（kill）终止",
}
TRAIN_EXIT_CODES = (0, 1, 2, 5, 130, 143)
TRANSLATE_EXIT_CODES = (0, 1, 2, 3, 4, 5, 130, 143)
CONVERT_EXIT_CODES = (0, 1, 2, 3, 5, 130, 143)

# ---------------------------------------------------------------- 给读者的中文
# 包里的异常说明是英文的（像 torch 的一样）；权重文件、操作系统错误的中文在 tinyformer._cli（两个命令行共用），
# 翻译特有的一张表在这里。
SENTENCE_ZH = {  # UntranslatableError.reason → 中文
    "empty": "句子里没有词",
    "unknown_words": "有模型没学过的词 {words}，模型只能翻译训练语料里的词",
    "too_long": "句子太长，超过了模型的位置数 max_len，请拆成短句",
}


def reader_message(err: Exception) -> str:
    """包里的异常 → 给读者的一行中文（命令行在它前面加“错误：”）。"""
    if isinstance(err, UntranslatableError):
        words = err.details.get("words", [])
        shown = repr(words) if len(words) <= 10 else f"{words[:10]!r}…（共 {len(words)} 个）"
        text = SENTENCE_ZH[err.reason].format(words=shown)
        return f"无法翻译 {shorten(err.sentence, chinese=True)}：{text}"
    return _cli.reader_message(err, "tinyformer.translation.cli")


def cannot_translate(sentence: str, err: ValueError) -> str:
    """``Translator.tokenize`` 的异常 → 给读者的一行中文（命令行和网页翻译器用同一句话）。"""
    if isinstance(err, UntranslatableError):
        return reader_message(err)
    return f"无法翻译 {shorten(sentence, chinese=True)}：{reader_message(err)}"


# ---------------------------------------------------------------- 参数
def new_parser(prog: str, description: str, codes: Sequence[int], note: str = "") -> tuple:
    """(解析器, 参数组)：只用 argparse 的公开接口；帮助的末尾列出退出码。"""
    epilog = note + "退出码：\n" + "\n".join(f"  {c:<3}  {EXIT_CODES[c]}" for c in codes)
    parser = argparse.ArgumentParser(
        prog=f"python -m tinyformer.translation {prog}",
        description=description,
        epilog=epilog,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        add_help=False,
    )
    group = parser.add_argument_group("参数")
    group.add_argument("-h", "--help", action="help", help="显示这段帮助并退出")
    return parser, group


def positive_int(option: str, text: str | None) -> int | None:
    return number(option, text, int, "正整数", lambda value: value > 0)


def run(main: Callable[[], object]) -> int:
    """运行 ``main()``，返回退出码（:data:`EXIT_CODES`）；任何失败都只在 stderr 上打印一行 ``错误：…``。"""
    return _cli.run(main, reader_message)


def train_main(argv: Sequence[str] | None = None) -> dict:
    """``train`` 子命令：训练、评估、原子地写出检查点，返回（并打印）指标。"""
    parser, group = new_parser(
        "train", "训练中译英 Transformer，评估并保存检查点。", TRAIN_EXIT_CODES
    )
    group.add_argument(
        "--seed", metavar="SEED", default="0", help="语料划分和初始化的种子（默认 0）"
    )
    group.add_argument("--steps", metavar="N", help="最多训练多少步")
    group.add_argument("--seconds", metavar="SECONDS", help="最多训练多少秒（都不给时 120）")
    group.add_argument("--out", metavar="PATH", default="runs/zh_en.safetensors", help="检查点路径")
    group.add_argument("--beam-size", metavar="N", default="1", help="评估时的束宽（默认 1：贪心）")
    group.add_argument("--threads", metavar="N", help="torch 的线程数（默认不改）")
    group.add_argument("--no-progress", action="store_true", help="不显示进度条")
    args = parser.parse_args(argv)
    # 训练之前检查完所有参数：训练几分钟后才发现写不进去，结果就丢了
    seed = number("--seed", args.seed, int, "[0, 2**32) 内的整数", lambda v: 0 <= v < SEED_LIMIT)
    steps = positive_int("--steps", args.steps)
    seconds = number("--seconds", args.seconds, float, "有限的正数", lambda v: 0 < v < math.inf)
    beam_size = positive_int("--beam-size", args.beam_size)
    threads = number("--threads", args.threads, int, f"不大于 {MAX_THREADS} 的正整数", lambda v: 0 < v <= MAX_THREADS)  # fmt: skip
    out = writable_file("--out", args.out)
    start = time.perf_counter()
    corpus = generate_corpus(seed=seed)
    if beam_size > (size := len(corpus.build_vocabs()[1])):
        usage_error(f"--beam-size 应不大于目标词表的大小 {size}，得到 {beam_size}")
    if threads is not None:
        torch.set_num_threads(threads)
    seconds = 120.0 if steps is None and seconds is None else seconds
    translator, metrics = train_and_score(
        seed, steps, seconds, beam_size, not args.no_progress, corpus
    )
    metrics["seconds"] = round(time.perf_counter() - start, 1)
    try:
        save_checkpoint(translator, out, **metrics)
    except OSError as err:  # 例如磁盘满了：原子写入保证 out 上原来的文件还在
        print_error(
            f"检查点 {shorten(str(out), 200, chinese=True)} 写不进去（{os_reason(err)}），"
            f"那里原来的文件保持不变。指标：{json.dumps(metrics, ensure_ascii=False)}"
        )
        raise SystemExit(EXIT_IO) from None
    metrics["checkpoint"] = str(out)
    print(json.dumps(metrics, ensure_ascii=False), flush=True)
    return metrics


def translate_main(argv: Sequence[str] | None = None) -> int:
    """``translate`` 子命令：每句一行译文；不给 ``--model`` 时用随包发布的权重；返回退出码。"""
    note = '以 - 开头的句子放在 -- 之后，例如：\n  python -m tinyformer.translation translate -- "-我明天去北京。"\n\n'  # fmt: skip
    parser, group = new_parser("translate", "把中文句子译成英文。", TRANSLATE_EXIT_CODES, note)
    group.add_argument("--model", metavar="PATH", help="train 保存的检查点（默认：随包发布的权重）")
    group.add_argument("--beam-size", metavar="N", default="1", help="束宽（默认 1：贪心解码）")
    group.add_argument("sentences", nargs="*", metavar="SENTENCE", help="要翻译的中文句子")
    args, rest = parser.parse_known_args(argv)
    if options := [arg for arg in rest if arg.startswith("--") or arg[1:2].isascii()]:
        parser.error(f"unrecognized arguments: {' '.join(options)}")  # 与 argparse 自己的说法一样
    sentences = [*args.sentences, *rest]  # rest：以 - 开头、但不像选项的句子，如 "-我"
    beam_size = positive_int("--beam-size", args.beam_size)
    if not sentences:
        usage_error("缺少要翻译的句子")
    translator = load_checkpoint(checkpoint_path() if args.model is None else args.model)
    if args.model is None:
        print(f"提示：没有给 --model，使用随包发布的权重（训练 {max(STEPS)} 步）", file=sys.stderr)
    if beam_size > len(translator.tgt_vocab):
        usage_error(f"--beam-size 应不大于目标词表的大小 {len(translator.tgt_vocab)}，得到 {beam_size}")  # fmt: skip
    status = EXIT_OK
    for sentence in sentences:
        try:
            result = translator.translate_checked(sentence, beam_size=beam_size)
        except UntranslatableError as err:
            print_error(cannot_translate(sentence, err))
            status = EXIT_UNTRANSLATABLE
            continue
        print(result.text, flush=True)
        if result.note:
            print(f"提示：{shorten(sentence, chinese=True)}：{result.note}", file=sys.stderr)
    return status


def convert_main(argv: Sequence[str] | None = None) -> int:
    """``convert`` 子命令：旧的 ``torch.save`` 检查点 → safetensors 检查点。"""
    parser, group = new_parser("convert", "把旧的 .pt 检查点转换成 safetensors（不运行 pickle 里的代码）。", CONVERT_EXIT_CODES)  # fmt: skip
    group.add_argument("old", metavar="OLD", help="旧的检查点（torch.save 写的 .pt）")
    group.add_argument("new", metavar="NEW", help="新的检查点（.safetensors）")
    args = parser.parse_args(argv)
    convert_checkpoint(args.old, writable_file("NEW", args.new))
    print(args.new, flush=True)
    return EXIT_OK


COMMANDS = {"train": train_main, "translate": translate_main, "convert": convert_main}


def main(argv: Sequence[str] | None = None):
    """``python -m tinyformer.translation {train,translate,convert} ...``：把其余参数交给子命令。"""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] in (["-h"], ["--help"]):
        print(
            "用法：python -m tinyformer.translation {train,translate,convert} [参数]\n"
            "  train      训练中译英模型（= tinyformer-train）\n"
            "  translate  用检查点翻译（= tinyformer-translate）\n"
            "  convert    把旧的 .pt 检查点转换成 .safetensors\n"
            "每个子命令的参数见 python -m tinyformer.translation train --help 等。"
        )
        return EXIT_OK
    if not argv or argv[0] not in COMMANDS:
        got = shorten(argv[0], chinese=True) if argv else "（什么也没有）"
        usage_error(f"第一个参数应是命令 {'、'.join(COMMANDS)} 之一，得到 {got}")
    return COMMANDS[argv[0]](argv[1:])


# 控制台命令 tinyformer-train、tinyformer-translate（pyproject.toml 的 [project.scripts]）
train_command, translate_command = partial(run, train_main), partial(run, translate_main)
