"""命令行：生成语料、训练中译英模型、在留出的测试集上评估、保存检查点（第 8 章讲解）。

    python -m tinyformer.train --seconds 120 --out runs/zh_en.pt
    python -m tinyformer.train --steps 600 --seed 1

训练时每 200 步在验证集上评估一次，保存验证集上最好的那份权重（见 :func:`fit_translator`）。
训练时打印进度条（stderr），最后在 stdout 打印 **一行 JSON** 指标，便于脚本读取，例如::

    {"seed": 0, "steps": 812, "seconds": 61.3, "test_exact_match": 0.999, "test_bleu": 99.9, ...}
"""

from __future__ import annotations

import copy
import json
import sys
import time
from collections.abc import Sequence

import torch

from . import _cli
from ._checks import check_instance, check_positive_int
from .training import TrainHistory, encode_pairs, train
from .translation import TranslationCorpus, generate_corpus
from .translator import Translator

MAX_THREADS = 1024  # --threads 的上限：远多于任何机器的核数，又挡住 10**9 这样的笔误


def fit_translator(
    seed: int = 0,
    max_steps: int | None = None,
    max_seconds: float | None = None,
    progress: bool = True,
    eval_every: int = 200,
    corpus: TranslationCorpus | None = None,
) -> tuple[Translator, TrainHistory, TranslationCorpus, dict]:
    """生成语料（``seed``；也可以直接给 ``corpus``）、建第 8 章尺寸的模型、训练，按验证集挑选权重。

    每 ``eval_every`` 步在 **验证集** 上算一次完全匹配率，记下最好的那一份权重（同分时取较早的）；
    训练结束后把它装回模型。测试集只在最后用一次——挑选权重不能看测试集，否则测试分数就不再是
    "没见过的数据"上的分数了。

    返回:
        (翻译器, 训练记录, 语料, ``{"best_step": 步数, "best_valid_exact_match": 完全匹配率}``)。
    """
    check_positive_int("eval_every", eval_every)
    check_instance("corpus", corpus, TranslationCorpus, allow_none=True)
    if corpus is None:
        corpus = generate_corpus(seed=seed)
    src_vocab, tgt_vocab = corpus.build_vocabs()
    translator = Translator.build(src_vocab, tgt_vocab, seed=seed)
    examples = encode_pairs(corpus.train, src_vocab, tgt_vocab)
    best = {"best_step": 0, "best_valid_exact_match": -1.0}
    best_state = None

    def select(step: int, model) -> bool:
        nonlocal best_state
        if step % eval_every == 0:
            exact = translator.evaluate(corpus.valid).exact_match
            model.train()  # evaluate 把模型切到了 eval 模式
            if exact > best["best_valid_exact_match"]:
                best.update(best_step=step, best_valid_exact_match=exact)
                best_state = copy.deepcopy(model.state_dict())
        return False

    history = train(
        translator.model,
        examples,
        max_steps=max_steps,
        max_seconds=max_seconds,
        seed=seed,
        progress=progress,
        callback=select,
    )
    final = translator.evaluate(corpus.valid).exact_match  # 最后一步的权重也参加挑选
    if final >= best["best_valid_exact_match"]:
        best.update(best_step=history.steps, best_valid_exact_match=final)
    else:
        translator.model.load_state_dict(best_state)
    translator.model.eval()
    return translator, history, corpus, best


def main(argv: Sequence[str] | None = None) -> dict:
    parser = _cli.Parser(
        prog="python -m tinyformer.train",
        description="训练一个中译英 Transformer（语料由语法离线生成），评估并保存检查点。",
    )
    parser.add_argument(
        "--seed", type=_cli.seed, default=0, help="语料划分、初始化和打乱顺序的种子（默认 0）"
    )
    parser.add_argument("--steps", type=_cli.positive_int, default=None, help="最多训练多少步")
    parser.add_argument(
        "--seconds",
        type=_cli.finite_positive_float,
        default=None,
        help="最多训练多少秒（墙钟时间；都不给时默认 120）",
    )
    parser.add_argument("--out", default="runs/zh_en.pt", help="检查点路径（默认 runs/zh_en.pt）")
    parser.add_argument(
        "--beam-size", type=_cli.positive_int, default=1, help="评估时的束宽（默认 1 = 贪心）"
    )
    parser.add_argument(
        "--threads", type=_cli.positive_int, default=None, help="torch 的线程数（默认不改）"
    )
    parser.add_argument("--no-progress", action="store_true", help="不显示进度条")
    args = parser.parse_args(argv)
    # 训练之前检查完所有参数：训练几分钟后才发现写不进去，结果就丢了
    out = _cli.writable_file(parser, "--out", args.out)
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
        translator.save(out, **{k: v for k, v in metrics.items() if k != "checkpoint"})
    except OSError as err:  # 例如磁盘满了：原子写入保证 out 上原来的文件还在
        raise OSError(
            f"could not write the checkpoint {str(out)!r} ({err.strerror or err}); "
            f"the previous file there, if any, is unchanged. Metrics: {json.dumps(metrics)}"
        ) from None
    print(json.dumps(metrics, ensure_ascii=False), flush=True)
    return metrics


if __name__ == "__main__":
    sys.exit(_cli.run(main))
