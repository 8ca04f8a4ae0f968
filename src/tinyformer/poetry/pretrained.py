"""随包发布的写诗模型（“只有解码器”一章讲解）。

训练的结果随 CPU、线程数而变（浮点数的求和顺序不同），所以章节现场只做一次短的训练，
具体的分析读这里的权重。它们由 ``python -m tools.ship_poetry_weights`` 用一条记下的命令训练得到，
命令、torch 版本、日期、CPU、训练秒数和指标都在 ``weights/poetry.json``（:func:`provenance`）。
"""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path

from ..gpt import GPT
from .checkpoint import load_checkpoint
from .corpus import Vocab

__all__ = ["load_model", "provenance", "weights_path"]

_WEIGHTS = files("tinyformer.poetry") / "weights"


def weights_path() -> Path:
    """随包发布的权重文件的路径。"""
    return Path(str(_WEIGHTS / "poetry.safetensors"))


def load_model() -> tuple[GPT, Vocab]:
    """读入随包发布的 (模型（eval 模式）, 字表)。"""
    model, vocab, _ = load_checkpoint(weights_path())
    return model, vocab


def provenance() -> dict:
    """这些权重从哪里来：命令、torch 版本、日期、CPU、训练秒数和训练结束时的指标。"""
    return json.loads((_WEIGHTS / "poetry.json").read_text(encoding="utf-8"))
