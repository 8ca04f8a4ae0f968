"""探索器「等计算量曲线有多稳」与「消融的验证集曲线」（“规模与 2017 年之后的改进”一章）。

两张图都只读随包发布的实验结果（:func:`tinyformer.poetry.scale.load_results`），不训练任何模型。
"""

from __future__ import annotations

import math

import altair as alt

from .charts import control, finish, significant

ROW_LABELS = {
    "gpt2": "GPT-2 基线",
    "rmsnorm": "+ RMSNorm",
    "rope": "+ RoPE",
    "swiglu": "+ SwiGLU",
    "gqa": "+ GQA",
    "no-bias": "不要偏置",
    "nope": "NoPE",
    "llama": "LLaMA 式",
}


def scaling_data(samples: int = 8) -> dict[str, list[dict]]:
    """等计算量实验去掉第 ``out`` 个尺寸（0 = 不去掉；每个预算里有它就去掉）之后重做的拟合
    （:func:`~tinyformer.poetry.scale.fit_isoflop`，不做自助法）。

    返回 dict，四张表：

    - ``points``：``budget``（预算的名字）、``i``（第几个尺寸，从 1 数）、``size``、``n``（全部参数）、``bpc``；
    - ``curves``：``budget``、``out``、``n``、``fit``：每个预算的抛物线上 ``samples`` 个点；
    - ``minima``：``budget``、``out``、``n``、``bpc``：抛物线的最低点；
    - ``fits``：``out``、``a``（N* ∝ Cᵃ 的指数；去掉之后有抛物线开口向下时是 ``None``）、``line``（图上那一行字：
      指数与外推到最大预算 3 倍处的 N* 和损失）。

    数值保留 4 位有效数字。
    """
    from ...poetry.scale import (
        BUDGETS,
        ISOFLOP_SIZES,
        best_isoflop_runs,
        budget_label,
        fit_isoflop,
        load_results,
    )

    sizes = list(ISOFLOP_SIZES)
    best = {  # (预算, 尺寸) → 最好的学习率那一次
        (flops, f"d{r['d_model']}L{r['num_layers']}"): r
        for flops, rows in best_isoflop_runs(load_results()["runs"]).items() if flops in BUDGETS
        for r in rows
    }  # fmt: skip
    data = {"points": [], "curves": [], "minima": [], "fits": []}
    for (flops, size), r in best.items():
        data["points"].append(
            {"budget": budget_label(flops), "i": sizes.index(size) + 1, "size": size,
             "n": r["params"], "bpc": significant(r["valid_bpc"])}
        )  # fmt: skip
    for out in range(len(sizes) + 1):
        points = {
            c: sorted((r["params"], r["valid_bpc"]) for (c2, size), r in best.items()
                      if c2 == c and size != (sizes[out - 1] if out else None))
            for c in BUDGETS
        }  # fmt: skip
        try:
            fit = fit_isoflop(points, predict_at=3 * BUDGETS[-1], resamples=0)
        except ValueError:  # 去掉这个尺寸之后，某条抛物线开口向下：没有最低点，也就没有拟合
            data["fits"].append(
                {"out": out, "a": None, "line": f"去掉 {sizes[out - 1]} 之后有一条抛物线开口向下，没有最低点"}
            )  # fmt: skip
            continue
        data["fits"].append(
            {"out": out, "a": significant(fit["a"], 3),
             "line": f"N* ∝ C^a：a = {fit['a']:.2f}；外推到 3 倍的最大预算：N* ≈ {fit['n_pred']:,.0f}，"
                     f"{fit['loss_pred']:.2f} 比特/字"}
        )  # fmt: skip
        for (c, p0, p1, p2), (_, n_best, loss_best) in zip(
            fit["parabolas"], fit["minima"], strict=True
        ):
            low, high = math.log(points[c][0][0]), math.log(points[c][-1][0])
            for k in range(samples):
                x = low + (high - low) * k / (samples - 1)
                data["curves"].append(
                    {"budget": budget_label(c), "out": out, "n": significant(math.exp(x)),
                     "fit": significant(p0 + p1 * x + p2 * x * x)}
                )  # fmt: skip
            data["minima"].append(
                {"budget": budget_label(c), "out": out, "n": significant(n_best),
                 "bpc": significant(loss_best)}
            )  # fmt: skip
    return data


def scaling_explorer() -> alt.VConcatChart:
    """等计算量曲线：去掉一个尺寸，看每个预算的抛物线、最低点与指数 a 怎样变（刀切法的直观样子）。"""
    from ...poetry.scale import ISOFLOP_SIZES

    data = scaling_data()
    names = ["不去掉", *ISOFLOP_SIZES]
    out = control("out", 0, "去掉一个尺寸", "select", list(range(len(names))), labels=names)
    sizes = [p["n"] for p in data["points"]]
    domain = [min(sizes) / 1.2, max(sizes) * 1.2]  # 固定的横轴：去掉一个尺寸时不跳
    x = alt.X("n:Q", scale=alt.Scale(type="log", domain=domain), title="全部参数 N（对数坐标）")
    y = alt.Y("bpc:Q", scale=alt.Scale(zero=False), title="验证集每字比特数")
    color = alt.Color("budget:N", title="预算 C（次浮点运算）", sort=None)
    points = (
        alt.Chart(alt.InlineData(values=data["points"]))
        .add_params(out)
        .transform_calculate(kept=alt.datum.i != out)
        .mark_point(size=70, filled=True)
        .encode(
            x=x, y=y, color=color,
            shape=alt.Shape(
                "kept:N", scale=alt.Scale(domain=[True, False], range=["circle", "cross"]),
                legend=alt.Legend(title="参与拟合", labelExpr="datum.value ? '是' : '去掉'"),
            ),
            tooltip=["size:N", "budget:N", alt.Tooltip("n:Q", format=","), "bpc:Q"],
        )
    )  # fmt: skip
    curves = (
        alt.Chart(alt.InlineData(values=data["curves"]))
        .transform_filter(alt.datum.out == out)
        .mark_line(clip=True)
        .encode(x=x, y=alt.Y("fit:Q", scale=alt.Scale(zero=False)), color=color)
    )
    minima = (
        alt.Chart(alt.InlineData(values=data["minima"]))
        .transform_filter(alt.datum.out == out)
        .mark_point(shape="diamond", size=160, filled=True, stroke="black", clip=True)
        .encode(
            x=x, y=y, color=color, tooltip=["budget:N", alt.Tooltip("n:Q", format=","), "bpc:Q"]
        )
    )
    summary = (
        alt.Chart(alt.InlineData(values=data["fits"]))
        .transform_filter(alt.datum.out == out)
        .mark_text(align="left", fontSize=13, x=0)
        .encode(text="line:N")
        .properties(width=440, height=18)
    )
    chart = alt.layer(points, curves, minima).properties(width=440, height=260)
    return finish(alt.vconcat(summary, chart), "等计算量曲线：去掉一个尺寸，最好的尺寸变多少")


def ablation_data() -> list[dict]:
    """消融实验每一行、每个种子的验证集曲线：``row``、``label``、``seed``、``step``、``bpc``。"""
    from ...poetry.scale import load_results

    rows = []
    for run in load_results()["runs"]:
        if run["group"] != "ablation":
            continue
        row = run["name"].rsplit("-s", 1)[0]
        for step, bpc in run["curve"]:
            rows.append(
                {
                    "row": row,
                    "label": ROW_LABELS[row],
                    "seed": run["seed"],
                    "step": step,
                    "bpc": significant(bpc),
                }
            )
    return rows


def ablation_explorer() -> alt.Chart:
    """选消融表的一行，与 GPT-2 基线比较两个种子的验证集曲线。"""
    rows = ablation_data()
    names = list(dict.fromkeys(r["row"] for r in rows if r["row"] != "gpt2"))
    choice = control("row", "llama", "与基线比较", "select", names, [ROW_LABELS[n] for n in names])
    return finish(
        alt.Chart(alt.InlineData(values=rows))
        .add_params(choice)
        .transform_filter((alt.datum.row == choice) | (alt.datum.row == "gpt2"))
        .transform_calculate(run="datum.label + '，种子 ' + datum.seed")
        .mark_line(point=True)
        .encode(
            x=alt.X("step:Q", title="步数"),
            y=alt.Y("bpc:Q", scale=alt.Scale(zero=False), title="验证集每字比特数"),
            color=alt.Color("label:N", title="块"),
            strokeDash=alt.StrokeDash("seed:N", title="种子"),
            detail="run:N",
            tooltip=["label:N", "seed:N", "step:Q", "bpc:Q"],
        )
        .properties(width=440, height=260),
        "消融：验证集曲线（每行两个种子）",
    )
