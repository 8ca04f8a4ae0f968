"""坏输入一览（issue 16）：每个坏输入都有一个清楚的结局，消息钉死在表里。

- ``BAD_INPUTS``：公开构造函数和 forward 的参数，``_checks.py`` 里的每条规则至少被一种真实的误用触发一次；
  ``API``：nan/inf、种子范围、dtype 不符、损失的 ignore_index、解码的编号、翻译器……
  → ``ValueError``/``TypeError``，消息写明参数、取值和规则；
- ``CHECKPOINTS``：坏的或故意构造的检查点文件 → ``load_checkpoint`` 抛出 **一个**
  ``WeightsError("'路径': …")``，``reason`` 说出真正的原因（缺文件、pickle、损坏、元数据、不符）；
- ``TRAIN_CLI``、``TRANSLATE_CLI``：命令行参数 → 非零退出码 + stderr 上恰好一行 ``错误：…``，
  训练开始之前（argparse 自己发现的用法错误照它的样子打印：``ARGPARSE_CLI``）；最后几条真的起子进程跑
  ``python -m``，确认没有 traceback。

写到一半被打断的检查点见 ``test_atomic.py``。
"""

import json
import math
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

from tests.kit import TINY_SRC_VOCAB as SRC_VOCAB
from tests.kit import TINY_TGT_VOCAB as TGT_VOCAB
from tests.kit import Payload, run_cli, tiny_gpt, tiny_transformer_config, tiny_translator
from tests.kit import tiny_transformer as tiny_model
from tinyformer import (
    GPT,
    DecoderLayer,
    EncoderLayer,
    GPTConfig,
    KVCache,
    LayerNorm,
    MultiHeadAttention,
    PositionalEncoding,
    PositionWiseFFN,
    TokenEmbedding,
    Transformer,
    TransformerConfig,
    attention_with_weights,
    beam_search,
    causal_mask,
    greedy_decode,
    padding_mask,
    shift_matrix,
    sinusoidal_encoding,
)
from tinyformer.layers import recording_weights
from tinyformer.text import Vocab, ZhTokenizer, detokenize_en, pad_sequences, tokenize_zh
from tinyformer.translation import cli
from tinyformer.translation.checkpoint import load_checkpoint, save_checkpoint
from tinyformer.translation.corpus import generate_corpus
from tinyformer.translation.training import (
    fit_translator,
    label_smoothed_cross_entropy,
    train,
    warmup_lr,
)
from tinyformer.translation.translator import Translator, new_translator
from tinyformer.weights import WeightsError, read_metadata

B, T, S, C, H = 2, 5, 7, 16, 4  # C：tiny_transformer、tiny_translator 的 d_model


def _gpt() -> GPT:
    return tiny_gpt(vocab_size=20, max_len=8, num_layers=1)


def _mha(*args, **kwargs):
    """在一个小的多头注意力上调用 forward；位置参数依次是 query, key, value。"""
    torch.manual_seed(0)
    return MultiHeadAttention(C, H)(*args, **kwargs)


def _x(*shape):
    return torch.zeros(*shape)


def _small_transformer_config(**overrides):
    kwargs = dict(src_vocab_size=20, tgt_vocab_size=20, d_model=C, num_heads=H, dropout=0.1)
    return tiny_transformer_config(**{**kwargs, "max_len": 8, **overrides})


def _ids(*shape, high=10):
    return torch.randint(1, high, shape, generator=torch.Generator().manual_seed(0))


def _cache_twice(batch_sizes, static_kv=False):
    """同一个缓存走一步注意力、每次一个批量大小；``static_kv``：交叉注意力（记忆只算一次）。"""
    mha, cache = MultiHeadAttention(C, H), KVCache()
    for n in batch_sizes:
        memory = _x(n, 5 if static_kv else 1, C)
        mha(_x(n, 1, C), memory, memory, cache=cache, static_kv=static_kv)
    return cache


def _reorder(indices):
    _cache_twice((B,)).reorder(indices)  # 先存一步，批量大小 2


q5, kv7 = _x(B, T, C), _x(B, S, C)

# (编号, 调用(tmp_path), 异常类型, 消息正则)
EXAMPLES = [([4, 5, 6], [2, 7, 8, 3]), ([5, 6], [2, 8, 3])]
SRC = torch.tensor([[4, 5, 6]])
x16 = torch.zeros(2, 3, C)
LOGITS, TARGET = torch.zeros(2, 3, 7), torch.tensor([[1, 2, 3], [4, 5, 0]])


def _train(**kwargs):
    return train(tiny_model(), EXAMPLES, **{"max_steps": 1, "progress": False, **kwargs})


def _translate(sentence, **kwargs):
    return tiny_translator().translate(sentence, **kwargs)


def _save(tmp, **metrics):
    save_checkpoint(tiny_translator(), tmp / "m.safetensors", **metrics)


def _save_under_a_file(tmp):
    (tmp / "file.txt").write_text("x")
    save_checkpoint(
        tiny_translator(), tmp / "file.txt" / "m.safetensors"
    )  # 所在"文件夹"其实是个文件


LONG = "好" * 40_000  # 4 万个字符：消息里只引用开头


BAD_INPUTS = [
    # MultiHeadAttention 构造
    ("mha-divisible", lambda t: MultiHeadAttention(10, 3), ValueError,
     r"d_model must be divisible by num_heads, got d_model=10, num_heads=3"),
    ("mha-d_model", lambda t: MultiHeadAttention(0, 4), ValueError,
     r"d_model must be a positive integer, got d_model=0"),
    ("mha-num_heads", lambda t: MultiHeadAttention(16, -1), ValueError,
     r"num_heads must be a positive integer, got num_heads=-1"),
    ("mha-dropout-1", lambda t: MultiHeadAttention(16, 4, dropout=1.0), ValueError,
     r"dropout must be in \[0, 1\), got dropout=1.0"),
    ("mha-dropout-neg", lambda t: MultiHeadAttention(16, 4, dropout=-0.1), ValueError,
     r"dropout must be in \[0, 1\), got dropout=-0.1"),
    ("mha-bias", lambda t: MultiHeadAttention(16, 4, bias="yes"), TypeError,
     r"bias must be a bool, got bias='yes'"),
    # MultiHeadAttention forward
    ("mha-last-dim", lambda t: _mha(_x(B, T, 8), kv7, kv7), ValueError,
     r"last dimension of query must equal d_model=16, got shape \(2, 5, 8\)"),
    ("mha-ndim", lambda t: _mha(_x(T, C), kv7, kv7), ValueError,
     r"query must have shape \(B, T, C\), got shape \(5, 16\)"),
    ("mha-not-tensor", lambda t: _mha([[0.0] * C], kv7, kv7), TypeError,
     r"query must be a torch.Tensor of shape \(B, T, C\), got list"),
    ("mha-key-value-length", lambda t: _mha(q5, kv7, _x(B, 6, C)), ValueError,
     r"key and value must have the same length S \(dim -2\), got key shape \(2, 7, 16\), "
     r"value shape \(2, 6, 16\)"),
    ("mha-batch", lambda t: _mha(q5, _x(3, S, C), _x(3, S, C)), ValueError,
     r"query, key and value must have the same batch size B, got 2, 3, 3"),
    ("mha-mask-dtype", lambda t: _mha(q5, kv7, kv7, attn_mask=torch.ones(T, S)), TypeError,
     r"attn_mask must be a bool tensor \(True = masked out, as in torch.nn.MultiheadAttention\), "
     r"got dtype=torch.float32"),
    ("mha-mask-(B,S)", lambda t: _mha(q5, kv7, kv7, attn_mask=torch.ones(B, S, dtype=torch.bool)),
     ValueError, r"attn_mask of shape \(2, 7\) does not fit the attention scores of shape "
     r"\(2, 4, 5, 7\).* a \(B, S\) padding mask goes to key_padding_mask"),
    ("mha-mask-last-dim",
     lambda t: _mha(q5, kv7, kv7, attn_mask=torch.ones(T, S + 1, dtype=torch.bool)),
     ValueError, r"attn_mask of shape \(5, 8\) does not fit"),
    ("mha-mask-3d", lambda t: _mha(q5, kv7, kv7, attn_mask=torch.ones(B, T, S, dtype=torch.bool)),
     ValueError, r"attn_mask of shape \(2, 5, 7\) does not fit .* needs 2 or 4 dimensions"),
    ("mha-mask-heads",
     lambda t: _mha(q5, kv7, kv7, attn_mask=torch.ones(B, 3, T, S, dtype=torch.bool)),
     ValueError, r"attn_mask of shape \(2, 3, 5, 7\) does not fit"),
    ("mha-padding-(T,S)",
     lambda t: _mha(q5, kv7, kv7, key_padding_mask=torch.ones(T, S, dtype=torch.bool)),
     ValueError, r"key_padding_mask must have shape \(B, S\) = \(2, 7\) .*got shape \(5, 7\)"),
    ("mha-padding-4d",
     lambda t: _mha(q5, kv7, kv7, key_padding_mask=torch.ones(B, 1, 1, S, dtype=torch.bool)),
     ValueError, r"key_padding_mask must have shape \(B, S\).*pass padding_mask\(ids, pad_id\)"),
    ("mha-padding-dtype", lambda t: _mha(q5, kv7, kv7, key_padding_mask=torch.ones(B, S)),
     TypeError, r"key_padding_mask must be a bool tensor .* build it with padding_mask\(ids, pad_id\)"),
    ("mha-mask-positional",
     lambda t: _mha(q5, kv7, kv7, torch.ones(T, S, dtype=torch.bool)), TypeError,
     r"takes 4 positional arguments but 5 were given"),
    ("mha-cache-type", lambda t: _mha(q5, kv7, kv7, cache={}), TypeError,
     r"cache must be a KVCache or None, got dict"),
    ("mha-need_weights", lambda t: _mha(q5, kv7, kv7, need_weights=1), TypeError,
     r"need_weights must be a bool, got need_weights=1"),
    # attention_with_weights
    ("sdpa-head-dim", lambda t: attention_with_weights(_x(B, T, 8), _x(B, S, 4), _x(B, S, 4)),
     ValueError, r"query and key must have the same last dimension D"),
    ("sdpa-dropout", lambda t: attention_with_weights(q5, kv7, kv7, dropout_p=1.5),
     ValueError, r"dropout_p must be in \[0, 1\), got dropout_p=1.5"),
    ("sdpa-mask-last-dim-1",
     lambda t: attention_with_weights(q5, kv7, kv7, mask=torch.ones(T, 1, dtype=torch.bool)),
     ValueError, r"mask of shape \(5, 1\) does not fit .* the last one exactly S"),
    ("sdpa-1d", lambda t: attention_with_weights(_x(C), kv7, kv7), ValueError,
     r"query must have shape \(\.\.\., T, D\), got shape \(16,\)"),
    ("sdpa-batch", lambda t: attention_with_weights(_x(2, T, C), _x(3, S, C), _x(3, S, C)),
     ValueError, r"the leading \(batch\) dimensions of query and key must broadcast"),
    # TokenEmbedding
    ("emb-vocab", lambda t: TokenEmbedding(0, 16), ValueError,
     r"vocab_size must be a positive integer, got vocab_size=0"),
    ("emb-padding_idx", lambda t: TokenEmbedding(10, 16, padding_idx=10), ValueError,
     r"padding_idx must be in \[0, vocab_size\) = \[0, 10\), got padding_idx=10"),
    ("emb-id-too-big", lambda t: TokenEmbedding(10, 16)(torch.tensor([[1, 12]])), ValueError,
     r"ids must be in \[0, vocab_size\) = \[0, 10\), got 12"),
    ("emb-id-negative", lambda t: TokenEmbedding(10, 16)(torch.tensor([[-1, 2]])), ValueError,
     r"ids must be in \[0, vocab_size\) = \[0, 10\), got -1"),
    ("emb-float-ids", lambda t: TokenEmbedding(10, 16)(torch.tensor([[1.0, 2.0]])), TypeError,
     r"ids must be an integer tensor, got dtype=torch.float32"),
    ("emb-ids-3d", lambda t: TokenEmbedding(10, 16)(torch.zeros(1, 2, 3, dtype=torch.long)),
     ValueError, r"ids must have shape \(B, T\), got shape \(1, 2, 3\)"),
    ("emb-scale", lambda t: TokenEmbedding(10, 16, scale=1), TypeError,
     r"scale must be a bool, got scale=1"),
    # 位置编码
    ("pe-max_len", lambda t: sinusoidal_encoding(0, 16), ValueError,
     r"max_len must be a positive integer, got max_len=0"),
    ("pe-too-long", lambda t: PositionalEncoding(16, max_len=10)(_x(B, 11, 16)), ValueError,
     r"T \+ start = 11 \+ 0 = 11 must be <= max_len=10"),
    ("pe-start-too-far", lambda t: PositionalEncoding(16, max_len=10)(_x(B, 3, 16), start=8),
     ValueError, r"T \+ start = 3 \+ 8 = 11 must be <= max_len=10"),
    ("pe-start-negative", lambda t: PositionalEncoding(16, max_len=10)(_x(B, 3, 16), start=-1),
     ValueError, r"start must be >= 0, got start=-1"),
    ("pe-last-dim", lambda t: PositionalEncoding(16)(_x(B, 3, 8)), ValueError,
     r"last dimension of x must equal d_model=16, got shape \(2, 3, 8\)"),
    ("shift-odd", lambda t: shift_matrix(1, 7), ValueError,
     r"d_model must be even for shift_matrix: .* got d_model=7"),
    ("shift-k-float", lambda t: shift_matrix(1.5, 8), TypeError, r"k must be an integer, got k=1.5"),
    # 掩码
    ("causal-T", lambda t: causal_mask(0), ValueError, r"T must be a positive integer, got T=0"),
    ("padding-1d", lambda t: padding_mask(torch.tensor([1, 2, 0]), 0), ValueError,
     r"ids must have shape \(B, S\), got shape \(3,\)"),
    # LayerNorm 与 FFN
    ("ln-eps", lambda t: LayerNorm(16, eps=0), ValueError, r"eps must be a finite positive number, got eps=0"),
    ("ln-last-dim", lambda t: LayerNorm(16)(_x(B, T, 8)), ValueError,
     r"last dimension of x must equal d_model=16, got shape \(2, 5, 8\)"),
    ("ffn-activation", lambda t: PositionWiseFFN(16, 64, activation="swish"), ValueError,
     r"activation must be one of 'relu', 'gelu', 'gelu_tanh', got activation='swish'"),
    ("ffn-d_ff", lambda t: PositionWiseFFN(16, 0), ValueError,
     r"d_ff must be a positive integer, got d_ff=0"),
    # 编码器层、解码器层
    ("enc-norm_first", lambda t: EncoderLayer(16, 4, 64, norm_first="yes"), TypeError,
     r"norm_first must be a bool, got norm_first='yes'"),
    ("enc-divisible", lambda t: EncoderLayer(16, 3, 64), ValueError,
     r"d_model must be divisible by num_heads, got d_model=16, num_heads=3"),
    ("dec-memory-dim", lambda t: DecoderLayer(16, 4, 64)(q5, _x(B, S, 8)), ValueError,
     r"last dimension of memory must equal d_model=16, got shape \(2, 7, 8\)"),
    # TransformerConfig / Transformer
    ("cfg-vocab", lambda t: _small_transformer_config(src_vocab_size=0), ValueError,
     r"src_vocab_size must be a positive integer, got src_vocab_size=0"),
    ("cfg-divisible", lambda t: _small_transformer_config(d_model=10, num_heads=3), ValueError,
     r"d_model must be divisible by num_heads, got d_model=10, num_heads=3"),
    ("cfg-pad_id", lambda t: _small_transformer_config(pad_id=20), ValueError,
     r"pad_id must be a valid id in both vocabularies, .* = \[0, 20\), got pad_id=20"),
    ("cfg-activation", lambda t: _small_transformer_config(activation="tanh"), ValueError,
     r"activation must be one of 'relu', 'gelu', 'gelu_tanh', got activation='tanh'"),
    ("cfg-dropout", lambda t: _small_transformer_config(dropout=1), ValueError,
     r"dropout must be in \[0, 1\), got dropout=1"),
    ("cfg-layers", lambda t: _small_transformer_config(num_decoder_layers=0), ValueError,
     r"num_decoder_layers must be a positive integer, got num_decoder_layers=0"),
    ("transformer-config-type", lambda t: Transformer({"d_model": 16}), TypeError,
     r"config must be a TransformerConfig, got dict"),
    ("transformer-too-long",
     lambda t: Transformer(_small_transformer_config())(_ids(B, 9), _ids(B, 3)), ValueError,
     r"T \+ start = 9 \+ 0 = 9 must be <= max_len=8"),
    ("transformer-tgt-id",
     lambda t: Transformer(_small_transformer_config())(_ids(B, 3), _ids(B, 3) + 20), ValueError,
     r"ids must be in \[0, vocab_size\) = \[0, 20\), got 2\d"),
    ("transformer-src-1d",
     lambda t: Transformer(_small_transformer_config())(_ids(3), _ids(B, 3)), ValueError,
     r"src must have shape \(B, S\), got shape \(3,\)"),
    # GPTConfig / GPT
    ("gpt-vocab", lambda t: GPTConfig(vocab_size=-5), ValueError,
     r"vocab_size must be a positive integer, got vocab_size=-5"),
    ("gpt-d_ff", lambda t: GPTConfig(vocab_size=10, d_ff=0), ValueError,
     r"d_ff must be a positive integer, got d_ff=0"),
    ("gpt-tie", lambda t: GPTConfig(vocab_size=10, tie_output=None), TypeError,
     r"tie_output must be a bool, got tie_output=None"),
    ("gpt-too-long", lambda t: _gpt()(_ids(B, 9)), ValueError,
     r"T \+ cached length = 9 \+ 0 = 9 must be <= max_len=8"),
    ("gpt-max_new_tokens", lambda t: _gpt().generate(_ids(B, 3), 0), ValueError,
     r"max_new_tokens must be a positive integer, got max_new_tokens=0"),
    ("gpt-temperature", lambda t: _gpt().generate(_ids(B, 3), 2, temperature=0), ValueError,
     r"temperature must be a finite positive number, got temperature=0"),
    ("gpt-top_k", lambda t: _gpt().generate(_ids(B, 3), 2, top_k=0), ValueError,
     r"top_k must be a positive integer, got top_k=0"),
    ("gpt-generate-too-long", lambda t: _gpt().generate(_ids(B, 3), 6), ValueError,
     r"T \+ max_new_tokens = 3 \+ 6 = 9 must be <= max_len=8"),
    ("gpt-generator", lambda t: _gpt().generate(_ids(B, 3), 2, generator=0), TypeError,
     r"generator must be a Generator or None, got int"),
    # KVCache
    ("cache-reorder-range", lambda t: _reorder(torch.tensor([0, 5])), ValueError,
     r"indices must be in \[0, batch size\) = \[0, 2\), got 5"),
    ("cache-reorder-dtype", lambda t: _reorder(torch.tensor([0.0, 1.0])), TypeError,
     r"indices must be an integer tensor, got dtype=torch.float32"),
    ("cache-reorder-2d", lambda t: _reorder(torch.tensor([[0, 1]])), ValueError,
     r"indices must have shape \(N\), got shape \(1, 2\)"),
    ("cache-batch", lambda t: _cache_twice((B, 3)), ValueError,
     r"the cache holds batch size 2 but got batch size 3; use cache.reorder"),
]  # fmt: skip

API = [
    # nan / inf：在没有意义的地方一律拒绝
    ("layernorm-eps-inf", lambda t: LayerNorm(C, eps=math.inf), ValueError,
     r"^eps must be a finite positive number, got eps=inf$"),
    ("layernorm-eps-nan", lambda t: LayerNorm(C, eps=math.nan), ValueError,
     r"^eps must be a finite positive number, got eps=nan$"),
    ("layernorm-eps-str", lambda t: LayerNorm(C, eps="1e-5"), ValueError,
     r"^eps must be a finite positive number, got eps='1e-5'$"),
    ("pe-base-inf", lambda t: sinusoidal_encoding(10, C, base=math.inf), ValueError,
     r"^base must be a finite positive number, got base=inf$"),
    ("pe-base-nan", lambda t: sinusoidal_encoding(10, C, base=math.nan), ValueError,
     r"^base must be a finite positive number, got base=nan$"),
    ("pe-base-zero", lambda t: sinusoidal_encoding(10, C, base=0), ValueError,
     r"^base must be a finite positive number, got base=0$"),
    # issue 26：数值参数只在结果有限时接受；放不进内存的尺寸在分配之前被拒绝，消息给出要多少字节
    ("pe-base-1e-310", lambda t: sinusoidal_encoding(10, 512, base=1e-310), ValueError,
     r"^base must keep the frequencies 1/base\^\(2i/d_model\) finite and nonzero in float64, "
     r"got base=1e-310, d_model=512: the frequency of i=\d+ is inf$"),
    ("shift-base-1e-310", lambda t: shift_matrix(1, 512, base=1e-310), ValueError,
     r"^base must keep the frequencies"),
    ("transformer-d_model-2**20", lambda t: Transformer(TransformerConfig(
        src_vocab_size=10, tgt_vocab_size=10, d_model=2**20, num_heads=1)), ValueError,
     r"^Transformer with .*d_model=1048576.* would need about [\d.]+ TiB \(\d+ bytes\) of memory, "
     r"more than this machine has \([\d.]+ \w+\); choose smaller sizes$"),
    ("transformer-max_len-1e9", lambda t: Transformer(TransformerConfig(
        src_vocab_size=10, tgt_vocab_size=10, d_model=16, num_heads=4, max_len=10**9)), ValueError,
     r"max_len=1000000000.* would need about [\d.]+ GiB \(\d+ bytes\) of memory"),
    ("transformer-src_vocab-1e9", lambda t: Transformer(TransformerConfig(
        src_vocab_size=10**9, tgt_vocab_size=10, d_model=512, num_heads=8)), ValueError,
     r"src_vocab_size=1000000000.* would need about [\d.]+ TiB"),
    ("transformer-d_ff-2**36", lambda t: Transformer(TransformerConfig(
        src_vocab_size=10, tgt_vocab_size=10, d_model=16, num_heads=4, d_ff=2**36)), ValueError,
     r"d_ff=68719476736.* would need about [\d.]+ TiB"),
    ("transformer-layers-10**6", lambda t: Transformer(TransformerConfig(
        src_vocab_size=10, tgt_vocab_size=10, d_model=16, num_heads=4, d_ff=32,
        num_encoder_layers=10**6)), ValueError,
     r"num_encoder_layers=1000000.* would need about [\d.]+ GiB"),
    ("gpt-layers-10**6", lambda t: GPT(GPTConfig(vocab_size=10, d_model=16, num_heads=4,
        num_layers=10**6)), ValueError, r"^GPT with .*num_layers=1000000 would need about"),
    # 一个放不进内存的张量：torch 的分配器自己说要多少字节，这就够清楚（构件里不再另算一遍）
    ("embedding-1e9x512", lambda t: TokenEmbedding(10**9, 512), RuntimeError,
     r"can't allocate memory: you tried to allocate 2048000000000 bytes"),
    ("ffn-d_ff-2**40", lambda t: PositionWiseFFN(16, 2**40), RuntimeError,
     r"can't allocate memory: you tried to allocate 70368744177664 bytes"),
    ("mha-d_model-2**20", lambda t: MultiHeadAttention(2**20, 1), RuntimeError,
     r"can't allocate memory: you tried to allocate 4398046511104 bytes"),
    ("beam-size-10**7", lambda t: beam_search(tiny_model(), torch.tensor([[5, 6]]), 1, 2, max_len=5,
        beam_size=10**7), ValueError,
     r"^beam_size must be <= the number of distinct outputs of at most max_len=5 tokens "
     r"\(V \+ V\*\*2 \+ \.\.\. with V=\d+\) = \d+, got beam_size=10000000$"),
    ("beam-alpha-1e308", lambda t: beam_search(tiny_model(), torch.tensor([[5, 6]]), 1, 2, max_len=5,
        alpha=1e308), ValueError,
     r"^alpha must keep the length penalty \(\(5 \+ max_len\) / 6\)\*\*alpha finite in float32, "
     r"got alpha=1e\+308, max_len=5$"),
    ("beam-size-10**7-big-vocab", lambda t: beam_search(tiny_model(tgt_vocab_size=500), torch.tensor(
        [[5, 6]]), 1, 2, max_len=5, beam_size=10**7), ValueError,
     r"^beam_search with B=1, beam_size=10000000 would need about [\d.]+ GiB"),
    ("pe-module-base-inf", lambda t: PositionalEncoding(C, base=-math.inf), ValueError,
     r"^base must be a finite positive number, got base=-inf$"),
    ("shift-base-inf", lambda t: shift_matrix(1, C, base=math.inf), ValueError,
     r"^base must be a finite positive number, got base=inf$"),
    ("pe-max_len-float", lambda t: sinusoidal_encoding(10.0, C), ValueError,
     r"^max_len must be a positive integer, got max_len=10.0$"),
    ("pe-max_len-bool", lambda t: sinusoidal_encoding(True, C), ValueError,
     r"^max_len must be a positive integer, got max_len=True$"),
    ("gpt-temperature-inf", lambda t: _gpt().generate(SRC, 2, temperature=math.inf),
     ValueError, r"^temperature must be a finite positive number, got temperature=inf$"),
    ("gpt-temperature-nan", lambda t: _gpt().generate(SRC, 2, temperature=math.nan),
     ValueError, r"^temperature must be a finite positive number, got temperature=nan$"),
    ("gpt-temperature-underflow", lambda t: _gpt().generate(SRC, 2, temperature=1e-45),
     ValueError, r"^temperature=1e-45 is too small: logits / temperature overflows torch.float32; "
     r"use greedy=True to always take the most likely token$"),
    ("gpt-top_k-float", lambda t: _gpt().generate(SRC, 2, top_k=2.5), ValueError,
     r"^top_k must be a positive integer, got top_k=2.5$"),
    ("beam-alpha-inf", lambda t: beam_search(tiny_model(), SRC, 2, 3, max_len=4, alpha=math.inf),
     ValueError, r"^alpha must be a finite number >= 0, got alpha=inf$"),
    ("beam-alpha-nan", lambda t: beam_search(tiny_model(), SRC, 2, 3, max_len=4, alpha=math.nan),
     ValueError, r"^alpha must be a finite number >= 0, got alpha=nan$"),
    ("warmup-d_model-zero", lambda t: warmup_lr(1, 0, 4000), ValueError,
     r"^d_model must be a positive integer, got d_model=0$"),
    ("warmup-factor-inf", lambda t: warmup_lr(1, 512, 4000, factor=math.inf), ValueError,
     r"^factor must be a finite number >= 0, got factor=inf$"),
    ("warmup-factor-nan", lambda t: warmup_lr(1, 512, 4000, factor=math.nan), ValueError,
     r"^factor must be a finite number >= 0, got factor=nan$"),
    ("warmup-factor-negative", lambda t: warmup_lr(1, 512, 4000, factor=-1.0), ValueError,
     r"^factor must be a finite number >= 0, got factor=-1.0$"),
    ("warmup-step-float", lambda t: warmup_lr(1.5, 512, 4000), ValueError,
     r"^step must be a positive integer, got step=1.5$"),
    ("warmup-warmup-zero", lambda t: warmup_lr(1, 512, 0), ValueError,
     r"^warmup must be a positive integer, got warmup=0$"),
    # 训练循环
    ("train-max_seconds-inf", lambda t: _train(max_steps=None, max_seconds=math.inf), ValueError,
     r"^max_seconds must be a finite positive number, got max_seconds=inf$"),
    ("train-max_seconds-nan", lambda t: _train(max_seconds=math.nan), ValueError,
     r"^max_seconds must be a finite positive number, got max_seconds=nan$"),
    ("train-max_seconds-negative", lambda t: _train(max_seconds=-1), ValueError,
     r"^max_seconds must be a finite positive number, got max_seconds=-1$"),
    ("train-max_steps-float", lambda t: _train(max_steps=1.5), ValueError,
     r"^max_steps must be a positive integer, got max_steps=1.5$"),
    ("train-lr_factor-inf", lambda t: _train(lr_factor=math.inf), ValueError,
     r"^lr_factor must be a finite number >= 0, got lr_factor=inf$"),
    ("train-lr_factor-nan", lambda t: _train(lr_factor=math.nan), ValueError,
     r"^lr_factor must be a finite number >= 0, got lr_factor=nan$"),
    ("train-diverges", lambda t: _train(max_steps=5, lr_factor=1e30), ValueError,
     r"^training diverged: the loss became (nan|inf) at step \d; lower lr_factor=1e\+30 "
     r"or raise warmup=400$"),
    ("train-seed-huge", lambda t: _train(seed=2**70), ValueError,
     r"^seed must be in \[0, 2\*\*32\) = \[0, 4294967296\), got seed=1180591620717411303424$"),
    ("train-seed-negative", lambda t: _train(seed=-1), ValueError,
     r"^seed must be in \[0, 2\*\*32\) = \[0, 4294967296\), got seed=-1$"),
    ("train-seed-float", lambda t: _train(seed=1.0), TypeError,
     r"^seed must be an integer, got seed=1.0$"),
    ("train-smoothing-nan", lambda t: _train(smoothing=math.nan), ValueError,
     r"^smoothing must be in \[0, 1\), got smoothing=nan$"),
    ("train-batch_size-zero", lambda t: _train(batch_size=0), ValueError,
     r"^batch_size must be a positive integer, got batch_size=0$"),
    ("train-no-limit", lambda t: _train(max_steps=None), ValueError,
     r"^give max_steps or max_seconds \(or both\), got neither$"),
    ("train-not-a-translation-model", lambda t: train(torch.nn.Linear(2, 2), EXAMPLES, max_steps=1),
     TypeError, r"^model.config must be a TransformerConfig, got NoneType$"),
    ("train-no-examples", lambda t: train(tiny_model(), [], max_steps=1), ValueError,
     r"^examples must not be empty$"),
    ("pad-nothing", lambda t: pad_sequences([], 0), ValueError, r"^sequences must not be empty$"),
    ("build-seed-huge", lambda t: new_translator(SRC_VOCAB, TGT_VOCAB, seed=2**64), ValueError,
     r"^seed must be in \[0, 2\*\*32\) = \[0, 4294967296\), got seed=18446744073709551616$"),
    # 损失：ignore_index 与 F.cross_entropy 一致，其余编号必须在 [0, V) 内
    ("loss-target-float", lambda t: label_smoothed_cross_entropy(LOGITS, TARGET.float()),
     TypeError, r"^target must be an integer tensor, got dtype=torch.float32$"),
    ("loss-target-too-big", lambda t: label_smoothed_cross_entropy(LOGITS, TARGET + 3),
     ValueError, r"^target must be in \[0, V\) = \[0, 7\), got 7$"),
    ("loss-target-negative", lambda t: label_smoothed_cross_entropy(LOGITS, TARGET - 5),
     ValueError, r"^target must be in \[0, V\) = \[0, 7\), got -4$"),
    ("loss-target-not-ignored",
     lambda t: label_smoothed_cross_entropy(LOGITS, TARGET.masked_fill(TARGET == 0, -100)),
     ValueError, r"^target must be in \[0, V\) = \[0, 7\), got -100$"),
    ("loss-ignore_index-float", lambda t: label_smoothed_cross_entropy(LOGITS, TARGET, 0.1, 0.5),
     TypeError, r"^ignore_index must be an integer, got ignore_index=0.5$"),
    ("loss-logits-int", lambda t: label_smoothed_cross_entropy(LOGITS.long(), TARGET), TypeError,
     r"^logits must be a floating-point tensor, got dtype=torch.int64; "
     r"convert it with logits.float\(\)$"),
    ("loss-smoothing-one", lambda t: label_smoothed_cross_entropy(LOGITS, TARGET, 1.0), ValueError,
     r"^smoothing must be in \[0, 1\), got smoothing=1.0$"),
    ("loss-target-list", lambda t: label_smoothed_cross_entropy(LOGITS, [[1, 2, 3]]), ValueError,
     r"^target must have shape logits.shape\[:-1\] = \(2, 3\), got list$"),
    # 解码：<bos>/<eos> 编号
    ("greedy-bos-float", lambda t: greedy_decode(tiny_model(), SRC, 2.0, 3, max_len=4), TypeError,
     r"^bos_id must be an integer, got bos_id=2.0$"),
    ("greedy-bos-too-big", lambda t: greedy_decode(tiny_model(), SRC, 12, 3, max_len=4),
     ValueError, r"^bos_id must be in \[0, tgt_vocab_size\) = \[0, 12\), got bos_id=12$"),
    ("greedy-eos-negative", lambda t: greedy_decode(tiny_model(), SRC, 2, -1, max_len=4),
     ValueError, r"^eos_id must be in \[0, tgt_vocab_size\) = \[0, 12\), got eos_id=-1$"),
    ("greedy-eos-none", lambda t: greedy_decode(tiny_model(), SRC, 2, None, max_len=4), TypeError,
     r"^eos_id must be an integer, got eos_id=None$"),
    ("beam-bos-tensor", lambda t: beam_search(tiny_model(), SRC, torch.tensor(2), 3, max_len=4),
     TypeError, r"^bos_id must be an integer, got bos_id=tensor\(2\)$"),
    ("beam-size-float", lambda t: beam_search(tiny_model(), SRC, 2, 3, beam_size=2.0, max_len=4),
     ValueError, r"^beam_size must be a positive integer, got beam_size=2.0$"),
    ("greedy-src-ids-too-big", lambda t: greedy_decode(tiny_model(), SRC + 10, 2, 3, max_len=4),
     ValueError, r"^ids must be in \[0, vocab_size\) = \[0, 12\), got 14$"),
    ("greedy-max_len-past-the-model", lambda t: greedy_decode(tiny_model(), SRC, 2, 3, max_len=20),
     ValueError, r"^max_len \+ 1 \(for <bos>\) must be <= model.config.max_len=20, got max_len=20$"),
    ("greedy-max_len-zero", lambda t: greedy_decode(tiny_model(), SRC, 2, 3, max_len=0), ValueError,
     r"^max_len must be a positive integer, got max_len=0$"),
    ("greedy-model-linear", lambda t: greedy_decode(torch.nn.Linear(2, 2), SRC, 2, 3), TypeError,
     r"^model must be a Transformer, got Linear$"),
    ("greedy-src-1d", lambda t: greedy_decode(tiny_model(), SRC[0], 2, 3), ValueError,
     r"^src must have shape \(B, S\), got shape \(3,\)$"),
    ("greedy-use_cache-int", lambda t: greedy_decode(tiny_model(), SRC, 2, 3, max_len=4, use_cache=1),
     TypeError, r"^use_cache must be a bool, got use_cache=1$"),
    # dtype 不符：消息写明两个 dtype 和改法
    ("mha-fp16-input", lambda t: MultiHeadAttention(C, 4)(x16.half(), x16.half(), x16.half()),
     TypeError, r"^query has dtype=torch.float16 but the module's weights have dtype=torch.float32; "
     r"convert the input with query.to\(torch.float32\) or the module with .to\(torch.float16\)$"),
    ("mha-int64-input", lambda t: MultiHeadAttention(C, 4)(x16.long(), x16, x16), TypeError,
     r"^query must be a floating-point tensor, got dtype=torch.int64; convert it with query.float\(\)$"),
    ("mha-fp64-value", lambda t: MultiHeadAttention(C, 4)(x16, x16, x16.double()), TypeError,
     r"^value has dtype=torch.float64 but the module's weights have dtype=torch.float32"),
    ("sdpa-int64", lambda t: attention_with_weights(x16.long(), x16, x16), TypeError,
     r"^query must be a floating-point tensor, got dtype=torch.int64"),
    ("sdpa-key-fp16", lambda t: attention_with_weights(x16, x16.half(), x16), TypeError,
     r"^key and query must have the same dtype, got key dtype=torch.float16, "
     r"query dtype=torch.float32; convert one with .to\(dtype\)$"),
    ("sdpa-value-bf16", lambda t: attention_with_weights(x16, x16, x16.bfloat16()),
     TypeError, r"^value and query must have the same dtype, got value dtype=torch.bfloat16"),
    ("layernorm-int64", lambda t: LayerNorm(C)(x16.long()), TypeError,
     r"^x must be a floating-point tensor, got dtype=torch.int64; convert it with x.float\(\)$"),
    ("layernorm-bool", lambda t: LayerNorm(C)(x16.bool()), TypeError,
     r"^x must be a floating-point tensor, got dtype=torch.bool"),
    ("ffn-int64", lambda t: PositionWiseFFN(C, 32)(x16.long()), TypeError,
     r"^x must be a floating-point tensor, got dtype=torch.int64"),
    ("ffn-fp64", lambda t: PositionWiseFFN(C, 32)(x16.double()), TypeError,
     r"^x has dtype=torch.float64 but the module's weights have dtype=torch.float32"),
    ("encoder-layer-fp16", lambda t: EncoderLayer(C, 4, 32)(x16.half()), TypeError,
     r"^query has dtype=torch.float16 but the module's weights have dtype=torch.float32"),
    # 很长的输入：消息只引用开头并注明长度
    ("activation-long-str", lambda t: EncoderLayer(C, 4, 32, activation="好" * 100_000),
     ValueError, r"^activation must be one of 'relu', 'gelu', 'gelu_tanh', "
     r"got activation='好{60}'… \(100000 characters\)$"),
    ("vocab-encode-long-str", lambda t: SRC_VOCAB.encode("好" * 500), TypeError,
     r"^tokens must be a list of tokens, not the str '好{60}'… \(500 characters\); tokenize it first$"),
    ("norm_first-long-str", lambda t: EncoderLayer(C, 4, 32, norm_first="y" * 5000), TypeError,
     r"^norm_first must be a bool, got norm_first='y{60}'… \(5000 characters\)$"),
    ("config-d_model-long-list", lambda t: GPTConfig(vocab_size=list(range(10_000))), ValueError,
     r"^vocab_size must be a positive integer, got vocab_size=\[0, 1, 2, .*… \(\d+ characters in its repr\)$"),
    # 翻译器
    ("translate-long-unknown", lambda t: _translate(LONG), ValueError,
     r"^sentence '好{60}'… \(40000 characters\) has words not in the source vocabulary: "
     r"\['好好'\]; the model can only translate words it was trained on$"),
    ("translate-many-unknown", lambda t: _translate("上海广州深圳杭州南京天津重庆成都武汉西安苏州"),
     ValueError, r"^sentence '上海广州深圳杭州南京天津重庆成都武汉西安苏州' has words not in the source vocabulary: "
     r"\['[^']+'(, '[^']+'){9}\]… \(1\d in all\); the model can only translate words it was trained on$"),
    ("translate-too-many-words", lambda t: _translate("我明天去北京。" * 20), ValueError,
     r"^sentence '我明天去北京。我明天去北京。.*'… \(140 characters\) has 100 words, but the model reads "
     r"at most max_len=80; split it into shorter sentences$"),
    ("translate-only-spaces", lambda t: _translate("  "), ValueError,
     r"^sentence must contain at least one word, got '  '$"),
    ("translate-not-str", lambda t: _translate(123), TypeError,
     r"^sentences must be a str or a list of str, got int$"),
    ("translate-checked-not-str", lambda t: tiny_translator().translate_checked(5), TypeError,
     r"^sentences must be a str or a list of str, got int$"),
    ("translate-list-of-int", lambda t: _translate(["我明天去北京。", 5]), TypeError,
     r"^sentences must be a str or a list of str, got list$"),
    ("translate-beam-zero", lambda t: _translate("我明天去北京。", beam_size=0), ValueError,
     r"^beam_size must be a positive integer, got beam_size=0$"),
    ("save-metric-object", lambda t: _save(t, bleu=object()), TypeError,
     r"^metrics must be numbers or strings, got bleu=<object object at .*> of type object$"),
    ("save-metric-tensor", lambda t: _save(t, bleu=torch.tensor([1.0, 2.0])), TypeError,
     r"^metrics must be numbers or strings, got bleu=tensor\(\[1., 2.\]\) of type Tensor$"),
    ("save-metric-list", lambda t: _save(t, losses=[1.0, 2.0]), TypeError,
     r"^metrics must be numbers or strings, got losses=\[1.0, 2.0\] of type list$"),
    ("save-to-directory", lambda t: save_checkpoint(tiny_translator(), t), ValueError,
     r"^path must be a regular file, got path='.*'$"),
    ("save-to-dev-null", lambda t: save_checkpoint(tiny_translator(), "/dev/null"), ValueError,
     r"^path must be a regular file, got path='/dev/null'$"),
    ("save-under-a-file", lambda t: _save_under_a_file(t), OSError, r"File exists|Not a directory"),
    ("fit-corpus-type", lambda t: fit_translator(corpus=[]), TypeError,
     r"^corpus must be a TranslationCorpus or None, got list$"),
    # 语料
    ("corpus-valid_fraction-one", lambda t: generate_corpus(valid_fraction=1.0), ValueError,
     r"^valid_fraction must be in \[0, 1\), got valid_fraction=1.0$"),
    ("corpus-seed-str", lambda t: generate_corpus(seed="0"), TypeError, r"^seed must be an int, got seed='0'$"),
    ("corpus-held_out-slot", lambda t: generate_corpus(held_out=[("verb", "喝", "subject", "她")]), ValueError,
     r"^held_out slot must be one of \('subject', 'time', 'mood', 'action', 'place'\), got slot='verb'"),
    ("corpus-held_out-value", lambda t: generate_corpus(held_out=[("subject", "它", "action", "喝绿茶")]),
     ValueError, r"^held_out value '它' is not a subject of the grammar"),
    ("corpus-held_out-pair", lambda t: generate_corpus(held_out=[("subject", "她")]), ValueError,
     r"^held_out must hold \(slot, value, slot, value\) tuples, got held_out entry \('subject', '她'\)$"),
    # 所有过去时的否定句都留出 → didn't/没 在训练集里一次也不出现
    ("corpus-held_out-every-past-negative", lambda t: generate_corpus(held_out=[
        ("mood", "negative", "time", "昨天"), ("mood", "negative", "time", "上周")]), ValueError,
     r"^held_out removes every training sentence containing \[\"didn't\", '没'\]; hold out fewer"),
    ("save-not-a-translator", lambda t: save_checkpoint(tiny_translator().model, t / "m.safetensors"), TypeError,
     r"^translator must be a Translator, got Transformer$"),
    # 分词器、翻译器的分词规则、留下注意力权重
    ("zh-tokenizer-split-one-part", lambda t: ZhTokenizer(splits=[("不去",)]), ValueError,
     r"^splits must hold sequences of at least two non-empty str, got the entry \('不去',\)$"),
    ("zh-tokenizer-split-empty", lambda t: ZhTokenizer(splits=[("不", "")]), ValueError,
     r"^splits must hold sequences of at least two non-empty str, got the entry \('不', ''\)$"),
    ("tokenize-zh-two-modes", lambda t: tokenize_zh("我", cut_all=True, search=True), ValueError,
     r"^cut_all and search are two different modes; give at most one$"),
    ("tokenize-zh-bytes", lambda t: ZhTokenizer()(b"x"), TypeError, r"^text must be a str, got bytes$"),
    ("detokenize-proper-nouns-str", lambda t: detokenize_en(["i"], "Beijing"), TypeError,
     r"^proper_nouns must be a list of words, not the str 'Beijing'$"),
    ("translator-tokenizer-not-callable", lambda t: Translator(tiny_translator().model, SRC_VOCAB,
     TGT_VOCAB, tokenizer="jieba"), TypeError, r"^tokenizer must be callable, got str$"),
    ("translator-in_domain-not-callable", lambda t: Translator(tiny_translator().model, SRC_VOCAB,
     TGT_VOCAB, in_domain=3), TypeError, r"^in_domain must be callable, got int$"),
    ("recording-weights-not-a-layer", lambda t: recording_weights(MultiHeadAttention(C, 4)).__enter__(),
     TypeError, r"^layers must be EncoderLayer or DecoderLayer, got MultiHeadAttention$"),
    # issue 33 的外部 fuzz 找到的：结束在 torch 内部的两处
    ("layernorm-float64-in-float32", lambda t: LayerNorm(C)(torch.randn(2, C, dtype=torch.float64)),
     TypeError, r"^x has dtype=torch.float64 but the module's weights have dtype=torch.float32; "),
    ("cache-cross-attention-other-batch", lambda t: _cache_twice((2, 3), static_kv=True),
     ValueError, r"^the cache holds batch size 2 but got batch size 3; use cache.reorder"),
    # 第二次 fuzz run（issue 26）找到的：torch 内部的 RuntimeError、Python 的 "not iterable"
    ("layernorm-d-model-2**62", lambda t: LayerNorm(2**62), RuntimeError,
     r"^Storage size calculation overflowed with sizes=\[4611686018427387904\]"),
    ("attn-mask-meta", lambda t: MultiHeadAttention(C, 4)(*[torch.zeros(2, 3, C)] * 3,
     attn_mask=torch.ones(3, 3, dtype=torch.bool, device="meta")), ValueError,
     r"^attn_mask must hold values, got a meta tensor \(a shape without data\)$"),
    ("key-padding-mask-meta", lambda t: MultiHeadAttention(C, 4)(*[torch.zeros(2, 3, C)] * 3,
     key_padding_mask=torch.ones(2, 3, dtype=torch.bool, device="meta")), ValueError,
     r"^key_padding_mask must hold values, got a meta tensor \(a shape without data\)$"),
    ("src-ids-meta", lambda t: tiny_model()(torch.ones(1, 3, dtype=torch.long, device="meta"),
     torch.ones(1, 2, dtype=torch.long)), ValueError, r"must hold values, got a meta tensor"),
    ("vocab-none", lambda t: Vocab(None), TypeError,
     r"^sentences must be an iterable of token lists, got NoneType$"),
    ("vocab-int-tokens", lambda t: Vocab([[1, 2]]), TypeError,
     r"^sentences must hold str tokens, got 1 of type int$"),
    ("vocab-from-itos-int", lambda t: Vocab.from_itos([*SRC_VOCAB.itos, 3]), TypeError,
     r"^itos must hold str tokens, got 3 of type int$"),
    ("vocab-decode-float", lambda t: SRC_VOCAB.decode([1.5]), TypeError, r"^ids must be integers, got 1.5$"),
    ("vocab-decode-float-tensor", lambda t: SRC_VOCAB.decode(torch.tensor([1.5])), TypeError,
     r"^ids must be integers, got 1.5$"),
    ("vocab-decode-2d", lambda t: SRC_VOCAB.decode(torch.ones(2, 2, dtype=torch.long)), ValueError,
     r"^ids must be one sequence \(1-D\), got a tensor of shape \(2, 2\)$"),
]  # fmt: skip


@pytest.mark.parametrize(
    "call, error, message",
    [row[1:] for row in BAD_INPUTS + API],
    ids=[row[0] for row in BAD_INPUTS + API],
)
def test_bad_input_raises_clear_error(tmp_path, call, error, message):
    with pytest.raises(error, match=message):
        call(tmp_path)


# ---------------------------------------------------------------- 检查点文件（safetensors）
@pytest.fixture(scope="module")
def good_file(tmp_path_factory):
    """一个好的检查点；每一行在它的副本上做一处改动。"""
    path = tmp_path_factory.mktemp("good") / "good.safetensors"
    save_checkpoint(tiny_translator(), path, test_bleu=12.5)
    return path


def _bytes(data):
    return lambda good, path: path.write_bytes(data)


def _cut(keep):
    return lambda good, path: path.write_bytes(keep(good.read_bytes()))


def _resave(meta=None, tensors=None):
    """读出好文件的元数据和张量，改一处，用 safetensors 自己的 save_file 写回。"""

    def make(good, path):
        metadata, state = read_metadata(good), load_file(good)
        if meta:
            meta(metadata)
        if tensors:
            tensors(state)
        save_file(state, path, metadata={"tinyformer": json.dumps(metadata)})

    return make


def _config(**changes):
    return _resave(meta=lambda m: m["config"].update(changes))


def _duplicate_name(good, path):
    """头里同一个名字出现两次，指向两份不同的数据（旧 zip 格式曾悄悄读后一份）。"""
    data = good.read_bytes()
    n = int.from_bytes(data[:8], "little")
    header = data[8 : 8 + n].decode()
    entry = re.search(r'"(output\.weight|tgt_embed[^"]*)":(\{[^}]*\})', header)
    name, spec = entry.group(1), json.loads(entry.group(2))
    start, end = spec["data_offsets"]
    body = data[8 + n :]
    spec["data_offsets"] = [len(body), len(body) + end - start]
    extra = f',"{name}":{json.dumps(spec)}'
    new = header[:-1].rstrip() + extra + "}"
    new += " " * (-len(new) % 8)
    path.write_bytes(len(new).to_bytes(8, "little") + new.encode() + body + body[start:end])


def _special(kind):
    def make(good, path):
        if kind == "pickle":
            torch.save({"format": "tinyformer-translator-1", "payload": Payload()}, path)
        elif kind == "pickle-legacy":
            torch.save({"payload": Payload()}, path, _use_new_zipfile_serialization=False)
        elif kind == "directory":
            path.mkdir()
        elif kind == "foreign":
            save_file({"w": torch.ones(2)}, path)

    return make


def _bigger(state):
    bigger = new_translator(SRC_VOCAB, TGT_VOCAB, seed=0, d_model=32, num_layers=1, d_ff=32)
    state.clear()
    state.update({k: v for k, v in bigger.model.state_dict().items() if k != "output.weight"})


DAMAGED = r"not a valid safetensors file \(truncated or damaged: "
PICKLE = r"a torch.save \(pickle\) file: unsafe to load, .*convert it with: python -m "
META = r"has an invalid translator description: "
# (编号, 做出文件 (好文件, 路径), reason, 消息正则（接在 "'路径': " 之后）)
CHECKPOINTS = [
    ("empty-file", _bytes(b""), "damaged", DAMAGED),
    ("truncated-half", _cut(lambda d: d[: len(d) // 2]), "damaged", DAMAGED),
    ("truncated-last-byte", _cut(lambda d: d[:-1]), "damaged", DAMAGED),
    ("truncated-header", _cut(lambda d: d[:100]), "damaged", DAMAGED),
    ("random-bytes", _bytes(bytes(range(256)) * 16), "damaged", DAMAGED),
    ("text-file", _bytes("我明天去北京。\n".encode()), "damaged", DAMAGED),
    ("appended-garbage", _cut(lambda d: d + b"\0" * 100), "damaged", DAMAGED),
    ("duplicate-weight-name", _duplicate_name, "damaged", DAMAGED),
    ("pickle-os-system", _special("pickle"), "pickle", PICKLE),
    ("pickle-legacy-format", _special("pickle-legacy"), "pickle", PICKLE),
    ("a-directory", _special("directory"), "not_a_file", r"is a directory"),
    ("foreign-safetensors", _special("foreign"), "metadata", r"without tinyformer's metadata"),
    ("old-format", _resave(meta=lambda m: m.update(format="x")), "metadata",
     r"is not a tinyformer translator \(format='tinyformer-translator-2'\)"),
    ("missing-config", _resave(meta=lambda m: m.pop("config")), "metadata", META + r"missing 'config'"),
    ("config-unknown-field", _config(n_layers=2), "metadata", META + r".*unexpected keyword argument 'n_layers'"),
    ("config-d_model-zero", _config(d_model=0), "metadata", META + r"d_model must be a positive"),
    ("config-heads-not-dividing", _config(num_heads=3), "metadata", META + r"d_model must be divisible"),
    ("config-max_len-2**31", _config(max_len=2**31), "metadata", META + r".*would need about"),
    ("config-max_len-1", _config(max_len=1), "metadata", META + r".*needs max_len >= 2"),
    ("config-pad_id-not-vocab-pad", _config(pad_id=4), "metadata",
     META + r"config pad_id=4 but <pad> is id 0 in src_itos"),
    ("src_itos-short", _resave(meta=lambda m: m["src_itos"].pop()), "metadata",
     META + r"len\(src_vocab\) must equal the model's src_vocab_size=14, got 13"),
    ("tgt_itos-duplicate", _resave(meta=lambda m: m["tgt_itos"].__setitem__(-1, "i")), "metadata",
     META + r"itos must start with"),
    ("metrics-list", _resave(meta=lambda m: m.update(metrics=[1.0])), "metadata", META),
    ("weight-missing", _resave(tensors=lambda s: s.pop("encoder_layers.0.norm1.bias")), "mismatch",
     r"does not match the model: .*Missing key\(s\).*encoder_layers.0.norm1.bias"),
    ("weight-extra", _resave(tensors=lambda s: s.__setitem__("evil", torch.ones(1))), "mismatch",
     r"does not match the model: .*Unexpected key\(s\).*evil"),
    ("weight-int64", _resave(tensors=lambda s: s.__setitem__("encoder_layers.0.norm1.bias", s["encoder_layers.0.norm1.bias"].long())),
     "mismatch", r"'encoder_layers.0.norm1.bias' has dtype torch.int64, the model torch.float32"),
    ("flipped-byte-in-a-weight", _cut(lambda d: d[:-9] + bytes([d[-9] ^ 0x40]) + d[-8:]), "damaged",
     r"its tensor data does not match its SHA-256 \(damaged\)"),
    ("weights-of-another-model", _resave(tensors=_bigger), "mismatch",
     r"size mismatch for src_embed.embedding.weight"),
    ("one-nan-weight", _resave(tensors=lambda s: s["src_embed.embedding.weight"].__setitem__((0, 0), math.nan)),
     "damaged", r"has 1 non-finite values \(nan or inf\) in 'src_embed.embedding.weight'"),
]  # fmt: skip


@pytest.mark.parametrize(
    "make, reason, message", [row[1:] for row in CHECKPOINTS], ids=[row[0] for row in CHECKPOINTS]
)
def test_bad_checkpoint_names_its_real_cause(tmp_path, good_file, make, reason, message, capfd):
    path = tmp_path / "bad.safetensors"
    make(good_file, path)
    with pytest.raises(WeightsError) as info:
        load_checkpoint(path)
    text = str(info.value)
    assert text.startswith(f"{str(path)!r}: ") and "\n" not in text and len(text) < 900, text
    assert info.value.reason == reason and re.search(message, text), text
    assert "pwned" not in capfd.readouterr().out  # pickle 里的 os.system 没有运行


def test_numpy_metrics_are_saved_as_plain_numbers(tmp_path):
    save_checkpoint(
        tiny_translator(),
        tmp_path / "m.safetensors",
        bleu=np.float64(12.5),
        steps=np.int64(3),
        ok=True,
    )
    metrics = load_checkpoint(tmp_path / "m.safetensors").metrics
    assert metrics == {"bleu": 12.5, "steps": 3, "ok": True}
    assert type(metrics["bleu"]) is float and type(metrics["steps"]) is int


# ---------------------------------------------------------------- 命令行（同一进程里）
@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "tiny.safetensors"
    save_checkpoint(tiny_translator(), path)
    return path


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory, good_file):
    folder = tmp_path_factory.mktemp("bad")
    files = {}
    for name, make in [
        ("empty", _bytes(b"")),
        ("random", _bytes(bytes(range(256)) * 16)),
        ("payload", _special("pickle")),
        ("hostile", _config(max_len=2**31)),
        ("other", _resave(tensors=_bigger)),
    ]:
        files[name] = folder / f"{name}.safetensors"
        make(good_file, files[name])
    return files


USAGE = r"（用 --help 查看用法）"
TMP = r"'/[^']+'"  # 临时文件夹的路径
NUMBER = r"应为有限的正数，得到 "
IN_RANGE = r"应为\[0, 2\*\*32\) 内的整数，得到 "
# (编号, 参数（{tmp}、{model} 等换成文件）, 退出码, stderr 的那一行（正则，去掉开头的 "错误："）)
TRAIN_CLI = [
    ("steps-zero", ["--steps", "0"], 2, r"--steps 应为正整数，得到 '0'" + USAGE),
    ("steps-negative", ["--steps=-3"], 2, r"--steps 应为正整数，得到 '-3'" + USAGE),
    ("steps-float", ["--steps", "1.5"], 2, r"--steps 应为正整数，得到 '1.5'" + USAGE),
    ("steps-word", ["--steps", "many"], 2, r"--steps 应为正整数，得到 'many'" + USAGE),
    ("seconds-inf", ["--seconds", "inf"], 2, r"--seconds " + NUMBER + "'inf'" + USAGE),
    ("seconds-nan", ["--seconds", "nan"], 2, r"--seconds " + NUMBER + "'nan'" + USAGE),
    ("seconds-1e400", ["--seconds", "1e400"], 2, r"--seconds " + NUMBER + "'1e400'" + USAGE),
    ("seconds-zero", ["--seconds", "0"], 2, r"--seconds " + NUMBER + "'0'" + USAGE),
    ("seconds-negative", ["--seconds=-5"], 2, r"--seconds " + NUMBER + "'-5'" + USAGE),
    ("seconds-word", ["--seconds", "soon"], 2, r"--seconds " + NUMBER + "'soon'" + USAGE),
    ("seed-2**70", ["--seed", str(2**70)], 2, r"--seed " + IN_RANGE + "'1180591620717411303424'" + USAGE),
    ("seed-negative", ["--seed=-1"], 2, r"--seed " + IN_RANGE + "'-1'" + USAGE),
    ("seed-float", ["--seed", "0.5"], 2, r"--seed " + IN_RANGE + "'0.5'" + USAGE),
    ("seed-5000-digits", ["--seed", "9" * 5000], 2, r"--seed " + IN_RANGE + "'9{60}'…（共 5000 个字符）" + USAGE),
    ("beam-size-zero", ["--beam-size", "0"], 2, r"--beam-size 应为正整数，得到 '0'" + USAGE),
    ("beam-size-100000", ["--steps", "1", "--beam-size", "100000", "--out", "{tmp}/m.safetensors"], 2,
     r"--beam-size 应不大于目标词表的大小 94，得到 100000" + USAGE),
    ("threads-zero", ["--threads", "0"], 2, r"--threads 应为不大于 1024 的正整数，得到 '0'" + USAGE),
    ("threads-10**9", ["--threads", str(10**9), "--out", "{tmp}/m.safetensors"], 2,
     r"--threads 应为不大于 1024 的正整数，得到 '1000000000'" + USAGE),
    ("out-empty", ["--out", ""], 2, r"--out 应为文件路径，得到 ''" + USAGE),
    ("out-spaces", ["--out", "  "], 2, r"--out 应为文件路径，得到 '  '" + USAGE),
    ("out-directory", ["--out", "{tmp}"], 2, r"--out " + TMP + " 不是普通文件的路径（是文件夹或设备）" + USAGE),
    ("out-dev-full", ["--out", "/dev/full"], 2, r"--out '/dev/full' 不是普通文件的路径（是文件夹或设备）" + USAGE),
    ("out-under-proc", ["--out", "/proc/zh_en.safetensors"], 2,
     r"--out '/proc/zh_en.safetensors' 写不进去：文件或文件夹不存在" + USAGE),
    ("out-under-a-file", ["--out", "{tmp}/file.txt/m.safetensors"], 2, r"--out " + TMP + " 写不进去：已经有同名的文件" + USAGE),
    ("out-long-path", ["--out", "/proc/" + "x" * 3000], 2,
     r"--out '/proc/x{194}'…（共 3006 个字符） 写不进去：文件或文件夹不存在" + USAGE),
]  # fmt: skip

UNKNOWN = r"：有模型没学过的词 \['好好'\]，模型只能翻译训练语料里的词"
CKPT = r"权重文件 " + TMP
TRANSLATE_CLI = [
    ("no-model-no-sentence", [], 2, r"缺少要翻译的句子" + USAGE),
    ("no-sentence", ["--model", "{model}"], 2, r"缺少要翻译的句子" + USAGE),
    ("beam-size-zero", ["--model", "{model}", "--beam-size", "0", "我"], 2, r"--beam-size 应为正整数，得到 '0'" + USAGE),
    ("beam-size-word", ["--model", "{model}", "--beam-size", "wide", "我"], 2,
     r"--beam-size 应为正整数，得到 'wide'" + USAGE),
    ("beam-size-above-vocab", ["--model", "{model}", "--beam-size", "100000", "我"], 2,
     r"--beam-size 应不大于目标词表的大小 11，得到 100000" + USAGE),
    ("model-missing", ["--model", "{tmp}/none.safetensors", "我"], 3, CKPT + r" 不存在"),
    ("model-directory", ["--model", "{tmp}", "我"], 3, CKPT + r" 不是普通文件（是文件夹或设备？）"),
    ("model-dev-null", ["--model", "/dev/null", "我"], 3, r"权重文件 '/dev/null' 不是普通文件（是文件夹或设备？）"),
    ("model-empty", ["--model", "{empty}", "我"], 3, CKPT + r" 已损坏或被截断（读不出完整的权重）"),
    ("model-random-bytes", ["--model", "{random}", "我"], 3, CKPT + r" 已损坏或被截断（读不出完整的权重）"),
    ("model-pickle-os-system", ["--model", "{payload}", "我"], 3, CKPT + r" 是 torch.save 写的 pickle 文件：.*不安全.*"
     r"python -m tinyformer.translation convert 旧.pt 新.safetensors"),
    ("model-hostile-config", ["--model", "{hostile}", "我"], 3, CKPT + r" 不是本书的翻译器检查点，或者里面的配置、词表不对"),
    ("model-other-weights", ["--model", "{other}", "我"], 3, CKPT + r" 里的权重与它的配置不符（名字或形状不对）"),
    ("convert-missing", ["convert", "{tmp}/none.pt", "{tmp}/n.safetensors"], 3, CKPT + r" 不存在"),
    ("convert-random-bytes", ["convert", "{random}", "{tmp}/n.safetensors"], 3, CKPT + r" 已损坏或被截断（读不出完整的权重）"),
    ("convert-os-system", ["convert", "{payload}", "{tmp}/n.safetensors"], 3,
     CKPT + r" 不安全：它的 pickle 要调用 posix.system，torch.load\(weights_only=True\) 拒绝了它，里面的代码没有运行"),
    ("convert-out-directory", ["convert", "{payload}", "{tmp}"], 2, r"NEW " + TMP + " 不是普通文件的路径（是文件夹或设备）" + USAGE),
    ("unknown-words-40k-chars", ["--model", "{model}", LONG], 4, r"无法翻译 '好{60}'…（共 40000 个字符）" + UNKNOWN),
    ("many-unknown-words", ["--model", "{model}", "上海广州深圳杭州南京天津重庆成都武汉西安苏州"], 4,
     r"无法翻译 '上海广州.*'：有模型没学过的词 \[.*\]…（共 1\d 个），模型只能翻译训练语料里的词"),
    ("too-many-words", ["--model", "{model}", "我明天去北京。" * 20], 4,
     r"无法翻译 '(我明天去北京。){8}我明天去'…（共 140 个字符）：句子太长，超过了模型的位置数 max_len，请拆成短句"),
    ("empty-sentence", ["--model", "{model}", ""], 4, r"无法翻译 ''：句子里没有词"),
    ("dash-sentence", ["--model", "{model}", "-好好"], 4, r"无法翻译 '-好好'：有模型没学过的词 \['-', '好好'\]，"
     r"模型只能翻译训练语料里的词"),
    ("dash-sentence-after-double-dash", ["--model", "{model}", "--", "-好好"], 4,
     r"无法翻译 '-好好'：有模型没学过的词 \['-', '好好'\]，模型只能翻译训练语料里的词"),
]  # fmt: skip
# argparse 自己发现的用法错误：照 argparse 的样子打印（用法一行 + "error: …"），退出码 2
ARGPARSE_CLI = [
    ("train-steps-no-value", "train", ["--steps"], r"argument --steps: expected one argument"),
    ("train-unknown-option", "train", ["--lr", "1"], r"unrecognized arguments: --lr 1"),
    ("train-ambiguous-prefix", "train", ["--s", "1"], r"ambiguous option: --s could match --seed, --steps, --seconds"),
    ("train-explicit-value-for-flag", "train", ["--no-progress=yes"], r"argument --no-progress: ignored explicit argument 'yes'"),
    ("translate-unknown-long-option", "translate", ["--temperature", "2", "我"], r"unrecognized arguments: --temperature"),
    ("translate-unknown-short-option", "translate", ["-x", "我"], r"unrecognized arguments: -x"),
    ("translate-model-no-value", "translate", ["--model"], r"argument --model: expected one argument"),
    ("convert-no-arguments", "convert", [], r"the following arguments are required: OLD, NEW"),
]  # fmt: skip


def _fill(argv, tmp_path, files):
    names = {"tmp": str(tmp_path), **{k: str(v) for k, v in files.items()}}
    return [a.format(**names) if "{" in a else a for a in argv]


def _command(argv):
    return (cli.convert_main, argv[1:]) if argv[:1] == ["convert"] else (cli.translate_main, argv)


@pytest.mark.parametrize(
    "command, argv, code, message",
    [(cli.train_main, *row[1:]) for row in TRAIN_CLI] + [(None, *row[1:]) for row in TRANSLATE_CLI],
    ids=[f"train-{row[0]}" for row in TRAIN_CLI] + [f"translate-{row[0]}" for row in TRANSLATE_CLI],
)  # fmt: skip
def test_bad_cli_argument_gives_one_line(
    tmp_path, capsys, monkeypatch, model_file, bad_files, command, argv, code, message
):
    (tmp_path / "file.txt").write_text("x")
    # 训练绝不能开始：参数要在那之前全部检查完
    monkeypatch.setattr(cli, "train_and_score", lambda *a, **k: pytest.fail("trained"))
    argv = _fill(argv, tmp_path, {"model": model_file, **bad_files})
    if command is None:
        command, argv = _command(argv)
    status, out, err = run_cli(command, argv, capsys)
    err = "".join(
        line for line in err.splitlines(True) if not line.startswith("提示：没有给 --model")
    )
    assert status == code
    assert out == ""
    assert err.startswith("错误：") and err.endswith("\n") and err.count("\n") == 1, err
    assert len(err) < 500 and "Traceback" not in err
    assert re.fullmatch(message, err[len("错误：") : -1]), err


@pytest.mark.parametrize(
    "name, argv, message", [r[1:] for r in ARGPARSE_CLI], ids=[r[0] for r in ARGPARSE_CLI]
)
def test_argparse_usage_errors_are_printed_as_argparse_prints_them(capsys, name, argv, message):
    status, out, err = run_cli(cli.COMMANDS[name], argv, capsys)
    assert status == 2 and out == "" and err.startswith("usage: ") and "Traceback" not in err
    assert re.search(r"error: " + message, err), err


# ---------------------------------------------------------------- 命令行（真的子进程）
SUBPROCESS_CLI = [
    ("train-seconds-inf", ["tinyformer.translation", "train", "--seconds", "inf"], 2,
     "错误：--seconds 应为有限的正数，得到 'inf'（用 --help 查看用法）\n"),
    ("train-out-dev-full", ["tinyformer.translation", "train", "--steps", "1", "--out", "/dev/full"], 2,
     "错误：--out '/dev/full' 不是普通文件的路径（是文件夹或设备）（用 --help 查看用法）\n"),
    ("translate-random-bytes", ["tinyformer.translation", "translate", "--model", "{random}", "我"], 3, None),
]  # fmt: skip


@pytest.mark.parametrize(
    "argv, code, expected", [row[1:] for row in SUBPROCESS_CLI], ids=[r[0] for r in SUBPROCESS_CLI]
)
def test_cli_subprocess_prints_no_traceback(bad_files, argv, code, expected):
    argv = _fill(argv, bad_files["random"].parent, bad_files)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    result = subprocess.run(
        [sys.executable, "-m", *argv], capture_output=True, text=True, env=env, timeout=300
    )
    assert result.returncode == code and result.stdout == ""
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    if expected is None:
        assert result.stderr.startswith(f"错误：权重文件 {str(bad_files['random'])!r} 已损坏")
    else:
        assert result.stderr == expected


# ---------------------------------------------------------------- 计数
def test_count_of_bad_inputs():
    tables = {
        "constructor/forward": BAD_INPUTS,
        "API": API,
        "checkpoint files": CHECKPOINTS,
        "train CLI in-process": TRAIN_CLI,
        "translate CLI in-process": TRANSLATE_CLI,
        "argparse's own usage errors": ARGPARSE_CLI,
        "CLI subprocess": SUBPROCESS_CLI,
    }
    for name, rows in tables.items():
        ids = [row[0] for row in rows]
        assert len(ids) == len(set(ids)), f"duplicate ids in {name}"
    assert sum(len(rows) for rows in tables.values()) >= 200


def test_a_254_character_file_name_saves_and_loads(tmp_path):
    # issue 26：临时文件名曾是 "." + 整个文件名 + 随机串，超过 255 字节，mkstemp 报 File name too long
    path = tmp_path / ("a" * 242 + ".safetensors")
    save_checkpoint(tiny_translator(), path, bleu=1.0)
    assert load_checkpoint(path).metrics == {"bleu": 1.0}
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # 没有留下临时文件


def test_translate_without_model_uses_the_shipped_weights_and_says_so(capsys):
    # issue 26：读者的第一次尝试应当能翻译（旧代码：--model 是必需的参数）
    status, out, err = run_cli(cli.translate_main, ["我明天去北京。"], capsys)
    assert (status, out) == (0, "I will go to Beijing tomorrow.\n")
    assert re.fullmatch(
        r"提示：没有给 --model，使用随包发布的权重（训练 \d+ 步）\n",
        err,
    )


def test_translate_says_when_a_sentence_is_outside_the_grammar(capsys):
    # issue 26：否定疑问句，语料从不生成；每个词都在词表里，模型给出一句流利但错误的译文
    sentence = "他昨天没在商店买衣服吗？"
    status, out, err = run_cli(cli.translate_main, [sentence, "我明天去北京。"], capsys)
    assert status == 0 and len(out.splitlines()) == 2  # 照样给出模型的译文
    assert err.splitlines()[1:] == [f"提示：'{sentence}'：这句话的句型不在训练语料里，译文不可信"]


def test_translate_help_says_how_to_pass_a_sentence_starting_with_a_dash(capsys):
    with pytest.raises(SystemExit):
        cli.translate_main(["--help"])
    assert "以 - 开头的句子放在 -- 之后" in capsys.readouterr().out
