r"""把训练好的翻译器交给别的程序运行（附录“把翻译器搬进浏览器”讲解）：导出成 ONNX，以及网页用的半精度权重。

浏览器里没有 Python，也没有 PyTorch。ONNX 是一种与框架无关的计算图格式：``torch.onnx.export``
把模型的前向计算记成一张图，任何 ONNX 运行时（Python 里的 ``onnxruntime``）都能执行它。
:func:`export_translator` 导出两张图和一份 JSON：``encoder.onnx``（:class:`EncoderGraph`，每句只算一次）、
``decoder.onnx``（:class:`DecoderStepGraph`）和 ``translator.json``（词表、特殊词元、解码长度上限，以及
:func:`~tinyformer.text.detokenize_en` 拼句用的大写词表和标点）。解码一步把 *整段前缀* 送入，不带键/值缓存：
本书的句子很短（英文最多 12 个词），每步重算整段前缀的代价很小，而一张输入输出固定的图比把每层的 K、V
缓存都当作输入和输出（2 × 层数 × 2 个张量、长度逐步增长）简单得多，调用它的循环也只有几行。最后一步的
输入正是 ``<bos>`` + 除 ``<eos>`` 外的全部译文，所以它输出的交叉注意力就是整句的注意力图，与
:meth:`~tinyformer.translation.translator.Translator.cross_attention` 相同。

导出需要 ``onnx``（``torch.onnx.export`` 在内部导入它），在 Python 里核对需要 ``onnxruntime``（都在
``requirements.txt`` 里）；本模块不导入它们，``import tinyformer.translation.export`` 不需要它们。

本书的网页不用 ONNX（onnxruntime-web 的运行时比模型还大）：:func:`export_for_page` 把权重存成半精度的
safetensors，网页用自己的 JavaScript 前向（``_static_ch08/live_translator/transformer.js``）计算。

解码循环不在这里：网页上的贪心解码与束搜索只有一份（``_static_ch08/live_translator/live_translator.js``
的 ``greedyDecode``、``beamSearch``），浏览器测试核对它们的译文与 :func:`~tinyformer.greedy_decode`、
:func:`~tinyformer.decoding.beam_search` 相同；本模块的单元测试在 PyTorch 贪心解码的每个前缀上核对
两张图的 logits 与注意力（最大者就是 PyTorch 选的词元）。
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from pathlib import Path

import torch
from torch import Tensor, nn

from .._checks import check_instance, check_positive_int
from ..atomic import atomic_write
from ..layers import recording_weights
from ..model import Transformer
from ..text import ATTACH_LEFT, SENTENCE_END, capitalization
from ..weights import save_weights
from .translator import Translator

__all__ = ["EncoderGraph", "DecoderStepGraph", "export_for_page", "export_translator"]

FORMAT = "tinyformer-onnx-translator-1"
FILES = ("encoder.onnx", "decoder.onnx", "translator.json")
PAGE_FORMAT = "tinyformer-page-transformer-1"


class EncoderGraph(nn.Module):
    """导出用的编码器：源句编号 src (B, S) → memory (B, S, C)，填充掩码在图里由 ``pad_id`` 算出。"""

    def __init__(self, model: Transformer):
        super().__init__()
        check_instance("model", model, Transformer)
        self.model = model

    def forward(self, src: Tensor) -> Tensor:
        return self.model.encode(src)  # (B, S) -> (B, S, C)


class DecoderStepGraph(nn.Module):
    """导出用的解码一步：整段前缀 tgt (B, T)（第一列是 ``<bos>``）、memory (B, S, C)、src (B, S)（只用来算
    填充掩码）→ 最后一个位置的 logits (B, V) 与最后一层的交叉注意力 (B, T, S)（各头平均，每行加起来是 1）。

    与 :func:`~tinyformer.greedy_decode` 的 ``use_cache=False`` 相同：前缀用因果掩码，memory 用源句的填充掩码。
    """

    def __init__(self, model: Transformer):
        super().__init__()
        check_instance("model", model, Transformer)
        self.model = model

    def forward(self, tgt: Tensor, memory: Tensor, src: Tensor) -> tuple[Tensor, Tensor]:
        last = self.model.decoder_layers[-1]
        is_pad = src == self.model.config.pad_id  # (B, S) 源句的填充掩码
        with recording_weights(last):  # tgt_mask 为 None：decode 自己建因果掩码
            logits = self.model.decode(tgt, memory, memory_key_padding_mask=is_pad)  # (B, T, V)
        weights = last.cross_attn_weights  # (B, H, T, S)
        return logits[:, -1], weights.mean(dim=1)  # (B, V), (B, H, T, S) -> (B, T, S)


def _export(
    module: nn.Module,
    args: tuple,
    path: Path,
    inputs: dict,
    outputs: dict,
    opset_version: int,
) -> None:
    """``torch.onnx.export`` 一个模块；``inputs``/``outputs`` 是 名字 → 可变长的维（B、S、T）。

    用 TorchScript 追踪的导出器（``dynamo=False``）：它用示例输入把前向 *跑一遍*，记下执行到的
    张量运算。本包的参数检查（如 ``check_indices`` 的 ``if outside.any():``）和注意力里
    "有没有整行被遮住"的分支都依赖张量的值：追踪器把它们当作示例输入下的常量（并为每处发出
    ``TracerWarning``），这对任何合法的输入都成立——编号都在词表内，每个查询至少能看到一个词元。
    PyTorch 2.9 起默认的 ``torch.export`` 导出器（``dynamo=True``）要求图不依赖张量的值，
    遇到这些检查直接报错，所以这里明确选用追踪导出器，并关掉这两类已知的警告。

    文件原子地写（:func:`~tinyformer.atomic.atomic_write`）：导出到一半被打断，``path`` 上原来的
    文件原封不动。
    """
    axes = {**inputs, **outputs}
    with warnings.catch_warnings(), atomic_write(path) as file:
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        warnings.simplefilter("ignore", DeprecationWarning)  # "legacy TorchScript-based export"
        torch.onnx.export(
            module,
            args,
            file,
            input_names=list(inputs),
            output_names=list(outputs),
            # None 的维是固定的（如头数），其余的维有名字，是可变长的
            dynamic_axes={
                name: {i: dim for i, dim in enumerate(dims) if dim is not None}
                for name, dims in axes.items()
            },
            opset_version=opset_version,
            dynamo=False,
        )


@torch.no_grad()
def export_translator(
    translator: Translator, directory: str | Path, opset_version: int = 17
) -> dict[str, Path]:
    """把翻译器导出成 ``encoder.onnx``、``decoder.onnx`` 和 ``translator.json``，返回 ``{文件名: 路径}``。

    ``directory`` 不存在时创建；``opset_version`` 默认 17（onnxruntime-web 与 onnxruntime 都支持）。
    三个文件各自原子地写：导出被打断时，已经存在的文件要么是旧的、要么是完整的新的，不会是半个。
    """
    check_instance("translator", translator, Translator)
    check_positive_int("opset_version", opset_version)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    model = translator.model.eval()

    # 示例输入只决定图的结构，只用每张词表都有的特殊词元；B、S、T 标成可变长，可以送任意长度的句子
    src = torch.full((1, 5), translator.src_vocab.unk_id)  # (1, S)
    tgt = torch.tensor([[translator.tgt_vocab.bos_id, translator.tgt_vocab.unk_id]])  # (1, T)
    memory = model.encode(src)  # (1, S, C)
    paths = {name: directory / name for name in FILES}
    _export(
        EncoderGraph(model),
        (src,),
        paths["encoder.onnx"],
        {"src": ("B", "S")},
        {"memory": ("B", "S")},
        opset_version,
    )
    _export(
        DecoderStepGraph(model),
        (tgt, memory, src),
        paths["decoder.onnx"],
        {"tgt": ("B", "T"), "memory": ("B", "S"), "src": ("B", "S")},
        {"logits": ("B",), "cross_attention": ("B", "T", "S")},
        opset_version,
    )
    with atomic_write(paths["translator.json"]) as file:
        file.write(settings_json(translator))
    return paths


def settings_json(translator: Translator) -> bytes:
    """``translator.json`` 的内容：网页翻译要的词表、特殊词元、长度上限与拼句规则（UTF-8 字节）。"""
    model, src_vocab, tgt_vocab = translator.model, translator.src_vocab, translator.tgt_vocab
    settings = {
        "format": FORMAT,
        "src_itos": list(src_vocab.itos),
        "tgt_itos": list(tgt_vocab.itos),
        "pad_id": model.config.pad_id,
        "bos_id": tgt_vocab.bos_id,
        "eos_id": tgt_vocab.eos_id,
        "max_len": 32,  # 与 Translator.translate 的默认值相同
        "src_max_len": model.config.max_len,  # 源句最多几个词：位置编码表的行数
        "num_decoder_layers": len(model.decoder_layers),
        "capitalized": dict(sorted(capitalization(translator.proper_nouns).items())),
        "attach_left": sorted(ATTACH_LEFT),
        "sentence_end": sorted(SENTENCE_END),
    }
    text = json.dumps(settings, ensure_ascii=False, indent=1, sort_keys=True) + "\n"
    return text.encode("utf-8")


PAGE_FILES = ("translator.safetensors", "translator.json")


@torch.no_grad()
def export_for_page(translator: Translator, directory: str | Path) -> dict[str, Path]:
    """网页用的模型：``translator.safetensors``（权重存成 float16）与 ``translator.json``，返回 ``{文件名: 路径}``。

    网页翻译器与各章的检查器都读这一份，在浏览器里用本书自己的 JavaScript 前向
    （``_static_ch08/live_translator/transformer.js``）计算。模型的配置（``TransformerConfig`` 的各项）
    写在 safetensors 头的元数据里（:func:`~tinyformer.weights.save_weights`），网页只读这一个文件就能建模型。
    半精度让文件小一半；网页的译文与把权重舍入到 float16 的包（``p.data = p.data.half().float()``）
    逐词相同（tests/book/test_page_forward.py 核对）。每个文件原子地写。
    """
    check_instance("translator", translator, Translator)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = {name: directory / name for name in PAGE_FILES}
    config = dataclasses.asdict(translator.model.config)
    save_weights(
        paths["translator.safetensors"],
        translator.model,
        {"format": PAGE_FORMAT, "config": config},
        dtype=torch.float16,
    )
    with atomic_write(paths["translator.json"]) as file:
        file.write(settings_json(translator))
    return paths
