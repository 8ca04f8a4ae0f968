r"""AdamW 从零写出来：包里的训练循环都用它（“Transformer 总览”一章的 seq2seq、“完整模型”一章的论文 Adam、“只有解码器”一章起 GPT 的 AdamW）。

每个参数 :math:`\theta` 带两个与它同形状的滑动平均：梯度的一阶矩 :math:`m` 和二阶矩 :math:`v`。
第 t 步（从 1 数起），:math:`g` 是梯度，:math:`\eta` 是学习率，:math:`\lambda` 是权重衰减：

.. math::

    \theta &\leftarrow \theta\,(1 - \eta\lambda) \\
    m &\leftarrow \beta_1 m + (1-\beta_1)\, g,\qquad v \leftarrow \beta_2 v + (1-\beta_2)\, g^2 \\
    \theta &\leftarrow \theta - \frac{\eta}{1-\beta_1^t}\cdot
        \frac{m}{\sqrt{v}\,/\sqrt{1-\beta_2^t} + \epsilon}

两个分母 :math:`1-\beta^t` 是偏差修正（m、v 从 0 起步，前几步偏小）。权重衰减直接乘在参数上、
不经过 m 和 v，这是 AdamW 与“Adam + L2”的区别；:math:`\lambda = 0` 时它就是 Adam。

与 ``torch.optim.AdamW``（CPU 上的默认实现）逐位相同（``tests/unit/test_optim.py``）。包里用这一份，
是为了让读者看到每一行公式（CS336 也要学生自己写一个）；另有一个附带的好处：torch 2.13 里 **构造**
一个 ``torch.optim`` 的优化器就会导入 PyTorch 的编译器 ``torch._dynamo``，常驻内存多出几十 MB。
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import torch
from torch import Tensor

from ._checks import check_nonnegative_float


class AdamW:
    """``torch.optim.AdamW`` 的同名同义版本（只有 ``lr``、``betas``、``eps``、``weight_decay``）。

    ``params`` 是参数的可迭代对象，或参数组的列表（``{"params": [...], "weight_decay": 0.0}`` 这样的
    字典，未给的键取构造函数的值）。每组的 ``lr`` 可以在两步之间改（学习率调度就是这样做的）。

    例子::

        >>> w = torch.nn.Parameter(torch.tensor([1.0, -2.0]))
        >>> optimizer = AdamW([w], lr=0.1, weight_decay=0.0)
        >>> (w**2).sum().backward()
        >>> optimizer.step()  # 第一步：m/√v = ±1，每个参数都朝梯度反方向走 lr
        >>> w
        Parameter containing:
        tensor([ 0.9000, -1.9000], requires_grad=True)
    """

    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
    ) -> None:
        if isinstance(params, (Tensor, torch.nn.Module)):
            raise TypeError(
                f"params must be an iterable of tensors or of parameter groups, such as "
                f"model.parameters(); got a {type(params).__name__}"
            )
        params = list(params)
        groups = params if params and isinstance(params[0], dict) else [{"params": params}]
        defaults = {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay}
        self.param_groups = [{**defaults, **g, "params": list(g["params"])} for g in groups]
        seen: set[int] = set()  # 同一个参数出现两次会每步更新两次
        for group in self.param_groups:
            for name in ("lr", "eps", "weight_decay"):
                check_nonnegative_float(name, group[name])
            pair = group["betas"]
            if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
                raise ValueError(f"betas must be a pair of numbers in [0, 1), got {pair!r}")
            for i, beta in enumerate(pair):
                check_nonnegative_float(f"betas[{i}]", beta)
                if beta >= 1:
                    raise ValueError(f"betas must be a pair of numbers in [0, 1), got {pair!r}")
            for p in group["params"]:
                if not isinstance(p, Tensor):
                    raise TypeError(
                        f"AdamW optimizes tensors, got a {type(p).__name__} among params"
                    )
                if (
                    not p.is_leaf
                ):  # 与 torch.optim 同一句话：非叶子张量的 .grad 永远是 None，永不更新
                    raise ValueError("can't optimize a non-leaf Tensor")
                if id(p) in seen:
                    raise ValueError(
                        "a parameter appears twice in params; it would be updated twice"
                    )
                seen.add(id(p))
        if not seen:
            raise ValueError("AdamW got an empty parameter list")
        self.state: dict[Tensor, dict] = {}  # 参数 → {"step": t, "m": …, "v": …}

    def zero_grad(self, set_to_none: bool = True) -> None:
        """把梯度清掉：默认设为 ``None``（与 torch 相同）；``set_to_none=False`` 时原地置 0。"""
        for group in self.param_groups:
            for p in group["params"]:
                if set_to_none:
                    p.grad = None
                elif p.grad is not None:
                    p.grad.zero_()

    @torch.no_grad()
    def step(self) -> None:
        """按上面的公式更新一步；没有梯度的参数跳过（它的 t 也不加）。"""
        for group in self.param_groups:
            lr, (beta1, beta2), eps = group["lr"], group["betas"], group["eps"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state.setdefault(
                    p, {"step": 0, "m": torch.zeros_like(p), "v": torch.zeros_like(p)}
                )
                state["step"] += 1
                t, m, v, g = state["step"], state["m"], state["v"], p.grad
                p.mul_(1 - lr * group["weight_decay"])  # θ ← θ(1 − ηλ)
                m.lerp_(g, 1 - beta1)  # m ← β1·m + (1 − β1)·g
                v.mul_(beta2).addcmul_(g, g, value=1 - beta2)  # v ← β2·v + (1 − β2)·g²
                denom = (v.sqrt() / math.sqrt(1 - beta2**t)).add_(eps)  # √v̂ + ε
                p.addcdiv_(m, denom, value=-lr / (1 - beta1**t))  # θ ← θ − η·m̂ / (√v̂ + ε)
