"""探索器「×√d_model：词向量与位置编码的大小」（“词嵌入”一章）。"""

from __future__ import annotations

import math

import altair as alt
import torch

from ..._checks import check_positive_int
from ...positional import sinusoidal_encoding
from .charts import control, finish, significant

_INITS = {
    "N(0, 1)（nn.Embedding 默认）": 1.0,
    "N(0, 1/d_model)（与输出层共享权重时常用）": None,  # 标准差 d_model^-1/2
}


def embedding_scale_data(
    d_models=(16, 32, 64, 128, 256, 512), vocab_size: int = 1000
) -> list[dict]:
    r"""词向量（乘或不乘 √d_model）与位置编码的平均范数（“词嵌入”一章）。

    词表 ``vocab_size`` 个词的嵌入按两种初始化各抽一次（种子固定），位置编码取前 100 个位置。
    返回的行：``init``、``d_model``、``scaled``（是否乘 √d_model）、``what``（"词向量" 或
    "位置编码"）、``norm``（平均 L2 范数），以及 ``ratio``（词向量范数 / 位置编码范数）。
    """
    check_positive_int("vocab_size", vocab_size)
    rows = []
    for d_model in d_models:
        pe_norm = sinusoidal_encoding(100, d_model).double().norm(dim=1).mean().item()
        for init, std in _INITS.items():
            std = d_model**-0.5 if std is None else std
            generator = torch.Generator().manual_seed(d_model)
            E = std * torch.randn(vocab_size, d_model, generator=generator, dtype=torch.float64)
            for scaled in (False, True):
                norm = E.norm(dim=1).mean().item() * (math.sqrt(d_model) if scaled else 1.0)
                common = {"init": init, "d_model": d_model, "scaled": scaled}
                ratio = significant(norm / pe_norm)
                rows.append({**common, "what": "词向量", "norm": significant(norm), "ratio": ratio})
                rows.append(
                    {**common, "what": "位置编码", "norm": significant(pe_norm), "ratio": ratio}
                )
    return rows


def embedding_scale_explorer() -> alt.LayerChart:
    """“词嵌入”一章的探索器：换 d_model、初始化、是否乘 √d_model，比较词向量与位置编码的大小。"""
    rows = embedding_scale_data()
    d_model = control("d_model", 64, "d_model", "select", sorted({r["d_model"] for r in rows}))
    init = control("init", list(_INITS)[0], "初始化", "radio", _INITS)
    scaled = control("scaled", True, "乘以 √d_model", "checkbox")
    base = (
        alt.Chart(alt.InlineData(values=rows))
        .add_params(d_model, init, scaled)
        .transform_filter(
            (alt.datum.d_model == d_model) & (alt.datum.init == init) & (alt.datum.scaled == scaled)
        )
    )
    bars = base.mark_bar().encode(
        x=alt.X("what:N", title=None, sort=["词向量", "位置编码"], axis=alt.Axis(labelAngle=0)),
        y=alt.Y("norm:Q", title="平均 L2 范数"),
        color=alt.Color("what:N", legend=None),
        tooltip=["what:N", "norm:Q"],
    )
    labels = bars.mark_text(dy=-8).encode(
        text=alt.Text("norm:Q", format=".2f"), color=alt.value("black")
    )
    ratio = (
        base.transform_filter(alt.datum.what == "词向量")
        .transform_calculate(label='"词向量范数 / 位置编码范数 = " + format(datum.ratio, ".3f")')
        .mark_text(align="right", x=360, y=-6, fontSize=12)
        .encode(text="label:N")
    )
    chart = alt.layer(bars, labels, ratio).properties(width=360, height=260)
    return finish(chart, "词向量与位置编码谁大：初始化与 ×√d_model 决定比例").configure_title(
        anchor="start", offset=16
    )
