"""benchmarks/：每个基准脚本在极小规模（--tiny）下能跑通，最后一行是带比值的 JSON。

这里只检查脚本没有坏掉；性能数字要在安静的机器上用默认规模运行才有意义。
"""

import json
import subprocess
import sys

import pytest

from tests.kit import ROOT

SCRIPTS = [
    ("bench_attention.py", {"none_ratio_weights", "causal_ratio_fused"}),
    ("bench_translation.py", {"ratio_ms_per_step", "decode_8_same_tokens"}),
    (
        "bench_gpt.py",
        {
            "train_ratio_ours_over_torch",
            "generate_4_speedup_cached_b1",
            "decode_ratio_gqa_over_mha",
            "train_ratio_rope_over_learned",
        },
    ),
    ("bench_bpe.py", {"naive_ratio_over_incremental", "tokenizers_ratio_over_incremental"}),
]


def test_every_benchmark_script_is_run_here():
    assert {p.name for p in (ROOT / "benchmarks").glob("bench_*.py")} == {s for s, _ in SCRIPTS}


@pytest.mark.parametrize("script, keys", SCRIPTS)
def test_benchmark_runs_at_tiny_size(script, keys):
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            f"benchmarks.{script.removesuffix('.py')}",
            "--tiny",
            "--threads",
            "1",
        ],
        capture_output=True,
        cwd=ROOT,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert keys <= summary.keys()
    assert all(value > 0 for key, value in summary.items() if "ratio" in key)
