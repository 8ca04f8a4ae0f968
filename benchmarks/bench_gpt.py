"""GPT 的训练步与生成：tinyformer.GPT vs 同尺寸的 torch.nn.TransformerEncoder，以及 2017 年之后的改动的代价（CPU）。

运行：``.venv/bin/python -m benchmarks.bench_gpt [--repeats 20] [--threads N]``（``_bench.py``）。

1. **训练步**（前向 + 交叉熵 + 反向 + AdamW）：我们的 :class:`tinyformer.GPT` 对
   "词嵌入 + 位置嵌入 + ``nn.TransformerEncoder``（``norm_first=True``、gelu、因果掩码 ``is_causal=True``）
   + LayerNorm + 与词嵌入共享权重的线性层"。两边尺寸、激活（精确 gelu）相同，权重由
   :func:`tinyformer.copy_from_torch` 拷成一样，先核对 logits 相同（目标：比值 ≤ 1.05）。
2. **生成**：``GPT.generate``（键/值缓存，每步只送入新字）对每步把整段重新送入模型，
   贪心地写 64 个字（目标：缓存快 ≥ 3 倍），一首（批量 1）与一整批（64 首）各测一次，并核对两者写出的
   编号相同。批量 1 时每步的计算很少，固定的开销（Python、每层的几次小运算）占了大头，所以加速比小于批量 64 时。
   另数每写一个字进入参数检查函数、读回主机的次数（``GPT.generate`` 与随包的写诗模型的 ``write``）。
3. **GQA/MQA 的解码**：同尺寸的 GPT，K、V 头数 4（多头注意力）、2（GQA）、1（MQA）。先把一段长提示送入、
   填满键/值缓存，再逐个送入新词元（贪心），计每个新词元的耗时；缓存的字节数由 ``KVCache.nbytes()`` 读出。
   长提示是为了让每步读缓存的代价显出来：批量 8、提示 448、再写 64 个词元，缓存是 K、V 头数的正比。
4. **现代选项的训练步**（与 1 相同的 ``train_step``）：学到的位置嵌入对 RoPE（两种配对布局）与 NoPE；另附
   RMSNorm、SwiGLU、不要偏置各自对默认的比值，供“同等计算量”的比较参考。
5. **注意力本身**（前向 + 反向，``bench_attention.py`` 的尺寸）：带 RoPE 的多头注意力对不带的。

默认尺寸是随包发布的写诗模型：词表 5,341、C=128、4 个头、4 层、一批 64 首诗、每首 65 个位置。
"""

from __future__ import annotations

import json
import statistics
import time
from functools import partial

import torch
import torch.nn.functional as F
from torch import nn

from benchmarks._bench import (
    cached_vs_full,
    calls_into,
    header,
    host_syncs,
    interleave,
    options,
    paired,
)
from benchmarks.bench_attention import SIZE as ATTN_SIZE
from benchmarks.bench_attention import TINY as ATTN_TINY
from benchmarks.bench_attention import _step
from tinyformer import (
    GPT,
    GPTConfig,
    KVCache,
    MultiHeadAttention,
    RotaryEmbedding,
    _checks,
    causal_mask,
    copy_from_torch,
)
from tinyformer.poetry.pretrained import load_model
from tinyformer.poetry.sampling import write

SIZE = (5341, 64, 65, 128, 4, 4)  # 默认尺寸 V, B, T, C, H, L；--tiny 时换成 TINY
TINY = (30, 2, 8, 16, 4, 2)
NEW_TOKENS = 64
DECODE = (8, 448, 64)  # GQA/MQA 的解码：批量、提示长度、新词元数；--tiny 时换成 DECODE_TINY
DECODE_TINY = (2, 8, 4)


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


def make_gpt(V: int, max_len: int, C: int, H: int, L: int, **options) -> GPT:
    torch.manual_seed(0)
    config = GPTConfig(
        vocab_size=V, max_len=max_len, d_model=C, num_heads=H, num_layers=L, **options
    )
    return GPT(config)


@torch.no_grad()
def decode(model: GPT, prompt: torch.Tensor, new_tokens: int) -> tuple[float, int]:
    """送入提示填满缓存，再逐个送入 new_tokens 个新词元；返回 (每个新词元的秒数, 缓存字节数)。"""
    cache = KVCache()
    next_id = model(prompt, cache=cache)[:, -1:].argmax(dim=-1)  # (B, 1)
    start = time.perf_counter()
    for _ in range(new_tokens):
        next_id = model(next_id, cache=cache)[:, -1:].argmax(dim=-1)  # (B, 1, V) -> (B, 1)
    return (time.perf_counter() - start) / new_tokens, cache.nbytes()


def report(title: str, times: dict[str, list[float]], baseline: str, unit: str, extra=None):
    """打印每个情形的中位数与对 baseline 的比值，返回 情形 -> 比值。"""
    print(f"\n{title}")
    ratios = {}
    for name, t in times.items():
        ratios[name] = paired(times, name, baseline)
        note = "" if extra is None else f"  {extra[name]}"
        print(
            f"  {name:<24}{statistics.median(t) * 1e3:>9.2f} {unit}"
            f"   ratio {ratios[name]:.3f}x{note}"
        )
    return ratios


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
    # 每写一个字的固定开销：进入检查函数几次、读回主机几次（目标：检查 ≤ 5 次）。GPT.generate 是随机初始化的
    # 同尺寸模型，write 是随包发布的写诗模型写一首五言绝句（每字还要读回被选的字和候选表）
    one = partial(ours.generate, ids[:1, :1], new_tokens, greedy=True)
    poet, vocab = load_model()
    poem = write(poet, vocab, form="五绝", generator=torch.Generator().manual_seed(0))
    chars = len(poem.text)
    poem_call = partial(write, poet, vocab, form="五绝", generator=torch.Generator().manual_seed(0))
    overhead = {
        "check_calls_per_token_generate_b1": calls_into(_checks, one) / new_tokens,
        "host_syncs_per_token_generate_b1": host_syncs(one) / new_tokens,
        "check_calls_per_char_write": calls_into(_checks, poem_call) / chars,
        "host_syncs_per_char_write": host_syncs(poem_call) / chars,
    }
    for name, value in overhead.items():
        print(f"  {name:<36}{value:6.2f}")
    summary = {
        **{name: round(value, 2) for name, value in overhead.items()},
        "threads": torch.get_num_threads(),
        "train_ratio_ours_over_torch": round(train_ratio, 3),
        "train_ours_ms": round(ms["ours"], 2),
        "train_torch_ms": round(ms["torch"], 2),
        **generation,
    }
    batch, prompt_len, new_tokens = DECODE_TINY if args.tiny else DECODE
    attn_size = ATTN_TINY if args.tiny else ATTN_SIZE

    # 3. 解码：MHA / GQA / MQA
    max_len = prompt_len + new_tokens + 1
    prompt = torch.randint(0, V_, (batch, prompt_len), generator=torch.Generator().manual_seed(1))
    kinds = (("MHA", H_), ("GQA", H_ // 2), ("MQA", 1))
    kv_heads = {f"{kind} (kv heads {kv})": kv for kind, kv in kinds}
    mha, gqa, mqa = kv_heads
    models = {
        name: make_gpt(V_, max_len, C_, H_, L_, num_kv_heads=kv).eval()
        for name, kv in kv_heads.items()
    }
    # 缓存在写完 new_tokens 个词元之后的大小（这一遍也当作预热）
    cache_bytes = {name: decode(model, prompt, new_tokens)[1] for name, model in models.items()}
    cases = {
        name: (lambda m=model: decode(m, prompt, new_tokens)[0]) for name, model in models.items()
    }
    times = interleave(cases, max(3, args.repeats // 2), args.warmup)
    notes = {
        n: f"cache {b / 2**20:.2f} MiB ({b / cache_bytes[mha]:.2f}x)"
        for n, b in cache_bytes.items()
    }
    title = f"decode: batch {batch}, prompt {prompt_len}, then {new_tokens} new tokens one by one"
    ratios = report(title, times, mha, "ms/token", notes)
    for short, name in (("gqa", gqa), ("mqa", mqa)):
        summary[f"decode_ratio_{short}_over_mha"] = round(ratios[name], 3)
        summary[f"cache_ratio_{short}_over_mha"] = round(cache_bytes[name] / cache_bytes[mha], 3)
    summary["decode_mha_ms_per_token"] = round(statistics.median(times[mha]) * 1e3, 3)

    # 4. 训练步：学到的位置嵌入 vs RoPE / NoPE，另附其余选项
    variants = {  # 名字也是 JSON 里的键：train_ratio_<名字>_over_learned
        "learned": {},  # GPT-2 的学到的位置嵌入
        "rope": {"position": "rope"},
        "rope_interleaved": {"position": "rope", "rope_layout": "interleaved"},
        "nope": {"position": "none"},
        "rmsnorm": {"norm": "rmsnorm"},
        "swiglu": {"ffn": "swiglu"},
        "no_bias": {"bias": False},
    }
    ids = torch.randint(0, V_, (B_, T_ + 1), generator=torch.Generator().manual_seed(1))
    models = {name: make_gpt(V_, T_, C_, H_, L_, **o) for name, o in variants.items()}
    optimizers = {name: torch.optim.AdamW(m.parameters(), lr=1e-4) for name, m in models.items()}
    cases = {name: (lambda n=name: train_step(models[n], optimizers[n], ids)) for name in models}
    params = {
        n: f"{sum(p.numel() for p in m.parameters()):,} parameters" for n, m in models.items()
    }
    times = interleave(cases, args.repeats, args.warmup)
    title = f"train step: batch {B_}, {T_} positions (forward + cross-entropy + backward + AdamW)"
    ratios = report(title, times, "learned", "ms", params)
    for name in variants:
        if name != "learned":
            summary[f"train_ratio_{name}_over_learned"] = round(ratios[name], 3)
    summary["train_learned_ms"] = round(statistics.median(times["learned"]) * 1e3, 2)

    # 5. 注意力本身：带 RoPE 与不带，前向 + 反向
    b, t, c, h = attn_size
    torch.manual_seed(0)
    plain = MultiHeadAttention(c, h)
    rotary = MultiHeadAttention(c, h, rope=RotaryEmbedding(c // h, max_len=t))
    rotary.load_state_dict(plain.state_dict())  # 同样的权重，只差旋转
    x = torch.randn(b, t, c, requires_grad=True)
    mask = causal_mask(t)
    cases = {
        f"{name} attention": lambda m=mha: _step(
            lambda x: m(x, x, x, attn_mask=mask, need_weights=False), x
        )
        for name, mha in (("plain", plain), ("rope", rotary))
    }
    times = interleave(cases, args.repeats, args.warmup)
    title = f"attention forward + backward: B={b} T={t} C={c} H={h}, causal, fused path"
    ratios = report(title, times, "plain attention", "ms")
    summary["attention_ratio_rope_over_plain"] = round(ratios["rope attention"], 3)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
