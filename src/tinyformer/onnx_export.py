"""把一个模块导出成 ONNX 图（翻译器、检查器与写诗模型共用的一次 ``torch.onnx.export`` 调用）。

它属于模型核心，所以两个应用（``tinyformer.translation``、``tinyformer.poetry``）都可以导入它而不
互相依赖（``pyproject.toml`` 的 import-linter 契约）。本模块不导入 ``onnx``：``torch.onnx.export``
在内部才导入它，所以 ``import tinyformer`` 不需要 onnx。
"""

from __future__ import annotations

import warnings
from pathlib import Path

import torch
from torch import nn

from .atomic import atomic_write

__all__ = ["export_onnx"]


def export_onnx(
    module: nn.Module,
    args: tuple,
    path: Path,
    inputs: dict,
    outputs: dict,
    opset_version: int,
    fold_constants: bool = True,
) -> None:
    """``torch.onnx.export`` 一个模块；``inputs``/``outputs`` 是 名字 → 可变长的维（B、S、T）。

    用 TorchScript 追踪的导出器（``dynamo=False``）：它用示例输入把前向 *跑一遍*，记下执行到的
    张量运算。本包的参数检查（如 ``check_indices`` 的 ``if outside.any():``）和注意力里
    "有没有整行被遮住"的分支都依赖张量的值：追踪器把它们当作示例输入下的常量（并为每处发出
    ``TracerWarning``），这对任何合法的输入都成立——编号都在词表内，每个查询至少能看到一个词元。
    PyTorch 2.9 起默认的 ``torch.export`` 导出器（``dynamo=True``）要求图不依赖张量的值，
    遇到这些检查直接报错，所以这里明确选用追踪导出器，并关掉这两类已知的警告。

    ``fold_constants=False`` 不做常量折叠：输出层与词嵌入共用一个矩阵（``tie_output``）时，折叠会把
    ``Wᵀ`` 算好另存一份，文件就多出一整张嵌入表（写诗模型多 2.7 MB）。

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
            do_constant_folding=fold_constants,
            dynamo=False,
        )
