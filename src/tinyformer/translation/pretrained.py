"""随包发布的中译英模型（“完整模型”一章讲解）。

训练的结果随 CPU 而变：不同的处理器（AVX-512、AVX2 或不带向量指令）、不同的线程数，浮点数的
求和顺序不同，几百步之后权重就不一样了。所以“完整模型”一章现场训练一次、只核对"损失降到了多少以下"，
后面的分析（译错的句子、早期检查点、束搜索、交叉注意力）都读这里的权重：它们是用文档里的命令
训练一次得到的，推理在任何 CPU 上都给出同样的译文。

权重由 ``python -m tools.ship_weights`` 生成，它运行::

    python -m tinyformer.translation train --steps 100 --seed 0 --out src/tinyformer/translation/weights/zh_en_step100.safetensors
    python -m tinyformer.translation train --steps 150 --seed 0 --out src/tinyformer/translation/weights/zh_en_step150.safetensors
    python -m tinyformer.translation train --steps 600 --seed 0 --out src/tinyformer/translation/weights/zh_en_step600.safetensors

并把命令、torch 版本、日期、CPU 和各自的指标写进 ``weights/zh_en.json``（:func:`provenance`）。
三个文件来自三次各自独立的训练（``--steps 100``、``--steps 150``、``--steps 600``），不是一次训练途中存下的。
学习率只取决于当前的步数（预热 400 步，与总步数无关），数据顺序和 dropout 只取决于种子，所以在同一台机器、
同样的线程数上，短的那次训练与长的那次的前 N 步逐位相同（``tests/unit/test_training.py`` 在小模型上核对）；
换一种 CPU 就不再逐位相同。
"""

from __future__ import annotations

import json
from importlib.resources import files
from pathlib import Path

from .checkpoint import load_checkpoint
from .translator import Translator

__all__ = ["STEPS", "checkpoint_path", "load_translator", "provenance"]

STEPS = (100, 150, 600)  # 随包发布的检查点：训练第 100、150、600 步
_WEIGHTS = files("tinyformer.translation") / "weights"


def checkpoint_path(step: int = 600) -> Path:
    """第 ``step`` 步的检查点文件的路径（``step`` 取 :data:`STEPS` 之一）。"""
    if isinstance(step, bool) or not isinstance(step, int) or step not in STEPS:
        raise ValueError(f"step must be one of {STEPS}, got step={step!r}")
    return Path(str(_WEIGHTS / f"zh_en_step{step}.safetensors"))


def load_translator(step: int = 600) -> Translator:
    """读入随包发布的第 ``step`` 步的翻译器（safetensors，不执行文件里的任何代码），处于 eval 模式。

    例子::

        >>> from tinyformer.translation.pretrained import load_translator
        >>> load_translator().translate("我明天在学校看小说。")
        'I will read novels at school tomorrow.'
    """
    return load_checkpoint(checkpoint_path(step))


def provenance() -> dict:
    """这些权重从哪里来：命令、torch 版本、日期、CPU，以及每个检查点训练结束时打印的指标。"""
    return json.loads((_WEIGHTS / "zh_en.json").read_text(encoding="utf-8"))
