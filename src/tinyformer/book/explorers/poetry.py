"""探索器「下一个字的分布：温度、top-k、top-p」（“只有解码器：在全唐诗上预训练一个 GPT”一章）。"""

from __future__ import annotations

import copy

import altair as alt
import torch

from ..._checks import check_positive_int
from .charts import control, finish

PREFIX = "白日依山尽，"
TEMPERATURES = (0.5, 0.7, 1.0, 1.5)
TOP_KS = (0, 3, 10, 50)  # 0 = 不截断
TOP_PS = (0.5, 0.8, 0.9, 1.0)


def sampling_data(prefix: str = PREFIX, shown: int = 12) -> dict[str, list[dict]]:
    r"""随包发布的写诗模型读入 ``<bos> prefix`` 之后，下一个字的采样分布随温度、top-k、top-p 怎样变。

    模型在 float64 下算出 logits，再经 :func:`~tinyformer.poetry.sampling.next_distribution`
    （除以温度 → top-k → softmax → top-p → 重新归一化），概率舍入到 4 位小数，任何 CPU 上相同。
    ``<pad>``、``<bos>``、``<unk>`` 与写诗时一样先去掉。

    返回 dict，两张表：

    - ``bars``：``t``（温度）、``k``（top-k，0 = 不截断）、``p``（top-p）、``rank``、``ch``、``prob``：
      原始分布里概率最大的 ``shown`` 个字在这组设置下的采样概率（被截掉的为 0）；
    - ``summary``：``t``、``k``、``p``、``kept``（概率不为 0 的字数）、``top``（最大的概率）。
    """
    from ...poetry.pretrained import load_model
    from ...poetry.sampling import next_distribution

    check_positive_int("shown", shown)
    model, vocab = load_model()
    ids = torch.tensor([vocab.encode(prefix, bos=True)])  # (1, T)
    with (
        torch.no_grad()
    ):  # float64 的前向：float32 的 logits 在不同 CPU 上差 ~1e-6，足以改动第 4 位小数
        logits = copy.deepcopy(model).double()(ids)[0, -1]  # (1, T, V) -> (V,)
    banned = torch.tensor([vocab.pad_id, vocab.bos_id, vocab.unk_id])
    logits = logits.index_fill(0, banned, float("-inf"))
    order = torch.topk(logits, shown).indices.tolist()  # 原始分布里最大的几个，温度不改变这个顺序
    data = {"bars": [], "summary": []}
    for t in TEMPERATURES:
        for k in TOP_KS:
            for p in TOP_PS:
                probs = next_distribution(logits, t, k or None, p)  # (V,)
                setting = {"t": t, "k": k, "p": p}
                for rank, i in enumerate(order):
                    prob = round(probs[i].item(), 4)
                    data["bars"].append(
                        {**setting, "rank": rank, "ch": vocab.itos[i], "prob": prob}
                    )
                kept = int((probs > 0).sum())
                top = round(probs.max().item(), 4)
                data["summary"].append({**setting, "kept": kept, "top": top})
    return data


def sampling_explorer(prefix: str = PREFIX) -> alt.VConcatChart:
    """“只有解码器”一章的探索器：拖动温度、top-k、top-p，看下一个字的分布怎样变尖、被截断。"""
    data = sampling_data(prefix)
    t = control("t", 0.7, "温度 τ", "radio", TEMPERATURES)
    k = control("k", 0, "top-k（0 = 不截断）", "radio", TOP_KS)
    p = control("p", 0.9, "top-p", "radio", TOP_PS)
    selected = (alt.datum.t == t) & (alt.datum.k == k) & (alt.datum.p == p)
    chars = [row["ch"] for row in data["bars"][: len(data["bars"]) // len(data["summary"])]]
    bars = (
        alt.Chart(alt.InlineData(values=data["bars"]))
        .add_params(t, k, p)
        .transform_filter(selected)
        .mark_bar()
        .encode(
            x=alt.X("ch:N", sort=chars, title="下一个字", axis=alt.Axis(labelAngle=0)),
            y=alt.Y("prob:Q", scale=alt.Scale(domain=[0, 1]), title="采样概率"),
            tooltip=[alt.Tooltip("ch:N", title="字"), alt.Tooltip("prob:Q", title="概率")],
        )
        .properties(width=420, height=240)
    )
    summary = (
        alt.Chart(alt.InlineData(values=data["summary"]))
        .transform_filter(selected)
        .transform_calculate(
            line="'可能被采到的字：' + datum.kept + ' 个；最大的概率 ' + format(datum.top, '.3f')"
        )
        .mark_text(align="left", fontSize=13, x=0)
        .encode(text="line:N")
        .properties(width=420, height=18)
    )
    title = f"“{prefix}”之后下一个字的分布（原始分布里最大的 {len(chars)} 个字）"
    return finish(alt.vconcat(summary, bars), title)
