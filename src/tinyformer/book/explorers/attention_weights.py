"""探索器「一句话的注意力权重：掩码、√d_k 与 d_k」（“注意力机制”一章）。"""

from __future__ import annotations

import math

import altair as alt
import torch
from torch import Tensor

from ...attention import attention_with_weights
from ...masks import causal_mask
from .charts import control, finish, heatmap, matrix_rows

_SENTENCE = ["我", "爱", "北京", "天安门", "<pad>", "<pad>"]
_MASKS = ("不遮挡", "填充掩码", "因果掩码", "填充 + 因果")


def _mask(kind: str, T: int, valid: int) -> Tensor | None:
    """``kind`` 对应的 bool 掩码 (T, T)，True 表示遮住；前 ``valid`` 个词元不是填充。"""
    padding = (torch.arange(T) >= valid)[None, :].expand(T, T)  # (T, T)：每行都遮住 valid 之后的列
    return {
        "不遮挡": None,
        "填充掩码": padding,
        "因果掩码": causal_mask(T),
        "填充 + 因果": padding | causal_mask(T),
    }[kind]


def attention_data(head_dims=(4, 16, 64)) -> list[dict]:
    r"""一句话的自注意力权重：掩码 × 是否除以 √d_k × d_k（“注意力机制”一章）。

    词向量与投影 :math:`W_Q, W_K` 都是固定种子的标准正态（float64），于是 :math:`q\cdot k` 的方差
    约为 d_k：不除以 √d_k 时 d_k 越大 softmax 越接近 one-hot（饱和）。
    权重来自 :func:`~tinyformer.attention_with_weights`（不缩放时先把 Q 乘以 √d_k 抵消）。
    返回的行：``mask``、``scaled``、``d_k``、``query``（第几个词元，0 起）、``key``、``q_token``、
    ``k_token``、``weight``（4 位小数）。
    """
    T, valid = len(_SENTENCE), _SENTENCE.index("<pad>")
    rows = []
    for d_k in head_dims:
        generator = torch.Generator().manual_seed(d_k)
        x = torch.randn(T, 16, generator=generator, dtype=torch.float64)  # (T, C)
        W_q = torch.randn(16, d_k, generator=generator, dtype=torch.float64) / 4  # (C, d_k)
        W_k = torch.randn(16, d_k, generator=generator, dtype=torch.float64) / 4
        q, k = x @ W_q, x @ W_k  # (T, C) @ (C, d_k) -> (T, d_k)
        for scaled in (True, False):
            query = q if scaled else q * math.sqrt(d_k)  # 抵消函数里的 ÷√d_k
            for kind in _MASKS:
                _, weights = attention_with_weights(query, k, k, mask=_mask(kind, T, valid))
                common = {"mask": kind, "scaled": scaled, "d_k": d_k}
                rows += matrix_rows(weights, _SENTENCE, _SENTENCE, **common)
    return rows


def attention_explorer() -> alt.LayerChart:
    """“注意力机制”一章的探索器：换掩码、是否除以 √d_k、d_k，看注意力权重矩阵怎样变。"""
    rows = attention_data()
    mask = control("mask", _MASKS[0], "掩码", "select", _MASKS)
    scaled = control("scaled", True, "除以 √d_k", "checkbox")
    d_k = control("d_k", 16, "d_k", "radio", sorted({r["d_k"] for r in rows}))
    order = [f"{i}:{tok}" for i, tok in enumerate(_SENTENCE)]
    base = (
        alt.Chart(alt.InlineData(values=rows))
        .add_params(mask, scaled, d_k)
        .transform_filter(
            (alt.datum.mask == mask) & (alt.datum.scaled == scaled) & (alt.datum.d_k == d_k)
        )
        .encode(
            x=alt.X(
                "k_token:N", sort=order, title="键（被关注的词元）", axis=alt.Axis(labelAngle=0)
            ),
            y=alt.Y("q_token:N", sort=order, title="查询（每行和为 1）"),
        )
    )
    tooltip = ["q_token:N", "k_token:N", "weight:Q"]
    chart = heatmap(base, "blues", tooltip, alt.Text("weight:Q", format=".2f"))
    chart = chart.properties(width=360, height=300)
    return finish(chart, "“我爱北京天安门”的注意力权重（后两个是填充词元）")
