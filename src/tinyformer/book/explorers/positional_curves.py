"""探索器「位置编码的 sin/cos 曲线」（“位置编码”一章）。"""

from __future__ import annotations

import altair as alt

from ...positional import sinusoidal_encoding
from .charts import filtered_by_controls, finish


def positional_curves_data(
    d_model: int = 32, bases=(100.0, 1000.0, 10000.0), max_len: int = 48
) -> list[dict]:
    """第 i 对维度 (2i, 2i+1) 的位置编码随位置变化的曲线（“位置编码”一章）。

    值取自 :func:`~tinyformer.sinusoidal_encoding`（先转成 float64 再舍入到 4 位小数）。
    返回的行：``base``、``i``、``pos``、``sin``（第 2i 维）、``cos``（第 2i+1 维）。
    """
    rows = []
    for base in bases:
        pe = sinusoidal_encoding(max_len, d_model, base).double()  # (max_len, C)
        for i in range(d_model // 2):
            for pos in range(max_len):
                rows.append(
                    {
                        "base": int(base),
                        "i": i,
                        "pos": pos,
                        "sin": round(pe[pos, 2 * i].item(), 4),
                        "cos": round(pe[pos, 2 * i + 1].item(), 4),
                    }
                )
    return rows


def positional_curves_explorer() -> alt.Chart:
    """“位置编码”一章的探索器：拖动维度对 i、换底数 base，看 sin/cos 曲线的频率怎样变化。"""
    chart = (
        filtered_by_controls(
            positional_curves_data(),
            ("i", 2, "维度对 i", "range"),
            ("base", 10000, "底数 base", "radio"),
        )
        .transform_fold(["sin", "cos"], as_=["维度", "PE"])
        .transform_calculate(
            维度=alt.expr.if_(alt.datum["维度"] == "sin", "第 2i 维（sin）", "第 2i+1 维（cos）")
        )
        .mark_line(point=alt.OverlayMarkDef(size=12))
        .encode(
            x=alt.X("pos:Q", title="位置 pos"),
            y=alt.Y("PE:Q", title="PE(pos, ·)", scale=alt.Scale(domain=[-1.05, 1.05])),
            color=alt.Color("维度:N", title=None),
            tooltip=["pos:Q", "PE:Q"],
        )
        .properties(width=520, height=240)
    )
    return finish(chart, "d_model = 32：第 i 对维度的 sin 与 cos，i 越大波长越长")
