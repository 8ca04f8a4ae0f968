"""2017 年之后的改动的代价（CPU）：GQA/MQA 的解码与缓存，RoPE 的训练步，同一次运行里并排比较。

运行：``.venv/bin/python benchmarks/bench_modern.py [--repeats 20] [--threads N]``（``_bench.py``）。

1. **解码**：同尺寸的 GPT，K、V 头数 4（多头注意力）、2（GQA）、1（MQA）。先把一段长提示送入、填满
   键/值缓存，再逐个送入新词元（贪心），计每个新词元的耗时；缓存的字节数由 ``KVCache.nbytes()`` 读出。
   长提示是为了让每步读缓存的代价显出来：批量 8、提示 448、再写 64 个词元，缓存是 K、V 头数的正比。
2. **训练步**（前向 + 交叉熵 + 反向 + AdamW，与 ``bench_gpt.py`` 的 ``train_step`` 相同）：写诗模型的尺寸，
   学到的位置嵌入对 RoPE（两种配对布局）与 NoPE；另附 RMSNorm、SwiGLU、不要偏置各自对默认的比值，
   供“同等计算量”的比较参考。
3. **注意力本身**（前向 + 反向，``bench_attention.py`` 的尺寸）：带 RoPE 的多头注意力对不带的。
"""

from __future__ import annotations

import json
import statistics
import time

import torch
from _bench import header, interleave, options, paired
from bench_attention import SIZE as ATTN_SIZE
from bench_attention import TINY as ATTN_TINY
from bench_attention import _step
from bench_gpt import SIZE, TINY, train_step

from tinyformer import GPT, GPTConfig, KVCache, MultiHeadAttention, RotaryEmbedding, causal_mask

DECODE = (8, 448, 64)  # 解码：批量、提示长度、新词元数；--tiny 时换成 DECODE_TINY
DECODE_TINY = (2, 8, 4)


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
    batch, prompt_len, new_tokens = DECODE_TINY if args.tiny else DECODE
    attn_size = ATTN_TINY if args.tiny else ATTN_SIZE
    header(f"V={V_} C={C_} H={H_} layers={L_}, median of {args.repeats}")
    summary: dict[str, float] = {"threads": torch.get_num_threads()}

    # 1. 解码：MHA / GQA / MQA
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

    # 2. 训练步：学到的位置嵌入 vs RoPE / NoPE，另附其余选项
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

    # 3. 注意力本身：带 RoPE 与不带，前向 + 反向
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
