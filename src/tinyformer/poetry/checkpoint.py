"""写诗模型的检查点：safetensors 权重 + JSON 元数据（配置、字表、指标），经 :mod:`tinyformer.weights`。

元数据里有建模型所需的一切：``config``（:class:`~tinyformer.GPTConfig` 的字段）和 ``itos``（字表，
编号 → 字）；另有训练时记下的 ``metrics`` 与 ``log``（画损失曲线用）。读文件不执行任何代码（没有 pickle）。
"""

from __future__ import annotations

import dataclasses
import os

from ..gpt import GPT, GPTConfig
from ..weights import WeightsError, load_weights, read_metadata, save_weights
from .corpus import Vocab

__all__ = ["load_checkpoint", "save_checkpoint"]


def save_checkpoint(path: str | os.PathLike, model: GPT, vocab: Vocab, **extra) -> None:
    """原子地写出 ``model`` 的权重，元数据 = 配置 + 字表 + ``extra``（能写成 JSON 的值）。"""
    metadata = {"config": dataclasses.asdict(model.config), "itos": vocab.itos, **extra}
    save_weights(path, model, metadata)


def load_checkpoint(path: str | os.PathLike) -> tuple[GPT, Vocab, dict]:
    """读回 (模型（eval 模式）, 字表, 元数据)。文件有问题时抛 :class:`~tinyformer.weights.WeightsError`。"""
    metadata = read_metadata(path)
    try:
        config = GPTConfig(**metadata["config"])
        vocab = Vocab(metadata["itos"])
    except (KeyError, TypeError, ValueError) as error:
        raise WeightsError(path, "metadata", f"not a poetry checkpoint ({error})") from None
    if config.vocab_size != len(vocab):
        raise WeightsError(
            path, "metadata", f"vocab_size={config.vocab_size} but itos has {len(vocab)} entries"
        )
    model = GPT(config)
    load_weights(path, model)
    model.eval()
    return model, vocab, metadata
