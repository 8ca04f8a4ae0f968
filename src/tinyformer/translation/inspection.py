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


def _check_post_ln(model: Transformer) -> None:
    if model.config.norm_first:
        raise ValueError(
            "the inspector follows the post-LN layer order of chapter 8's model, "
            f"got a model with norm_first={model.config.norm_first}"
        )


def _hooks(model: Transformer, stages: dict[str, Tensor]) -> list:
    """在真模型的模块上挂钩子，把中间结果写进 ``stages``；返回句柄（用完 ``remove()``）。"""

    def keep(name: str, value: Callable) -> Callable:
        def hook(module, args, kwargs, output):
            stages.update(value(module, args, kwargs, output))

        return hook

    def norm_stats(name):
        def value(module, args, kwargs, output):
            (x,) = args
            mean, var = _stats(x)
            out_mean, out_var = _stats(output)
            return {
                f"{name}.output": output,
                f"{name}.input_mean": mean,
                f"{name}.input_var": var,
                f"{name}.output_mean": out_mean,
                f"{name}.output_var": out_var,
            }

        return value

    def attention(name):
        def value(module, args, kwargs, output):
            query, key, value_ = args[:3]
            q, k, v = module._project(query, key, value_)  # 包自己的投影
            y, weights = output
            return {
                f"{name}.q": q,
                f"{name}.k": k,
                f"{name}.v": v,
                f"{name}.weights": weights,
                f"{name}.output": y,
            }

        return value

    handles = []

    def on(module, name, value):
        handles.append(module.register_forward_hook(keep(name, value), with_kwargs=True))

    for side, embed in (("encoder", model.src_embed), ("decoder", model.tgt_embed)):
        on(embed.embedding, side, lambda m, a, k, out, s=side: {f"{s}.embedding": out})
        on(embed, side, lambda m, a, k, out, s=side: {f"{s}.embedding_scaled": out})
    for side, layers in (("encoder", model.encoder_layers), ("decoder", model.decoder_layers)):
        for i, layer in enumerate(layers):
            name = f"{side}.layers.{i}"
            attentions = (
                ("self_attn",) if isinstance(layer, EncoderLayer) else ("self_attn", "cross_attn")
            )
            for sublayer in attentions:
                on(getattr(layer, sublayer), name, attention(f"{name}.{sublayer}"))
            norms = (
                ("norm1", "norm2")
                if isinstance(layer, EncoderLayer)
                else ("norm1", "norm2", "norm3")
            )
            for k, norm in enumerate(norms, start=1):
                on(getattr(layer, norm), name, norm_stats(f"{name}.{norm}"))
                # LayerNorm 的输入就是残差和
                on(
                    getattr(layer, norm),
                    name,
                    lambda m, a, kw, out, n=f"{name}.residual{k}": {n: a[0]},
                )
            on(layer.ffn.activation, name, lambda m, a, k, out, n=name: {f"{n}.ffn.hidden": out})
            on(layer.ffn, name, lambda m, a, k, out, n=name: {f"{n}.ffn.output": out})
    # 进入第一层的就是 嵌入 ×√C + 位置编码（两个栈共用一个 PositionalEncoding，所以在层上取）
    for side, layers in (("encoder", model.encoder_layers), ("decoder", model.decoder_layers)):
        handles.append(
            layers[0].register_forward_pre_hook(
                lambda m, args, s=side: stages.update({f"{s}.input": args[0]})
            )
        )
    on(model.encoder_norm, "memory", lambda m, a, k, out: {"memory": out})
    on(model.output, "decoder", lambda m, a, k, out: {"decoder.logits": out})
    return handles


@torch.no_grad()
def inspect(translator: Translator, sentence: str, tgt: Tensor | None = None) -> dict[str, Tensor]:
    """真模型算出的每个中间结果（前向钩子记下的），名字同 :func:`encoder_stage_names` 与
    :func:`decoder_stage_names`，外加 ``src_ids``、``tgt_ids``。

    解码器一侧送入的是 ``<bos>`` + 贪心译文（不含最后的 ``<eos>``），与
    :meth:`~tinyformer.translation.translator.Translator.cross_attention` 相同：第 t 行的 logits 就是贪心解码
    第 t 步选词用的那一行。``tgt`` 给出时用它（形状 (1, T)，第一列是 ``<bos>``）。

    参数:
        translator: :class:`~tinyformer.translation.translator.Translator`。
        sentence: 一句中文。
        tgt: 解码器的输入（默认 ``None``：用贪心译文）。

    返回:
        名字 → 张量，去掉了批量维（B = 1）。
    """
    check_instance("translator", translator, Translator)
    model = translator.model.eval()
    _check_post_ln(model)
    src = translator.encode([sentence])  # (1, S)
    if tgt is None:
        out = translator.translate_ids(src)  # (1, 1 + L)
        produced = out[0, 1:].tolist()
        eos = translator.tgt_vocab.eos_id
        length = produced.index(eos) + 1 if eos in produced else len(produced)
        tgt = out[:, :length]  # <bos> y_1 … y_{L-1}
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
