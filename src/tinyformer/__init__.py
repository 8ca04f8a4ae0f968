"""tinyformer：《动手实现 Transformer》一书所用的小型 PyTorch 包。

每个概念一个模块，从上往下读即可；各模块开头写明讲解它的章节。全书批量维在前，
形状注释统一用这些字母：

====  ==============================================
字母  含义
====  ==============================================
B     批量大小（batch）
T     目标序列/当前序列长度（查询的个数）
S     源序列长度（键、值的个数）
C     模型维数 d_model
H     头数 num_heads
D     每个头的维数 D = C // H
V     词表大小 vocab_size
====  ==============================================

掩码约定：bool 张量，**True 表示"可以关注"**（与 ``F.scaled_dot_product_attention`` 相同）。

例子::

    >>> import torch
    >>> import tinyformer as tf
    >>> config = tf.GPTConfig(vocab_size=10, max_len=8, d_model=16, num_heads=4, num_layers=1)
    >>> tf.GPT(config)(torch.tensor([[1, 2, 3]])).shape  # (B, T) -> (B, T, V)
    torch.Size([1, 3, 10])

第 8 章的翻译在子模块里，按流程读：``tinyformer.corpus``（语料与它的分词器）、
``tinyformer.training``（批量、损失、学习率、训练循环、按验证集挑选权重）、
``tinyformer.translator``（翻译器：翻译、评估、看交叉注意力）、``tinyformer.checkpoint``
（存取检查点）、``tinyformer.widgets``（交互控件），以及命令行 ``tinyformer.cli``
（``python -m tinyformer.train`` / ``python -m tinyformer.translate``）。它们要 sacreBLEU、tqdm
等较重的依赖，所以这里不自动导入。导入本包的任何模块都不改变全局状态（jieba 的词典、torch 的随机数）。
"""

from .attention import MultiHeadAttention, attention_with_weights
from .cache import KVCache
from .compare import agree, magnitude
from .decoding import beam_search, greedy_decode
from .dropout import Dropout
from .embedding import TokenEmbedding
from .feedforward import NewGELU, PositionWiseFFN
from .gpt import GPT, GPTConfig
from .interop import copy_from_torch
from .layers import DecoderLayer, EncoderLayer
from .masks import causal_mask, padding_mask
from .model import Transformer, TransformerConfig
from .normalization import LayerNorm
from .positional import PositionalEncoding, shift_matrix, sinusoidal_encoding
from .text import Vocab, tokenize_en, tokenize_zh

__all__ = [
    # 第 1、2 章：文本与词嵌入
    "tokenize_zh",
    "tokenize_en",
    "Vocab",
    "TokenEmbedding",
    # 第 3、4 章：位置编码
    "sinusoidal_encoding",
    "PositionalEncoding",
    "shift_matrix",
    # 第 5 章：掩码与注意力
    "causal_mask",
    "padding_mask",
    "attention_with_weights",
    "MultiHeadAttention",
    # 第 6 章：层归一化与前馈网络
    "LayerNorm",
    "PositionWiseFFN",
    "NewGELU",
    "Dropout",
    # 第 7 章：编码器层、解码器层、GPT
    "EncoderLayer",
    "DecoderLayer",
    "GPTConfig",
    "GPT",
    # 第 8 章：完整模型与增量解码
    "TransformerConfig",
    "Transformer",
    "KVCache",
    "greedy_decode",
    "beam_search",
    # 工具
    "agree",
    "magnitude",
    "copy_from_torch",
]
