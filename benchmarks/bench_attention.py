"""多头注意力的前向 + 反向耗时：tinyformer vs torch.nn.MultiheadAttention（CPU）。

运行：``.venv/bin/python -m benchmarks.bench_attention [--repeats 30] [--threads N]``（``_bench.py``）。
最后一行是 JSON：各情形的中位数和 ours/torch 比值。

公平起见：

- 两边权重相同（``copy_from_torch``），输入相同，都在训练模式（dropout=0）下做前向 + 反向，
  反向都从输出 ``out.sum()`` 开始。
- torch 默认把注意力权重在 H 个头上取平均（``average_attn_weights=True``），返回 (B, T, S)；
  我们返回每个头的 (B, H, T, S)，所以计时的代码里我们也做 ``weights.mean(dim=1)``，
  两边交出的是同一个张量（下面用 allclose 检查）。
"""

from __future__ import annotations

import json
import statistics

import torch

from benchmarks._bench import header, interleave, options, paired, seconds
from tinyformer import MultiHeadAttention, causal_mask, copy_from_torch

SIZE = (16, 128, 256, 8)  # 默认尺寸 B, T, C, H；--tiny 时换成 TINY
TINY = (2, 8, 16, 4)


def _cases(ours, theirs, mask):
    """情形名 -> 函数（返回 (输出, 平均后的权重或 None)）。两边收同一个掩码（True = 遮住，与 torch 同义）。"""

    def ours_weights(x):
        out, weights = ours(x, x, x, attn_mask=mask, need_weights=True)
        return out, weights.mean(dim=1)  # (B, H, T, S) -> (B, T, S)，与 torch 的默认相同

    return {
        "ours  need_weights=True ": ours_weights,
        "torch need_weights=True ": lambda x: theirs(x, x, x, attn_mask=mask, need_weights=True),
        "ours  need_weights=False": lambda x: ours(x, x, x, attn_mask=mask, need_weights=False),
        "torch need_weights=False": lambda x: theirs(x, x, x, attn_mask=mask, need_weights=False),
    }


def _step(function, x):
    """一次前向 + 反向（``function(x)`` 返回 (输出, …)），返回耗时（秒）。"""
    x.grad = None
    return seconds(lambda: function(x)[0].sum().backward())


def _check_outputs(cases, x):
    with torch.no_grad():
        results = {name: function(x) for name, function in cases.items()}
    (ow, oww), (tw, tww), (of, _), (tf, _) = results.values()
    checks = {
        "ours == torch (output, weights path)": torch.allclose(ow, tw, atol=1e-5),
        "ours == torch (averaged weights)": torch.allclose(oww, tww, atol=1e-6),
        "ours fused == ours weights path": torch.allclose(of, ow, atol=1e-5),
        "ours fused == torch need_weights=False": torch.allclose(of, tf, atol=1e-5),
    }
    for name, ok in checks.items():
        print(f"  allclose  {name:<42} {ok}")
    assert all(checks.values()), "outputs differ"


def run(mask_name: str, repeats: int, warmup: int, size) -> dict[str, float]:
    B, T, C, H = size
    torch.manual_seed(0)
    theirs = torch.nn.MultiheadAttention(C, H, batch_first=True)
    ours = copy_from_torch(MultiHeadAttention(C, H), theirs)
    mask = causal_mask(T) if mask_name == "causal" else None
    x = torch.randn(B, T, C, requires_grad=True)
    cases = _cases(ours, theirs, mask)

    print(f"\nmask={mask_name}")
    _check_outputs(cases, x)
    steps = {name: (lambda f=function: _step(f, x)) for name, function in cases.items()}
    times = interleave(steps, repeats, warmup)
    medians = {name: statistics.median(t) * 1e3 for name, t in times.items()}
    a, b, c, d = times  # 四个情形的名字
    print(f"  {'case':<26}{'median ms':>10}")
    for name, ms in medians.items():
        print(f"  {name:<26}{ms:>10.2f}")
    ratios = {
        "ours / torch   (weights, averaged)": paired(times, a, b),
        "ours fused / ours weights": paired(times, c, a),
        "ours fused / torch need_weights=False": paired(times, c, d),
    }
    for name, ratio in ratios.items():
        print(f"  ratio  {name:<40}{ratio:>6.2f}x")
    weights, _, fused = ratios.values()
    return {
        f"{mask_name}_ours_weights_ms": round(medians[a], 3),
        f"{mask_name}_torch_weights_ms": round(medians[b], 3),
        f"{mask_name}_ours_fused_ms": round(medians[c], 3),
        f"{mask_name}_torch_fused_ms": round(medians[d], 3),
        f"{mask_name}_ratio_weights": round(weights, 3),
        f"{mask_name}_ratio_fused": round(fused, 3),
    }


def main() -> None:
    args = options(__doc__, repeats=30, warmup=5)
    size = TINY if args.tiny else SIZE
    header("B={} T={} C={} H={}, forward + backward, median of {}".format(*size, args.repeats))
    results = {}
    for mask_name in ("none", "causal"):
        results.update(run(mask_name, args.repeats, args.warmup, size))
    ratios = {k: v for k, v in results.items() if "ratio" in k}
    # 目标是与 torch 持平（≤ 1.05）。快路径用的就是 torch 的融合内核；返回权重的路径把公式逐步写出来
    # （QKᵀ/√D、masked_fill、softmax、@V 各是一次运算），torch 把前两步合成一次 baddbmm，所以它可以略慢
    print(f"\nworst ours/torch ratio: {max(ratios.values()):.2f}x (goal: parity, <= 1.05)")
    print(json.dumps({"threads": torch.get_num_threads(), **ratios, **results}))


if __name__ == "__main__":
    main()
