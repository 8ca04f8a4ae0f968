"""探索器「pre-LN 与 post-LN：刚初始化时各层的梯度」（“层归一化、残差与前馈网络”一章）。"""

from __future__ import annotations

import altair as alt
import torch
from torch import nn

from ..._checks import check_positive_int
from ..._random import seeded
from ...layers import EncoderLayer
from .charts import control, finish, significant


def layer_norm_gradient_data(depths=(2, 4, 6, 8, 12), d_model: int = 32) -> list[dict]:
    r"""刚初始化时各层参数的梯度范数：post-LN 与 pre-LN（“层归一化、残差与前馈网络”一章）。

    堆叠 ``depth`` 个 :class:`~tinyformer.EncoderLayer`（float64，种子固定），pre-LN 的最后再加一个
    LayerNorm（与 GPT-2 相同）；输入是固定的随机张量，损失是输出与固定随机目标的均方误差。
    返回的行：``placement``（"post-LN" 或 "pre-LN"）、``depth``、``layer``（1…depth）、
    ``grad``（这一层全部参数梯度拼起来的 L2 范数，4 位有效数字）。
    """
    check_positive_int("d_model", d_model)
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(4, 10, d_model, generator=generator, dtype=torch.float64)  # (B, T, C)
    target = torch.randn(4, 10, d_model, generator=generator, dtype=torch.float64)
    rows = []
    for depth in depths:
        for placement, norm_first in (("post-LN", False), ("pre-LN", True)):
            with seeded(depth):  # 固定初始权重，不动全局随机数
                layers = nn.ModuleList(
                    EncoderLayer(d_model, num_heads=4, d_ff=4 * d_model, norm_first=norm_first)
                    for _ in range(depth)
                ).double()
            final = nn.LayerNorm(d_model, dtype=torch.float64) if norm_first else nn.Identity()
            h = x
            for layer in layers:
                h = layer(h)
            loss = ((final(h) - target) ** 2).mean()
            loss.backward()
            for index, layer in enumerate(layers, start=1):
                grad = torch.cat([p.grad.flatten() for p in layer.parameters()]).norm().item()
                rows.append(
                    {
                        "placement": placement,
                        "depth": depth,
                        "layer": index,
                        "grad": significant(grad),
                    }
                )
    return rows


def layer_norm_gradient_explorer() -> alt.Chart:
    """“层归一化、残差与前馈网络”一章的探索器：换层数与 LayerNorm 的位置，看各层梯度的大小。"""
    rows = layer_norm_gradient_data()
    depth = control("depth", 6, "层数", "select", sorted({r["depth"] for r in rows}))
    placements = ["post-LN", "pre-LN"]
    placement = control("placement", placements[0], "LayerNorm 的位置", "radio", placements)
    chart = (
        alt.Chart(alt.InlineData(values=rows))
        .add_params(depth, placement)
        .transform_filter((alt.datum.depth == depth) & (alt.datum.placement == placement))
        .mark_bar()
        .encode(
            x=alt.X("layer:O", title="第几层（1 靠近输入）", axis=alt.Axis(labelAngle=0)),
            y=alt.Y(
                "grad:Q",
                title="该层参数梯度的 L2 范数",
                scale=alt.Scale(domain=[0, max(r["grad"] for r in rows)]),
            ),
            tooltip=["layer:O", "grad:Q"],
        )
        .properties(width=420, height=260)
    )
    return finish(chart, "刚初始化时各层参数的梯度范数：post-LN 与 pre-LN")
