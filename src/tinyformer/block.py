r"""GPT 的块：因果自注意力 + 前馈网络，各带残差与归一化（“编码器与解码器”一章；选项在“规模与 2017 年之后的改进”一章）。

公式与 :class:`~tinyformer.EncoderLayer` 相同，只是自注意力带因果掩码，另有逐词生成用的键/值缓存：

.. math::

    \text{pre-LN（GPT-2）:}\quad x = x + \mathrm{SelfAttn}(\mathrm{LN_1}(x)),\quad
        x = x + \mathrm{FFN}(\mathrm{LN_2}(x))

编码器层只有论文的层；“2017 年之后”的选项都在这里，每个是一个参数，默认即论文/GPT-2 的做法：
RMSNorm、SwiGLU、不要偏置、分组查询注意力（GQA/MQA）、RoPE、QK-norm。
"""

from __future__ import annotations

from torch import Tensor, nn

from ._checks import check_bool, check_choice
from .attention import MultiHeadAttention
from .cache import KVCache
from .feedforward import FFNS, PositionWiseFFN, SwiGLU
from .normalization import make_norm
from .positional import RotaryEmbedding


class GPTBlock(nn.Module):
    r"""GPT 的块：带因果掩码的自注意力 + 前馈网络；子模块的名字（``self_attn``、``ffn``、``norm1``、
    ``norm2``……）与 :class:`~tinyformer.EncoderLayer` 相同，同样的权重算出同样的结果（没有掩码时）。

    参数:
        d_model: 模型维数 C。
        num_heads: 头数 H。
        d_ff: 前馈网络隐藏层维数。
        dropout: 丢弃概率（默认 0.0），位置同 ``torch.nn.TransformerEncoderLayer``。
        norm_first: ``False``（默认）为 post-LN，``True`` 为 pre-LN（GPT-2）。
        activation: ``"relu"``（默认）、``"gelu"`` 或 ``"gelu_tanh"``（``ffn="mlp"`` 时用）。

    以下只能按名字传，是 :class:`~tinyformer.GPTConfig` 的“2017 年之后”的选项：

        norm: ``"layernorm"``（默认）或 ``"rmsnorm"``（:class:`~tinyformer.RMSNorm`）。
        ffn: ``"mlp"``（默认，:class:`~tinyformer.PositionWiseFFN`）或 ``"swiglu"``
            （:class:`~tinyformer.SwiGLU`，不看 ``activation``）。
        bias: 线性层和归一化是否带偏置（默认 ``True``）。
        num_kv_heads: 自注意力的 K、V 头数（默认 ``None``，即 num_heads），见
            :class:`~tinyformer.MultiHeadAttention`。
        rope: :class:`~tinyformer.RotaryEmbedding`，自注意力的 q、k 按位置旋转（默认 ``None``）。
        qk_norm: 自注意力的 q、k 是否各过一个 RMSNorm（默认 ``False``），见
            :class:`~tinyformer.MultiHeadAttention`。

    例子::

        >>> import torch
        >>> from tinyformer import GPTBlock, causal_mask
        >>> block = GPTBlock(16, 4, 64, norm_first=True, activation="gelu_tanh")
        >>> block(torch.randn(2, 5, 16), attn_mask=causal_mask(5)).shape
        torch.Size([2, 5, 16])
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int,
        dropout: float = 0.0,
        norm_first: bool = False,
        activation: str = "relu",
        *,
        norm: str = "layernorm",
        ffn: str = "mlp",
        bias: bool = True,
        num_kv_heads: int | None = None,
        rope: RotaryEmbedding | None = None,
        qk_norm: bool = False,
    ):
        super().__init__()
        check_bool("norm_first", norm_first)
        check_choice("ffn", ffn, FFNS)
        self.d_model = d_model
        self.norm_first = norm_first
        self.self_attn = MultiHeadAttention(
            d_model,
            num_heads,
            dropout,
            bias=bias,
            num_kv_heads=num_kv_heads,
            rope=rope,
            qk_norm=qk_norm,
        )
        if ffn == "swiglu":
            self.ffn = SwiGLU(d_model, d_ff, dropout, bias=bias)
        else:
            self.ffn = PositionWiseFFN(d_model, d_ff, dropout, activation, bias=bias)
        self.norm1 = make_norm(norm, d_model, bias)
        self.norm2 = make_norm(norm, d_model, bias)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.need_weights = False  # True：注意力走写出来的矩阵乘法，权重留在 self_attn_weights
        self.self_attn_weights: Tensor | None = None

    def forward(
        self, x: Tensor, *, attn_mask: Tensor | None = None, cache: KVCache | None = None
    ) -> Tensor:
        r"""自注意力子层，再前馈子层；每个子层都是 残差 + 归一化。

        参数:
            x: 输入序列；有缓存时只是新词元。
            attn_mask: 注意力掩码，bool，True 表示遮住（默认 ``None``，只能按名字传）；GPT 传入
                :func:`~tinyformer.causal_mask` ``(T, start=缓存长度)``。GPT 的输入没有填充，
                所以这里没有填充掩码。
            cache: :class:`~tinyformer.KVCache`（默认 ``None``）：新词元的 K、V 接在已缓存的后面。

        形状:
            - x: (B, T, C)
            - attn_mask: (T, T')，T' = 缓存后的总长度（没有缓存时 T' = T）
            - 输出: (B, T, C)
        """
        # x 的形状与 dtype 由第一个子层（归一化或多头注意力）在它的入口检查
        if self.norm_first:
            x = x + self._sa_block(self.norm1(x), attn_mask, cache)
            x = x + self._ff_block(self.norm2(x))
        else:
            x = self.norm1(x + self._sa_block(x, attn_mask, cache))
            x = self.norm2(x + self._ff_block(x))
        return x  # (B, T, C)

    # 子层（残差之前的部分），名字与 torch.nn.TransformerEncoderLayer 的相同
    def _sa_block(self, x: Tensor, attn_mask: Tensor | None, cache: KVCache | None) -> Tensor:
        y, weights = self.self_attn(
            x, x, x, attn_mask=attn_mask, need_weights=self.need_weights, cache=cache
        )
        self.self_attn_weights = None if weights is None else weights.detach()
        return self.dropout1(y)

    def _ff_block(self, x: Tensor) -> Tensor:
        return self.dropout2(self.ffn(x))
