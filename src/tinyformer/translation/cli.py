"""命令行：训练中译英模型、用检查点翻译（“完整模型”一章的“命令行”一节讲解）。

    python -m tinyformer.translation train --seconds 120 --out runs/zh_en.pt
    python -m tinyformer.translation translate --model runs/zh_en.pt "我明天在学校看小说。"

装好本包后，``tinyformer-train`` 与 ``tinyformer-translate`` 是这两个子命令的简写（``pyproject.toml`` 的
``[project.scripts]``，即下面的 :func:`train_command` 与 :func:`translate_command`）。

``train`` 生成语料、训练、在留出的测试集上评估、保存检查点：每 200 步在验证集上评估一次，
保存验证集上最好的那份权重（见 :func:`~tinyformer.translation.training.fit_translator`）。训练时打印进度条
（stderr），最后在 stdout 打印 **一行 JSON** 指标，便于脚本读取，例如::

    {"seed": 0, "steps": 812, "seconds": 61.3, "test_exact_match": 0.999, "test_bleu": 99.9, ...}

``translate`` 每句译文打印一行；句子里有模型没学过的词时，打印出哪些词不认识，退出码为 2。

规则：每个错误都是 stderr 上的 **一行** ``错误：…`` 加非零退出码，从不打印 traceback；
参数在做任何工作之前全部检查完（训练几分钟之后才发现 ``--out`` 写不进去，结果就丢了）。

- :class:`Parser`：``argparse`` 的错误（缺参数、类型不对）也只打印一行 ``错误：…``，退出码 2；
- ``positive_int`` 等：给 ``add_argument(type=...)`` 用的检查，nan、inf、超范围的种子都拒绝；
- :func:`writable_file`：输出路径非空、不是文件夹或设备、所在文件夹存在（或能建）且可写；
- :func:`run`：运行 ``main``，把 Ctrl-C、``kill``（SIGTERM）和意外的异常也变成一行错误。
"""

from __future__ import annotations

import argparse
import json
import math
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import torch

from .._checks import SEED_LIMIT, shorten
from .checkpoint import load_checkpoint, save_checkpoint
from .corpus import OUT_OF_GRAMMAR, generate_corpus, in_grammar
from .training import fit_translator

MAX_THREADS = 1024  # --threads 的上限：远多于任何机器的核数，又挡住 10**9 这样的笔误


class Parser(argparse.ArgumentParser):
    """出错时只打印一行 ``错误：…``（不打印 usage），退出码 2。"""

    def error(self, message: str):
        self.exit(2, f"错误：{message}（用 --help 查看用法）\n")


def _parsed(text: str, convert, rule: str, ok, shown=None):
    """``convert(text)``，再要求 ``ok(值)``；不满足时报 ``must be {rule}, got …``（给 argparse 的 type=）。"""
    try:
        value = convert(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be {rule}, got {shorten(text)}") from None
    if not ok(value):
        got = shown(value) if shown else shorten(text)
        raise argparse.ArgumentTypeError(f"must be {rule}, got {got}")
    return value


def positive_int(text: str) -> int:
    """正整数，如 ``--steps``、``--beam-size``。"""
    return _parsed(text, int, "a positive integer", lambda value: value > 0, shown=str)


def finite_positive_float(text: str) -> float:
    """有限的正数，如 ``--seconds``（``inf`` 会永远训练下去，``nan`` 会在最后才出错）。"""
    return _parsed(text, float, "a finite positive number", lambda value: 0 < value < math.inf)


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
            f"错误：意外的内部错误 {type(err).__name__}: {shorten(str(err), 200, chinese=True)}",
            file=sys.stderr,
        )
        return 1
    finally:
        signal.signal(signal.SIGTERM, previous)
    return result if isinstance(result, int) else 0


def train_main(argv: Sequence[str] | None = None) -> dict:
    """``train`` 子命令（``python -m tinyformer.translation train``）：返回打印的指标。"""
    parser = Parser(
        prog="python -m tinyformer.translation train",
        description="训练一个中译英 Transformer（语料由语法离线生成），评估并保存检查点。",
    )
    parser.add_argument(
        "--seed", type=seed, default=0, help="语料划分、初始化和打乱顺序的种子（默认 0）"
    )
    parser.add_argument("--steps", type=positive_int, default=None, help="最多训练多少步")
    parser.add_argument(
        "--seconds",
        type=finite_positive_float,
        default=None,
        help="最多训练多少秒（墙钟时间；都不给时默认 120）",
    )
    parser.add_argument("--out", default="runs/zh_en.pt", help="检查点路径（默认 runs/zh_en.pt）")
    parser.add_argument(
        "--beam-size", type=positive_int, default=1, help="评估时的束宽（默认 1 = 贪心）"
    )
    parser.add_argument(
        "--threads", type=positive_int, default=None, help="torch 的线程数（默认不改）"
    )
    parser.add_argument("--no-progress", action="store_true", help="不显示进度条")
    args = parser.parse_args(argv)
    # 训练之前检查完所有参数：训练几分钟后才发现写不进去，结果就丢了
    out = writable_file(parser, "--out", args.out)
    if args.threads is not None and args.threads > MAX_THREADS:
        parser.error(f"--threads must be <= {MAX_THREADS}, got {args.threads}")
    start = time.perf_counter()
    corpus = generate_corpus(seed=args.seed)
    tgt_size = len(corpus.build_vocabs()[1])
    if args.beam_size > tgt_size:
        parser.error(
            f"--beam-size must be <= the target vocabulary size {tgt_size}, got {args.beam_size}"
        )
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
        raise OSError(
            f"could not write the checkpoint {str(out)!r} ({err.strerror or err}); "
            f"the previous file there, if any, is unchanged. Metrics: {json.dumps(metrics)}"
        ) from None
    print(json.dumps(metrics, ensure_ascii=False), flush=True)
    return metrics


def translate_main(argv: Sequence[str] | None = None) -> int:
    """``translate`` 子命令（``python -m tinyformer.translation translate``）：返回退出码。

    不给 ``--model`` 时用随包发布的权重（:mod:`tinyformer.translation.pretrained`），并在 stderr 上说一声。
    以 ``-`` 开头的句子放在 ``--`` 之后（``-- "-我明天去北京。"``）；不像选项的（``-我…``）也直接收下。
    句型不在训练语料的语法里（:func:`~tinyformer.translation.corpus.in_grammar`）时，照样打印模型的译文，
    再在 stderr 上提示"这句话的句型不在训练语料里，译文不可信"。
    """
    parser = Parser(
        prog="python -m tinyformer.translation translate",
        description="用训练好的模型把中文句子译成英文。",
        epilog='以 - 开头的句子放在 -- 之后，例如：python -m tinyformer.translation translate -- "-我明天去北京。"',
    )
    parser.add_argument(
        "--model",
        help="python -m tinyformer.translation train 保存的检查点（默认：随包发布的权重 tinyformer.translation.pretrained）",
    )
    parser.add_argument(
        "--beam-size", type=positive_int, default=1, help="束宽（默认 1 = 贪心解码）"
    )
    parser.add_argument("sentences", nargs="*", help="要翻译的中文句子")
    args, rest = parser.parse_known_args(argv)
    options = [arg for arg in rest if arg.startswith("--") or arg[1:2].isascii()]
    if options:
        parser.error(f"unrecognized arguments: {' '.join(options)}")
    sentences = [*args.sentences, *rest]  # rest：以 - 开头、但不像选项的句子，如 "-我"
    if not sentences:
        parser.error("the following arguments are required: sentences")
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
    except (OSError, ValueError) as err:
        print(f"错误：{err}", file=sys.stderr)
        return 2
    if args.beam_size > len(translator.tgt_vocab):
        parser.error(
            f"--beam-size must be <= the target vocabulary size {len(translator.tgt_vocab)}, "
            f"got {args.beam_size}"
        )
    status = 0
    for sentence in sentences:
        try:
            words = translator.tokenize(sentence)
        except ValueError as err:
            print(f"错误：{cannot_translate(sentence, err)}", file=sys.stderr)
            status = 2
            continue
        print(translator.translate(sentence, beam_size=args.beam_size), flush=True)
        if not in_grammar(words):
            print(f"提示：{shorten(sentence, chinese=True)}：{OUT_OF_GRAMMAR}", file=sys.stderr)
    return status


def cannot_translate(sentence: str, err: ValueError) -> str:
    """``Translator.tokenize`` 的英文消息 → 给读者的一行中文（命令行和网页翻译器用同一句话）。"""
    return f"无法翻译 {shorten(sentence, chinese=True)}：{_chinese_reason(err)}"


def _chinese_reason(err: ValueError) -> str:
    text = str(err)
    if "has words not in the source vocabulary" in text:
        words = text.split("source vocabulary: ", 1)[1].split("; the model", 1)[0]
        return f"有模型没学过的词 {words}，模型只能翻译训练语料里的词"
    if "must contain at least one word" in text:
        return "句子里没有词"
    if "but the model reads at most" in text:
        return "句子太长，超过了模型的位置数 max_len，请拆成短句"
    return text


COMMANDS = {"train": train_main, "translate": translate_main}


def main(argv: Sequence[str] | None = None):
    """``python -m tinyformer.translation {train,translate} ...``：把其余参数交给子命令。"""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] in (["-h"], ["--help"]):
        print(
            "usage: python -m tinyformer.translation {train,translate} [args]\n"
            "  train      训练中译英模型（= tinyformer-train）\n"
            "  translate  用检查点翻译（= tinyformer-translate）\n"
            "每个子命令的参数见 python -m tinyformer.translation train --help 等。"
        )
        return 0
    if not argv or argv[0] not in COMMANDS:
        Parser(prog="python -m tinyformer.translation").error(
            f"the first argument must be a command, one of {list(COMMANDS)}, "
            f"got {shorten(argv[0]) if argv else 'nothing'}"
        )
    return COMMANDS[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(run(main))


def train_command() -> int:
    """控制台命令 ``tinyformer-train``（``pyproject.toml`` 的 ``[project.scripts]``）。"""
    return run(train_main)


def translate_command() -> int:
    """控制台命令 ``tinyformer-translate``（``pyproject.toml`` 的 ``[project.scripts]``）。"""
    return run(translate_main)
