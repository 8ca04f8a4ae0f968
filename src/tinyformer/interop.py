"""把 torch 自带模块的权重拷进本包的模块（“注意力机制”“层归一化、残差与前馈网络”“编码器与解码器”三章用它证明"我们的实现与 torch 相同"）。

两边参数布局不同的地方：

- ``torch.nn.MultiheadAttention`` 把 W^Q、W^K、W^V 竖着拼成一个 ``in_proj_weight``，形状 (3C, C)，
  偏置拼成 ``in_proj_bias`` (3C,)；本包为了好读分成 ``q_proj``、``k_proj``、``v_proj`` 三个线性层。
  GPT 风格（minGPT、nanoGPT、GPT-2）的 ``c_attn = nn.Linear(C, 3C)`` 是同一种布局，输出投影叫
  ``c_proj``：:func:`copy_from_fused_qkv` 把它们拷进本包，:func:`copy_to_fused_qkv` 反过来。
- ``torch.nn.TransformerDecoderLayer`` 的交叉注意力叫 ``multihead_attn``，本包叫 ``cross_attn``；
  torch 层里的 ``linear1``/``linear2`` 在本包放在 ``ffn`` 里。
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ._checks import check_instance
from .attention import MultiHeadAttention
from .block import GPTBlock
from .layers import DecoderLayer, EncoderLayer
from .normalization import LayerNorm


def _copy_tensor(name: str, ours: Tensor | None, theirs: Tensor | None) -> None:
    if (ours is None) != (theirs is None):
        raise ValueError(
            f"{name}: one side has it and the other does not "
            f"(ours: {'present' if ours is not None else 'None'}, "
            f"torch: {'present' if theirs is not None else 'None'}); check bias=..."
        )
    if ours is None:
        return
    if ours.shape != theirs.shape:
        raise ValueError(
            f"{name}: shape mismatch, ours {tuple(ours.shape)} vs torch {tuple(theirs.shape)}"
        )
    ours.copy_(theirs)


def _copy_linear(name: str, ours: nn.Linear, theirs: nn.Linear) -> None:
    _copy_tensor(f"{name}.weight", ours.weight, theirs.weight)
    _copy_tensor(f"{name}.bias", ours.bias, theirs.bias)


def _same(name: str, ours, theirs) -> None:
    if ours != theirs:
        raise ValueError(f"{name} differs: ours has {name}={ours!r}, torch has {name}={theirs!r}")


def _copy_attention(ours: MultiHeadAttention, theirs: nn.MultiheadAttention, name="attention"):
    if not theirs.batch_first:
        raise ValueError(
            f"{name}: torch.nn.MultiheadAttention must have batch_first=True "
            "(this package is batch-first everywhere), got batch_first=False"
        )
    if not theirs._qkv_same_embed_dim or theirs.bias_k is not None or theirs.add_zero_attn:
        raise ValueError(
            f"{name}: only torch.nn.MultiheadAttention without kdim/vdim, add_bias_kv and "
            "add_zero_attn can be copied"
        )
    _same(f"{name}.d_model (embed_dim)", ours.d_model, theirs.embed_dim)
    _same(f"{name}.num_heads", ours.num_heads, theirs.num_heads)
    _split_qkv(name, ours, theirs.in_proj_weight, theirs.in_proj_bias)
    _copy_linear(f"{name}.out_proj", ours.out_proj, theirs.out_proj)


_PROJECTIONS = ("q_proj", "k_proj", "v_proj")


def _split_qkv(name: str, ours: MultiHeadAttention, weight: Tensor, bias: Tensor | None) -> None:
    """(3C, C) 的 [W^Q; W^K; W^V]（偏置 (3C,)）按行切成三块，拷进 ``q_proj``、``k_proj``、``v_proj``。"""
    if weight.shape[0] % 3:
        raise ValueError(
            f"{name}: the fused weight must have 3C rows, got shape {tuple(weight.shape)}"
        )
    weights = weight.chunk(3, dim=0)  # (3C, C) -> 3 个 (C, C)
    biases = (None,) * 3 if bias is None else bias.chunk(3)  # (3C,) -> 3 个 (C,)
    for proj, w, b in zip(_PROJECTIONS, weights, biases, strict=True):
        _copy_linear(f"{name}.{proj}", getattr(ours, proj), _Weights(w, b))


class _Weights:
    """像 ``nn.Linear`` 一样有 ``weight``、``bias`` 两个属性的一块权重（``_copy_linear`` 读它）。"""

    def __init__(self, weight: Tensor, bias: Tensor | None):
        self.weight, self.bias = weight, bias


def _check_fused(ours, c_attn, c_proj) -> None:
    check_instance("ours", ours, MultiHeadAttention)
    check_instance("c_attn", c_attn, nn.Linear)
    check_instance("c_proj", c_proj, nn.Linear)
    C = ours.d_model
    if tuple(c_attn.weight.shape) != (3 * C, C):
        raise ValueError(
            f"c_attn must be nn.Linear(C, 3C) with C = d_model = {C}, "
            f"got weight of shape {tuple(c_attn.weight.shape)}"
        )


def copy_from_fused_qkv(
    ours: MultiHeadAttention, c_attn: nn.Linear, c_proj: nn.Linear
) -> MultiHeadAttention:
    """把 GPT 风格的融合投影 ``c_attn``（C -> 3C，[W^Q; W^K; W^V]）和 ``c_proj`` 拷进 ``ours``。

    ``c_attn`` 的权重 (3C, C) 按行切成三块就是 ``q_proj``、``k_proj``、``v_proj`` 的权重，偏置同理；
    ``c_proj`` 就是 ``out_proj``。两边有没有偏置必须一致。

    返回:
        ``ours`` 本身。

    例子::

        >>> from torch import nn
        >>> c_attn, c_proj = nn.Linear(16, 48), nn.Linear(16, 16)
        >>> ours = copy_from_fused_qkv(MultiHeadAttention(16, 4), c_attn, c_proj)
        >>> torch.equal(ours.k_proj.weight, c_attn.weight[16:32])
        True
    """
    _check_fused(ours, c_attn, c_proj)
    with torch.no_grad():
        _split_qkv("c_attn", ours, c_attn.weight, c_attn.bias)
        _copy_linear("c_proj", ours.out_proj, c_proj)
    return ours


def copy_to_fused_qkv(
    ours: MultiHeadAttention, c_attn: nn.Linear, c_proj: nn.Linear
) -> tuple[nn.Linear, nn.Linear]:
    """:func:`copy_from_fused_qkv` 的反方向：把 ``ours`` 的三个投影竖着拼进 ``c_attn``，``out_proj`` 拷进 ``c_proj``。

    返回:
        ``(c_attn, c_proj)``。

    例子::

        >>> from torch import nn
        >>> ours = MultiHeadAttention(16, 4)
        >>> c_attn, c_proj = copy_to_fused_qkv(ours, nn.Linear(16, 48), nn.Linear(16, 16))
        >>> torch.equal(c_attn.bias[32:], ours.v_proj.bias)
        True
    """
    _check_fused(ours, c_attn, c_proj)
    projections = [getattr(ours, proj) for proj in _PROJECTIONS]
    with torch.no_grad():
        weight = torch.cat([p.weight for p in projections])  # 3 个 (C, C) -> (3C, C)
        has_bias = [p.bias is not None for p in projections]
        bias = torch.cat([p.bias for p in projections]) if all(has_bias) else None  # (3C,)
        _copy_linear("c_attn", c_attn, _Weights(weight, bias))
        _copy_linear("c_proj", c_proj, ours.out_proj)
    return c_attn, c_proj


def _copy_layer_norm(ours: LayerNorm, theirs: nn.LayerNorm, name="norm") -> None:
    _same(f"{name}.d_model (normalized_shape)", (ours.d_model,), tuple(theirs.normalized_shape))
    _same(f"{name}.eps", ours.eps, theirs.eps)
    if not theirs.elementwise_affine:
        raise ValueError(f"{name}: torch.nn.LayerNorm must have elementwise_affine=True")
    _copy_tensor(f"{name}.weight", ours.weight, theirs.weight)
    _copy_tensor(f"{name}.bias", ours.bias, theirs.bias)


def _torch_activation_name(activation) -> str:
    """torch 层里存的激活（函数或模块）对应本包的哪个名字。"""
    if activation is F.relu or isinstance(activation, nn.ReLU):
        return "relu"
    if activation is F.gelu:
        return "gelu"
    if isinstance(activation, nn.GELU):
        return "gelu" if activation.approximate == "none" else "gelu_tanh"
    raise ValueError(f"unsupported torch activation {activation!r}; use relu or gelu")


def _copy_layer(ours: EncoderLayer | DecoderLayer | GPTBlock, theirs: nn.Module) -> None:
    """编码器层、解码器层和 GPT 的块共有的部分：设置检查、自注意力、FFN、norm1、norm2。"""
    _same("norm_first", ours.norm_first, theirs.norm_first)
    _same("activation", ours.ffn.activation_name, _torch_activation_name(theirs.activation))
    _copy_attention(ours.self_attn, theirs.self_attn, "self_attn")
    _copy_linear("ffn.linear1", ours.ffn.linear1, theirs.linear1)
    _copy_linear("ffn.linear2", ours.ffn.linear2, theirs.linear2)
    _copy_layer_norm(ours.norm1, theirs.norm1, "norm1")
    _copy_layer_norm(ours.norm2, theirs.norm2, "norm2")


def _copy_decoder_layer(ours: DecoderLayer, theirs: nn.TransformerDecoderLayer) -> None:
    _copy_layer(ours, theirs)
    _copy_attention(ours.cross_attn, theirs.multihead_attn, "cross_attn")
    _copy_layer_norm(ours.norm3, theirs.norm3, "norm3")


# (我们的类, torch 的类) -> 拷贝函数
_COPIERS = {
    (MultiHeadAttention, nn.MultiheadAttention): _copy_attention,
    (LayerNorm, nn.LayerNorm): _copy_layer_norm,
    (EncoderLayer, nn.TransformerEncoderLayer): _copy_layer,
    (GPTBlock, nn.TransformerEncoderLayer): _copy_layer,  # 同样的子模块；掩码由调用者给
    (DecoderLayer, nn.TransformerDecoderLayer): _copy_decoder_layer,
}


def copy_from_torch(ours: nn.Module, theirs: nn.Module) -> nn.Module:
    """把 torch 模块 ``theirs`` 的权重拷进本包的模块 ``ours``，使两者计算同一个函数。

    支持的组合（torch 一侧须 ``batch_first=True``，层的 ``norm_first``、激活、尺寸须一致）：

    ==========================  ==========================================
    ours                        theirs
    ==========================  ==========================================
    ``MultiHeadAttention``      ``torch.nn.MultiheadAttention``
    ``LayerNorm``               ``torch.nn.LayerNorm``
    ``EncoderLayer``            ``torch.nn.TransformerEncoderLayer``
    ``GPTBlock``                ``torch.nn.TransformerEncoderLayer``
    ``DecoderLayer``            ``torch.nn.TransformerDecoderLayer``
    ==========================  ==========================================

    类型不在表中抛出 ``TypeError``；尺寸、``norm_first``、激活、eps 或偏置不一致抛出
    ``ValueError``，消息写明哪一项不同。

    参数:
        ours: 本包的模块（被写入）。
        theirs: torch 的模块（只读）。

    返回:
        ``ours`` 本身，方便链式调用。

    例子::

        >>> import torch
        >>> from tinyformer import MultiHeadAttention
        >>> from tinyformer.interop import copy_from_torch
        >>> theirs = torch.nn.MultiheadAttention(16, 4, batch_first=True)
        >>> ours = copy_from_torch(MultiHeadAttention(16, 4), theirs)
        >>> x = torch.randn(2, 5, 16)
        >>> torch.allclose(ours(x, x, x)[0], theirs(x, x, x)[0], atol=1e-6)
        True
    """
    for (our_type, their_type), copy in _COPIERS.items():
        if isinstance(ours, our_type) and isinstance(theirs, their_type):
            with torch.no_grad():
                copy(ours, theirs)
            return ours
    pairs = ", ".join(f"{a.__name__} <- torch.nn.{b.__name__}" for a, b in _COPIERS)
    raise TypeError(
        f"copy_from_torch cannot copy {type(theirs).__name__} into {type(ours).__name__}; "
        f"supported pairs: {pairs}"
    )
