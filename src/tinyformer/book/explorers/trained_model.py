"""探索器「训练好的模型：检查点、解码方式与交叉注意力」（“完整模型：训练一个中译英 Transformer”一章）。"""

from __future__ import annotations

import altair as alt

from ..._checks import check_positive_int
from .charts import control, finish


def checkpoint_data(num_sentences: int = 12, beam_size: int = 4) -> dict[str, list[dict]]:
    """随包发布的模型在测试句上的交叉注意力与译文，按检查点与解码方式（“完整模型”一章）。

    取 ``generate_corpus(seed=0)`` 的前 ``num_sentences`` 个测试句（训练时没见过的搭配），
    对 :data:`tinyformer.translation.pretrained.STEPS` 的每个检查点：贪心解码时最后一个解码器层的交叉注意力
    （各头平均，2 位小数），以及贪心与束搜索（``beam_size``）的译文。为了让数据小，句子用编号 ``s``，
    词元的文字另放两张表。

    返回 dict，四张表：

    - ``sentences``：``s``、``zh``（测试句）、``en``（参考译文）
    - ``cells``：``s``、``step``、``r``（第几个英文词元）、``c``（第几个中文词元）、``w``（权重）
    - ``tokens``：``key``（"s-step-r" 或 "s-c"）、``label``（"序号:词元"）
    - ``translations``：``s``、``step``、``decoding``、``text``、``correct``（是否等于参考译文）
    """
    from ...translation.corpus import generate_corpus
    from ...translation.pretrained import STEPS, load_translator

    check_positive_int("num_sentences", num_sentences)
    check_positive_int("beam_size", beam_size)
    pairs = generate_corpus(seed=0).test[:num_sentences]
    data = {"sentences": [], "cells": [], "tokens": [], "translations": []}
    for s, pair in enumerate(pairs):
        data["sentences"].append({"s": s, "zh": pair.zh, "en": pair.en})
    for step in STEPS:
        translator = load_translator(step)
        for s, pair in enumerate(pairs):
            src_tokens, tgt_tokens, weights = translator.cross_attention(pair.zh)
            mean = weights.double().mean(dim=0)  # (H, T, S) -> (T, S)：各头平均
            for r, tgt in enumerate(tgt_tokens):
                data["tokens"].append({"key": f"{s}-{step}-{r}", "label": f"{r}:{tgt}"})
                for c in range(len(src_tokens)):
                    w = round(mean[r, c].item(), 2)
                    data["cells"].append({"s": s, "step": step, "r": r, "c": c, "w": w})
            if step == STEPS[0]:
                for c, src in enumerate(src_tokens):
                    data["tokens"].append({"key": f"{s}-{c}", "label": f"{c}:{src}"})
            for decoding, size in (("贪心", 1), (f"束搜索（束宽 {beam_size}）", beam_size)):
                text = translator.translate(pair.zh, beam_size=size)
                data["translations"].append(
                    {
                        "s": s,
                        "step": step,
                        "decoding": decoding,
                        "text": text,
                        "correct": text == pair.en,
                    }
                )
    return data


def checkpoint_explorer(num_sentences: int = 12) -> alt.VConcatChart:
    """“完整模型”一章的探索器：选一个测试句、一个检查点，看交叉注意力和贪心/束搜索的译文。"""
    data = checkpoint_data(num_sentences)
    steps = sorted({row["step"] for row in data["cells"]})
    sentences = data["sentences"]
    sentence = control(
        "s", 0, "测试句", "select", [r["s"] for r in sentences], labels=[r["zh"] for r in sentences]
    )
    step = control("step", steps[-1], "训练步数", "radio", steps)
    selected = (alt.datum.s == sentence) & (alt.datum.step == step)
    tokens = alt.InlineData(values=data["tokens"])
    heatmap = (
        alt.Chart(alt.InlineData(values=data["cells"]))
        .add_params(sentence, step)
        .transform_filter(selected)
        .transform_calculate(
            tgt_key=alt.expr.join([alt.datum.s, alt.datum.step, alt.datum.r], "-"),
            src_key=alt.expr.join([alt.datum.s, alt.datum.c], "-"),
        )
        .transform_lookup(
            lookup="tgt_key", from_=alt.LookupData(tokens, "key", ["label"]), as_=["tgt"]
        )
        .transform_lookup(
            lookup="src_key", from_=alt.LookupData(tokens, "key", ["label"]), as_=["src"]
        )
        .mark_rect()
        .encode(
            x=alt.X("src:N", sort=None, title="中文词元（键）", axis=alt.Axis(labelAngle=0)),
            y=alt.Y("tgt:N", sort=None, title="生成的英文词元（查询）"),
            # 图例放在下面：放在右边时拼接图的宽度按上面几行文字算，图例的刻度被截掉
            color=alt.Color(
                "w:Q",
                scale=alt.Scale(domain=[0, 1], scheme="blues"),
                title="权重",
                legend=alt.Legend(orient="bottom", direction="horizontal"),
            ),
            tooltip=[
                alt.Tooltip("tgt:N", title="英文"),
                alt.Tooltip("src:N", title="中文"),
                alt.Tooltip("w:Q", title="权重"),
            ],
        )
        .properties(
            width=360, height=300, title="最后一个解码器层的交叉注意力（贪心解码，各头平均）"
        )
    )
    reference = (
        alt.Chart(alt.InlineData(values=data["sentences"]))
        .transform_filter(alt.datum.s == sentence)
        .transform_calculate(line='"参考译文：" + datum.en')
        .mark_text(align="left", fontSize=13, x=0)
        .encode(text="line:N")
        .properties(width=480, height=18)
    )
    outputs = (
        alt.Chart(alt.InlineData(values=data["translations"]))
        .transform_filter(selected)
        .transform_calculate(
            line=alt.datum.decoding
            + "："
            + alt.datum.text
            + alt.expr.if_(alt.datum.correct, "  ✓", "  ✗")
        )
        .mark_text(align="left", fontSize=13, x=0)
        .encode(y=alt.Y("decoding:N", axis=None, sort="descending"), text="line:N")
        .properties(width=480, height=40)
    )
    chart = alt.vconcat(reference, outputs, heatmap)
    return finish(chart, "训练好的模型翻译测试句：检查点、解码方式与交叉注意力")
