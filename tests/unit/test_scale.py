"""tinyformer.poetry.scale 与 tools/scale_lab.py：幂律拟合、记下的实验、一次训练、随包发布的结果与来历。"""

from __future__ import annotations

import json
import math
from dataclasses import asdict

import pytest

from tinyformer import GPT, GPTConfig
from tinyformer.poetry import scale
from tinyformer.poetry.corpus import Vocab, load_split
from tinyformer.poetry.training import make_model
from tools import scale_lab

# ---------------------------------------------------------------- 拟合


def test_fit_power_law_recovers_the_parameters_that_made_the_data():
    x = [3e3, 1e4, 3e4, 1e5, 3e5, 1e6]
    fit = scale.fit_power_law(x, [12.0 * v**-0.25 + 7.5 for v in x])
    assert fit["a"] == pytest.approx(12.0, rel=1e-3)
    assert fit["alpha"] == pytest.approx(0.25, abs=1e-5)
    assert fit["c"] == pytest.approx(7.5, abs=1e-4)
    assert fit["rmse"] < 1e-5
    line = scale.fit_power_law(x, [3.0 * v**-0.1 for v in x], with_floor=False)
    assert (line["a"], line["alpha"], line["c"]) == pytest.approx((3.0, 0.1, 0.0))


def test_fit_power_law_minimises_the_squared_error():
    x, y = [1e3, 1e4, 1e5, 1e6, 1e7], [9.1, 8.5, 8.3, 8.0, 7.95]  # 带噪声
    fit = scale.fit_power_law(x, y)

    def sse(a, alpha, c):
        return sum((v - a * u**-alpha - c) ** 2 for u, v in zip(x, y, strict=True))

    best = sse(fit["a"], fit["alpha"], fit["c"])
    assert best == pytest.approx(fit["rmse"] ** 2 * len(x))
    for da, dalpha, dc in [(0.1, 0, 0), (0, 0.01, 0), (0, 0, 0.01), (0, -0.01, 0.02)]:
        assert sse(fit["a"] + da, fit["alpha"] + dalpha, fit["c"] - dc) > best


def test_fit_power_law_names_a_bad_input():
    with pytest.raises(ValueError, match=r"at least 3 points, got 2 x and 2 y"):
        scale.fit_power_law([1, 2], [3, 4])
    with pytest.raises(ValueError, match=r"got 3 x and 2 y"):
        scale.fit_power_law([1, 2, 3], [3, 4], with_floor=False)


# ---------------------------------------------------------------- 记下的实验


def test_recorded_experiments_meet_the_lab_design():
    vocab = Vocab(["<pad>", "<unk>", "<bos>", "<eos>", "春"])
    sizes = [e for e in scale.EXPERIMENTS if e.group == "size"]
    counts = [
        scale.non_embedding_params(make_model(vocab, e.d_model, e.num_layers, e.num_heads))
        for e in sizes
    ]
    assert len(sizes) >= 5 and counts == sorted(counts) and counts[-1] / counts[0] >= 30
    assert len({(e.steps, e.batch_size, e.train_poems) for e in sizes}) == 1  # 同样的数据量
    data = [e for e in scale.EXPERIMENTS if e.group == "data"]
    assert len(data) >= 4 and len({(e.d_model, e.num_layers) for e in data}) == 1
    ablation = [e for e in scale.EXPERIMENTS if e.group == "ablation"]
    assert len(scale.ABLATIONS) >= 6 and len(scale.SEEDS) >= 2
    assert len(ablation) == len(scale.ABLATIONS) * len(scale.SEEDS)
    assert len({(e.d_model, e.num_layers, e.steps, e.batch_size) for e in ablation}) == 1
    for options in scale.ABLATIONS.values():  # 每行的选项 GPTConfig 都认得
        GPTConfig(vocab_size=10, d_model=64, num_heads=4, **options)
    names = [e.name for e in scale.EXPERIMENTS]
    assert len(names) == len(set(names))


def test_non_embedding_params_leave_out_token_and_position_embeddings():
    model = GPT(GPTConfig(vocab_size=50, max_len=16, d_model=16, num_heads=2, num_layers=2))
    blocks = sum(p.numel() for p in model.layers.parameters())
    final = sum(p.numel() for p in model.decoder_norm.parameters())
    assert scale.non_embedding_params(model) == blocks + final
    total = sum(p.numel() for p in model.parameters())
    assert total - scale.non_embedding_params(model) == (50 + 16) * 16  # 词嵌入（共享）+ 位置


def test_experiment_by_name():
    assert scale.experiment("size-1").group == "size"
    with pytest.raises(ValueError, match=r"no experiment named 'size-99'"):
        scale.experiment("size-99")


def test_run_trains_evaluates_and_repeats_exactly():
    tiny = scale.Experiment(
        "tiny", "size", d_model=8, num_layers=1, num_heads=2, train_poems=40, steps=4,
        batch_size=4, eval_every=2,
    )  # fmt: skip
    first, second = scale.run(tiny), scale.run(tiny)
    assert first["valid_bpc"] == second["valid_bpc"]  # 同一台机器、同一个种子：逐位相同
    assert [step for step, _ in first["curve"]] == [2, 4]
    assert first["best_valid_bpc"] == min(bpc for _, bpc in first["curve"])
    assert first["train_poems"] == 40 and first["seed"] == 0
    assert 8 < first["valid_bpc"] < math.log2(5341) + 0.5  # 4 步：接近均匀猜测
    poems = load_split("train")[:40]
    assert first["tokens"] == round(4 * 4 * sum(len(p) + 1 for p in poems) / 40)


# ---------------------------------------------------------------- 随包发布的结果


def test_shipped_results_match_the_recorded_experiments():
    results = scale.load_results()
    rows = {row["name"]: row for row in results["runs"]}
    assert set(rows) == {e.name for e in scale.EXPERIMENTS}
    for exp in scale.EXPERIMENTS:  # 文件里的每一行都是用记下的设置跑的
        settings = {k: v for k, v in asdict(exp).items() if k != "train_poems"}
        assert {k: rows[exp.name][k] for k in settings} == settings
        assert rows[exp.name]["seconds"] > 0 and rows[exp.name]["threads"] == 1
    ran = [name for invocation in results["provenance"] for name in invocation["runs"]]
    assert sorted(ran) == sorted(rows)  # 每个结果都有且只有一条来历
    for invocation in results["provenance"]:
        assert invocation["git_commit"] and invocation["torch"] and invocation["cpu"]
        assert invocation["corpus"] == scale_lab.corpus_digests()  # 跑在随包的这一版语料上


def test_scale_lab_writes_each_run_atomically_with_its_provenance(tmp_path, monkeypatch):
    results = tmp_path / "scale_lab.json"
    monkeypatch.setattr(scale_lab, "RESULTS", results)
    monkeypatch.setattr(scale_lab, "run", lambda exp, device: {"name": exp.name, "seed": exp.seed,
        "non_embedding_params": 1, "valid_bpc": 9.0, "best_valid_bpc": 9.0, "best_step": 1,
        "seconds": 1.0})  # fmt: skip
    scale_lab.main(["--only", "size-2", "--only", "size-1"])
    scale_lab.main(["--only", "size-2"])  # 重跑：旧行被替换，来历归最后一次
    record = json.loads(results.read_text(encoding="utf-8"))
    assert [row["name"] for row in record["runs"]] == ["size-1", "size-2"]
    assert [inv["runs"] for inv in record["provenance"]] == [["size-1"], ["size-2"]]
    assert record["provenance"][-1]["command"] == "python -m tools.scale_lab --only size-2"
    other = tmp_path / "other.json"  # 另一个进程写的结果，再并进来
    scale_lab.main(["--only", "size-3", "--results", str(other)])
    scale_lab.main(["--merge", str(other)])
    record = json.loads(results.read_text(encoding="utf-8"))
    assert [row["name"] for row in record["runs"]] == ["size-1", "size-2", "size-3"]
    assert [inv["runs"] for inv in record["provenance"]] == [["size-1"], ["size-2"], ["size-3"]]
    assert record["provenance"][-1]["command"] == "python -m tools.scale_lab --only size-3"
    assert sorted(tmp_path.iterdir()) == sorted([results, other])  # 没有留下临时文件
