"""探索器「拟合有多稳」与「消融的验证集曲线」（“规模与 2017 年之后的改进”一章）。

两张图都只读随包发布的实验结果（:func:`tinyformer.poetry.scale.load_results`），不训练任何模型。
"""

from __future__ import annotations

import altair as alt

from .charts import control, finish, significant

GROUPS = {"size": "参数量 N", "data": "数据量 D（字）"}
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


def _points(group: str) -> list[tuple[float, float]]:
    """一组实验的 (x, 每字比特数)：参数量用非嵌入参数与训练结束时的值（到损失最低的尺寸为止），
    数据量用训练集的字数与提前停止的最好值。"""
    from ...poetry.corpus import load_split
    from ...poetry.scale import load_results

    rows = [r for r in load_results()["runs"] if r["group"] == group]
    if group == "size":  # 与正文相同：只拟合到损失最低的尺寸为止（更大的受数据量所限）
        points = [(r["non_embedding_params"], r["valid_bpc"]) for r in rows]
        best = min(range(len(points)), key=lambda k: points[k][1])
        return points[: best + 1]
    train = load_split("train")
    return [(sum(len(p) + 1 for p in train[: r["train_poems"]]), r["best_valid_bpc"]) for r in rows]


def scaling_data(samples: int = 40) -> dict[str, list[dict]]:
    """两组实验（``group``：参数量、数据量）各自 “去掉第 ``out`` 个点”（0 = 不去掉）之后的幂律拟合。

    返回 dict，三张表：

    - ``points``：``group``、``i``（第几个点，从 1 数）、``x``、``bpc``；
    - ``curves``：``group``、``out``、``x``、``fit``：拟合曲线上 ``samples`` 个点（对数均匀）；
    - ``fits``：``group``、``out``、``alpha``、``c``、``rmse``。

    拟合用 :func:`~tinyformer.poetry.scale.fit_power_law`（float64），数值保留 4 位有效数字。
    """
    from ...poetry.scale import fit_power_law

    data = {"points": [], "curves": [], "fits": []}
    for group in GROUPS:
        points = _points(group)
        xs, ys = [x for x, _ in points], [y for _, y in points]
        for i, (x, y) in enumerate(points, start=1):
            data["points"].append({"group": group, "i": i, "x": x, "bpc": significant(y)})
        for out in range(len(points) + 1):
            keep = [k for k in range(len(points)) if k != out - 1]
            fit = fit_power_law([xs[k] for k in keep], [ys[k] for k in keep])
            data["fits"].append(
                {
                    "group": group,
                    "out": out,
                    "alpha": significant(fit["alpha"], 3),
                    "c": significant(fit["c"], 4),
                    "rmse": significant(fit["rmse"], 2),
                }
            )
            for k in range(samples):
                x = xs[0] * (xs[-1] / xs[0]) ** (k / (samples - 1))
                fit_y = fit["a"] * x ** -fit["alpha"] + fit["c"]
                data["curves"].append(
                    {"group": group, "out": out, "x": significant(x), "fit": significant(fit_y)}
                )
    return data


def scaling_explorer() -> alt.VConcatChart:
    """选一组实验、去掉其中一个点，看幂律拟合的曲线与指数怎样变（刀切法的直观样子）。"""
    data = scaling_data()
    group = control("group", "size", "实验", "select", list(GROUPS), labels=list(GROUPS.values()))
    outs = sorted({r["out"] for r in data["fits"]})
    out = control("out", 0, "去掉第几个点（0 = 不去掉）", "range", outs)
    x = alt.X("x:Q", scale=alt.Scale(type="log"), title="N 或 D（对数坐标）")
    y = alt.Y("bpc:Q", scale=alt.Scale(zero=False), title="验证集每字比特数")
    points = (
        alt.Chart(alt.InlineData(values=data["points"]))
        .add_params(group, out)
        .transform_filter(alt.datum.group == group)
        .transform_calculate(kept=alt.datum.i != out)
        .mark_circle(size=90)
        .encode(
            x=x,
            y=y,
            color=alt.Color(
                "kept:N",
                scale=alt.Scale(domain=[True, False], range=["#1f77b4", "#d62728"]),
                legend=alt.Legend(title="参与拟合", labelExpr="datum.value ? '是' : '去掉'"),
            ),
            tooltip=[alt.Tooltip("x:Q", format=","), alt.Tooltip("bpc:Q", title="bpc")],
        )
    )
    curve = (
        alt.Chart(alt.InlineData(values=data["curves"]))
        .transform_filter((alt.datum.group == group) & (alt.datum.out == out))
        .mark_line(color="#1f77b4")
        .encode(x=x, y=alt.Y("fit:Q", scale=alt.Scale(zero=False)))
    )
    summary = (
        alt.Chart(alt.InlineData(values=data["fits"]))
        .transform_filter((alt.datum.group == group) & (alt.datum.out == out))
        .transform_calculate(
            line="'拟合 a·x^(−α) + c：α = ' + format(datum.alpha, '.2f') + '，c = '"
            " + format(datum.c, '.2f') + '，残差的均方根 ' + format(datum.rmse, '.3f')"
        )
        .mark_text(align="left", fontSize=13, x=0)
        .encode(text="line:N")
        .properties(width=440, height=18)
    )
    chart = alt.layer(points, curve).properties(width=440, height=260)
    return finish(alt.vconcat(summary, chart), "幂律拟合：去掉一个点，指数变多少")


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
