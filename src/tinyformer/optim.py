r"""AdamW 和 Muon 从零写出来：包里的训练循环都用 AdamW（“Transformer 总览”一章的 seq2seq、“完整模型”一章的论文 Adam、“只有解码器”一章起 GPT 的 AdamW）；
写诗模型的配方可以让隐藏层的矩阵改用 :class:`Muon`（Jordan 等人 2024，modded-nanogpt 的速度纪录用它）。

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

**Muon** 只管二维的权重矩阵 :math:`W`（m×n）。动量 :math:`\mu`，梯度 :math:`G`：

.. math::

    B &\leftarrow \mu B + (1-\mu)\, G,\qquad U \leftarrow (1-\mu)\, G + \mu B
        \quad\text{（Nesterov）} \\
    O &\leftarrow \mathrm{NS}_5(U) \approx \text{把 } U = P\Sigma Q^\top \text{ 的奇异值都换成约 1：} P Q^\top \\
    W &\leftarrow W\,(1 - \eta\lambda) - \eta\,\sqrt{\max(1, m/n)}\; O

:math:`\mathrm{NS}_5` 是五步 Newton–Schulz 迭代：:math:`X \leftarrow U/\lVert U\rVert_F`（奇异值都 ≤ 1），
每步 :math:`A = XX^\top,\; X \leftarrow aX + (bA + cA^2)X`，系数 (a, b, c) = (3.4445, −4.7750, 2.0315)
让小的奇异值尽快长到 1 附近（不小于 ‖U‖_F 的 0.2 % 的，五步之后都在 0.68–1.2 之间，不必恰好是 1）。于是每一步在每个方向上走得一样远，
梯度里被几个大方向压住的小方向也得到更新。嵌入、输出层、偏置和归一化的增益仍用 AdamW。
与 ``torch.optim.Muon`` 的差别只在迭代用 float32（torch 用 bfloat16）：``tests/unit/test_optim.py`` 在容差内比较两者。
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import torch
from torch import Tensor

from ._checks import check_fraction, check_nonnegative_float


class _Optimizer:
    """两个优化器共用的部分：参数组（与 ``torch.optim`` 的同一种写法）、参数的核对、``zero_grad``。"""

    def __init__(self, params: Iterable[Tensor] | Iterable[dict], defaults: dict) -> None:
        name = type(self).__name__
        if isinstance(params, (Tensor, torch.nn.Module)):
            raise TypeError(
                f"params must be an iterable of tensors or of parameter groups, such as "
                f"model.parameters(); got a {type(params).__name__}"
            )
        params = list(params)
        groups = params if params and isinstance(params[0], dict) else [{"params": params}]
        self.param_groups = [{**defaults, **g, "params": list(g["params"])} for g in groups]
        seen: set[int] = set()  # 同一个参数出现两次会每步更新两次
        for group in self.param_groups:
            for key in ("lr", "eps", "weight_decay"):
                check_nonnegative_float(key, group[key])
            self._check_group(group)
            for p in group["params"]:
                if not isinstance(p, Tensor):
                    raise TypeError(
                        f"{name} optimizes tensors, got a {type(p).__name__} among params"
                    )
                if (
                    not p.is_leaf
                ):  # 与 torch.optim 同一句话：非叶子张量的 .grad 永远是 None，永不更新
                    raise ValueError("can't optimize a non-leaf Tensor")
                if id(p) in seen:
                    raise ValueError(
                        "a parameter appears twice in params; it would be updated twice"
                    )
                self._check_param(p)
                seen.add(id(p))
        if not seen:
            raise ValueError(f"{name} got an empty parameter list")
        self.state: dict[Tensor, dict] = {}

    def _check_group(self, group: dict) -> None:
        pass

    def _check_param(self, p: Tensor) -> None:
        pass

    def zero_grad(self, set_to_none: bool = True) -> None:
        """把梯度清掉：默认设为 ``None``（与 torch 相同）；``set_to_none=False`` 时原地置 0。"""
        for group in self.param_groups:
            for p in group["params"]:
                if set_to_none:
                    p.grad = None
                elif p.grad is not None:
                    p.grad.zero_()


class AdamW(_Optimizer):
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
        super().__init__(
            params, {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay}
        )
        # self.state：参数 → {"step": t, "m": …, "v": …}

    def _check_group(self, group: dict) -> None:
        pair = group["betas"]
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2):
            raise ValueError(f"betas must be a pair of numbers in [0, 1), got {pair!r}")
        for i, beta in enumerate(pair):
            check_fraction(f"betas[{i}]", beta)

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


NS_COEFFICIENTS = (
    3.4445,
    -4.7750,
    2.0315,
)  # Newton–Schulz 五次迭代的 (a, b, c)，与 torch.optim.Muon 相同


def newton_schulz(G: Tensor, steps: int = 5, eps: float = 1e-7) -> Tensor:
    """:math:`\\mathrm{NS}_5(G)`：把矩阵 ``G`` 的奇异值都推到 1 附近（σ ≥ 0.002·‖G‖_F 的约 0.68–1.2），奇异向量不变。

    例子（奇异值 3 和 0.01 的对角矩阵：五步之后两个都在 1 附近，大的那个反而小些）::

        >>> newton_schulz(torch.diag(torch.tensor([3.0, 0.01]))).diagonal().round(decimals=2)
        tensor([0.7000, 1.1600])
    """
    a, b, c = NS_COEFFICIENTS
    tall = G.size(0) > G.size(1)
    X = G.T if tall else G  # (m, n)，m ≤ n：A = XXᵀ 是两个维度里较小的那个的方阵
    X = X / X.norm().clamp(min=eps)  # ‖X‖_F = 1 ≥ 最大的奇异值
    for _ in range(steps):
        A = X @ X.T  # (m, n) @ (n, m) → (m, m)
        X = a * X + (b * A + c * A @ A) @ X  # (m, m) @ (m, n) → (m, n)：奇异值 σ → aσ + bσ³ + cσ⁵
    return X.T if tall else X


class Muon(_Optimizer):
    """``torch.optim.Muon`` 的同名同义版本（``lr``、``weight_decay``、``momentum``、``nesterov``、``eps``；
    学习率按 torch 的默认 ``adjust_lr_fn="original"`` 乘 :math:`\\sqrt{\\max(1, m/n)}`）。只收二维的参数。

    例子（梯度的两个方向差 100 倍，一步之后两个方向走得差不多远，都约 lr 的 (1−μ)·(1+μ) 量级）::

        >>> W = torch.nn.Parameter(torch.zeros(2, 2))
        >>> optimizer = Muon([W], lr=0.1, weight_decay=0.0)
        >>> (W * torch.diag(torch.tensor([100.0, 1.0]))).sum().backward()
        >>> optimizer.step()
        >>> W.detach().diagonal().round(decimals=3)
        tensor([-0.0700, -0.0700])
    """

    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict],
        lr: float = 1e-3,
        weight_decay: float = 0.1,
        momentum: float = 0.95,
        nesterov: bool = True,
        eps: float = 1e-7,
    ) -> None:
        defaults = {
            "lr": lr, "weight_decay": weight_decay, "momentum": momentum,
            "nesterov": nesterov, "eps": eps,
        }  # fmt: skip
        super().__init__(params, defaults)
        # self.state：参数 → {"B": 动量}

    def _check_group(self, group: dict) -> None:
        check_fraction("momentum", group["momentum"])

    def _check_param(self, p: Tensor) -> None:
        if p.dim() != 2:
            raise ValueError(
                f"Muon updates 2-D weight matrices, got a parameter of shape {tuple(p.shape)}; "
                "give embeddings, biases and norm gains to AdamW"
            )

    @torch.no_grad()
    def step(self) -> None:
        """按上面的公式更新一步；没有梯度的参数跳过。"""
        for group in self.param_groups:
            lr, mu = group["lr"], group["momentum"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad
                B = self.state.setdefault(p, {"B": torch.zeros_like(p)})["B"]
                B.lerp_(g, 1 - mu)  # B ← μB + (1 − μ)G
                U = g.lerp(B, mu) if group["nesterov"] else B  # U ← (1 − μ)G + μB
                O = newton_schulz(U, eps=group["eps"])  # noqa: E741
                m, n = p.shape
                p.mul_(1 - lr * group["weight_decay"])  # W ← W(1 − ηλ)
                p.add_(O, alpha=-lr * math.sqrt(max(1.0, m / n)))  # W ← W − η√max(1, m/n)·O
