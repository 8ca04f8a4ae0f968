r"""完整的编码器-解码器 Transformer（“编码器与解码器”一章搭起来，“完整模型”一章训练）。

源句 → 词嵌入 ×√C + 位置编码 → N 个编码器层 → memory；
目标句（右移一位）→ 词嵌入 ×√C + 位置编码 → N 个解码器层（看 memory）→ 线性层 → 每个位置的 logits。
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import Tensor, nn

from ._checks import (
    arguments_checked,
    check_bool,
    check_choice,
    check_divisible,
    check_dropout,
    check_fits,
    check_floating,
    check_indices,
    check_instance,
    check_int,
    check_key_padding_mask,
    check_mask,
    check_memory,
    check_positive_int,
    check_tensor,
    checked,
    layer_stack_bytes,
    shorten,
)
from .cache import KVCache
from .embedding import TokenEmbedding
from .feedforward import ACTIVATIONS
from .layers import DecoderLayer, EncoderLayer
from .masks import causal_mask
from .normalization import LayerNorm
from .positional import PositionalEncoding


@dataclass(frozen=True)
class TransformerConfig:
    """编码器-解码器 Transformer 的超参数（默认值是论文的 base 模型）。

    参数:
        src_vocab_size: 源语言词表大小。
        tgt_vocab_size: 目标语言词表大小。
        d_model: 模型维数 C（默认 512）。
        num_heads: 头数 H（默认 8），须整除 d_model。
        num_encoder_layers: 编码器层数（默认 6）。
        num_decoder_layers: 解码器层数（默认 6）。
        d_ff: 前馈网络隐藏层维数（默认 2048）。
        dropout: 丢弃概率（默认 0.1）。
        max_len: 最长序列（位置编码表的行数，默认 512）。
        norm_first: ``False``（默认）为论文的 post-LN，``True`` 为 pre-LN。
        activation: ``"relu"``（默认）、``"gelu"`` 或 ``"gelu_tanh"``。
        tie_output: 输出层是否与目标端嵌入共享权重（默认 ``True``，论文 §3.4）。
        pad_id: 填充词元的编号（默认 0，与 :class:`~tinyformer.Vocab` 一致）。

    例子::

        >>> from tinyformer import TransformerConfig
        >>> TransformerConfig(src_vocab_size=100, tgt_vocab_size=80, d_model=32, num_heads=4).d_ff
        2048
    """

    src_vocab_size: int
    tgt_vocab_size: int
    d_model: int = 512
    num_heads: int = 8
    num_encoder_layers: int = 6
    num_decoder_layers: int = 6
    d_ff: int = 2048
    dropout: float = 0.1
    max_len: int = 512
    norm_first: bool = False
    activation: str = "relu"
    tie_output: bool = True
    pad_id: int = 0

    def __post_init__(self):
        for name in (
            "src_vocab_size",
            "tgt_vocab_size",
            "d_model",
            "num_heads",
            "num_encoder_layers",
            "num_decoder_layers",
            "d_ff",
            "max_len",
        ):
            check_positive_int(name, getattr(self, name))
        check_divisible("d_model", self.d_model, "num_heads", self.num_heads)
        check_dropout("dropout", self.dropout)
        check_bool("norm_first", self.norm_first)
        check_choice("activation", self.activation, ACTIVATIONS)
        check_bool("tie_output", self.tie_output)
        check_int("pad_id", self.pad_id, minimum=0)
        smallest = min(self.src_vocab_size, self.tgt_vocab_size)
        if self.pad_id >= smallest:
            raise ValueError(
                "pad_id must be a valid id in both vocabularies, i.e. in "
                f"[0, min(src_vocab_size, tgt_vocab_size)) = [0, {smallest}), got pad_id={self.pad_id}"
            )


class Transformer(nn.Module):
    r"""编码器-解码器 Transformer（论文图 1），批量维在前。

    .. math::

        \mathrm{memory} &= \mathrm{Encoder}(E_{src}[x]\sqrt{C} + PE) \\
        \mathrm{logits} &= \mathrm{Decoder}(E_{tgt}[y]\sqrt{C} + PE,\ \mathrm{memory})\, W_{out}^\top

    ``tie_output=True`` 时 :math:`W_{out} = E_{tgt}`（论文 §3.4）。``norm_first=True`` 时
    编码器栈和解码器栈末尾各有一个 LayerNorm（pre-LN 的残差流没被归一化过，torch 也这样做）。
    初始化与 Annotated Transformer 相同：所有维数大于 1 的参数（线性层的矩阵、嵌入表）用
    Xavier 均匀分布 ``nn.init.xavier_uniform_``，偏置保留 ``nn.Linear`` 的默认初始化，
    LayerNorm 的 γ=1、β=0。

    参数:
        config: :class:`TransformerConfig`。

    方法（掩码参数只能按名字传；bool，True 表示遮住，与 ``torch.nn.Transformer`` 同名同义）:
        - ``encode(src, *, src_key_padding_mask=None)`` -> memory (B, S, C)。填充掩码 (B, S)
          为 ``None`` 时用 ``src == config.pad_id``。
        - ``decode(tgt, memory, *, memory_key_padding_mask=None, tgt_key_padding_mask=None,
          tgt_mask=None, cache=None)`` -> logits (B, T, V)。``memory_key_padding_mask`` (B, S)
          为 ``None`` 时 memory 的每个位置都可以关注——有填充时请传入 ``src == config.pad_id``。
          ``tgt_mask`` 是注意力掩码 (T, T')，为 ``None`` 时用因果掩码。
          ``cache`` 为 :class:`~tinyformer.KVCache` 时，``tgt`` 只需是新词元（通常一个），
          位置从缓存长度接着数；结果与把整段前缀重新送入相同。
        - ``forward(src, tgt, *, src_key_padding_mask=None, tgt_key_padding_mask=None)``
          -> logits (B, T, V)。填充掩码为 ``None`` 时按 ``config.pad_id`` 构造：
          源端 (B, S) 同时用于编码器自注意力和交叉注意力，目标端 (B, T) 再与因果掩码合起来。

    这个模型只有填充掩码一种可选的掩码：编码器是双向的，解码器总是因果的。所以没有
    ``src_mask`` 参数——(B, S) 的填充掩码在 B == S 时与 (S, S) 的注意力掩码形状相同，
    会被悄悄地读成"遮住哪些查询"；``model(src, tgt, src_mask=...)`` 因此是 ``TypeError``。

    注意力热力图：把 ``model.decoder_layers[i].need_weights`` 设为 ``True``，前向一次整段序列，
    再读 ``model.decoder_layers[i].cross_attn_weights``，形状 (B, H, T, S)。

    形状:
        - src: (B, S)，tgt: (B, T)，整数编号
        - 输出: (B, T, V)，V = tgt_vocab_size

    例子::

        >>> import torch
        >>> from tinyformer import Transformer, TransformerConfig
        >>> config = TransformerConfig(src_vocab_size=20, tgt_vocab_size=30, d_model=16,
        ...                            num_heads=4, num_encoder_layers=2, num_decoder_layers=2,
        ...                            d_ff=32, max_len=50)
        >>> model = Transformer(config)
        >>> src = torch.tensor([[5, 6, 7, 0], [8, 9, 10, 11]])
        >>> tgt = torch.tensor([[2, 12, 13], [2, 14, 0]])
        >>> model(src, tgt).shape
        torch.Size([2, 3, 30])
        >>> model.encode(src).shape
        torch.Size([2, 4, 16])
    """

    def __init__(self, config: TransformerConfig):
        super().__init__()
        check_instance("config", config, TransformerConfig)
        self.config = c = config
        sizes = ", ".join(
            f"{name}={getattr(c, name)}"
            for name in ("src_vocab_size", "tgt_vocab_size", "d_model", "d_ff", "max_len")
        )
        layers = (
            f"num_encoder_layers={c.num_encoder_layers}, num_decoder_layers={c.num_decoder_layers}"
        )
        check_memory(f"Transformer with {sizes}, {layers}", _memory_needed(c))  # 先算总账再建层
        self.src_embed = TokenEmbedding(c.src_vocab_size, c.d_model)  # ×√C
        self.tgt_embed = TokenEmbedding(c.tgt_vocab_size, c.d_model)
        self.positional = PositionalEncoding(c.d_model, c.max_len, c.dropout)  # 源、目标共用
        layer_args = (c.d_model, c.num_heads, c.d_ff, c.dropout, c.norm_first, c.activation)
        self.encoder_layers = nn.ModuleList(
            [EncoderLayer(*layer_args) for _ in range(c.num_encoder_layers)]
        )
        self.decoder_layers = nn.ModuleList(
            [DecoderLayer(*layer_args) for _ in range(c.num_decoder_layers)]
        )
        # post-LN 每层已经以 LayerNorm 结尾，不需要再加（Identity 什么也不做）
        self.encoder_norm = LayerNorm(c.d_model) if c.norm_first else nn.Identity()
        self.decoder_norm = LayerNorm(c.d_model) if c.norm_first else nn.Identity()
        self.output = nn.Linear(c.d_model, c.tgt_vocab_size, bias=False)  # W_out: C -> V

        for p in self.parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)
        if c.tie_output:
            self.output.weight = self.tgt_embed.embedding.weight  # 同一个 (V, C) 参数

    def encode(self, src: Tensor, *, src_key_padding_mask: Tensor | None = None) -> Tensor:
        if not checked():  # 入口：只在这里查一次，里面的层不再重查
            self._check_ids("src", src, self.config.src_vocab_size)
            B, S = src.shape
            check_key_padding_mask("src_key_padding_mask", src_key_padding_mask, B, S)
            if src_key_padding_mask is None:
                self._check_no_empty_sentence(src)
        if src_key_padding_mask is None:
            src_key_padding_mask = src == self.config.pad_id  # (B, S)，True = 填充
        with arguments_checked():
            x = self.positional(self.src_embed(src))  # (B, S) -> (B, S, C)
            for layer in self.encoder_layers:
                x = layer(x, src_key_padding_mask=src_key_padding_mask)  # (B, S, C)
            return self.encoder_norm(x)  # memory: (B, S, C)

    def decode(
        self,
        tgt: Tensor,
        memory: Tensor,
        *,
        memory_key_padding_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
        tgt_mask: Tensor | None = None,
        cache: KVCache | None = None,
    ) -> Tensor:
        if not checked():
            check_instance("cache", cache, KVCache, allow_none=True)
        # 已缓存的位置数：新词元从这个位置接着数（没有缓存时为 0）
        start = 0 if cache is None else cache.length(self.decoder_layers[0].self_attn)
        if not checked():
            self._check_ids("tgt", tgt, self.config.tgt_vocab_size, start)
            self._check_memory_and_masks(
                tgt, start, memory, memory_key_padding_mask, tgt_key_padding_mask, tgt_mask
            )
        B, T = tgt.shape
        if tgt_mask is None and T > 1:  # T = 1：一个新词元可以看全部位置，因果掩码这一行全是 False
            tgt_mask = causal_mask(T, device=tgt.device, start=start)  # (T, start + T)
        masks = {
            "tgt_mask": tgt_mask,
            "tgt_key_padding_mask": tgt_key_padding_mask,
            "memory_key_padding_mask": memory_key_padding_mask,
        }
        with arguments_checked():
            x = self.positional(self.tgt_embed(tgt), start=start)  # (B, T) -> (B, T, C)
            for layer in self.decoder_layers:
                x = layer(x, memory, **masks, cache=cache)  # (B, T, C)
            x = self.decoder_norm(x)
            return self.output(x)  # (B, T, C) @ (C, V) -> (B, T, V)

    def forward(
        self,
        src: Tensor,
        tgt: Tensor,
        *,
        src_key_padding_mask: Tensor | None = None,
        tgt_key_padding_mask: Tensor | None = None,
    ) -> Tensor:
        if not checked():
            self._check_ids("src", src, self.config.src_vocab_size)
            self._check_ids("tgt", tgt, self.config.tgt_vocab_size)
            if src.shape[0] != tgt.shape[0]:
                raise ValueError(
                    f"src and tgt must have the same batch size B, got {src.shape[0]}, {tgt.shape[0]}"
                )
            check_key_padding_mask("src_key_padding_mask", src_key_padding_mask, *src.shape)
            check_key_padding_mask("tgt_key_padding_mask", tgt_key_padding_mask, *tgt.shape)
            if src_key_padding_mask is None:
                self._check_no_empty_sentence(src)
        pad_id = self.config.pad_id
        if src_key_padding_mask is None:
            src_key_padding_mask = src == pad_id  # (B, S)，True = 填充
        if tgt_key_padding_mask is None:
            tgt_key_padding_mask = tgt == pad_id  # (B, T)；decode 再与因果掩码合起来
        with arguments_checked():
            memory = self.encode(src, src_key_padding_mask=src_key_padding_mask)  # (B, S, C)
            return self.decode(
                tgt,
                memory,
                memory_key_padding_mask=src_key_padding_mask,
                tgt_key_padding_mask=tgt_key_padding_mask,
            )  # (B, T, V)

    # ---- 入口的检查 ------------------------------------------------------------------------

    def _check_ids(self, name: str, ids: Tensor, vocab_size: int, start: int = 0) -> None:
        """词元编号：整数张量 (B, L)，每个值在 [0, vocab_size) 内；start + L 放得进位置表。"""
        check_tensor(name, ids, "(B, S)" if name == "src" else "(B, T)")
        L = ids.shape[1]
        check_fits(f"T + start = {L} + {start}", L + start, self.config.max_len)
        check_indices("ids", ids, vocab_size, "vocab_size")  # 读回主机一次：有没有越界的编号

    def _check_no_empty_sentence(self, src: Tensor) -> None:
        """整句都是填充的源句：编码器没有可看的词（它的输出会是全零的行，不是翻译）。"""
        empty = (src == self.config.pad_id).all(dim=-1)  # (B,)
        if src.shape[1] > 0 and empty.any():  # 读回主机一次
            rows = empty.nonzero().flatten().tolist()
            raise ValueError(
                f"src sentence(s) {shorten(rows)} are all padding (pad_id={self.config.pad_id}): "
                "the encoder has no word to attend to; drop empty sentences from the batch"
            )

    def _check_memory_and_masks(self, tgt, start, memory, memory_mask, tgt_padding, tgt_mask):
        """decode 的 memory 与三个掩码（读者传进来的；forward 自己建的不必查）。"""
        B, T = tgt.shape
        check_tensor("memory", memory, "(B, S, C)", d_model=self.config.d_model)
        check_floating("memory", memory, self.output.weight)
        if memory.shape[0] != B:
            raise ValueError(
                f"tgt and memory must have the same batch size B, got {B}, {memory.shape[0]}"
            )
        check_key_padding_mask("memory_key_padding_mask", memory_mask, B, memory.shape[1])
        check_key_padding_mask("tgt_key_padding_mask", tgt_padding, B, start + T)
        heads = self.config.num_heads
        check_mask("tgt_mask", tgt_mask, (B, heads, T, start + T), ndims=(2, 4))


def _memory_needed(c: TransformerConfig) -> int:
    """按 ``c`` 建模型要的字节数：float32 参数、模块开销，以及位置编码表（建表时是 float64）。"""
    embeddings = (c.src_vocab_size + c.tgt_vocab_size * (1 if c.tie_output else 2)) * c.d_model
    layers = layer_stack_bytes(c.d_model, c.d_ff, 1, c.num_encoder_layers) + layer_stack_bytes(
        c.d_model, c.d_ff, 2, c.num_decoder_layers
    )
    return 4 * embeddings + layers + 8 * c.max_len * c.d_model
