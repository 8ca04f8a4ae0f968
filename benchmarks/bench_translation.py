"""第 8 章的性能数字：训练到目标精度要多久（与同尺寸的 torch.nn.Transformer 并排），缓存解码快多少。

运行：``.venv/bin/python benchmarks/bench_translation.py [--budget 120] [--eval-every 25]``

1. **训练到目标精度的时间**（time-to-accuracy）。同一份语料（``generate_corpus(seed)``）、同样的
   尺寸（C=128、H=4、编码器/解码器各 2 层、d_ff=256、dropout 0.1）、同样的批量、损失、优化器、
   预热学习率和打乱顺序，分别训练 tinyformer 的 ``Transformer`` 和用 ``torch.nn.Transformer``
   搭的同尺寸模型。每 ``--eval-every`` 步在 **留出的测试集**（训练中没见过的搭配）上贪心解码，
   算完全匹配率和 sacreBLEU；评估的时间不计入训练时间。两个指标都达标（完全匹配 ≥ 95 %、
   BLEU ≥ 90）即停，最多训练 ``--budget`` 秒。计时之前两种模型各先训练 30 步预热（一次性开销不算在
   先跑的那个头上）。
2. **缓存解码 vs 完整重算**。同一个训练好的模型、同一批 32 个测试句，不在 ``<eos>`` 停、
   各生成 64 个词元；交替运行各 ``--repeats`` 次取中位数，并检查两者的输出逐个相同。

最后打印一行 JSON，便于写进说明。
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
import warnings

import torch
from torch import nn

from tinyformer import TransformerConfig, sinusoidal_encoding
from tinyformer.decoding import greedy_decode
from tinyformer.training import encode_pairs, pad_sequences, train
from tinyformer.translation import detokenize_en, generate_corpus
from tinyformer.translator import Translator, score

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


def evaluate(decode, translator: Translator, pairs) -> tuple[float, float]:
    """用 ``decode(src) -> ids`` 翻译 ``pairs``，返回 (完全匹配率, BLEU)。"""
    hypotheses = translator.decode(decode(translator.encode([p.zh for p in pairs])))
    result = score(hypotheses, [p.en for p in pairs])
    return result.exact_match, result.bleu


def time_to_accuracy(model, decode, translator, corpus, examples, budget, eval_every, seed):
    """训练直到测试集上两个指标都达标；返回 (达标时的训练秒数或 None, 步数, 记录)。"""
    log, eval_seconds = [], 0.0
    start = time.perf_counter()

    def callback(step, model):
        nonlocal eval_seconds
        if step % eval_every:
            return False
        t0 = time.perf_counter()
        model.eval()
        exact, bleu = evaluate(decode, translator, corpus.test)
        model.train()
        eval_seconds += time.perf_counter() - t0
        train_seconds = time.perf_counter() - start - eval_seconds
        log.append((step, round(train_seconds, 1), round(exact, 4), round(bleu, 2)))
        print(
            f"  步 {step:4d}  训练 {train_seconds:6.1f} s  完全匹配 {exact:.4f}  BLEU {bleu:6.2f}",
            flush=True,
        )
        return (exact >= TARGET_EXACT and bleu >= TARGET_BLEU) or train_seconds >= budget

    train(model, examples, max_seconds=10 * budget, seed=seed, progress=False, callback=callback)
    step, seconds, exact, bleu = log[-1]
    reached = exact >= TARGET_EXACT and bleu >= TARGET_BLEU
    return (seconds if reached else None), step, log


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=120.0, help="每个模型最多训练多少秒")
    parser.add_argument("--eval-every", type=int, default=25, help="每多少步评估一次")
    parser.add_argument("--repeats", type=int, default=5, help="解码计时的重复次数")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    # torch.nn.Transformer 在推理路径上会提示嵌套张量还是原型功能；与计时无关
    warnings.filterwarnings("ignore", message="The PyTorch API of nested tensors")
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}，{torch.get_num_threads()} 个线程")

    corpus = generate_corpus(seed=args.seed)
    src_vocab, tgt_vocab = corpus.build_vocabs()
    examples = encode_pairs(corpus.train, src_vocab, tgt_vocab)
    bos, eos = tgt_vocab.bos_id, tgt_vocab.eos_id
    results = {}

    # 预热：第一次训练要付线程池、内存分配等一次性开销；不预热的话先跑的那个模型吃亏
    for model in (
        Translator.build(src_vocab, tgt_vocab).model,
        TorchTranslator(Translator.build(src_vocab, tgt_vocab).model.config),
    ):
        train(model, examples, max_steps=30, progress=False)
    ours = Translator.build(src_vocab, tgt_vocab, seed=args.seed)
    torch.manual_seed(args.seed)
    theirs = TorchTranslator(ours.model.config)
    contenders = [
        ("ours", "tinyformer.Transformer（贪心解码带缓存）", ours.model,
         lambda src: greedy_decode(ours.model, src, bos, eos)),
        ("torch", "torch.nn.Transformer（同尺寸）", theirs,
         lambda src: torch_greedy(theirs, src, bos, eos)),
    ]  # fmt: skip
    for key, title, model, decode in contenders:
        print(f"{title}：")
        seconds, steps, _ = time_to_accuracy(
            model, decode, ours, corpus, examples, args.budget, args.eval_every, args.seed
        )
        results[f"{key}_seconds_to_target"], results[f"{key}_steps_to_target"] = seconds, steps
    if results["ours_seconds_to_target"] and results["torch_seconds_to_target"]:
        results["time_ratio_ours_over_torch"] = round(
            results["ours_seconds_to_target"] / results["torch_seconds_to_target"], 2
        )

    # 缓存解码 vs 完整重算：同一个训练好的模型，32 句，各生成 64 个词元
    model = ours.model.eval()
    src = pad_sequences([s for s, _ in encode_pairs(corpus.test[:32], src_vocab, tgt_vocab)], 0)
    times = {True: [], False: []}
    outputs = {}
    for _ in range(args.repeats + 1):  # 第一轮是预热，不计
        for use_cache in (True, False):
            t0 = time.perf_counter()
            outputs[use_cache] = greedy_decode(
                model, src, bos, eos, 64, use_cache, stop_at_eos=False
            )
            times[use_cache].append(time.perf_counter() - t0)
    cached, full = (statistics.median(times[k][1:]) for k in (True, False))
    results["decode_64_cached_seconds"] = round(cached, 3)
    results["decode_64_full_seconds"] = round(full, 3)
    results["decode_speedup_cached"] = round(full / cached, 2)
    results["decode_same_tokens"] = bool(torch.equal(outputs[True], outputs[False]))
    print(
        f"缓存解码 {cached:.3f} s，完整重算 {full:.3f} s（32 句 × 64 个词元）："
        f"快 {full / cached:.2f} 倍，输出相同：{results['decode_same_tokens']}"
    )
    example = detokenize_en(tgt_vocab.decode(outputs[True][0], strip_special=True))
    print(f"例句：{corpus.test[0].zh} → {example}")
    print(json.dumps(results, ensure_ascii=False))


if __name__ == "__main__":
    main()
