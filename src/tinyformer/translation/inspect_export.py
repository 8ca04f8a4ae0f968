r"""看进训练好的翻译器：一句话经过的每一个中间结果（各章网页上的“用训练好的模型看看”）。

:mod:`tinyformer.translation.export` 导出的两张图只给出 memory、logits 和平均的交叉注意力；这里的两张图把
中间的每一步都当作输出：词嵌入（×√C 前后）、位置编码与它们的和，每层每个头的 Q、K、V 与注意力
权重（编码器自注意力、解码器掩码自注意力、交叉注意力）、子层输出、残差和、LayerNorm 的输入输出
（以及每个词元的均值、方差）、FFN 的隐藏激活、每个位置的 logits 与概率。

两条路径算同一组名字，测试证明它们相等：

- :class:`EncoderInspection`、:class:`DecoderInspection`：导出用的包装，按模型 ``forward`` 的顺序
  调用包自己的子模块（嵌入、位置编码、``MultiHeadAttention``、``LayerNorm``、FFN 的两个线性层与
  激活），把每一步的结果作为图的输出。:func:`export_inspector` 把它们导出成 ONNX。
- :func:`inspect`：在真模型的模块上挂前向钩子（forward hook），跑一次真模型的 ``encode`` 与
  ``forward``，记下同名的结果。它不经过包装，是核对包装（和浏览器）的参照。

名字（去掉批量维，B = 1）：``encoder.embedding`` (S, C)，``encoder.embedding_scaled``，
``encoder.positional``，``encoder.input``，``encoder.layers.{i}.self_attn.{q,k,v}`` (H, S, D)，
``….self_attn.weights`` (H, S, S)，``….self_attn.output`` (S, C)，``….residual1``、``….norm1.output``
及其 ``….norm1.{input,output}_{mean,var}`` (S,)，``….ffn.hidden`` (S, d_ff)，``….ffn.output``，
``….residual2``，``….norm2.*``；``memory``。解码器同理（``decoder.*``，多一个 ``cross_attn`` 和
``norm3``），最后是 ``decoder.logits``、``decoder.probs`` (T, V)。只支持 post-LN（“完整模型”一章的模型）。
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable
from pathlib import Path

import torch
from torch import Tensor, nn

from .._checks import check_instance, check_positive_int
from ..atomic import atomic_write
from ..layers import EncoderLayer, recording_weights
from ..masks import causal_mask
from ..model import Transformer
from .translator import Translator

__all__ = [
    "DecoderInspection",
    "EncoderInspection",
    "encoder_stage_names",
    "decoder_stage_names",
    "export_inspector",
    "inspect",
]

FORMAT = "tinyformer-onnx-inspector-1"
FILES = ("inspect_encoder.onnx", "inspect_decoder.onnx", "inspector.json")

# 每层记下的量（按前向的顺序）；注意力子层记 q、k、v、weights、output
_ENCODER_SUBLAYERS = (("self_attn", "norm1"), ("ffn", "norm2"))
_DECODER_SUBLAYERS = (("self_attn", "norm1"), ("cross_attn", "norm2"), ("ffn", "norm3"))


def _layer_names(prefix: str, sublayers) -> list[str]:
    names = []
    for k, (sublayer, norm) in enumerate(sublayers, start=1):
        if sublayer == "ffn":
            names += [f"{prefix}.ffn.hidden", f"{prefix}.ffn.output"]
        else:
            names += [
                f"{prefix}.{sublayer}.{part}" for part in ("q", "k", "v", "weights", "output")
            ]
        names += [f"{prefix}.residual{k}", f"{prefix}.{norm}.output"]
        names += [
            f"{prefix}.{norm}.{side}_{stat}"
            for side in ("input", "output")
            for stat in ("mean", "var")
        ]
    return names


def encoder_stage_names(num_layers: int) -> list[str]:
    """编码器图的输出名（``memory`` 在最后），按前向的顺序。"""
    names = ["encoder.embedding", "encoder.embedding_scaled", "encoder.positional", "encoder.input"]
    for i in range(num_layers):
        names += _layer_names(f"encoder.layers.{i}", _ENCODER_SUBLAYERS)
    return names + ["memory"]


def decoder_stage_names(num_layers: int) -> list[str]:
    """解码器图的输出名（``decoder.logits``、``decoder.probs`` 在最后），按前向的顺序。"""
    names = ["decoder.embedding", "decoder.embedding_scaled", "decoder.positional", "decoder.input"]
    for i in range(num_layers):
        names += _layer_names(f"decoder.layers.{i}", _DECODER_SUBLAYERS)
    return names + ["decoder.logits", "decoder.probs"]


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


class _Recorder:
    """收集一次前向里的中间结果：名字 → 张量（保持前向的顺序）。"""

    def __init__(self):
        self.stages: dict[str, Tensor] = {}

    def norm(self, name: str, norm: nn.Module, x: Tensor) -> Tensor:
        y = norm(x)
        mean, var = _stats(x)
        out_mean, out_var = _stats(y)
        self.stages.update(
            {
                f"{name}.output": y,
                f"{name}.input_mean": mean,
                f"{name}.input_var": var,
                f"{name}.output_mean": out_mean,
                f"{name}.output_var": out_var,
            }
        )
        return y

    def attention(
        self,
        name: str,
        mha: nn.Module,
        query: Tensor,
        memory: Tensor | None,
        *,
        key_padding_mask: Tensor | None = None,
        attn_mask: Tensor | None = None,
    ):
        """一个注意力子层：Q、K、V 用包的投影算，权重和输出由 ``mha`` 自己的前向给出。"""
        key = query if memory is None else memory
        q, k, v = mha._project(query, key, key)  # (B, H, T, D), (B, H, S, D), (B, H, S, D)
        y, weights = mha(  # (B, T, C), (B, H, T, S)
            query,
            key,
            key,
            key_padding_mask=key_padding_mask,
            attn_mask=attn_mask,
            need_weights=True,
        )
        self.stages.update(
            {f"{name}.q": q, f"{name}.k": k, f"{name}.v": v, f"{name}.weights": weights}
        )
        self.stages[f"{name}.output"] = y
        return y

    def ffn(self, name: str, ffn: nn.Module, x: Tensor) -> Tensor:
        hidden = ffn.activation(ffn.linear1(x))  # (B, T, C) -> (B, T, d_ff)
        y = ffn.linear2(ffn.dropout(hidden))  # (B, T, d_ff) -> (B, T, C)
        self.stages[f"{name}.hidden"], self.stages[f"{name}.output"] = hidden, y
        return y

    def embed(self, side: str, embed: nn.Module, positional: nn.Module, ids: Tensor) -> Tensor:
        raw = embed.embedding(ids)  # (B, T) -> (B, T, C)
        scaled = embed(ids)  # E[x]·√C
        x = positional(scaled)  # (B, T, C) + (T, C)
        self.stages.update(
            {
                f"{side}.embedding": raw,
                f"{side}.embedding_scaled": scaled,
                f"{side}.positional": positional.pe[: ids.shape[1]][None],  # (1, T, C)
                f"{side}.input": x,
            }
        )
        return x


class EncoderInspection(nn.Module):
    """导出用的编码器：源句编号 → :func:`encoder_stage_names` 的每一个中间结果（最后是 memory）。

    按 :meth:`~tinyformer.Transformer.encode` 与 :class:`~tinyformer.EncoderLayer`（post-LN）的顺序
    调用模型自己的子模块；填充掩码在图里由 ``pad_id`` 算出。

    参数:
        model: 训练好的 :class:`~tinyformer.Transformer`（post-LN）。

    形状:
        - src: (B, S)，int64
        - 输出: 元组，顺序同 :func:`encoder_stage_names`，每个带批量维 B

    例子::

        >>> import torch
        >>> from tinyformer.translation.pretrained import load_translator
        >>> model = load_translator().model
        >>> stages = EncoderInspection(model)(torch.tensor([[4, 5, 6]]))
        >>> len(stages) == len(encoder_stage_names(2)), stages[-1].shape
        (True, torch.Size([1, 3, 128]))
    """

    def __init__(self, model: Transformer):
        super().__init__()
        check_instance("model", model, Transformer)
        _check_post_ln(model)
        self.model = model

    def forward(self, src: Tensor) -> tuple[Tensor, ...]:
        model, record = self.model, _Recorder()
        is_pad = src == model.config.pad_id  # (B, S)，True = 填充
        x = record.embed("encoder", model.src_embed, model.positional, src)  # (B, S, C)
        for i, layer in enumerate(model.encoder_layers):
            name = f"encoder.layers.{i}"
            y = record.attention(
                f"{name}.self_attn", layer.self_attn, x, None, key_padding_mask=is_pad
            )
            record.stages[f"{name}.residual1"] = x = x + layer.dropout1(y)
            x = record.norm(f"{name}.norm1", layer.norm1, x)
            y = record.ffn(f"{name}.ffn", layer.ffn, x)
            record.stages[f"{name}.residual2"] = x = x + layer.dropout2(y)
            x = record.norm(f"{name}.norm2", layer.norm2, x)
        record.stages["memory"] = model.encoder_norm(x)
        names = encoder_stage_names(len(model.encoder_layers))
        return tuple(record.stages[n] for n in names)


class DecoderInspection(nn.Module):
    """导出用的解码器：(前缀 tgt, memory, src) → :func:`decoder_stage_names` 的每一个中间结果。

    按 :meth:`~tinyformer.Transformer.decode` 与 :class:`~tinyformer.DecoderLayer`（post-LN）的顺序
    调用模型自己的子模块：自注意力用因果掩码，交叉注意力用源句的填充掩码。最后一个位置的 logits
    就是贪心解码、束搜索下一步用的那一行（与 :func:`~tinyformer.greedy_decode` 的 ``use_cache=False`` 相同）。

    形状:
        - tgt: (B, T)，int64，第一列是 ``<bos>``；memory: (B, S, C)；src: (B, S)，int64
        - 输出: 元组，顺序同 :func:`decoder_stage_names`；logits、probs: (B, T, V)
    """

    def __init__(self, model: Transformer):
        super().__init__()
        check_instance("model", model, Transformer)
        _check_post_ln(model)
        self.model = model

    def forward(self, tgt: Tensor, memory: Tensor, src: Tensor) -> tuple[Tensor, ...]:
        model, record = self.model, _Recorder()
        is_pad = src == model.config.pad_id  # (B, S)，True = 填充
        tgt_mask = causal_mask(tgt.shape[1], device=tgt.device)  # (T, T)，True = 遮住
        x = record.embed("decoder", model.tgt_embed, model.positional, tgt)  # (B, T, C)
        for i, layer in enumerate(model.decoder_layers):
            name = f"decoder.layers.{i}"
            y = record.attention(f"{name}.self_attn", layer.self_attn, x, None, attn_mask=tgt_mask)
            record.stages[f"{name}.residual1"] = x = x + layer.dropout1(y)
            x = record.norm(f"{name}.norm1", layer.norm1, x)
            y = record.attention(
                f"{name}.cross_attn", layer.cross_attn, x, memory, key_padding_mask=is_pad
            )
            record.stages[f"{name}.residual2"] = x = x + layer.dropout2(y)
            x = record.norm(f"{name}.norm2", layer.norm2, x)
            y = record.ffn(f"{name}.ffn", layer.ffn, x)
            record.stages[f"{name}.residual3"] = x = x + layer.dropout3(y)
            x = record.norm(f"{name}.norm3", layer.norm3, x)
        logits = model.output(model.decoder_norm(x))  # (B, T, C) @ (C, V) -> (B, T, V)
        record.stages["decoder.logits"] = logits
        record.stages["decoder.probs"] = torch.softmax(logits, dim=-1)
        names = decoder_stage_names(len(model.decoder_layers))
        return tuple(record.stages[n] for n in names)


# ---- 参照：真模型上的前向钩子 -------------------------------------------------------------------


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


# ---- 导出 ---------------------------------------------------------------------------------------


@torch.no_grad()
def export_inspector(
    translator: Translator, directory: str | Path, opset_version: int = 17
) -> dict[str, Path]:
    """把 :class:`EncoderInspection`、:class:`DecoderInspection` 导出成 ONNX，另写 ``inspector.json``。

    参数:
        translator: :class:`~tinyformer.translation.translator.Translator`，例如
            ``tinyformer.translation.pretrained.load_translator(600)``。
        directory: 输出目录（不存在时创建）。
        opset_version: ONNX 算子集版本（默认 17）。

    返回:
        ``{"inspect_encoder.onnx": 路径, "inspect_decoder.onnx": 路径, "inspector.json": 路径}``。
        每个文件原子地写。``inspector.json`` 里有词表、特殊词元、模型尺寸、两张图的输出名和
        :mod:`tinyformer.translation.export` 的拼句规则（同一份 ``translator.json`` 的内容）。
    """
    from .export import _export, example_inputs  # 与网页翻译器同一个导出调用（追踪导出器）

    check_instance("translator", translator, Translator)
    check_positive_int("opset_version", opset_version)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    model = translator.model.eval()
    _check_post_ln(model)
    # 可变长的维只有批量 B、长度 S、T：示例的 S、T 取与固定维（H、D、C、d_ff、V）都不同的数，
    # 于是输出里大小是 S 或 T 的维就是它们（H 与 D 可以相等，例如 C=16、4 个头）
    c = model.config
    fixed = {c.num_heads, c.d_model // c.num_heads, c.d_model, c.d_ff, c.tgt_vocab_size}
    S, T = [n for n in range(2, len(fixed) + 4) if n not in fixed][:2]
    src, tgt = example_inputs(translator, S, T)  # (1, S), (1, T)
    memory = model.encode(src)
    encoder_names = encoder_stage_names(len(model.encoder_layers))
    decoder_names = decoder_stage_names(len(model.decoder_layers))

    # 每个输出的第 0 维是批量 B（位置编码表是 P = 1），其余大小为 S、T 的维可变长，别的维固定（None）
    lengths = {S: "S", T: "T"}

    def axes(graph, args, names):
        outputs = graph(*args)
        return {
            n: ("P" if n.endswith("positional") else "B", *(lengths.get(d) for d in o.shape[1:]))
            for n, o in zip(names, outputs, strict=True)
        }

    paths = {name: directory / name for name in FILES}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # 常量折叠等的提示
        _export(
            EncoderInspection(model),
            (src,),
            paths["inspect_encoder.onnx"],
            {"src": ("B", "S")},
            axes(EncoderInspection(model), (src,), encoder_names),
            opset_version,
        )
        _export(
            DecoderInspection(model),
            (tgt, memory, src),
            paths["inspect_decoder.onnx"],
            {"tgt": ("B", "T"), "memory": ("B", "S"), "src": ("B", "S")},
            axes(DecoderInspection(model), (tgt, memory, src), decoder_names),
            opset_version,
        )
    # 词表、特殊词元与拼句规则不在这里重复：网页从网页翻译器的 translator.json 读（export.export_translator）
    settings = {
        "format": FORMAT,
        "d_model": c.d_model,
        "num_heads": c.num_heads,
        "d_ff": c.d_ff,
        "num_encoder_layers": c.num_encoder_layers,
        "num_decoder_layers": c.num_decoder_layers,
        "encoder_outputs": encoder_names,
        "decoder_outputs": decoder_names,
    }
    text = json.dumps(settings, ensure_ascii=False, indent=1, sort_keys=True) + "\n"
    with atomic_write(paths["inspector.json"]) as file:
        file.write(text.encode("utf-8"))
    return paths
