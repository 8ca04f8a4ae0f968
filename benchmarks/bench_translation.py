"""第 8 章的性能数字：与同尺寸的 torch.nn.Transformer 比训练速度、训练到目标精度的步数与时间，缓存解码快多少。

运行：``.venv/bin/python -m benchmarks.bench_translation``（``--help`` 列出全部选项；``_bench.py``）。

把"快"和"运气"分开，三个量分别测：

1. **达到目标的步数**。两个模型（tinyformer 的 ``Transformer`` 与用 ``torch.nn.Transformer`` 搭的同尺寸
   模型：C=128、H=4、编码器/解码器各 2 层、d_ff=256、dropout 0.1、post-LN、权重共享）各用
   :func:`tinyformer.translation.training.train` 训练（同一份语料、批量、损失、优化器、预热学习率、打乱顺序和
   dropout 种子），每 ``--every`` 步在留出的测试集（训练中没见过的搭配）上贪心解码，算完全匹配率和
   sacreBLEU；两个指标都达标（完全匹配 ≥ 95 %、BLEU ≥ 90）即停。
2. **每步训练时间**。两个模型再 **交替** 训练 ``--timing-rounds`` 轮、每轮 ``--timing-steps`` 步，每轮各计一次时，
   比值取逐轮比值的中位数：这台虚拟机的速度在一次运行里会起伏 ±30 %，短而多的交替段让起伏落在同一轮的两边。
3. **达到目标的时间** = 每步时间的中位数 × 达到目标的步数（比值 = 每步比值 × 步数比值）。

另数一次训练前向读回主机（``.item()``、``bool(张量)`` 这类同步）和进入参数检查函数的次数，
最后比较同一个训练好的模型的缓存解码与完整重算（64、128 个词元，不在 ``<eos>`` 停，交替运行，
并检查两者输出的词元相同）。最后一行是 JSON：各项的 ours/torch 比值（小于 1 表示 tinyformer 更快或更少）与原始数字。
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import statistics
import warnings
from functools import partial

import torch
from torch import nn

from benchmarks._bench import (
    cached_vs_full,
    calls_into,
    host_syncs,
    interleave,
    options,
    paired,
    seconds,
)
from tinyformer import Transformer, TransformerConfig, _checks, sinusoidal_encoding
from tinyformer.decoding import greedy_decode
from tinyformer.text import pad_sequences
from tinyformer.translation.corpus import generate_corpus
from tinyformer.translation.training import (
    encode_pairs,
    iterate_batches,
    label_smoothed_cross_entropy,
    make_optimizer,
    train,
    warmup_lr,
)
from tinyformer.translation.translator import new_translator, score

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


def steps_to_target(name, model, decode, translator, examples, test, args) -> int | None:
    """训练 ``model`` 直到测试集上达标（每 ``args.every`` 步评估一次），返回达标的步数（没达标为 ``None``）。"""
    reached = []

    @torch.no_grad()
    def check(step: int, model) -> bool:
        if step % args.every:
            return False
        model.eval()
        hypotheses = translator.decode(decode(translator.encode([p.zh for p in test])))
        result = score(hypotheses, [p.en for p in test])
        model.train()
        print(
            f"  {name:5s} 步 {step:4d}  完全匹配 {result.exact_match:.4f}  BLEU {result.bleu:6.2f}"
        )
        if result.exact_match >= TARGET_EXACT and result.bleu >= TARGET_BLEU:
            reached.append(step)
        return bool(reached)

    train(
        model,
        examples,
        args.max_steps,
        batch_size=args.batch_size,
        seed=args.seed,
        progress=False,
        callback=check,
    )
    return reached[0] if reached else None


def timed_steps(model, examples, args):
    """一个计时情形：每次调用接着训练 ``args.timing_steps`` 步，返回每步的秒数。"""
    optimizer = make_optimizer(model)
    peak = warmup_lr(400, model.config.d_model, warmup=400)  # 预热的峰值；每步多少不影响用时
    for group in optimizer.param_groups:
        group["lr"] = peak
    batches = itertools.cycle(iterate_batches(examples, args.batch_size, model.config.pad_id))

    def run_steps():
        for _ in range(args.timing_steps):
            batch = next(batches)
            logits = model(batch.src, batch.tgt_in)  # (B, T, V)
            loss = label_smoothed_cross_entropy(logits, batch.tgt_out, 0.1, model.config.pad_id)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

    return lambda: seconds(run_steps) / args.timing_steps


def main() -> None:
    args = options(
        __doc__,
        repeats=5,
        warmup=1,
        every=5,
        max_steps=500,
        timing_rounds=20,
        timing_steps=5,
        test_sentences=0,
        batch_size=64,
        seed=0,
        tiny=dict(
            every=1, max_steps=4, timing_rounds=2, timing_steps=1, test_sentences=8, batch_size=4
        ),
    )
    decode_tokens, decode_sentences = (4, 8) if args.tiny else (64, 128), 2 if args.tiny else 32
    # torch.nn.Transformer 在推理路径上会提示嵌套张量还是原型功能；与计时无关
    warnings.filterwarnings("ignore", message="The PyTorch API of nested tensors")
    print(f"torch {torch.__version__}，{torch.get_num_threads()} 个线程", flush=True)

    corpus = generate_corpus(seed=args.seed)
    test = corpus.test[: args.test_sentences or None]
    src_vocab, tgt_vocab = corpus.build_vocabs()
    examples = encode_pairs(corpus.train, src_vocab, tgt_vocab)
    bos, eos = tgt_vocab.bos_id, tgt_vocab.eos_id
    ours = new_translator(src_vocab, tgt_vocab, seed=args.seed)
    torch.manual_seed(args.seed)
    theirs = TorchTranslator(ours.model.config)
    models = {"ours": ours.model, "torch": theirs}
    decoders = {
        "ours": lambda src: greedy_decode(ours.model, src, bos, eos),
        "torch": lambda src: torch_greedy(theirs, src, bos, eos),
    }

    print(f"训练到目标：完全匹配 ≥ {TARGET_EXACT}、BLEU ≥ {TARGET_BLEU}，每 {args.every} 步评估")
    results: dict[str, object] = {
        f"{name}_steps_to_target": steps_to_target(
            name, model, decoders[name], ours, examples, test, args
        )
        for name, model in models.items()
    }

    cases = {name: timed_steps(model, examples, args) for name, model in models.items()}
    timing = interleave(cases, args.timing_rounds, args.warmup)
    ratios = {"ratio_ms_per_step": paired(timing, "ours", "torch")}
    print(
        f"\n每步时间：交替 {args.timing_rounds} 轮、每轮 {args.timing_steps} 步，逐轮比值 ours/torch "
        f"的中位数 {ratios['ratio_ms_per_step']:.3f}"
    )
    for name in models:
        per_step = statistics.median(timing[name])
        results[f"{name}_ms_per_step"] = round(per_step * 1e3, 2)
        if results[f"{name}_steps_to_target"] is not None:
            results[f"{name}_seconds_to_target"] = round(
                per_step * results[f"{name}_steps_to_target"], 2
            )
    results["timing_rounds"] = args.timing_rounds
    if results["ours_steps_to_target"] and results["torch_steps_to_target"]:
        ratios["ratio_steps_to_target"] = (
            results["ours_steps_to_target"] / results["torch_steps_to_target"]
        )
        ratios["ratio_seconds_to_target"] = (
            ratios["ratio_ms_per_step"] * ratios["ratio_steps_to_target"]
        )

    # 一次训练前向的固定开销：读回主机几次（GPU 上每次都是一次停顿），进入检查函数几次（目标：≤ 3 次读回）
    batch = next(iter(iterate_batches(examples, args.batch_size, ours.model.config.pad_id)))
    forward = partial(ours.model, batch.src, batch.tgt_in)
    results["host_syncs_per_training_forward"] = host_syncs(forward)
    results["check_calls_per_training_forward"] = calls_into(_checks, forward)
    print(
        f"一次训练前向：读回主机 {results['host_syncs_per_training_forward']} 次（目标 ≤ 3），"
        f"进入 _checks.py 的函数 {results['check_calls_per_training_forward']} 次"
    )

    # 缓存解码 vs 完整重算：同一个训练好的模型；max_len 放大到能生成最长的那一档（位置编码表
    # 不是参数，不在 state_dict 里，所以同样的权重能装进 max_len 更大的模型）
    config = dataclasses.replace(ours.model.config, max_len=max(max(decode_tokens) + 1, 80))
    model = Transformer(config)
    model.load_state_dict(ours.model.state_dict())
    model.eval()
    src = pad_sequences(
        [s for s, _ in encode_pairs(test[:decode_sentences], src_vocab, tgt_vocab)], 0
    )
    for tokens in decode_tokens:
        runs = {
            name: partial(greedy_decode, model, src, bos, eos, tokens, use_cache, stop_at_eos=False)
            for name, use_cache in (("cached", True), ("full", False))
        }
        medians, speedup, same = cached_vs_full(runs, args.repeats)
        cached, full = medians["cached"], medians["full"]
        results[f"decode_{tokens}_cached_seconds"] = round(cached, 4)
        results[f"decode_{tokens}_full_seconds"] = round(full, 4)
        results[f"decode_{tokens}_speedup_cached"] = round(speedup, 2)
        results[f"decode_{tokens}_same_tokens"] = same
        print(
            f"{len(src)} 句 × {tokens} 个词元：缓存 {cached:.3f} s，完整重算 {full:.3f} s，输出相同：{same}"
        )
    print(
        json.dumps({**{k: round(v, 3) for k, v in ratios.items()}, **results}, ensure_ascii=False)
    )


if __name__ == "__main__":
    main()
