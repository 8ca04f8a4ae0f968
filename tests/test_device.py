"""device.py：CUDA 优先，其次 MPS，否则 CPU。"""

import torch

from tinyformer import default_device


def test_returns_a_usable_device():
    device = default_device()
    assert isinstance(device, torch.device)
    assert torch.zeros(1, device=device).device.type == device.type


def test_preference_order(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert default_device().type == "cuda"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: True)
    assert default_device().type == "mps"
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert default_device().type == "cpu"
