"""探索器「编码器与解码器里三种注意力的掩码」（“编码器与解码器”一章）。"""

from __future__ import annotations

import altair as alt
import torch

from ..._checks import check_positive_int
from ..._random import seeded
from ...layers import DecoderLayer, EncoderLayer
from ...masks import causal_mask
from .charts import control, finish, heatmap, matrix_rows

_SOURCE = ["我", "爱", "北京", "<pad>"]
_TARGET = ["<bos>", "i", "love", "beijing"]
_KINDS = ("编码器自注意力", "解码器掩码自注意力", "解码器交叉注意力")


def encoder_decoder_data(d_model: int = 16) -> list[dict]:
    """一个编码器层与一个解码器层（未训练，种子固定，float64）里三种注意力的权重（“编码器与解码器”一章）。

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
    is_pad = torch.tensor([tok == "<pad>" for tok in _SOURCE])  # (S,)，True = 填充
    rows = []
    for pad_mask in (True, False):
        src_mask = is_pad[None, :] if pad_mask else None  # (B=1, S) 填充掩码
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
                mask = torch.zeros(len(queries), len(keys), dtype=torch.bool)
            allowed = ~mask.expand(len(queries), len(keys))  # (Tq, Tk)：没被遮住的
            common = {"kind": kind, "pad_mask": pad_mask}
            rows += matrix_rows(w, queries, keys, allowed, **common)
    return rows


def encoder_decoder_explorer() -> alt.LayerChart:
    """“编码器与解码器”一章的探索器：选一种注意力、开关源句的填充掩码，看谁能关注谁、关注多少。"""
    rows = encoder_decoder_data()
    kind = control("kind", _KINDS[0], "注意力", "radio", _KINDS)
    pad_mask = control("pad_mask", True, "遮住源句的填充", "checkbox")
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
    chart = heatmap(base, "greens", tooltip, text).properties(width=300, height=260)
    return finish(chart, "编码器与解码器里的三种注意力（× 是被掩码遮住的位置）")
