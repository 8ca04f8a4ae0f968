"""tinyformer.poetry.scale 与 tools/scale_lab.py：幂律拟合、记下的实验、一次训练、随包发布的结果与来历。"""

from __future__ import annotations

import json
import math
from dataclasses import asdict

import pytest
import torch

from tinyformer import GPT, GPTConfig
from tinyformer.poetry import scale
from tinyformer.poetry.corpus import load_split
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


def test_linear_fit_solves_three_columns_exactly():
    x = [-2.0, -1.0, 0.5, 1.0, 3.0]
    (p0, p1, p2), sse = scale._linear_fit(
        [[1.0] * 5, x, [v * v for v in x]], [4 - 3 * v + 0.5 * v * v for v in x]
    )
    assert (p0, p1, p2) == pytest.approx((4.0, -3.0, 0.5)) and sse < 1e-20


def _chinchilla_points(budgets, noise=0.003, seed=1):
    """L(N, D) = E + A/N^α + B/D^β、C = 6ND 上的等计算量点（Hoffmann 等人拟合出的参数），
    每个预算在真正的最好尺寸两侧各取两个；返回 (点, 真正的 a = β / (α + β))。"""
    import random

    E, A, B, alpha, beta = 1.69, 406.4, 410.7, 0.34, 0.28
    rng, points = random.Random(seed), {}
    for c in budgets:
        best = (alpha * A / (beta * B)) ** (1 / (alpha + beta)) * (c / 6) ** (beta / (alpha + beta))
        points[c] = [
            (
                round(best * f),
                E
                + A / (best * f) ** alpha
                + B / (c / (6 * best * f)) ** beta
                + rng.gauss(0, noise),
            )
            for f in (0.25, 0.5, 1, 2, 4)
        ]
    return points, beta / (alpha + beta)


def test_fit_isoflop_recovers_the_exponent_of_a_known_law_with_an_interval_around_it():
    points, a = _chinchilla_points((1e18, 1e19, 1e20))
    fit = scale.fit_isoflop(points, predict_at=3e20, resamples=300)
    assert fit["a"] == pytest.approx(a, abs=0.005)
    low, high = fit["a_interval"]
    assert low < a < high and high - low < 0.05 and fit["dropped"] == 0
    assert [c for c, _, _ in fit["minima"]] == [1e18, 1e19, 1e20]
    assert fit["loss_pred"] < fit["minima"][-1][2]  # 更多的计算，更低的损失
    assert fit == scale.fit_isoflop(points, predict_at=3e20, resamples=300)  # 同一个种子：逐位相同
    noisy, _ = _chinchilla_points((1e18, 1e19, 1e20), noise=0.05)  # 噪声大二十倍，区间随之变宽
    wide = scale.fit_isoflop(noisy, predict_at=3e20, resamples=300)
    assert wide["a_interval"][1] - wide["a_interval"][0] > 3 * (high - low)


def test_fit_isoflop_names_a_bad_input():
    points, _ = _chinchilla_points((1e18, 1e19))
    with pytest.raises(
        ValueError, match=r"at least 2 budgets with at least 4 sizes each, got \[3, 5\]"
    ):
        scale.fit_isoflop({1e18: points[1e18][:3], 1e19: points[1e19]}, predict_at=1e20)
    hill = {c: [(n, 10 - (math.log(n) - 10) ** 2) for n, _ in p] for c, p in points.items()}
    with pytest.raises(ValueError, match=r"opens downward"):
        scale.fit_isoflop(hill, predict_at=1e20)
    with pytest.raises(
        ValueError, match=r"count must be 'params' or 'non_embedding_params', got 'total'"
    ):
        scale.isoflop_points([], count="total")


def test_isoflop_points_take_the_best_learning_rate_of_each_size():
    def row(d, lr, bpc, flops=1e12):
        return {"name": f"iso-{d}-{lr}", "group": "isoflop", "flops": flops, "d_model": d,
                "num_layers": 2, "params": 1000 * d, "non_embedding_params": 10 * d, "valid_bpc": bpc}  # fmt: skip

    rows = [row(32, 0.01, 7.9), row(32, 0.02, 7.7), row(32, 0.04, 7.8), row(64, 0.02, 7.6),
            row(64, 0.02, 7.5, flops=2e12), {"name": "gpt2-s0", "group": "ablation"}]  # fmt: skip
    assert scale.isoflop_points(rows) == {1e12: [(32000, 7.7), (64000, 7.6)], 2e12: [(64000, 7.5)]}
    assert scale.isoflop_points(rows, "non_embedding_params")[1e12] == [(320, 7.7), (640, 7.6)]


# ---------------------------------------------------------------- 记下的实验


def test_recorded_experiments_meet_the_lab_design():
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
    iso = [e for e in scale.EXPERIMENTS if e.group == "isoflop" and e.flops in scale.BUDGETS]
    sizes_at = {c: {(e.d_model, e.num_layers) for e in iso if e.flops == c} for c in scale.BUDGETS}
    assert len(scale.BUDGETS) >= 3 and all(len(s) >= 5 for s in sizes_at.values())
    assert scale.BUDGETS[-1] / scale.BUDGETS[0] >= 4
    sweep = [e for e in iso if e.flops == scale.BUDGETS[0]]  # 最小的预算：每个尺寸扫几个学习率
    assert (
        len(sweep)
        == len(scale.ISOFLOP_SIZES) * len(scale.ISOFLOP_SWEEP)
        >= 3 * len(sizes_at[scale.BUDGETS[0]])
    )


def test_non_embedding_params_leave_out_token_and_position_embeddings():
    model = GPT(GPTConfig(vocab_size=50, max_len=16, d_model=16, num_heads=2, num_layers=2))
    blocks = sum(p.numel() for p in model.layers.parameters())
    final = sum(p.numel() for p in model.decoder_norm.parameters())
    assert scale.non_embedding_params(model) == blocks + final
    total = sum(p.numel() for p in model.parameters())
    assert total - scale.non_embedding_params(model) == (50 + 16) * 16  # 词嵌入（共享）+ 位置


def test_experiment_by_name():
    assert scale.experiment("data-200").group == "data"
    with pytest.raises(ValueError, match=r"no experiment named 'size-99'"):
        scale.experiment("size-99")


def test_run_trains_evaluates_and_repeats_exactly():
    tiny = scale.Experiment(
        "tiny", "data", d_model=8, num_layers=1, num_heads=2, train_poems=40, steps=4,
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


def test_top1_accuracy_counts_each_poem_alone_whatever_the_padding():
    """逐首单独前向（没有填充）数一遍：与成批（有填充）的结果相同；L = 1 就是 a，L 越长越少。"""
    vocab, train_all, valid = scale._data()
    model = make_model(vocab, 8, 1, 2, seed=0)
    poems = valid[:25]  # 两批：20 + 5，长短不一
    got = scale.top1_accuracy(model, poems, vocab)
    right = total = 0
    windows = {n: [0, 0] for n in scale.EXACT_LENGTHS}
    with torch.no_grad():
        for poem in poems:
            ids = vocab.encode(poem, bos=True, eos=True)
            hit = (model(torch.tensor([ids[:-1]])).argmax(-1)[0] == torch.tensor(ids[1:])).tolist()
            right, total = right + sum(hit), total + len(hit)
            for n, counts in windows.items():
                counts[0] += sum(all(hit[j : j + n]) for j in range(len(hit) - n + 1))
                counts[1] += len(hit) - n + 1
    assert got["valid_top1"] == round(right / total, 5)
    assert got["valid_exact"] == {str(n): round(a / b, 5) for n, (a, b) in windows.items()}
    exact = [got["valid_exact"][str(n)] for n in scale.EXACT_LENGTHS]
    assert exact[0] == got["valid_top1"] and exact == sorted(exact, reverse=True)


# ---------------------------------------------------------------- 随包发布的结果


def test_shipped_results_match_the_recorded_experiments():
    results = scale.load_results()
    rows = {row["name"]: row for row in results["runs"]}
    assert set(rows) == {e.name for e in scale.EXPERIMENTS}
    for exp in scale.EXPERIMENTS:  # 文件里的每一行都是用记下的设置跑的
        row = rows[exp.name]
        derived = {"train_poems"} | ({"steps", "warmup", "eval_every"} if exp.flops else set())
        settings = {k: v for k, v in asdict(exp).items() if k not in derived}
        assert {k: row[k] for k in settings} == settings
        assert row["seconds"] > 0 and row["threads"] == 1
        if exp.flops:  # 步数由 C = 6·N·D 定：看过的字数与预算相符（步数取整，差不到一步）
            assert abs(6 * row["params"] * row["tokens"] - exp.flops) <= 6 * row["params"] * 32 * 66
            assert row["warmup"] == max(1, row["steps"] // 10)

    ran = [name for invocation in results["provenance"] for name in invocation["runs"]]
    assert sorted(ran) == sorted(rows)  # 每个结果都有且只有一条来历
    for invocation in results["provenance"]:
        assert invocation["git_commit"] and invocation["torch"] and invocation["cpu"]
        assert invocation["corpus"] == scale_lab.corpus_digests()  # 跑在随包的这一版语料上


def test_isoflop_learning_rates_are_the_ones_the_sweep_found():
    rows = [
        r
        for r in scale.load_results()["runs"]
        if r["name"].startswith(f"iso-{scale.budget_label(scale.BUDGETS[0])}-")
    ]
    for size in scale.ISOFLOP_SIZES:
        tried = [
            r
            for r in rows
            if r["name"].startswith(f"iso-{scale.budget_label(scale.BUDGETS[0])}-{size}-")
        ]
        assert len(tried) == len(scale.ISOFLOP_SWEEP)
        best = min(tried, key=lambda r: r["valid_bpc"])
        assert (scale.LR * scale.TUNED[size], scale.MUON_LR * scale.TUNED[size]) == (
            best["lr"],
            best["muon_lr"],
        ), size


def test_scale_lab_writes_each_run_atomically_with_its_provenance(tmp_path, monkeypatch):
    results = tmp_path / "scale_lab.json"
    monkeypatch.setattr(scale_lab, "RESULTS", results)
    monkeypatch.setattr(scale_lab, "run", lambda exp, device: {"name": exp.name, "seed": exp.seed,
        "non_embedding_params": 1, "valid_bpc": 9.0, "best_valid_bpc": 9.0, "best_step": 1,
        "seconds": 1.0})  # fmt: skip
    scale_lab.main(["--only", "data-400", "--only", "data-200"])
    scale_lab.main(["--only", "data-400"])  # 重跑：旧行被替换，来历归最后一次
    record = json.loads(results.read_text(encoding="utf-8"))
    assert [row["name"] for row in record["runs"]] == ["data-200", "data-400"]
    assert [inv["runs"] for inv in record["provenance"]] == [["data-200"], ["data-400"]]
    assert record["provenance"][-1]["command"] == "python -m tools.scale_lab --only data-400"
    other = tmp_path / "other.json"  # 另一个进程写的结果，再并进来
    scale_lab.main(["--only", "data-800", "--results", str(other)])
    scale_lab.main(["--merge", str(other)])
    record = json.loads(results.read_text(encoding="utf-8"))
    assert [row["name"] for row in record["runs"]] == ["data-200", "data-400", "data-800"]
    assert [inv["runs"] for inv in record["provenance"]] == [
        ["data-200"],
        ["data-400"],
        ["data-800"],
    ]
    assert record["provenance"][-1]["command"] == "python -m tools.scale_lab --only data-800"
    assert sorted(tmp_path.iterdir()) == sorted([results, other])  # 没有留下临时文件


def test_the_prediction_was_written_from_the_shipped_fit_before_its_run():
    rows = scale.load_results()["runs"]
    fit = scale.fit_isoflop(scale.isoflop_points(rows), predict_at=scale.PREDICTION.flops)
    assert scale.PREDICTION.flops >= 3 * scale.BUDGETS[-1]  # 至少是最大预算的 3 倍
    predicted = (fit["n_pred"], fit["loss_pred"], *fit["observed_interval"])
    written = (scale.PREDICTED["n"], scale.PREDICTED["bpc"], *scale.PREDICTED["interval"])
    assert written == pytest.approx(predicted, rel=1e-3)
    params = {
        f"d{r['d_model']}L{r['num_layers']}": r["params"] for r in rows if r["group"] == "isoflop"
    }
    size = min(
        scale.ISOFLOP_SIZES, key=lambda s: abs(math.log(params[s] / fit["n_pred"]))
    )  # 最近的尺寸
    p = scale.PREDICTION
    assert (p.d_model, p.num_layers, p.num_heads) == scale.ISOFLOP_SIZES[size]
    assert (p.lr, p.muon_lr) == (scale.LR * scale.TUNED[size], scale.MUON_LR * scale.TUNED[size])
    invocation = next(
        i for i in scale.load_results()["provenance"] if scale.PREDICTION.name in i["runs"]
    )
    assert invocation["runs"] == [scale.PREDICTION.name]  # 单独跑的，在写下预测的提交上
