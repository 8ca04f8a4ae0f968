"""tinyformer：《动手学 Transformer》一书所用的小型 PyTorch 包。

每个概念一个模块，从上往下读即可；各模块开头写明讲解它的章节。全书批量维在前，
形状注释统一用这些字母：

====  ==============================================
字母  含义
====  ==============================================
B     批量大小（batch）
T     目标序列/当前序列长度（查询的个数）
S     源序列长度（键、值的个数）
C     模型维数 d_model
H     头数 num_heads（分组查询注意力里 K、V 的头数记作 H_kv）
D     每个头的维数 D = C // H
V     词表大小 vocab_size
====  ==============================================

掩码约定：bool 张量，**True 表示"遮住"**，与 ``torch.nn.MultiheadAttention``、``torch.nn.Transformer``
同名同义（``F.scaled_dot_product_attention`` 的 bool ``attn_mask`` 恰好相反）。

例子::

    >>> import torch
    >>> import tinyformer as tf
    >>> config = tf.GPTConfig(vocab_size=10, max_len=8, d_model=16, num_heads=4, num_layers=1)
    >>> tf.GPT(config)(torch.tensor([[1, 2, 3]])).shape  # (B, T) -> (B, T, V)
    torch.Size([1, 3, 10])

包分三层，各在一个文件夹里：

- ``tinyformer``（这里）：前几章一块块搭起来的模型——分词与词表、嵌入、位置编码、掩码、注意力、
  归一化、前馈网络、编码器与解码器层、完整的 Transformer 与 GPT、解码。它不导入另外两层。
- ``tinyformer.translation``：用这个模型做成的中译英应用（语料、训练、翻译器、检查点、命令行、导出）。
- ``tinyformer.book``：只有笔记本用的帮手（:func:`~tinyformer.book.agree` 与
  :func:`~tinyformer.book.magnitude`、画图、控件、网页上的探索器）。

导入本包的任何模块都不改变全局状态（jieba 的词典、torch 的随机数、matplotlib 的设置）。
"""

from .attention import MultiHeadAttention, attention_with_weights
from .block import GPTBlock
from .cache import KVCache
from .decoding import beam_search, greedy_decode
from .dropout import Dropout
from .embedding import TokenEmbedding
from .feedforward import NewGELU, PositionWiseFFN, SwiGLU
from .gpt import GPT, GPTConfig, next_distribution
from .interop import copy_from_torch
from .layers import DecoderLayer, EncoderLayer
from .masks import causal_mask, padding_mask
from .model import Transformer, TransformerConfig
from .normalization import LayerNorm, RMSNorm
from .positional import PositionalEncoding, RotaryEmbedding, shift_matrix, sinusoidal_encoding
from .text import Vocab, tokenize_en, tokenize_zh

__all__ = [
    # 文本与词嵌入（“Transformer 总览”“词嵌入”）
    "tokenize_zh",
    "tokenize_en",
    "Vocab",
    "TokenEmbedding",
    # 位置编码
    "sinusoidal_encoding",
    "PositionalEncoding",
    "shift_matrix",
    "RotaryEmbedding",
    # 掩码与注意力
    "causal_mask",
    "padding_mask",
    "attention_with_weights",
    "MultiHeadAttention",
    # 层归一化、前馈网络、丢弃法
    "LayerNorm",
    "RMSNorm",
    "PositionWiseFFN",
    "NewGELU",
    "SwiGLU",
    "Dropout",
    # 编码器层、解码器层、GPT
    "EncoderLayer",
    "DecoderLayer",
    "GPTBlock",
    "GPTConfig",
    "GPT",
    "next_distribution",
    # 完整模型与解码
    "TransformerConfig",
    "Transformer",
    "KVCache",
    "greedy_decode",
    "beam_search",
    # 与 torch 自己的模块互换权重
    "copy_from_torch",
]
