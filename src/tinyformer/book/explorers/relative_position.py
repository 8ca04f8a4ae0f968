"""探索器「PE(p)·PE(p+k)：成对的 sin/cos 与只用 sin」（“位置编码问答与证明”一章）。"""

from __future__ import annotations

import altair as alt
import torch

from ...positional import _frequencies
from .charts import control, finish


def relative_position_data(
    d_models=(32, 128), starts=(0, 10, 20, 30, 40), k_max: int = 40
) -> list[dict]:
    r"""点积 PE(p)·PE(p+k) 随 k 的变化，正确的 sin/cos 成对编码与"只用 sin"对比（“位置编码问答与证明”一章）。

    成对编码时 :math:`PE(p)\cdot PE(p+k) = \sum_i \cos(k\omega_i)`，与 p 无关；只用 sin 时
    :math:`\sum_i \sin(p\omega_i)\sin((p+k)\omega_i)` 随 p 而变。k 取 −``k_max``…``k_max``，
    p + k < 0 的位置也按公式计算（sin/cos 对负数同样有定义）。
    返回的行：``encoding``、``d_model``、``p``、``k``、``dot``。
    """
    rows = []
    k = torch.arange(-k_max, k_max + 1, dtype=torch.float64)  # (K,)
    for d_model in d_models:
        omega = _frequencies(d_model, 10000.0)  # (C/2,)
        for p in starts:
            a = p * omega  # (C/2,)
            b = (p + k)[:, None] * omega  # (K, 1) * (C/2,) -> (K, C/2)
            paired = (torch.sin(a) * torch.sin(b) + torch.cos(a) * torch.cos(b)).sum(dim=1)
            sin_only = (torch.sin(a) * torch.sin(b)).sum(dim=1) * 2  # 同样 C 维：每个频率两列 sin
            for encoding, dots in (("sin/cos 成对（论文）", paired), ("只用 sin", sin_only)):
                for kk, dot in zip(k.tolist(), dots.tolist(), strict=True):
                    rows.append(
                        {
                            "encoding": encoding,
                            "d_model": d_model,
                            "p": p,
                            "k": int(kk),
                            "dot": round(dot, 3),
                        }
                    )
    return rows


def relative_position_explorer() -> alt.Chart:
    """“位置编码问答与证明”一章的探索器：移动起点 p——成对编码的曲线纹丝不动，只用 sin 的曲线跟着变。"""
    rows = relative_position_data()
    p = control("p", 0, "起点 p", "range", sorted({r["p"] for r in rows}))
    encodings = ["sin/cos 成对（论文）", "只用 sin"]
    encoding = control("encoding", encodings[0], "编码方式", "radio", encodings)
    d_model = control("d_model", 128, "d_model", "select", sorted({r["d_model"] for r in rows}))
    chart = (
        alt.Chart(alt.InlineData(values=rows))
        .add_params(p, encoding, d_model)
        .transform_filter(
            (alt.datum.p == p) & (alt.datum.encoding == encoding) & (alt.datum.d_model == d_model)
        )
        .mark_line(point=alt.OverlayMarkDef(size=12))
        .encode(
            x=alt.X("k:Q", title="相对位置 k"),
            y=alt.Y("dot:Q", title="PE(p) · PE(p+k)"),
            tooltip=["k:Q", "dot:Q"],
        )
        .properties(width=520, height=260)
    )
    return finish(chart, "PE(p) · PE(p+k) 随相对位置 k 的变化")
