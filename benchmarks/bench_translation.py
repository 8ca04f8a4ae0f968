"""第 8 章的性能数字：与同尺寸的 torch.nn.Transformer 比训练速度、训练到目标精度的步数与时间，缓存解码快多少。

运行：``.venv/bin/python benchmarks/bench_translation.py``（``--help`` 列出全部选项；
``--tiny`` 是测试用的极小规模，几秒钟跑完，数字没有意义）。

把"快"和"运气"分开，三个量分别测：

1. **每步训练时间**。两个模型（tinyformer 的 ``Transformer`` 与用 ``torch.nn.Transformer`` 搭的同尺寸
   模型：C=128、H=4、编码器/解码器各 2 层、d_ff=256、dropout 0.1、post-LN、权重共享）用同一份语料、
   同样的批量、损失、优化器、预热学习率和打乱顺序训练。赛跑（见 2）结束后，两个模型再 **交替** 训练
   ``--timing-rounds`` 轮、每轮 ``--timing-steps`` 步（不存权重、不评估），每轮各计一次时。比值取
   **逐轮比值**（同一轮里相邻的两段之比）的中位数：这台虚拟机的速度在一次运行里会起伏 ±30 %，
   短而多的交替段让起伏落在同一轮的两边，比几个长段各自的中位数之比稳得多。计时之前两种
   模型各先训练 ``--warmup-steps`` 步预热（不计）。两个模型的 dropout 各用自己的随机数状态，
   所以交替训练与单独训练走的是同一条轨迹。
2. **达到目标的步数**。每段结束时在留出的测试集（训练中没见过的搭配）上贪心解码，算完全匹配率和
   sacreBLEU（不计入训练时间）；两个指标都达标（完全匹配 ≥ 95 %、BLEU ≥ 90）即为达到目标。
   为了让步数的分辨率是 ``--fine`` 步而不是一整段，训练时每 ``--fine`` 步在内存里存一份权重；
   某段结束时第一次达标，就回头评估这一段里存下的权重，取其中最早达标的一步。
3. **达到目标的时间** = 每步时间的中位数 × 达到目标的步数（比值 = 每步比值 × 步数比值）。

另外用 ``torch.profiler`` 记录两个模型各一步训练，打印算子耗时表和按类别的汇总（时间花在哪里）；
最后比较同一个训练好的模型的缓存解码与完整重算（``--decode-tokens`` 个词元，不在 ``<eos>`` 停，
交替运行 ``--repeats`` 次取中位数，并检查两者输出的词元相同）。

最后一行是 JSON：各项的 ours/torch 比值（小于 1 表示 tinyformer 更快或更少）与原始数字。
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import statistics
import time
import warnings

import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile

from tinyformer import Transformer, TransformerConfig, sinusoidal_encoding
from tinyformer.decoding import greedy_decode
from tinyformer.text import pad_sequences
from tinyformer.translation.corpus import generate_corpus
from tinyformer.translation.training import (
    encode_pairs,
    iterate_batches,
    label_smoothed_cross_entropy,
    make_optimizer,
)
from tinyformer.translation.translator import Translator, new_translator, score

TARGET_EXACT, TARGET_BLEU = 0.95, 90.0


class TorchTranslator(nn.Module):
    """与 tinyformer 的 Transformer 同尺寸、同结构（post-LN、×√C、正弦位置编码、权重共享）的
    ``torch.nn.Transformer`` 模型。掩码按 torch 的约定：True = 不许关注。"""

    def __init__(self, config: TransformerConfig):
        super().__init__()
        self.config = c = config
        self.src_embed = nn.Embedding(c.src_vocab_size, c.d_model)
        self.tgt_embed = nn.Embedding(c.tgt_vocab_size, c.d_model)
        self.register_buffer("pe", sinusoidal_encoding(c.max_len, c.d_model))  # (max_len, C)
        self.dropout = nn.Dropout(c.dropout)
        self.transformer = nn.Transformer(
            c.d_model,
            c.num_heads,
            c.num_encoder_layers,
            c.num_decoder_layers,
            c.d_ff,
            c.dropout,
            batch_first=True,
        )
        self.output = nn.Linear(c.d_model, c.tgt_vocab_size, bias=False)
        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)
        self.output.weight = self.tgt_embed.weight

    def embed(self, embedding: nn.Embedding, ids):
        return self.dropout(embedding(ids) * self.config.d_model**0.5 + self.pe[: ids.shape[1]])

    def forward(self, src, tgt):
        pad, T = self.config.pad_id, tgt.shape[1]
        out = self.transformer(
            self.embed(self.src_embed, src),
            self.embed(self.tgt_embed, tgt),
            tgt_mask=nn.Transformer.generate_square_subsequent_mask(T, dtype=torch.bool),
            src_key_padding_mask=src == pad,
            tgt_key_padding_mask=tgt == pad,
            memory_key_padding_mask=src == pad,
        )
        return self.output(out)  # (B, T, C) @ (C, V) -> (B, T, V)


@torch.no_grad()
def torch_greedy(model: TorchTranslator, src, bos_id: int, eos_id: int, max_len: int = 32):
    """torch 模型的贪心解码（每步整段重算：nn.Transformer 没有键/值缓存）。"""
    ys = torch.full((src.shape[0], 1), bos_id)  # (B, 1)
    for _ in range(max_len):
        next_id = model(src, ys)[:, -1].argmax(-1, keepdim=True)  # (B, 1)
        ys = torch.cat([ys, next_id], dim=1)
        if (ys == eos_id).any(dim=1).all():
            break
    return ys


class Contender:
    """一个模型的训练状态：可以训练几步、停下、让另一个模型训练，再接着训练。

    与 :func:`tinyformer.translation.training.train` 同样的批量、损失、优化器和学习率；dropout 的随机数
    状态存在这里，所以交替训练不会改变它的轨迹。
    """

    def __init__(self, name, model, decode, examples, batch_size, seed):
        self.name, self.model, self.decode = name, model, decode
        self.examples, self.batch_size, self.seed = examples, batch_size, seed
        self.optimizer, self.scheduler = make_optimizer(model, model.config.d_model)
        self.rng = torch.Generator().manual_seed(seed).get_state()  # dropout 用的随机数状态
        self.epoch, self.batches = 0, iter(())
        self.steps = 0
        self.seconds_per_step: list[float] = []  # 赛跑每段的每步平均时间（只打印）
        self.snapshots: dict[int, dict] = {}  # 步数 -> 权重（本段内每 --fine 步一份）
        self.steps_to_target: int | None = None
        self.log: list[tuple[int, float, float]] = []  # (步数, 完全匹配率, BLEU)

    def _next_batch(self):
        batch = next(self.batches, None)
        if batch is None:  # 新的 epoch：与 train() 相同的打乱方式
            generator = torch.Generator().manual_seed(self.seed + self.epoch)
            pad_id = self.model.config.pad_id
            self.batches = iterate_batches(self.examples, self.batch_size, pad_id, True, generator)
            self.epoch += 1
            batch = next(self.batches)
        return batch

    def train_step(self):
        batch = self._next_batch()
        logits = self.model(batch.src, batch.tgt_in)  # (B, T, V)
        pad_id = self.model.config.pad_id
        loss = label_smoothed_cross_entropy(logits, batch.tgt_out, 0.1, pad_id)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        self.scheduler.step()
        self.steps += 1

    def train(self, steps: int, fine: int, timed: bool = True) -> None:
        """赛跑的一段：训练 ``steps`` 步（计时），每 ``fine`` 步存一份权重（不计时）。"""
        self.snapshots.clear()
        seconds = self._run(steps, fine)
        if timed:
            self.seconds_per_step.append(seconds / steps)

    def time_steps(self, steps: int) -> float:
        """只为计时训练 ``steps`` 步（不存权重），返回每步的秒数。"""
        return self._run(steps, fine=None) / steps

    def _run(self, steps: int, fine: int | None) -> float:
        """用自己的 dropout 随机数状态训练 ``steps`` 步，返回训练本身用的秒数。"""
        outer_rng = torch.get_rng_state()
        torch.set_rng_state(self.rng)
        self.model.train()
        seconds = 0.0
        for _ in range(steps):
            start = time.perf_counter()
            self.train_step()
            seconds += time.perf_counter() - start
            if fine is not None and self.steps % fine == 0:
                self.snapshots[self.steps] = copy.deepcopy(self.model.state_dict())
        self.rng = torch.get_rng_state()
        torch.set_rng_state(outer_rng)
        return seconds

    def reached(self, translator: Translator, pairs) -> bool:
        """在 ``pairs`` 上评估当前权重；第一次达标时在本段存下的权重里找最早达标的一步。"""
        if self.steps_to_target is not None:
            return True
        if not self._meets_target(translator, pairs, self.steps):
            return False
        current = copy.deepcopy(self.model.state_dict())
        for step in sorted(s for s in self.snapshots if s < self.steps):
            self.model.load_state_dict(self.snapshots[step])
            if self._meets_target(translator, pairs, step):
                break
        else:
            step = self.steps
        self.model.load_state_dict(current)
        self.steps_to_target = step
        return True

    @torch.no_grad()
    def _meets_target(self, translator: Translator, pairs, step: int) -> bool:
        self.model.eval()
        hypotheses = translator.decode(self.decode(translator.encode([p.zh for p in pairs])))
        result = score(hypotheses, [p.en for p in pairs])
        self.log.append((step, round(result.exact_match, 4), round(result.bleu, 2)))
        print(
            f"  {self.name:5s} 步 {step:4d}  完全匹配 {result.exact_match:.4f}  "
            f"BLEU {result.bleu:6.2f}",
            flush=True,
        )
        return result.exact_match >= TARGET_EXACT and result.bleu >= TARGET_BLEU


CATEGORIES = {  # 算子名 -> 类别，用来汇总"时间花在哪里"
    "矩阵乘法": ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"),
    # 两个模型都用 torch 的 nn.Dropout 和 F.scaled_dot_product_attention 的 dropout_p（bernoulli_）
    "dropout 的随机数": ("aten::bernoulli_", "aten::uniform_"),
    "softmax": ("aten::_softmax", "aten::_softmax_backward_data", "aten::_safe_softmax"),
    "层归一化": ("aten::native_layer_norm", "aten::native_layer_norm_backward"),
    "优化器": ("aten::_fused_adam_",),
    "拷贝": ("aten::copy_", "aten::clone", "aten::cat"),
}


def profile_step(contender: Contender, row_limit: int) -> dict[str, float]:
    """用 torch.profiler 记录一步训练（在模型的副本上，不影响比赛），打印算子表，
    返回按类别汇总的自身耗时（毫秒）。"""
    probe = Contender(contender.name, copy.deepcopy(contender.model), None,
                      contender.examples, contender.batch_size, contender.seed)  # fmt: skip
    probe.train(1, fine=1, timed=False)  # 先走一步，让优化器的状态张量建好
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        probe.train_step()
    events = prof.key_averages()
    print(f"\n{contender.name}：一步训练的算子（按自身耗时排序）")
    print(events.table(sort_by="self_cpu_time_total", row_limit=row_limit))
    total = sum(e.self_cpu_time_total for e in events) / 1e3
    by_name = {e.key: e.self_cpu_time_total / 1e3 for e in events}
    summary = {cat: sum(by_name.get(op, 0.0) for op in ops) for cat, ops in CATEGORIES.items()}
    summary["其他（调度、小运算、Python）"] = total - sum(summary.values())
    summary["合计"] = total
    summary["算子调用次数"] = sum(e.count for e in events)
    return summary


def decode_speed(model, src, bos, eos, tokens, repeats):
    """同一个模型：缓存解码与完整重算各生成 ``tokens`` 个词元，交替运行，返回 (缓存秒, 重算秒, 相同)。"""
    times = {True: [], False: []}
    outputs = {}
    for _ in range(repeats + 1):  # 第一轮是预热，不计
        for use_cache in (True, False):
            start = time.perf_counter()
            outputs[use_cache] = greedy_decode(
                model, src, bos, eos, tokens, use_cache, stop_at_eos=False
            )
            times[use_cache].append(time.perf_counter() - start)
    cached, full = (statistics.median(times[k][1:]) for k in (True, False))
    return cached, full, bool(torch.equal(outputs[True], outputs[False]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunk", type=int, default=25, help="每段训练多少步（交替、计时、评估）")
    parser.add_argument("--fine", type=int, default=5, help="达到目标的步数精确到几步")
    parser.add_argument("--max-steps", type=int, default=500, help="每个模型最多训练多少步")
    parser.add_argument("--warmup-steps", type=int, default=10, help="计时前预热多少步")
    parser.add_argument("--timing-rounds", type=int, default=20, help="测每步时间的交替轮数")
    parser.add_argument("--timing-steps", type=int, default=5, help="测每步时间时每轮几步")
    parser.add_argument("--test-sentences", type=int, default=None, help="只用前 N 个测试句评估")
    parser.add_argument("--decode-tokens", type=int, nargs="+", default=[64, 128])
    parser.add_argument("--decode-sentences", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=5, help="解码计时的重复次数")
    parser.add_argument("--profile-rows", type=int, default=15, help="算子表打印多少行")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads")
    parser.add_argument("--tiny", action="store_true", help="测试用：几步、几句，只检查能跑通")
    args = parser.parse_args()
    if args.tiny:
        args.chunk, args.fine, args.max_steps, args.warmup_steps = 2, 1, 4, 1
        args.timing_rounds, args.timing_steps = 2, 1
        args.test_sentences, args.decode_tokens, args.decode_sentences = 8, [4, 8], 2
        args.repeats, args.profile_rows, args.batch_size = 1, 5, 4
    if args.fine <= 0 or args.chunk % args.fine:
        parser.error(f"--chunk must be a multiple of --fine, got {args.chunk} and {args.fine}")
    # torch.nn.Transformer 在推理路径上会提示嵌套张量还是原型功能；与计时无关
    warnings.filterwarnings("ignore", message="The PyTorch API of nested tensors")
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}，{torch.get_num_threads()} 个线程", flush=True)

    corpus = generate_corpus(seed=args.seed)
    test = corpus.test[: args.test_sentences]
    src_vocab, tgt_vocab = corpus.build_vocabs()
    examples = encode_pairs(corpus.train, src_vocab, tgt_vocab)
    bos, eos = tgt_vocab.bos_id, tgt_vocab.eos_id

    ours = new_translator(src_vocab, tgt_vocab, seed=args.seed)
    torch.manual_seed(args.seed)
    theirs = TorchTranslator(ours.model.config)
    contenders = [
        Contender("ours", ours.model, lambda src: greedy_decode(ours.model, src, bos, eos),
                  examples, args.batch_size, args.seed),
        Contender("torch", theirs, lambda src: torch_greedy(theirs, src, bos, eos),
                  examples, args.batch_size, args.seed),
    ]  # fmt: skip

    # 预热：第一次训练要付线程池、内存分配等一次性开销；用另外两个模型，不影响上面两个的轨迹
    for contender in contenders:
        spare = copy.deepcopy(contender.model)
        warm = Contender("warm", spare, None, examples, args.batch_size, args.seed)
        warm.train(args.warmup_steps, fine=args.warmup_steps, timed=False)

    print(f"交替训练，每段 {args.chunk} 步；目标：完全匹配 ≥ {TARGET_EXACT}、BLEU ≥ {TARGET_BLEU}")
    while contenders[0].steps < args.max_steps:
        if all(c.steps_to_target is not None for c in contenders):
            break
        for contender in contenders:
            contender.train(args.chunk, args.fine)
        for contender in contenders:
            contender.reached(ours, test)

    print("\n赛跑各段的每步时间（毫秒，按段的先后；机器的快慢起伏看得见，只打印）：")
    for c in contenders:
        print(f"  {c.name:5s} " + " ".join(f"{s * 1e3:6.1f}" for s in c.seconds_per_step))

    timing: dict[str, list[float]] = {c.name: [] for c in contenders}
    for _ in range(args.timing_rounds):
        for c in contenders:  # 交替
            timing[c.name].append(c.time_steps(args.timing_steps))
    paired = [o / t for o, t in zip(timing["ours"], timing["torch"], strict=True)]
    print(
        f"\n每步时间：交替 {args.timing_rounds} 轮、每轮 {args.timing_steps} 步，逐轮比值 ours/torch："
    )
    print("  " + " ".join(f"{r:.3f}" for r in paired))

    results: dict[str, object] = {}
    for c in contenders:
        per_step = statistics.median(timing[c.name])
        results[f"{c.name}_ms_per_step"] = round(per_step * 1e3, 2)
        results[f"{c.name}_steps_to_target"] = c.steps_to_target
        if c.steps_to_target is not None:
            results[f"{c.name}_seconds_to_target"] = round(per_step * c.steps_to_target, 2)
    results["timing_rounds"] = args.timing_rounds

    summaries = {c.name: profile_step(c, args.profile_rows) for c in contenders}
    print("\n一步训练的自身耗时按类别（毫秒；profiler 记录一步，有额外开销，看比例）：")
    print(f"  {'类别':<28}{'ours':>10}{'torch':>10}")
    for category in summaries["ours"]:
        o, t = summaries["ours"][category], summaries["torch"][category]
        print(f"  {category:<28}{o:>10.1f}{t:>10.1f}")

    # 缓存解码 vs 完整重算：同一个训练好的模型；max_len 放大到能生成最长的那一档（位置编码表
    # 不是参数，不在 state_dict 里，所以同样的权重能装进 max_len 更大的模型）
    longest = max(args.decode_tokens)
    config = dataclasses.replace(ours.model.config, max_len=max(longest + 1, 80))
    model = Transformer(config)
    model.load_state_dict(ours.model.state_dict())
    model.eval()
    src = pad_sequences(
        [s for s, _ in encode_pairs(test[: args.decode_sentences], src_vocab, tgt_vocab)], 0
    )
    for tokens in args.decode_tokens:
        cached, full, same = decode_speed(model, src, bos, eos, tokens, args.repeats)
        results[f"decode_{tokens}_cached_seconds"] = round(cached, 4)
        results[f"decode_{tokens}_full_seconds"] = round(full, 4)
        results[f"decode_{tokens}_speedup_cached"] = round(full / cached, 2)
        results[f"decode_{tokens}_same_tokens"] = same
        print(
            f"{len(src)} 句 × {tokens} 个词元：缓存 {cached:.3f} s，完整重算 {full:.3f} s，"
            f"快 {full / cached:.2f} 倍，输出相同：{same}"
        )

    ratios = {"ratio_ms_per_step": statistics.median(paired)}
    if all(c.steps_to_target for c in contenders):
        ratios["ratio_steps_to_target"] = (
            results["ours_steps_to_target"] / results["torch_steps_to_target"]
        )
        ratios["ratio_seconds_to_target"] = (
            ratios["ratio_ms_per_step"] * ratios["ratio_steps_to_target"]
        )
    results = {**{k: round(v, 3) for k, v in ratios.items()}, **results}
    print(json.dumps(results, ensure_ascii=False))


if __name__ == "__main__":
    main()
