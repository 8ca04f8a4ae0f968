"""在网页里自己重算的交互图（第 1–8 章各一个"探索器"：1.7、2.8、3.11、4.7、5.12、6.8、7.9、8.13 节）。

``ipywidgets`` 的控件要有 Python 内核才会响应：静态网页上拖动滑块什么也不会重算。这里的探索器
换一种做法：包在 Python 里 **把每个控件取值的数据都先算好**，画成 Vega-Altair 图，控件是图的参数
（``alt.param(bind=...)``），浏览器里的 Vega 按参数筛选、重画。于是离线网页、JupyterLab、Colab
里拖动都有反应，不需要内核。

每个探索器两个函数：``xxx_data()`` 返回数据（一行一个 dict，浮点数已舍入，见 :func:`_round`），
``xxx_explorer()`` 用这份数据画图。数据用 float64 计算再舍入，任何 CPU、任何线程数得到同样的
JSON（nbval 核对保存的输出）。每张图内嵌的 JSON 不超过 :data:`DATA_BUDGET` 字节。

``xxx_explorer()`` 返回普通的 Altair 图；在 Notebook 里用 :func:`show` 显示它。导入本模块不改
Altair 的全局设置（不注册、不启用渲染器），``show`` 只对这一张图用 :func:`render` 输出同一张图的
三种表示：

- ``application/vnd.vegalite.v6+json``：Vega-Lite 规格。本书网页由 ``_ext/vega_charts.py`` 渲染它，
  用随书发布的 vega、vega-lite、vega-embed（``tools/web_assets.py``），不连外网。
- ``text/html``：Altair 给 Notebook 用的 "universal" 模板（它的 default、colab 渲染器用的也是它），
  在 JupyterLab 4、Notebook 7、Colab 里第一次运行就画出图（这些环境本来就联网，脚本从 jsDelivr
  加载；JupyterLab 自带的 Vega 渲染器只认 Vega-Lite 5，不认上面的 v6 规格）。完整网页的 "standard"
  模板在那里是空白：打开时什么也没有，第一次运行 ``vegaEmbed is not defined``，第二次
  ``gn.compile is not a function``。图的 id 取规格的散列而不是随机数，所以重复执行逐字节相同。
  装了 ``vl-convert-python`` 时（``requirements.txt`` 固定了它，保存的输出都带图），图的 div 里先放
  一张默认控件取值的静态 PNG（:func:`_picture`）：不运行 JavaScript 的地方（GitHub 的笔记本预览、
  JupyterLab 里还没信任的笔记本、nbconvert 导出的 HTML）显示它，vega-embed 画图时清空 div 换成
  交互图。静态图放在 HTML 里面而不单独存成 ``image/png``：这些地方都优先选 ``text/html``，单独的
  PNG 永远不会被显示。
- ``text/plain``：一行说明（图名、数据行数与字节数）。
"""

from __future__ import annotations

import base64
import functools
import hashlib
import importlib.util
import io
import json
import math
import operator
import subprocess
import sys
from html import escape
from pathlib import Path

import altair as alt
import torch
from torch import Tensor, nn

from ._checks import check_instance, check_positive_int
from ._random import seeded
from .attention import MultiHeadAttention, attention_with_weights
from .layers import DecoderLayer, EncoderLayer
from .masks import causal_mask
from .positional import _frequencies, sinusoidal_encoding

__all__ = [
    "DATA_BUDGET",
    "attention_data",
    "attention_explorer",
    "chart_datasets",
    "chart_rows",
    "dependency_data",
    "dependency_explorer",
    "embedding_scale_data",
    "embedding_scale_explorer",
    "encoder_decoder_data",
    "encoder_decoder_explorer",
    "layer_norm_gradient_data",
    "layer_norm_gradient_explorer",
    "positional_curves_data",
    "positional_curves_explorer",
    "relative_position_data",
    "relative_position_explorer",
    "checkpoint_data",
    "checkpoint_explorer",
    "render",
    "show",
]

DATA_BUDGET = 150_000  # 每张图内嵌数据（紧凑 JSON）的字节数上限
# Altair 6 自己用 application/vnd.vegalite.v6.json；nbformat 只允许以 +json 结尾的 MIME 类型存 JSON 对象
# （否则笔记本验证失败），所以这里沿用 v5 及以前的写法。
VEGALITE_MIME_TYPE = f"application/vnd.vegalite.v{alt.VEGALITE_VERSION.split('.')[0]}+json"
# 中文字形：网页与 Notebook 里都用读者系统上的中文字体
FONT = '"Noto Sans SC", "Noto Sans CJK SC", "Source Han Sans SC", "PingFang SC", "Microsoft YaHei", sans-serif'


def _round(value: float, digits: int = 4) -> float:
    """保留 ``digits`` 位有效数字。float64 的计算在不同 CPU 上只差最后几位，舍入后相同。"""
    return float(f"{value:.{digits}g}")


def chart_datasets(chart: alt.TopLevelMixin) -> list[list[dict]]:
    """图里内嵌的数据表（Altair 把它们放在规格的 ``datasets`` 里，按首次出现的顺序）。"""
    return list(chart.to_dict()["datasets"].values())


def chart_rows(chart: alt.TopLevelMixin) -> list[dict]:
    """只有一张数据表的图里的数据。测试用它核对图里的数据就是 ``xxx_data()`` 算的。"""
    (rows,) = chart_datasets(chart)
    return rows


def _json_size(rows: list[dict]) -> int:
    """一张数据表写成紧凑 JSON 的字节数（UTF-8）。"""
    return len(json.dumps(rows, ensure_ascii=False, separators=(",", ":")).encode())


def _finish(chart: alt.TopLevelMixin, title: str) -> alt.TopLevelMixin:
    """统一的字体与标题；检查数据不超预算。"""
    chart = chart.properties(title=title).configure(font=FONT).configure_view(stroke=None)
    size = sum(_json_size(rows) for rows in chart_datasets(chart))
    assert size <= DATA_BUDGET, f"{title}: {size} bytes of data > DATA_BUDGET={DATA_BUDGET}"
    return chart


def _filtered_by_controls(rows: list[dict], *controls: tuple) -> alt.Chart:
    """``rows`` 上的图，每个 ``(字段, 默认值, 标签, 控件)`` 一个绑定控件的参数，只留字段等于参数的行。

    控件的取值是数据里这个字段出现过的值（升序），见 :func:`_control`。
    """
    params = [
        _control(name, value, label, widget, sorted({r[name] for r in rows}))
        for name, value, label, widget in controls
    ]
    keep = functools.reduce(
        operator.and_,
        (
            getattr(alt.datum, name) == param
            for (name, *_), param in zip(controls, params, strict=True)
        ),
    )
    return alt.Chart(alt.InlineData(values=rows)).add_params(*params).transform_filter(keep)


def _control(name: str, value, label: str, widget: str, options=(), labels=None) -> alt.Parameter:
    """绑定到一个控件的图参数。``widget``：radio、select、range（滑块）或 checkbox。

    ``options`` 是数据里出现的取值（升序）；滑块取它们的最小值、最大值和间隔。
    """
    options = list(options)
    if widget == "range":
        step = options[1] - options[0]
        bind = alt.binding_range(min=options[0], max=options[-1], step=step, name=f"{label} ")
    elif widget == "checkbox":
        bind = alt.binding_checkbox(name=f"{label} ")
    elif widget == "select" and labels is not None:
        bind = alt.binding_select(options=options, labels=list(labels), name=f"{label} ")
    elif widget == "select":
        bind = alt.binding_select(options=options, name=f"{label} ")
    else:
        bind = alt.binding_radio(options=options, name=f"{label} ")
    return alt.param(name=name, value=value, bind=bind)


# ---------------------------------------------------------------- 第 1 章：长距离依赖


def dependency_data(lengths=(8, 16, 24, 32, 40, 48, 56, 64), scales=(0.5, 0.9, 1.2)) -> list[dict]:
    r"""最后一个位置的输出对第 t 个输入有多敏感：RNN 与自注意力（第 1 章 总览）。

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
                    rows.append({"model": model, "scale": scale, "T": T, "t": t, "grad": _round(g)})
    return rows


def dependency_explorer() -> alt.Chart:
    """第 1 章的探索器：拖动序列长度 T、换 RNN 循环权重的尺度，看梯度怎样随距离衰减。"""
    chart = (
        _filtered_by_controls(
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
    return _finish(chart, "最后一个输出对各位置输入的梯度：RNN 与自注意力")


# ---------------------------------------------------------------- 第 2 章：×√d_model


_INITS = {
    "N(0, 1)（nn.Embedding 默认）": 1.0,
    "N(0, 1/d_model)（与输出层共享权重时常用）": None,  # 标准差 d_model^-1/2
}


def embedding_scale_data(
    d_models=(16, 32, 64, 128, 256, 512), vocab_size: int = 1000
) -> list[dict]:
    r"""词向量（乘或不乘 √d_model）与位置编码的平均范数（第 2 章 词嵌入）。

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
                ratio = _round(norm / pe_norm)
                rows.append({**common, "what": "词向量", "norm": _round(norm), "ratio": ratio})
                rows.append({**common, "what": "位置编码", "norm": _round(pe_norm), "ratio": ratio})
    return rows


def embedding_scale_explorer() -> alt.LayerChart:
    """第 2 章的探索器：换 d_model、初始化、是否乘 √d_model，比较词向量与位置编码的大小。"""
    rows = embedding_scale_data()
    d_model = _control("d_model", 64, "d_model", "select", sorted({r["d_model"] for r in rows}))
    init = _control("init", list(_INITS)[0], "初始化", "radio", _INITS)
    scaled = _control("scaled", True, "乘以 √d_model", "checkbox")
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
    return _finish(chart, "词向量与位置编码谁大：初始化与 ×√d_model 决定比例").configure_title(
        anchor="start", offset=16
    )


# ---------------------------------------------------------------- 第 3 章：位置编码曲线


def positional_curves_data(
    d_model: int = 32, bases=(100.0, 1000.0, 10000.0), max_len: int = 48
) -> list[dict]:
    """第 i 对维度 (2i, 2i+1) 的位置编码随位置变化的曲线（第 3 章 位置编码）。

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
    """第 3 章的探索器：拖动维度对 i、换底数 base，看 sin/cos 曲线的频率怎样变化。"""
    chart = (
        _filtered_by_controls(
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
    return _finish(chart, "d_model = 32：第 i 对维度的 sin 与 cos，i 越大波长越长")


# ---------------------------------------------------------------- 第 4 章：PE(p)·PE(p+k)


def relative_position_data(
    d_models=(32, 128), starts=(0, 10, 20, 30, 40), k_max: int = 40
) -> list[dict]:
    r"""点积 PE(p)·PE(p+k) 随 k 的变化，正确的 sin/cos 成对编码与"只用 sin"对比（第 4 章）。

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
    """第 4 章的探索器：移动起点 p——成对编码的曲线纹丝不动，只用 sin 的曲线跟着变。"""
    rows = relative_position_data()
    p = _control("p", 0, "起点 p", "range", sorted({r["p"] for r in rows}))
    encodings = ["sin/cos 成对（论文）", "只用 sin"]
    encoding = _control("encoding", encodings[0], "编码方式", "radio", encodings)
    d_model = _control("d_model", 128, "d_model", "select", sorted({r["d_model"] for r in rows}))
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
    return _finish(chart, "PE(p) · PE(p+k) 随相对位置 k 的变化")


def _matrix_rows(weights: Tensor, queries, keys, allowed: Tensor | None = None, **common) -> list:
    """注意力权重矩阵 (Tq, Tk) 拆成一格一行：``common`` 的列 + 查询/键的序号与词元 + 权重（4 位小数）。"""
    rows = []
    for i, q_tok in enumerate(queries):
        for j, k_tok in enumerate(keys):
            row = {
                **common,
                "query": i,
                "key": j,
                "q_token": f"{i}:{q_tok}",
                "k_token": f"{j}:{k_tok}",
            }
            if allowed is not None:
                row["allowed"] = bool(allowed[i, j])
            rows.append({**row, "weight": round(weights[i, j].item(), 4)})
    return rows


def _heatmap(base: alt.Chart, scheme: str, tooltip: list, text) -> alt.LayerChart:
    """热力图：每格一个色块，上面写着 ``text``（深色格用白字）。"""
    cells = base.mark_rect(stroke="white").encode(
        color=alt.Color("weight:Q", scale=alt.Scale(domain=[0, 1], scheme=scheme), title="权重"),
        tooltip=tooltip,
    )
    labels = base.mark_text(fontSize=11).encode(
        text=text,
        color=alt.condition(alt.datum.weight > 0.5, alt.value("white"), alt.value("black")),
    )
    return alt.layer(cells, labels)


# ---------------------------------------------------------------- 第 5 章：注意力权重


_SENTENCE = ["我", "爱", "北京", "天安门", "<pad>", "<pad>"]
_MASKS = ("不遮挡", "填充掩码", "因果掩码", "填充 + 因果")


def _mask(kind: str, T: int, valid: int) -> Tensor | None:
    """``kind`` 对应的 bool 掩码 (T, T)，True 表示可以关注；前 ``valid`` 个词元不是填充。"""
    padding = (torch.arange(T) < valid)[None, :].expand(T, T)  # (T, T)：每行都只看前 valid 列
    return {
        "不遮挡": None,
        "填充掩码": padding,
        "因果掩码": causal_mask(T),
        "填充 + 因果": padding & causal_mask(T),
    }[kind]


def attention_data(head_dims=(4, 16, 64)) -> list[dict]:
    r"""一句话的自注意力权重：掩码 × 是否除以 √d_k × d_k（第 5 章 注意力机制）。

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
                _, weights = attention_with_weights(query, k, k, attn_mask=_mask(kind, T, valid))
                common = {"mask": kind, "scaled": scaled, "d_k": d_k}
                rows += _matrix_rows(weights, _SENTENCE, _SENTENCE, **common)
    return rows


def attention_explorer() -> alt.LayerChart:
    """第 5 章的探索器：换掩码、是否除以 √d_k、d_k，看注意力权重矩阵怎样变。"""
    rows = attention_data()
    mask = _control("mask", _MASKS[0], "掩码", "select", _MASKS)
    scaled = _control("scaled", True, "除以 √d_k", "checkbox")
    d_k = _control("d_k", 16, "d_k", "radio", sorted({r["d_k"] for r in rows}))
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
    chart = _heatmap(base, "blues", tooltip, alt.Text("weight:Q", format=".2f"))
    chart = chart.properties(width=360, height=300)
    return _finish(chart, "“我爱北京天安门”的注意力权重（后两个是填充词元）")


# ---------------------------------------------------------------- 第 6 章：pre-LN 与 post-LN


def layer_norm_gradient_data(depths=(2, 4, 6, 8, 12), d_model: int = 32) -> list[dict]:
    r"""刚初始化时各层参数的梯度范数：post-LN 与 pre-LN（第 6 章 层归一化、残差与前馈网络）。

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
                    {"placement": placement, "depth": depth, "layer": index, "grad": _round(grad)}
                )
    return rows


def layer_norm_gradient_explorer() -> alt.Chart:
    """第 6 章的探索器：换层数与 LayerNorm 的位置，看各层梯度的大小。"""
    rows = layer_norm_gradient_data()
    depth = _control("depth", 6, "层数", "select", sorted({r["depth"] for r in rows}))
    placements = ["post-LN", "pre-LN"]
    placement = _control("placement", placements[0], "LayerNorm 的位置", "radio", placements)
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
    return _finish(chart, "刚初始化时各层参数的梯度范数：post-LN 与 pre-LN")


# ---------------------------------------------------------------- 第 7 章：编码器与解码器的掩码


_SOURCE = ["我", "爱", "北京", "<pad>"]
_TARGET = ["<bos>", "i", "love", "beijing"]
_KINDS = ("编码器自注意力", "解码器掩码自注意力", "解码器交叉注意力")


def encoder_decoder_data(d_model: int = 16) -> list[dict]:
    """一个编码器层与一个解码器层（未训练，种子固定，float64）里三种注意力的权重（第 7 章）。

    源句 "我 爱 北京 <pad>"，目标输入 "<bos> i love beijing"。编码器自注意力用源句的填充掩码；
    解码器自注意力用因果掩码；交叉注意力的查询是目标词元、键是源词元，用源句的填充掩码。
    勾掉"遮住填充"时源句的填充掩码不用（看没有掩码时填充词元分走多少注意力）。
    返回的行：``kind``、``pad_mask``（是否遮住填充）、``query``、``key``、``q_token``、``k_token``、
    ``allowed``（掩码是否允许）、``weight``（4 位小数）。
    """
    check_positive_int("d_model", d_model)
    S, T = len(_SOURCE), len(_TARGET)
    generator = torch.Generator().manual_seed(0)
    src = torch.randn(1, S, d_model, generator=generator, dtype=torch.float64)  # (1, S, C)
    tgt = torch.randn(1, T, d_model, generator=generator, dtype=torch.float64)  # (1, T, C)
    with seeded(0):  # 固定初始权重，不动全局随机数
        encoder = EncoderLayer(d_model, num_heads=2, d_ff=32).double()
        decoder = DecoderLayer(d_model, num_heads=2, d_ff=32).double()
    encoder.need_weights = decoder.need_weights = True
    not_pad = torch.tensor([tok != "<pad>" for tok in _SOURCE])  # (S,)
    rows = []
    for pad_mask in (True, False):
        src_mask = not_pad[None, :] if pad_mask else None  # (B=1, S) 填充掩码
        memory = encoder(src, src_key_padding_mask=src_mask)  # (1, S, C)
        decoder(tgt, memory, tgt_mask=causal_mask(T), memory_key_padding_mask=src_mask)
        weights = {
            "编码器自注意力": (encoder.self_attn_weights, _SOURCE, _SOURCE, src_mask),
            "解码器掩码自注意力": (decoder.self_attn_weights, _TARGET, _TARGET, causal_mask(T)),
            "解码器交叉注意力": (decoder.cross_attn_weights, _TARGET, _SOURCE, src_mask),
        }
        for kind, (w, queries, keys, mask) in weights.items():
            w = w[0].mean(dim=0)  # (1, H, Tq, Tk) -> (Tq, Tk)：各头平均
            if mask is None:
                mask = torch.ones(len(queries), len(keys), dtype=torch.bool)
            allowed = mask.expand(len(queries), len(keys))  # (Tq, Tk)
            common = {"kind": kind, "pad_mask": pad_mask}
            rows += _matrix_rows(w, queries, keys, allowed, **common)
    return rows


def encoder_decoder_explorer() -> alt.LayerChart:
    """第 7 章的探索器：选一种注意力、开关源句的填充掩码，看谁能关注谁、关注多少。"""
    rows = encoder_decoder_data()
    kind = _control("kind", _KINDS[0], "注意力", "radio", _KINDS)
    pad_mask = _control("pad_mask", True, "遮住源句的填充", "checkbox")
    base = (
        alt.Chart(alt.InlineData(values=rows))
        .add_params(kind, pad_mask)
        .transform_filter((alt.datum.kind == kind) & (alt.datum.pad_mask == pad_mask))
        .encode(
            x=alt.X("k_token:N", sort=None, title="键", axis=alt.Axis(labelAngle=0)),
            y=alt.Y("q_token:N", sort=None, title="查询"),
        )
    )
    tooltip = ["q_token:N", "k_token:N", "allowed:N", "weight:Q"]
    text = alt.condition(alt.datum.allowed, alt.Text("weight:Q", format=".2f"), alt.value("×"))
    chart = _heatmap(base, "greens", tooltip, text).properties(width=300, height=260)
    return _finish(chart, "编码器与解码器里的三种注意力（× 是被掩码遮住的位置）")


# ---------------------------------------------------------------- 第 8 章：训练好的模型


def checkpoint_data(num_sentences: int = 12, beam_size: int = 4) -> dict[str, list[dict]]:
    """随包发布的模型在测试句上的交叉注意力与译文，按检查点与解码方式（第 8 章）。

    取 ``generate_corpus(seed=0)`` 的前 ``num_sentences`` 个测试句（训练时没见过的搭配），
    对 :data:`tinyformer.pretrained.STEPS` 的每个检查点：贪心解码时最后一个解码器层的交叉注意力
    （各头平均，2 位小数），以及贪心与束搜索（``beam_size``）的译文。为了让数据小，句子用编号 ``s``，
    词元的文字另放两张表。

    返回 dict，四张表：

    - ``sentences``：``s``、``zh``（测试句）、``en``（参考译文）
    - ``cells``：``s``、``step``、``r``（第几个英文词元）、``c``（第几个中文词元）、``w``（权重）
    - ``tokens``：``key``（"s-step-r" 或 "s-c"）、``label``（"序号:词元"）
    - ``translations``：``s``、``step``、``decoding``、``text``、``correct``（是否等于参考译文）
    """
    from .corpus import generate_corpus
    from .pretrained import STEPS, load_translator

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
    """第 8 章的探索器：选一个测试句、一个检查点，看交叉注意力和贪心/束搜索的译文。"""
    data = checkpoint_data(num_sentences)
    steps = sorted({row["step"] for row in data["cells"]})
    sentences = data["sentences"]
    sentence = _control(
        "s", 0, "测试句", "select", [r["s"] for r in sentences], labels=[r["zh"] for r in sentences]
    )
    step = _control("step", steps[-1], "训练步数", "radio", steps)
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
    return _finish(chart, "训练好的模型翻译测试句：检查点、解码方式与交叉注意力")


# ---------------------------------------------------------------- 渲染器


def render(spec: dict, **metadata) -> dict:
    """一张图的三种表示：Vega-Lite 规格 + 确定的 HTML（内含默认状态的静态图）+ 一行文字（见模块说明）。

    签名与 Altair 的渲染器相同，也可以 ``alt.renderers.register("tinyformer", render)`` 后启用。
    """
    from altair.utils.mimebundle import spec_to_mimebundle

    text = json.dumps(spec, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    div = f"tinyformer-chart-{digest}"
    # Altair 自己的 Notebook 模板（它的 default、colab 渲染器用的就是它）：脚本按需加载，第一次运行就画。
    # 完整网页的 "standard" 模板在 JupyterLab 4、Notebook 7 里是空白（模块说明）。
    html = spec_to_mimebundle(
        spec,
        format="html",
        mode="vega-lite",
        template="universal",
        vega_version=alt.VEGA_VERSION,
        vegaembed_version=alt.VEGAEMBED_VERSION,
        vegalite_version=alt.VEGALITE_VERSION,
        embed_options={"renderer": "svg", "actions": False},
        output_div=div,
        **metadata,
    )["text/html"]
    title = spec.get("title", "")
    picture = _picture(spec)
    if picture is not None:
        empty = f'<div id="{div}"></div>'
        assert html.count(empty) == 1, "Altair 的 universal 模板变了：找不到图的空 div"
        html = html.replace(empty, f'<div id="{div}">{_picture_html(picture, title)}</div>')
    datasets = spec.get("datasets", {}).values()
    rows = sum(len(rows) for rows in datasets)
    size = sum(_json_size(rows) for rows in datasets)
    plain = f"<交互图「{title}」：{rows} 行数据，{size / 1000:.1f} KB，sha256 {digest}>"
    return {VEGALITE_MIME_TYPE: spec, "text/html": html, "text/plain": plain}


PICTURE_SCALE = 2  # 静态图按 2 倍像素画，显示成原尺寸：高分屏上也清楚
PICTURE_NOTE = (
    "静态图：控件的默认取值。在 JupyterLab、Colab 里运行这个单元格，或在本书网页上，可以拖动控件。"
)


def _picture(spec: dict) -> bytes | None:
    """图在默认控件取值下的 PNG（vl-convert，不用浏览器）；没装 ``vl-convert-python`` 时返回 None。

    vl-convert 在一个子进程里画：它带着一整个 JavaScript 引擎（V8），在内核里加载会让每一章的峰值
    内存多出约 180 MB 并一直占着（附录“执行统计”，本书要求每章 ≤ 800 MB）。中文用随包发布的
    Noto Sans SC 子集（``fonts/``，规格里的字体列表排在第一）。图存成 256 色的调色板 PNG：每张
    11–35 KB，而 vl-convert 直接给的真彩 PNG 是它的 7 倍。vl-convert 与 Pillow 都不用 torch，同一
    版本在任何 CPU、任何线程数上逐字节相同。
    """
    if importlib.util.find_spec("vl_convert") is None:
        return None
    from PIL import Image

    png = subprocess.run(
        [
            sys.executable,
            "-c",
            _DRAW,
            str(Path(__file__).with_name("fonts")),
            ".".join(alt.VEGALITE_VERSION.split(".")[:2]),
            str(PICTURE_SCALE),
        ],
        input=json.dumps(spec).encode(),
        capture_output=True,
        check=True,
    ).stdout
    image = Image.open(io.BytesIO(png)).convert("RGB")
    image = image.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=True)
    return buffer.getvalue()


# 子进程里运行的程序：参数是字体目录、Vega-Lite 版本、放大倍数；规格从 stdin 读，PNG 写到 stdout
_DRAW = """
import json, sys
import vl_convert
fonts, version, scale = sys.argv[1:]
vl_convert.register_font_directory(fonts)
png = vl_convert.vegalite_to_png(
    json.load(sys.stdin), vl_version=version, scale=float(scale),
    config={"background": "white"},  # 透明底在深色主题里看不见黑字
)
sys.stdout.buffer.write(png)
"""


def _picture_html(png: bytes, title: str) -> str:
    """静态图的 HTML：vega-embed 画图时先清空这个 div，所以有 JavaScript 的地方只看到交互图。"""
    from PIL import Image

    width = Image.open(io.BytesIO(png)).width // PICTURE_SCALE
    data = base64.b64encode(png).decode()
    alt_text = escape(f"{title}（{PICTURE_NOTE}）", quote=True)
    return (
        f'<img src="data:image/png;base64,{data}" width="{width}" alt="{alt_text}">'
        f"<p><small>{PICTURE_NOTE}</small></p>"
    )


def show(chart: alt.TopLevelMixin) -> None:
    """在 Notebook 里显示 ``chart``：输出 :func:`render` 的三种表示，不改 Altair 当前的渲染器。

    与直接把图写在单元格最后一行（Altair 用当前渲染器显示）相比，图的 id 取规格的散列，重复执行
    逐字节相同（nbval 核对保存的输出）。
    """
    check_instance("chart", chart, alt.TopLevelMixin)
    from IPython.display import display

    # 与 Altair 的 _repr_mimebundle_ 相同：不在 Python 里预先做数据变换
    display(render(chart.to_dict(context={"pre_transform": False})), raw=True)
