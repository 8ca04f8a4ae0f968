"""命令行：用训练好的检查点翻译中文句子（第 8 章讲解）。

    python -m tinyformer.translate --model runs/zh_en.pt "我明天在学校看小说。" "他昨天没去北京。"

每句译文打印一行。句子里有模型没学过的词时，打印出哪些词不认识，退出码为 2。
任何错误（检查点读不出、参数不对）都是 stderr 上的一行 ``错误：…``，不打印 traceback。
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from . import _cli
from .translator import Translator


def main(argv: Sequence[str] | None = None) -> int:
    parser = _cli.Parser(
        prog="python -m tinyformer.translate", description="用训练好的模型把中文句子译成英文。"
    )
    parser.add_argument("--model", required=True, help="python -m tinyformer.train 保存的检查点")
    parser.add_argument(
        "--beam-size", type=_cli.positive_int, default=1, help="束宽（默认 1 = 贪心解码）"
    )
    parser.add_argument("sentences", nargs="+", help="要翻译的中文句子")
    args = parser.parse_args(argv)
    try:
        translator = Translator.load(args.model)
    except (OSError, ValueError) as err:
        print(f"错误：{err}", file=sys.stderr)
        return 2
    if args.beam_size > len(translator.tgt_vocab):
        parser.error(
            f"--beam-size must be <= the target vocabulary size {len(translator.tgt_vocab)}, "
            f"got {args.beam_size}"
        )
    status = 0
    for sentence in args.sentences:
        try:
            print(translator.translate(sentence, beam_size=args.beam_size), flush=True)
        except ValueError as err:
            print(f"错误：{err}", file=sys.stderr)
            status = 2
    return status


if __name__ == "__main__":
    sys.exit(_cli.run(main))
