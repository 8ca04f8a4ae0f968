"""写诗模型的检查点：safetensors 权重 + JSON 元数据（配置、字表、指标），经 :mod:`tinyformer.weights`。

元数据里有建模型所需的一切：``config``（:class:`~tinyformer.GPTConfig` 的字段）和 ``itos``（字表，
编号 → 字）；另有训练时记下的 ``metrics`` 与 ``log``（画损失曲线用）。读文件不执行任何代码（没有 pickle）。
读取与翻译器的检查点走同一条路（:func:`~tinyformer.weights.build_checked` 先限制配置里的
max_len，:func:`~tinyformer.weights.load_weights` 在读数据之前按头核对张量，再核对 SHA-256 和 nan/inf），只是元数据不同。
"""

from __future__ import annotations

import dataclasses
import os

from ..gpt import GPT, GPTConfig
from ..weights import (
    WeightsError,
    build_checked,
    check_float32,
    load_weights,
    read_metadata,
    save_weights,
)
from .corpus import Vocab

__all__ = ["load_checkpoint", "save_checkpoint"]


def save_checkpoint(path: str | os.PathLike, model: GPT, vocab: Vocab, **extra) -> None:
    """原子地写出 ``model`` 的权重，元数据 = 配置 + 字表 + ``extra``（能写成 JSON 的值）。

    :func:`load_checkpoint` 按配置建的是 float32 模型，所以 ``model`` 的浮点权重必须是 float32
    （``.half()`` 过的模型先 ``.float()``）；网页用的半精度文件由 :mod:`~tinyformer.poetry.export` 另写。
    """
    check_float32("model", model)
    metadata = {"config": dataclasses.asdict(model.config), "itos": vocab.itos, **extra}
    save_weights(path, model, metadata)


def load_checkpoint(path: str | os.PathLike) -> tuple[GPT, Vocab, dict]:
    """读回 (模型（eval 模式）, 字表, 元数据)。文件有问题时抛 :class:`~tinyformer.weights.WeightsError`。"""
    metadata = read_metadata(path)
    for key in ("config", "itos"):
        if key not in metadata:
            raise WeightsError(
                path, "metadata", f"not a poetry checkpoint (no {key!r})", "missing_key", key=key
            )
    try:
        config = GPTConfig(**metadata["config"])
    except (TypeError, ValueError) as error:
        raise WeightsError(
            path, "metadata", f"not a poetry checkpoint ({error})", "config"
        ) from None
    try:
        vocab = Vocab.from_itos(metadata["itos"])  # 互不相同的单个字符
    except (TypeError, ValueError) as error:
        raise WeightsError(
            path, "metadata", f"not a poetry checkpoint ({error})", "vocab"
        ) from None
    if config.vocab_size != len(vocab):
        raise WeightsError(
            path, "metadata", f"vocab_size={config.vocab_size} but itos has {len(vocab)} entries",
            "vocab_size", config=config.vocab_size, itos=len(vocab),
        )  # fmt: skip
    model = build_checked(path, lambda: _build(path, config), config.max_len, config.d_model)
    load_weights(path, model)
    model.eval()
    return model, vocab, metadata


def _build(path: str | os.PathLike, config: GPTConfig) -> GPT:
    """按配置建 GPT；配置大得离谱（``check_memory``）时是元数据的问题。"""
    try:
        return GPT(config)
    except (TypeError, ValueError) as error:
        raise WeightsError(
            path, "metadata", f"not a poetry checkpoint ({error})", "config"
        ) from None
