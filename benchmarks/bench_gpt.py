"""GPT 的训练步与生成：tinyformer.GPT vs 同尺寸的 torch.nn.TransformerEncoder（CPU）。

运行：``.venv/bin/python benchmarks/bench_gpt.py [--repeats 20] [--threads N]``（``_bench.py``）。

1. **训练步**（前向 + 交叉熵 + 反向 + AdamW）：我们的 :class:`tinyformer.GPT` 对
   "词嵌入 + 位置嵌入 + ``nn.TransformerEncoder``（``norm_first=True``、gelu、因果掩码 ``is_causal=True``）
   + LayerNorm + 与词嵌入共享权重的线性层"。两边尺寸、激活（精确 gelu）相同，权重由
   :func:`tinyformer.copy_from_torch` 拷成一样，先核对 logits 相同（目标：比值 ≤ 1.05）。
2. **生成**：``GPT.generate``（键/值缓存，每步只送入新字）对每步把整段重新送入模型，
   贪心地写 64 个字（目标：缓存快 ≥ 3 倍），一首（批量 1）与一整批（64 首）各测一次，并核对两者写出的
   编号相同。批量 1 时每步的计算很少，固定的开销（Python、每层的几次小运算）占了大头，所以加速比小于批量 64 时。

默认尺寸是随包发布的写诗模型：词表 5,341、C=128、4 个头、4 层、一批 64 首诗、每首 65 个位置。
"""

from __future__ import annotations

import json
import statistics
import time
from functools import partial

import torch
import torch.nn.functional as F
from _bench import cached_vs_full, header, interleave, options, paired
from torch import nn

from tinyformer import GPT, GPTConfig, copy_from_torch

SIZE = (5341, 64, 65, 128, 4, 4)  # 默认尺寸 V, B, T, C, H, L；--tiny 时换成 TINY
TINY = (30, 2, 8, 16, 4, 2)
NEW_TOKENS = 64


class TorchGPT(nn.Module):
    """torch 自带模块拼成的同一个模型：嵌入 + TransformerEncoder（pre-LN、gelu）+ LayerNorm + 共享输出层。"""

    def __init__(self, V: int, T: int, C: int, H: int, L: int):
        super().__init__()
        self.token = nn.Embedding(V, C)
        self.position = nn.Embedding(T, C)
        layer = nn.TransformerEncoderLayer(
            C, H, 4 * C, dropout=0.0, activation="gelu", batch_first=True, norm_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, L, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(C)
        self.output = nn.Linear(C, V, bias=False)
        self.output.weight = self.token.weight

    def forward(self, ids):
        T = ids.shape[1]
        x = self.token(ids) + self.position(torch.arange(T))  # (B, T, C)
        mask = nn.Transformer.generate_square_subsequent_mask(T)  # (T, T)，-inf 在右上
        x = self.encoder(x, mask=mask, is_causal=True)  # (B, T, C)
        return self.output(self.norm(x))  # (B, T, C) @ (C, V) -> (B, T, V)


def make_pair(V, T, C, H, L):
    """(ours, theirs)：同尺寸、同权重。"""
    torch.manual_seed(0)
    theirs = TorchGPT(V, T, C, H, L)
    ours = GPT(
        GPTConfig(vocab_size=V, max_len=T, d_model=C, num_heads=H, num_layers=L, activation="gelu")
    )
    with torch.no_grad():
        ours.token_embedding.embedding.weight.copy_(theirs.token.weight)
        ours.position_embedding.weight.copy_(theirs.position.weight)
        for mine, torchs in zip(ours.layers, theirs.encoder.layers, strict=True):
            copy_from_torch(mine, torchs)
        ours.decoder_norm.weight.copy_(theirs.norm.weight)
        ours.decoder_norm.bias.copy_(theirs.norm.bias)
    return ours, theirs


def train_step(model, optimizer, ids):
    """一个训练步，返回耗时（秒）。"""
    start = time.perf_counter()
    logits = model(ids[:, :-1])  # (B, T-1, V)
    loss = F.cross_entropy(logits.flatten(0, 1), ids[:, 1:].flatten())
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    return time.perf_counter() - start


@torch.no_grad()
def generate_without_cache(model, ids, new_tokens):
    """每一步把整段重新送入模型（没有缓存）的贪心生成。"""
    for _ in range(new_tokens):
        next_id = model(ids)[:, -1].argmax(dim=-1, keepdim=True)  # (B, T, V) -> (B, 1)
        ids = torch.cat([ids, next_id], dim=1)
    return ids


def main() -> None:
    args = options(__doc__, repeats=20, warmup=3)
    V_, B_, T_, C_, H_, L_ = TINY if args.tiny else SIZE
    new_tokens = 4 if args.tiny else NEW_TOKENS
    header(f"V={V_} B={B_} T={T_} C={C_} H={H_} layers={L_}, median of {args.repeats}")
    ours, theirs = make_pair(V_, T_, C_, H_, L_)
    ids = torch.randint(0, V_, (B_, T_ + 1), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        same = torch.allclose(ours(ids[:, :-1]), theirs(ids[:, :-1]), atol=1e-4)
    print(f"  allclose  ours logits == torch logits (atol 1e-4): {same}")
    assert same, "the two models differ"

    # 1. 训练步：交替运行，逐轮比值的中位数
    models = {"ours": ours, "torch": theirs}
    optimizers = {k: torch.optim.AdamW(m.parameters(), lr=1e-4) for k, m in models.items()}
    steps = {k: (lambda k=k: train_step(models[k], optimizers[k], ids)) for k in models}
    times = interleave(steps, args.repeats, args.warmup)
    train_ratio = paired(times, "ours", "torch")
    ms = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    print(
        f"  train step  ours {ms['ours']:.1f} ms  torch {ms['torch']:.1f} ms  ratio {train_ratio:.3f}x (goal <= 1.05)"
    )

    # 2. 生成：键/值缓存 vs 每步整段重算（从 <bos> 起写 new_tokens 个字），一首与一整批
    ours.eval()
    generation = {}
    for rows in sorted({1, B_}):
        prompt = ids[:rows, :1]  # (rows, 1)
        runs = {
            "cached": partial(ours.generate, prompt, new_tokens, greedy=True),
            "full": partial(generate_without_cache, ours, prompt, new_tokens),
        }
        medians, speedup, identical = cached_vs_full(runs, max(3, args.repeats // 4))
        print(
            f"  generate {new_tokens} tokens, batch {rows}  cached {medians['cached'] * 1e3:.1f} ms  "
            f"full {medians['full'] * 1e3:.1f} ms  speedup {speedup:.2f}x (goal >= 3)  same ids: {identical}"
        )
        generation[f"generate_{new_tokens}_speedup_cached_b{rows}"] = round(speedup, 2)
        generation[f"generate_same_ids_b{rows}"] = identical
    print(
        json.dumps(
            {
                "threads": torch.get_num_threads(),
                "train_ratio_ours_over_torch": round(train_ratio, 3),
                "train_ours_ms": round(ms["ours"], 2),
                "train_torch_ms": round(ms["torch"], 2),
                **generation,
            }
        )
    )


if __name__ == "__main__":
    main()
