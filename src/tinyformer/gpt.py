r"""只有解码器的因果语言模型（GPT 式）（“编码器与解码器”一章讲解）。

GPT 的块（:class:`~tinyformer.GPTBlock`）= 自注意力 + 前馈网络，自注意力带因果掩码，没有交叉注意力——
这正是 :class:`~tinyformer.EncoderLayer` 的公式加上因果掩码，另有逐词生成用的键/值缓存（“完整模型”一章）。
和 GPT-2 一样：学到的位置嵌入、pre-LN、NewGELU、末尾再加一个 LayerNorm、输出层与词嵌入共享权重。
:class:`GPTConfig` 还有 2019 年之后常见的几个改动，每个是一个字段，默认全部关闭（即 GPT-2）：
RMSNorm、RoPE 或不要位置（NoPE）、SwiGLU、分组查询注意力（GQA/MQA）、不要偏置。
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from ._checks import (
    arguments_checked,
    check_bool,
    check_choice,
    check_divisible,
    check_dropout,
    check_fits,
    check_indices,
    check_instance,
    check_memory,
    check_positive_float,
    check_positive_int,
    check_tensor,
    checked,
    layer_stack_bytes,
)
from .block import GPTBlock
from .cache import KVCache
from .embedding import TokenEmbedding
from .feedforward import ACTIVATIONS, FFNS, swiglu_hidden_size
from .masks import causal_mask
from .normalization import NORMS, make_norm
from .positional import ROPE_LAYOUTS, RotaryEmbedding

POSITIONS = ("learned", "rope", "none")
TEMPERATURES = (1e-3, 1e3)  # 温度的范围：τ = 0.001 已与贪心无异，τ = 1000 已近于均匀


def check_sampling(temperature: float, top_k: int | None, top_p: float | None) -> None:
    """采样的三个参数：温度在 :data:`TEMPERATURES` 之内，top-k 是正整数，top-p 在 (0, 1] 之内。"""
    check_positive_float("temperature", temperature)
    low, high = TEMPERATURES
    if not low <= temperature <= high:  # 更小时 logits / τ 溢出成 inf；更大时 τ 在 float32 里是 inf
        raise ValueError(
            f"temperature must be in [{low}, {high}] (beyond it float32 logits / temperature "
            f"overflows and the distribution becomes nan), got temperature={temperature!r}"
        )
    if top_k is not None:
        check_positive_int("top_k", top_k)
    if top_p is not None and not 0.0 < top_p <= 1.0:
        raise ValueError(f"top_p must be in (0, 1], got top_p={top_p!r}")


def next_distribution(
    logits: Tensor, temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None
) -> Tensor:
    """logits → 采样用的概率（温度、top-k、top-p 之后重新归一化；被去掉的词元概率为 0）。

    本包唯一的采样公式：:meth:`GPT.generate` 与写诗的 :func:`tinyformer.poetry.sampling.write` 都用它
    （网页里的写诗器有它的一份 JavaScript，浏览器测试逐个核对）。

    形状: logits (V,) 或 (B, V)，输出同形状。

    例子::

        >>> logits = torch.log(torch.tensor([0.5, 0.3, 0.15, 0.05]))
        >>> next_distribution(logits, top_k=2).tolist()
        [0.625, 0.375, 0.0, 0.0]
        >>> [round(p, 4) for p in next_distribution(logits, top_p=0.9).tolist()]  # 0.5+0.3 < 0.9 ≤ +0.15
        [0.5263, 0.3158, 0.1579, 0.0]
    """
    if not checked():
        check_sampling(temperature, top_k, top_p)
    logits = logits / temperature
    if top_k is not None:
        kth = torch.topk(logits, min(top_k, logits.shape[-1])).values[..., -1:]  # (…, 1)
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = torch.softmax(logits, dim=-1)  # (…, V)
    if top_p is not None:
        sorted_probs, order = probs.sort(dim=-1, descending=True)  # (…, V)
        before = sorted_probs.cumsum(dim=-1) - sorted_probs  # 排在它前面的概率之和
        keep_sorted = before < top_p  # 第一个总是留下（before = 0）
        keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)  # 换回原来的顺序
        probs = probs * keep
        probs = probs / probs.sum(dim=-1, keepdim=True)
    return probs


@dataclass(frozen=True)
class GPTConfig:
    """GPT 式语言模型的超参数（默认值是一个能在 CPU 上训练的小模型）。

    参数:
        vocab_size: 词表大小 V。
        max_len: 最长序列（位置嵌入表的行数，默认 256）。
        d_model: 模型维数 C（默认 128）。
        num_heads: 头数 H（默认 4），须整除 d_model。
        num_layers: 块数（默认 4）。
        d_ff: 前馈网络隐藏层维数（默认 ``None``：``ffn="mlp"`` 时 4·d_model；``ffn="swiglu"`` 时
            round(2/3·4·d_model)，见 :func:`~tinyformer.feedforward.swiglu_hidden_size`，参数量与前者相当）。
        dropout: 丢弃概率（默认 0.0）。
        activation: 默认 ``"gelu_tanh"``（GPT-2 的 NewGELU），也可以是 ``"relu"``、``"gelu"``、
            ``"relu2"``（ReLU²，:class:`~tinyformer.feedforward.ReLUSquared`）；
            只用于 ``ffn="mlp"``。
        norm_first: 默认 ``True``（pre-LN，GPT-2）。
        tie_output: 输出层是否与词嵌入共享权重（默认 ``True``）。与
            :class:`~tinyformer.TransformerConfig` 同名；模块的名字也与 :class:`~tinyformer.Transformer`
            相同：输出层 ``output``、末尾的 LayerNorm ``decoder_norm``（GPT 只有解码器）。

    2019 年之后的改动（默认值即 GPT-2，一个字段一个改动，可以任意组合）:
        norm: ``"layernorm"``（默认）或 ``"rmsnorm"``（:class:`~tinyformer.RMSNorm`，Zhang & Sennrich 2019），
            每个块的两个归一化和末尾的 ``decoder_norm`` 都换。
        position: ``"learned"``（默认，学到的位置嵌入加在输入上）、``"rope"``（不加位置嵌入，
            每层注意力里旋转 q、k，:class:`~tinyformer.RotaryEmbedding`，Su 等 2021）或 ``"none"``
            （NoPE：哪里都没有位置信息，只靠因果掩码）。
        rope_layout: RoPE 的配对方式（``position="rope"`` 时用）：``"half"``（默认，第 i 维与第 i + D/2 维，
            GPT-NeoX、Hugging Face 的 LLaMA）或 ``"interleaved"``（第 2i 维与第 2i+1 维，RoFormer 论文）。
        ffn: ``"mlp"``（默认，两层、激活为 ``activation``）或 ``"swiglu"``（:class:`~tinyformer.SwiGLU`，
            Shazeer 2020）。
        num_kv_heads: K、V 的头数（默认 ``None``，即 num_heads）：小于 num_heads 是分组查询注意力
            （GQA，Ainslie 等 2023），1 是多查询注意力（MQA）；须整除 num_heads。键/值缓存按它的比例变小。
        bias: 线性层和 LayerNorm 是否带偏置（默认 ``True``；``False`` 时模型里没有一个偏置参数，同 LLaMA）。
        qk_norm: 默认 ``False``；``True`` 时每层注意力把每个头的 q、k 各过一个 RMSNorm 再算分数
            （QK-norm，Dehghani 等 2023；OLMo 2、modded-nanogpt 用它），见 :class:`~tinyformer.MultiHeadAttention`。

    例子::

        >>> from tinyformer import GPTConfig
        >>> GPTConfig(vocab_size=100, d_model=32).d_ff  # 默认 4·d_model
        128
        >>> llama_like = GPTConfig(
        ...     vocab_size=100, d_model=32, norm="rmsnorm", position="rope", ffn="swiglu",
        ...     num_kv_heads=2, bias=False,
        ... )
        >>> llama_like.d_ff  # SwiGLU 的默认：round(2/3 · 4 · 32)
        85
    """

    vocab_size: int
    max_len: int = 256
    d_model: int = 128
    num_heads: int = 4
    num_layers: int = 4
    d_ff: int | None = None
    dropout: float = 0.0
    activation: str = "gelu_tanh"
    norm_first: bool = True
    tie_output: bool = True
    norm: str = "layernorm"
    position: str = "learned"
    rope_layout: str = "half"
    ffn: str = "mlp"
    num_kv_heads: int | None = None
    bias: bool = True
    qk_norm: bool = False

    def __post_init__(self):
        for name in ("vocab_size", "max_len", "d_model", "num_heads", "num_layers"):
            check_positive_int(name, getattr(self, name))
        check_divisible("d_model", self.d_model, "num_heads", self.num_heads)
        check_choice("ffn", self.ffn, FFNS)
        if self.d_ff is None:
            d_ff = swiglu_hidden_size(self.d_model) if self.ffn == "swiglu" else 4 * self.d_model
            # frozen 的数据类不能直接赋值，__post_init__ 里补默认值要用 object.__setattr__
            object.__setattr__(self, "d_ff", d_ff)
        check_positive_int("d_ff", self.d_ff)
        check_dropout("dropout", self.dropout)
        check_choice("activation", self.activation, ACTIVATIONS)
        check_bool("norm_first", self.norm_first)
        check_bool("tie_output", self.tie_output)
        check_bool("qk_norm", self.qk_norm)
        check_choice("norm", self.norm, NORMS)
        check_choice("position", self.position, POSITIONS)
        check_choice("rope_layout", self.rope_layout, ROPE_LAYOUTS)
        if self.position == "rope" and (self.d_model // self.num_heads) % 2 != 0:
            raise ValueError(
                "position='rope' rotates each head's dimensions in pairs, so the head size "
                f"d_model // num_heads must be even, got {self.d_model} // {self.num_heads} = "
                f"{self.d_model // self.num_heads}"
            )
        if self.num_kv_heads is None:
            object.__setattr__(self, "num_kv_heads", self.num_heads)
        check_positive_int("num_kv_heads", self.num_kv_heads)
        check_divisible("num_heads", self.num_heads, "num_kv_heads", self.num_kv_heads)
        check_bool("bias", self.bias)


class GPT(nn.Module):
    r"""只有解码器的因果语言模型：根据前面的词元预测下一个词元。

    .. math::

        h_0 = E[x] + P[0..T-1], \quad h_l = \mathrm{Block}_l(h_{l-1}),\quad
        \mathrm{logits} = \mathrm{LN}(h_L)\, W_{out}^\top

    词嵌入不乘 √C（GPT-2 也不乘）；位置用 **学到的** 位置嵌入 P（``nn.Embedding(max_len, C)``，
    GPT-2 的做法），所以序列不能超过 max_len。``tie_output=True`` 时 :math:`W_{out} = E`。
    初始化取 GPT-2 的基本做法：线性层和嵌入的权重 ~ N(0, 0.02²)，偏置为 0，LayerNorm 的 γ=1、β=0。
    GPT-2 还把每个残差分支最后的投影按 1/√N（N 是残差层数）缩小，这里没有这样做。
    ``norm_first=False`` 时没有末尾的 LayerNorm（post-LN 的每层已以 LayerNorm 结尾）。
    ``position="rope"`` 或 ``"none"`` 时没有 P（``position_embedding`` 为 ``None``），:math:`h_0 = E[x]`；
    RoPE 的位置在每层的注意力里（所有层共用一个 :class:`~tinyformer.RotaryEmbedding`，cos/sin 表只存一份），
    序列仍不能超过 max_len。其余选项见 :class:`GPTConfig`。

    参数:
        config: :class:`GPTConfig`。

    方法:
        - ``forward(ids, cache=None)`` -> logits (B, T, V)。``cache`` 为
          :class:`~tinyformer.KVCache` 时 ``ids`` 只需是新词元，位置从缓存长度接着数。
        - ``generate(ids, max_new_tokens, temperature=1.0, top_k=None, top_p=None, greedy=False,
          generator=None)`` -> (B, T + max_new_tokens)：先把整段提示送入（填满缓存），
          之后每步只送入上一步生成的词元。``greedy=True`` 取概率最大的词元；否则从
          :func:`next_distribution` 给出的分布中采样（温度、top-k、top-p），
          ``generator`` 是 ``torch.Generator``，让采样可复现。要求 T + max_new_tokens <= max_len。
          不计算梯度；有 dropout 时请先 ``model.eval()``。

    形状:
        - ids: (B, T)，整数编号
        - 输出: (B, T, V)

    例子::

        >>> import torch
        >>> from tinyformer import GPT, GPTConfig
        >>> model = GPT(GPTConfig(vocab_size=50, max_len=16, d_model=16, num_heads=4, num_layers=2))
        >>> ids = torch.tensor([[1, 2, 3], [4, 5, 6]])
        >>> model(ids).shape
        torch.Size([2, 3, 50])
        >>> model.generate(ids, max_new_tokens=4, greedy=True).shape
        torch.Size([2, 7])
    """

    def __init__(self, config: GPTConfig):
        super().__init__()
        check_instance("config", config, GPTConfig)
        self.config = c = config
        learned = c.position == "learned"
        embeddings = (c.vocab_size * (1 if c.tie_output else 2) + c.max_len * learned) * c.d_model
        ffn_width = c.d_ff * 3 // 2 if c.ffn == "swiglu" else c.d_ff  # SwiGLU 有三个矩阵而不是两个
        needed = 4 * embeddings + layer_stack_bytes(c.d_model, ffn_width, 1, c.num_layers)
        sizes = (
            f"vocab_size={c.vocab_size}, d_model={c.d_model}, d_ff={c.d_ff}, max_len={c.max_len}"
        )
        check_memory(f"GPT with {sizes}, num_layers={c.num_layers}", needed)  # 先算总账再建层
        self.token_embedding = TokenEmbedding(c.vocab_size, c.d_model, scale=False)
        # 学到的位置嵌入（GPT-2）；RoPE 和 NoPE 不在输入上加位置
        self.position_embedding = nn.Embedding(c.max_len, c.d_model) if learned else None
        self.dropout = nn.Dropout(c.dropout)
        rope = None
        if c.position == "rope":  # 所有层共用一张 cos/sin 表
            rope = RotaryEmbedding(c.d_model // c.num_heads, c.max_len, layout=c.rope_layout)
        self.layers = nn.ModuleList(
            [
                GPTBlock(
                    c.d_model,
                    c.num_heads,
                    c.d_ff,
                    c.dropout,
                    c.norm_first,
                    c.activation,
                    norm=c.norm,
                    ffn=c.ffn,
                    bias=c.bias,
                    num_kv_heads=c.num_kv_heads,
                    rope=rope,
                    qk_norm=c.qk_norm,
                )
                for _ in range(c.num_layers)
            ]
        )
        self.decoder_norm = make_norm(c.norm, c.d_model, c.bias) if c.norm_first else nn.Identity()
        self.output = nn.Linear(c.d_model, c.vocab_size, bias=False)  # W_out: C -> V

        for module in self.modules():
            if isinstance(module, (nn.Linear, nn.Embedding)):
                nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                nn.init.zeros_(module.bias)
        if c.tie_output:
            self.output.weight = self.token_embedding.embedding.weight  # 同一个 (V, C) 参数

    def forward(self, ids: Tensor, cache: KVCache | None = None) -> Tensor:
        if not checked():  # 入口：只在这里查一次（generate 的每一步不再查），里面的块不再重查
            check_tensor("ids", ids, "(B, T)")
            check_instance("cache", cache, KVCache, allow_none=True)
        B, T = ids.shape
        # 已缓存的位置数：新词元从这个位置接着数（没有缓存时为 0）
        start = 0 if cache is None else cache.length(self.layers[0].self_attn)
        if not checked():
            check_fits(f"T + cached length = {T} + {start}", T + start, self.config.max_len)
            check_indices("ids", ids, self.config.vocab_size, "vocab_size")  # 读回主机一次
        with arguments_checked():
            x = self.token_embedding(ids)  # (B, T, C)
            if self.position_embedding is not None:
                positions = torch.arange(start, start + T, device=ids.device)  # (T,)
                x = x + self.position_embedding(positions)  # (B, T, C) + (T, C)
            x = self.dropout(x)
            # 因果掩码 (T, start + T)；逐词生成时只有一个新词元，它可以看全部位置，这一行全是 False
            mask = None if T == 1 else causal_mask(T, device=ids.device, start=start)
            for layer in self.layers:
                x = layer(x, attn_mask=mask, cache=cache)  # (B, T, C)
            x = self.decoder_norm(x)
            return self.output(x)  # (B, T, C) @ (C, V) -> (B, T, V)

    @torch.no_grad()
    def generate(
        self,
        ids: Tensor,
        max_new_tokens: int,
        temperature: float = 1.0,
        top_k: int | None = None,
        top_p: float | None = None,
        greedy: bool = False,
        generator: torch.Generator | None = None,
    ) -> Tensor:
        check_tensor("ids", ids, "(B, T)")
        check_positive_int("max_new_tokens", max_new_tokens)
        check_bool("greedy", greedy)
        check_instance("generator", generator, torch.Generator, allow_none=True)
        T = ids.shape[1]
        check_fits(
            f"T + max_new_tokens = {T} + {max_new_tokens}", T + max_new_tokens, self.config.max_len
        )
        check_sampling(temperature, top_k, top_p)
        cache = KVCache()
        logits = self(
            ids, cache=cache
        )  # 整段提示一次送入（也检查编号）：(B, T, V)，缓存里有 T 个位置
        with arguments_checked():  # 以下每一步的参数都已查过：采样出的编号一定在词表里
            for step in range(max_new_tokens):
                next_logits = logits[:, -1]  # 最后一个位置预测下一个词元：(B, V)
                if greedy:
                    next_id = next_logits.argmax(dim=-1, keepdim=True)  # (B, 1)
                else:
                    probs = next_distribution(next_logits, temperature, top_k, top_p)  # (B, V)
                    next_id = torch.multinomial(probs, num_samples=1, generator=generator)  # (B, 1)
                ids = torch.cat([ids, next_id], dim=1)  # (B, T) -> (B, T + 1)
                if step + 1 < max_new_tokens:
                    logits = self(next_id, cache=cache)  # 只送入新词元：(B, 1, V)
        return ids
