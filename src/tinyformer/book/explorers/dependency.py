"""探索器「长距离依赖：RNN 与自注意力的梯度随距离怎样变」（“Transformer 总览”一章）。"""

from __future__ import annotations

import math

import altair as alt
import torch

from ..._random import seeded
from ...attention import MultiHeadAttention
from .charts import filtered_by_controls, finish, significant


def dependency_data(lengths=(8, 16, 24, 32, 40, 48, 56, 64), scales=(0.5, 0.9, 1.2)) -> list[dict]:
    r"""最后一个位置的输出对第 t 个输入有多敏感：RNN 与自注意力（“Transformer 总览”一章）。

    RNN :math:`h_t = \tanh(W h_{t-1} + U x_t)`，:math:`W` 是尺度为 ``scale`` 的正交矩阵；
    自注意力是一层 :class:`~tinyformer.MultiHeadAttention`。对固定的随机方向 r，记
    :math:`g_t = \lVert \partial (r \cdot y_T) / \partial x_t \rVert`：RNN 里信号要走 T − t 步，
    :math:`g_t` 随距离指数衰减（scale < 1）或放大（scale > 1）；自注意力里每个位置一步就到。

    返回的行：``model``（"RNN" 或 "自注意力"）、``scale``、``T``、``t``（1…T）、``grad``。
    """
    C = 16
    generator = torch.Generator().manual_seed(0)
    x_all = torch.randn(max(lengths), C, generator=generator, dtype=torch.float64)  # (T_max, C)
    r = torch.randn(C, generator=generator, dtype=torch.float64)  # (C,)
    U = torch.randn(C, C, generator=generator, dtype=torch.float64) / math.sqrt(C)  # (C, C)
    Q, _ = torch.linalg.qr(torch.randn(C, C, generator=generator, dtype=torch.float64))
    with seeded(0):  # 固定初始权重，不动全局随机数
        attention = MultiHeadAttention(d_model=C, num_heads=4).double()
    rows = []
    for T in lengths:
        for scale in scales:
            x = x_all[:T].clone().requires_grad_(True)  # (T, C)
            h = torch.zeros(C, dtype=torch.float64)
            for t in range(T):
                # (C, C) @ (C,) -> (C,)
                h = torch.tanh(scale * Q @ h + U @ x[t])
            (grad_rnn,) = torch.autograd.grad(r @ h, x)  # (T, C)
            x = x_all[:T].clone().requires_grad_(True)
            y, _ = attention(x[None], x[None], x[None], need_weights=False)  # (1, T, C)
            (grad_attn,) = torch.autograd.grad(r @ y[0, -1], x)  # (T, C)
            for model, grad in (("RNN", grad_rnn), ("自注意力", grad_attn)):
                for t, g in enumerate(grad.norm(dim=1).tolist(), start=1):
                    rows.append(
                        {"model": model, "scale": scale, "T": T, "t": t, "grad": significant(g)}
                    )
    return rows


def dependency_explorer() -> alt.Chart:
    """“Transformer 总览”一章的探索器：拖动序列长度 T、换 RNN 循环权重的尺度，看梯度怎样随距离衰减。"""
    chart = (
        filtered_by_controls(
            dependency_data(),
            ("T", 32, "序列长度 T", "range"),
            ("scale", 0.9, "RNN 权重尺度", "radio"),
        )
        .mark_line(point=True)
        .encode(
            x=alt.X("t:Q", title="输入的位置 t（最后一个位置是 T）"),
            y=alt.Y(
                "grad:Q",
                scale=alt.Scale(type="log"),
                axis=alt.Axis(format="~e"),
                title="‖∂(r·y_T)/∂x_t‖（对数坐标）",
            ),
            color=alt.Color("model:N", title="模型"),
            tooltip=["model:N", "t:Q", "grad:Q"],
        )
        .properties(width=520, height=280)
    )
    return finish(chart, "最后一个输出对各位置输入的梯度：RNN 与自注意力")
