r"""看进训练好的翻译器：一句话经过的每一个中间结果（各章网页上的“用训练好的模型看看”的参照）。

:func:`inspect` 在真模型的模块上挂前向钩子（forward hook），跑一次真模型的 ``encode`` 与 ``forward``，记下：
词嵌入（×√C 前后）、位置编码与它们的和，每层每个头的 Q、K、V 与注意力权重（编码器自注意力、解码器掩码
自注意力、交叉注意力）、子层输出、残差和、LayerNorm 的输出（以及它的输入输出每个词元的均值、方差）、
FFN 的隐藏激活、每个位置的 logits 与概率。网页上的检查器用本书自己的 JavaScript 前向
（``_static_ch08/live_translator/transformer.js``）按同样的名字记下同样的量；浏览器测试
（tests/book/test_inspector.py）核对两边相同。

名字（去掉批量维，B = 1）：``encoder.embedding`` (S, C)，``encoder.embedding_scaled``，
``encoder.positional``，``encoder.input``，``encoder.layers.{i}.self_attn.{q,k,v}`` (H, S, D)，
``….self_attn.weights`` (H, S, S)，``….self_attn.output`` (S, C)，``….residual1``、``….norm1.output``
及其 ``….norm1.{input,output}_{mean,var}`` (S,)，``….ffn.hidden`` (S, d_ff)，``….ffn.output``，
``….residual2``，``….norm2.*``；``memory``。解码器同理（``decoder.*``，多一个 ``cross_attn`` 和
``norm3``），最后是 ``decoder.logits``、``decoder.probs`` (T, V)。只支持 post-LN（“完整模型”一章的模型）。
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor

from .._checks import check_instance
from ..layers import EncoderLayer, recording_weights
from ..model import Transformer
from .translator import Translator

__all__ = ["inspect"]


def _stats(x: Tensor) -> tuple[Tensor, Tensor]:
    """每个词元在 C 个特征上的均值与有偏方差（LayerNorm 用的那两个数）：(B, T, C) -> (B, T), (B, T)。"""
    mean = x.mean(dim=-1)
    var = ((x - mean[..., None]) ** 2).mean(dim=-1)
    return mean, var


def _hooks(model: Transformer, stages: dict[str, Tensor]) -> list:
    """在真模型的模块上挂钩子，把中间结果写进 ``stages``；返回句柄（用完 ``remove()``）。"""
    handles = []

    def on(module, record: Callable) -> None:  # record(module, args, output) -> {名字: 张量}
        def hook(module, args, output):
            stages.update(record(module, args, output))

        handles.append(module.register_forward_hook(hook))

    def attention(name: str) -> Callable:
        def record(module, args, output):
            q, k, v = module._project(*args[:3])  # 包自己的投影
            y, weights = output
            names = ("q", "k", "v", "weights", "output")
            return {f"{name}.{n}": t for n, t in zip(names, (q, k, v, weights, y), strict=True)}

        return record

    def norm(name: str, residual: str) -> Callable:
        def record(module, args, output):
            (x,) = args  # LayerNorm 的输入就是残差和
            found = {residual: x, f"{name}.output": output}
            for which, value in (("input", x), ("output", output)):
                found[f"{name}.{which}_mean"], found[f"{name}.{which}_var"] = _stats(value)
            return found

        return record

    for side, embed, layers in (
        ("encoder", model.src_embed, model.encoder_layers),
        ("decoder", model.tgt_embed, model.decoder_layers),
    ):
        on(embed.embedding, lambda m, a, out, s=side: {f"{s}.embedding": out})
        on(embed, lambda m, a, out, s=side: {f"{s}.embedding_scaled": out})
        # 进入第一层的就是 嵌入 ×√C + 位置编码（两个栈共用一个 PositionalEncoding，所以在层上取）
        handles.append(
            layers[0].register_forward_pre_hook(
                lambda m, args, s=side: stages.update({f"{s}.input": args[0]})
            )
        )
        for i, layer in enumerate(layers):
            name = f"{side}.layers.{i}"
            encoder = isinstance(layer, EncoderLayer)
            for sublayer in ("self_attn",) if encoder else ("self_attn", "cross_attn"):
                on(getattr(layer, sublayer), attention(f"{name}.{sublayer}"))
            for k in range(1, 3 if encoder else 4):
                on(getattr(layer, f"norm{k}"), norm(f"{name}.norm{k}", f"{name}.residual{k}"))
            on(layer.ffn.activation, lambda m, a, out, n=name: {f"{n}.ffn.hidden": out})
            on(layer.ffn, lambda m, a, out, n=name: {f"{n}.ffn.output": out})
    on(model.encoder_norm, lambda m, a, out: {"memory": out})
    on(model.output, lambda m, a, out: {"decoder.logits": out})
    return handles


@torch.no_grad()
def inspect(translator: Translator, sentence: str, tgt: Tensor | None = None) -> dict[str, Tensor]:
    """真模型算出的每个中间结果（前向钩子记下的）：名字 → 张量（名字见模块说明，外加 ``src_ids``、
    ``tgt_ids``），去掉了批量维（B = 1）。

    解码器一侧送入的是 ``tgt``（形状 (1, T)，第一列是 ``<bos>``）；默认是 ``<bos>`` + 贪心译文（不含最后的
    ``<eos>``），与 :meth:`~tinyformer.translation.translator.Translator.cross_attention` 相同：第 t 行的
    logits 就是贪心解码第 t 步选词用的那一行。
    """
    check_instance("translator", translator, Translator)
    model = translator.model.eval()
    if model.config.norm_first:
        raise ValueError(
            "the inspector follows the post-LN layer order of chapter 8's model, "
            f"got a model with norm_first={model.config.norm_first}"
        )
    src = translator.encode([sentence])  # (1, S)
    if tgt is None:
        tgt = translator.translate_one(src)[:, :-1]  # <bos> y_1 … y_{T-1}
    stages: dict[str, Tensor] = {}
    handles = _hooks(model, stages)
    layers = [*model.encoder_layers, *model.decoder_layers]
    try:
        with recording_weights(*layers):
            model(src, tgt)  # 真模型的前向：编码器、解码器
    finally:
        for handle in handles:
            handle.remove()
    for side, ids in (("encoder", src), ("decoder", tgt)):
        # 位置编码表（buffer）的前 T 行：(1, T, C)
        stages[f"{side}.positional"] = model.positional.pe[: ids.shape[1]][None]
    stages["decoder.probs"] = torch.softmax(stages["decoder.logits"], dim=-1)
    result = {name: value[0] for name, value in stages.items()}  # 去掉批量维
    result["src_ids"], result["tgt_ids"] = src[0], tgt[0]
    return result
