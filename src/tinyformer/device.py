"""选择计算设备（前言"如何运行本书"讲解）：有 GPU 用 GPU，否则用 CPU。

本书的每个数字都在 CPU 上生成并由 CI 复核；GPU 只是让读者自己训练时更快。
"""

from __future__ import annotations

import torch


def default_device() -> torch.device:
    """返回可用的最快设备：CUDA 优先，其次 Apple 的 MPS，否则 CPU。

    例子::

        >>> default_device().type in {"cuda", "mps", "cpu"}
        True
    """
    if torch.cuda.is_available():
        return torch.device("cuda")
    mps = getattr(torch.backends, "mps", None)  # 旧版 torch 或非 macOS 构建可能没有
    if mps is not None and mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")
