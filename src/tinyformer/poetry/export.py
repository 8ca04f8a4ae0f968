r"""把写诗模型存成网页用的半精度权重，让网页在读者的浏览器里写诗（“只有解码器”一章的网页）。

写两个文件：

- ``poet.safetensors``：模型的权重存成 float16（文件小一半），``GPTConfig`` 的各项写在 safetensors 头的
  元数据里（:func:`~tinyformer.weights.save_weights`）。输出层与词嵌入共用的矩阵只存一份。网页用本书自己的
  JavaScript 前向（``_static_ch08/live_translator/transformer.js`` 的 ``gptLogits``）计算：每步把整段前缀
  送入，取最后一个位置的 logits（与 :func:`~tinyformer.poetry.sampling.write` 的 ``use_cache=False`` 相同）。
- ``poet.json``：字表 ``itos``、特殊词元的编号、``max_len``、分句的标点 ``clause_ends``（藏头诗按它数句）、
  永不采样的词元 ``never_sampled``，以及每步显示几个候选 ``show``——浏览器照
  :func:`~tinyformer.poetry.sampling.write` 的规则采样，规则里用到的数都从这里读。
- ``meter.json``：格律约束解码（:class:`~tinyformer.poetry.sampling.MeterMask`）要的平水韵，只含字表里的字：
  ``tones`` 是一个与字表一样长的字符串，第 i 个字符是编号 i 的平仄（``0`` 查不到或不是汉字，``1`` 平，
  ``2`` 仄，``3`` 两读），``groups`` 是 平声韵部 → 这一部在字表里的字，``forms`` 是 体裁 → (句数, 每句字数)。
  读者选了体裁才下载它（约 14 KB）。

采样循环不在这里：网页上的解码与采样只有一份（``_static_ch08/live_translator/live_translator.js`` 的
``greedyDecode``、``beamSearch``、``sampleDecode``，与模型无关）。
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import torch

from .._checks import check_instance, check_positive_int
from ..atomic import atomic_write
from ..gpt import GPT
from ..weights import save_weights
from .corpus import Vocab
from .evaluation import FORMS, PING, ZE, is_han, rhyme_groups, tones
from .sampling import CLAUSE_ENDS

__all__ = ["export_poet"]

FORMAT = "tinyformer-page-poet-1"
FILES = ("poet.safetensors", "poet.json", "meter.json")
PAGE_ACTIVATIONS = ("relu", "gelu_tanh")  # 与 _static_ch08/live_translator/transformer.js 的相同


@torch.no_grad()
def export_poet(model: GPT, vocab: Vocab, directory: str | Path, show: int = 5) -> dict[str, Path]:
    """把写诗模型写成 ``poet.safetensors``（float16）、``poet.json`` 与 ``meter.json``，返回 ``{文件名: 路径}``。

    参数:
        model, vocab: 例如 ``tinyformer.poetry.pretrained.load_model()``。
        directory: 输出目录（不存在时创建）。
        show: 网页每步列出几个候选（同 :func:`~tinyformer.poetry.sampling.write` 的 ``show``）。

    两个文件各自原子地写；同一个模型写出的字节相同。
    """
    check_instance("model", model, GPT)
    check_instance("vocab", vocab, Vocab)
    check_positive_int("show", show)
    if model.config.vocab_size != len(vocab):
        raise ValueError(
            f"model.config.vocab_size={model.config.vocab_size} but vocab has {len(vocab)} entries"
        )
    if model.config.qk_norm or model.config.activation not in PAGE_ACTIVATIONS:
        raise ValueError(  # 网页的前向（transformer.js 的 checkConfig）只有 GPT-2 式的块
            "the page's forward pass has no QK-norm and knows only the activations "
            f"{', '.join(map(repr, PAGE_ACTIVATIONS))}, got qk_norm={model.config.qk_norm}, "
            f"activation={model.config.activation!r}"
        )
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    paths = {name: directory / name for name in FILES}
    config = dataclasses.asdict(model.config)
    save_weights(
        paths["poet.safetensors"], model, {"format": FORMAT, "config": config}, torch.float16
    )
    settings = {
        "format": FORMAT,
        "itos": list(vocab.itos),
        "pad_id": vocab.pad_id,
        "unk_id": vocab.unk_id,
        "bos_id": vocab.bos_id,
        "eos_id": vocab.eos_id,
        "max_len": model.config.max_len,
        "clause_ends": [vocab.stoi[ch] for ch in CLAUSE_ENDS if ch in vocab.stoi],
        # 与 sampling.write 相同：永不采 <pad>、<bos>、<unk>
        "never_sampled": [vocab.pad_id, vocab.bos_id, vocab.unk_id],
        "show": show,
    }
    _write_json(paths["poet.json"], settings)
    groups: dict[str, str] = {}
    for ch in vocab.itos:
        for name in rhyme_groups(ch) if is_han(ch) else ():
            groups[name] = groups.get(name, "") + ch
    meter = {
        "format": FORMAT,
        "tones": "".join(
            str((PING in tones(ch)) + 2 * (ZE in tones(ch))) if is_han(ch) else "0"
            for ch in vocab.itos
        ),
        "groups": dict(sorted(groups.items())),
        "forms": FORMS,
    }
    _write_json(paths["meter.json"], meter)
    return paths


def _write_json(path: Path, record: dict) -> None:
    text = json.dumps(record, ensure_ascii=False, separators=(",", ":"), sort_keys=True) + "\n"
    with atomic_write(path) as file:
        file.write(text.encode("utf-8"))
