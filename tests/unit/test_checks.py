"""坏输入一览：每个公开构造函数和 forward 的参数错误都给出写明参数、取值和规则的消息。

_checks.py 里的每条规则在这里至少被一种真实的误用触发一次；消息用 pytest.raises(match=...) 钉住。
"""

import pytest
import torch

from tests.kit import tiny_transformer_config
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
    attention_with_weights,
    causal_mask,
    padding_mask,
    shift_matrix,
    sinusoidal_encoding,
)

B, T, S, C, H = 2, 5, 7, 16, 4


def _mha(*args, **kwargs):
    """在一个小的多头注意力上调用 forward；位置参数依次是 query, key, value。"""
    torch.manual_seed(0)
    return MultiHeadAttention(C, H)(*args, **kwargs)


def _x(*shape):
    return torch.zeros(*shape)


def _small_transformer_config(**overrides):
    kwargs = dict(src_vocab_size=20, tgt_vocab_size=20, d_model=C, num_heads=H, dropout=0.1)
    return tiny_transformer_config(**{**kwargs, "max_len": 8, **overrides})


def _small_gpt(**overrides):
    kwargs = dict(vocab_size=20, max_len=8, d_model=C, num_heads=H, num_layers=1)
    kwargs.update(overrides)
    return GPT(GPTConfig(**kwargs))


def _ids(*shape, high=10):
    return torch.randint(1, high, shape, generator=torch.Generator().manual_seed(0))


def _reorder(indices):
    cache = KVCache()
    _mha(_x(B, 1, C), _x(B, 1, C), _x(B, 1, C), cache=cache)  # 先存一步，批量大小 2
    cache.reorder(indices)


def _cache_batch_mismatch():
    torch.manual_seed(0)
    mha, cache = MultiHeadAttention(C, H), KVCache()
    mha(_x(B, 1, C), _x(B, 1, C), _x(B, 1, C), cache=cache)
    mha(_x(3, 1, C), _x(3, 1, C), _x(3, 1, C), cache=cache)


q5, kv7 = _x(B, T, C), _x(B, S, C)

# (编号, 调用, 异常类型, 消息正则)
BAD_INPUTS = [
    # MultiHeadAttention 构造
    ("mha-divisible", lambda: MultiHeadAttention(10, 3), ValueError,
     r"d_model must be divisible by num_heads, got d_model=10, num_heads=3"),
    ("mha-d_model", lambda: MultiHeadAttention(0, 4), ValueError,
     r"d_model must be a positive integer, got d_model=0"),
    ("mha-num_heads", lambda: MultiHeadAttention(16, -1), ValueError,
     r"num_heads must be a positive integer, got num_heads=-1"),
    ("mha-dropout-1", lambda: MultiHeadAttention(16, 4, dropout=1.0), ValueError,
     r"dropout must be in \[0, 1\), got dropout=1.0"),
    ("mha-dropout-neg", lambda: MultiHeadAttention(16, 4, dropout=-0.1), ValueError,
     r"dropout must be in \[0, 1\), got dropout=-0.1"),
    ("mha-bias", lambda: MultiHeadAttention(16, 4, bias="yes"), TypeError,
     r"bias must be a bool, got bias='yes'"),
    # MultiHeadAttention forward
    ("mha-last-dim", lambda: _mha(_x(B, T, 8), kv7, kv7), ValueError,
     r"last dimension of query must equal d_model=16, got shape \(2, 5, 8\)"),
    ("mha-ndim", lambda: _mha(_x(T, C), kv7, kv7), ValueError,
     r"query must have shape \(B, T, C\), got shape \(5, 16\)"),
    ("mha-not-tensor", lambda: _mha([[0.0] * C], kv7, kv7), TypeError,
     r"query must be a torch.Tensor of shape \(B, T, C\), got list"),
    ("mha-key-value-length", lambda: _mha(q5, kv7, _x(B, 6, C)), ValueError,
     r"key and value must have the same length S \(dim -2\), got key shape \(2, 7, 16\), "
     r"value shape \(2, 6, 16\)"),
    ("mha-batch", lambda: _mha(q5, _x(3, S, C), _x(3, S, C)), ValueError,
     r"query, key and value must have the same batch size B, got 2, 3, 3"),
    ("mha-mask-dtype", lambda: _mha(q5, kv7, kv7, attn_mask=torch.ones(T, S)), TypeError,
     r"attn_mask must be a bool tensor \(True = masked out, as in torch.nn.MultiheadAttention\), "
     r"got dtype=torch.float32"),
    ("mha-mask-(B,S)", lambda: _mha(q5, kv7, kv7, attn_mask=torch.ones(B, S, dtype=torch.bool)),
     ValueError, r"attn_mask of shape \(2, 7\) does not fit the attention scores of shape "
     r"\(2, 4, 5, 7\).* a \(B, S\) padding mask goes to key_padding_mask"),
    ("mha-mask-last-dim",
     lambda: _mha(q5, kv7, kv7, attn_mask=torch.ones(T, S + 1, dtype=torch.bool)),
     ValueError, r"attn_mask of shape \(5, 8\) does not fit"),
    ("mha-mask-3d", lambda: _mha(q5, kv7, kv7, attn_mask=torch.ones(B, T, S, dtype=torch.bool)),
     ValueError, r"attn_mask of shape \(2, 5, 7\) does not fit .* needs 2 or 4 dimensions"),
    ("mha-mask-heads",
     lambda: _mha(q5, kv7, kv7, attn_mask=torch.ones(B, 3, T, S, dtype=torch.bool)),
     ValueError, r"attn_mask of shape \(2, 3, 5, 7\) does not fit"),
    ("mha-padding-(T,S)",
     lambda: _mha(q5, kv7, kv7, key_padding_mask=torch.ones(T, S, dtype=torch.bool)),
     ValueError, r"key_padding_mask must have shape \(B, S\) = \(2, 7\) .*got shape \(5, 7\)"),
    ("mha-padding-4d",
     lambda: _mha(q5, kv7, kv7, key_padding_mask=torch.ones(B, 1, 1, S, dtype=torch.bool)),
     ValueError, r"key_padding_mask must have shape \(B, S\).*pass padding_mask\(ids, pad_id\)"),
    ("mha-padding-dtype", lambda: _mha(q5, kv7, kv7, key_padding_mask=torch.ones(B, S)),
     TypeError, r"key_padding_mask must be a bool tensor .* build it with padding_mask\(ids, pad_id\)"),
    ("mha-mask-positional",
     lambda: _mha(q5, kv7, kv7, torch.ones(T, S, dtype=torch.bool)), TypeError,
     r"takes 4 positional arguments but 5 were given"),
    ("mha-cache-type", lambda: _mha(q5, kv7, kv7, cache={}), TypeError,
     r"cache must be a KVCache or None, got dict"),
    ("mha-need_weights", lambda: _mha(q5, kv7, kv7, need_weights=1), TypeError,
     r"need_weights must be a bool, got need_weights=1"),
    # attention_with_weights
    ("sdpa-head-dim", lambda: attention_with_weights(_x(B, T, 8), _x(B, S, 4), _x(B, S, 4)),
     ValueError, r"query and key must have the same last dimension D"),
    ("sdpa-dropout", lambda: attention_with_weights(q5, kv7, kv7, dropout_p=1.5),
     ValueError, r"dropout_p must be in \[0, 1\), got dropout_p=1.5"),
    ("sdpa-mask-last-dim-1",
     lambda: attention_with_weights(q5, kv7, kv7, mask=torch.ones(T, 1, dtype=torch.bool)),
     ValueError, r"mask of shape \(5, 1\) does not fit .* the last one exactly S"),
    ("sdpa-sdpa-name",
     lambda: attention_with_weights(q5, kv7, kv7, attn_mask=torch.ones(T, S, dtype=torch.bool)),
     TypeError, r"unexpected keyword argument 'attn_mask'"),
    ("sdpa-1d", lambda: attention_with_weights(_x(C), kv7, kv7), ValueError,
     r"query must have shape \(\.\.\., T, D\), got shape \(16,\)"),
    ("sdpa-batch", lambda: attention_with_weights(_x(2, T, C), _x(3, S, C), _x(3, S, C)),
     ValueError, r"the leading \(batch\) dimensions of query and key must broadcast"),
    # TokenEmbedding
    ("emb-vocab", lambda: TokenEmbedding(0, 16), ValueError,
     r"vocab_size must be a positive integer, got vocab_size=0"),
    ("emb-padding_idx", lambda: TokenEmbedding(10, 16, padding_idx=10), ValueError,
     r"padding_idx must be in \[0, vocab_size\) = \[0, 10\), got padding_idx=10"),
    ("emb-id-too-big", lambda: TokenEmbedding(10, 16)(torch.tensor([[1, 12]])), ValueError,
     r"ids must be in \[0, vocab_size\) = \[0, 10\), got 12"),
    ("emb-id-negative", lambda: TokenEmbedding(10, 16)(torch.tensor([[-1, 2]])), ValueError,
     r"ids must be in \[0, vocab_size\) = \[0, 10\), got -1"),
    ("emb-float-ids", lambda: TokenEmbedding(10, 16)(torch.tensor([[1.0, 2.0]])), TypeError,
     r"ids must be an integer tensor, got dtype=torch.float32"),
    ("emb-ids-3d", lambda: TokenEmbedding(10, 16)(torch.zeros(1, 2, 3, dtype=torch.long)),
     ValueError, r"ids must have shape \(B, T\), got shape \(1, 2, 3\)"),
    ("emb-scale", lambda: TokenEmbedding(10, 16, scale=1), TypeError,
     r"scale must be a bool, got scale=1"),
    # 位置编码
    ("pe-max_len", lambda: sinusoidal_encoding(0, 16), ValueError,
     r"max_len must be a positive integer, got max_len=0"),
    ("pe-base", lambda: sinusoidal_encoding(10, 16, base=-1.0), ValueError,
     r"base must be a finite positive number, got base=-1.0"),
    ("pe-too-long", lambda: PositionalEncoding(16, max_len=10)(_x(B, 11, 16)), ValueError,
     r"T \+ start = 11 \+ 0 = 11 must be <= max_len=10"),
    ("pe-start-too-far", lambda: PositionalEncoding(16, max_len=10)(_x(B, 3, 16), start=8),
     ValueError, r"T \+ start = 3 \+ 8 = 11 must be <= max_len=10"),
    ("pe-start-negative", lambda: PositionalEncoding(16, max_len=10)(_x(B, 3, 16), start=-1),
     ValueError, r"start must be >= 0, got start=-1"),
    ("pe-last-dim", lambda: PositionalEncoding(16)(_x(B, 3, 8)), ValueError,
     r"last dimension of x must equal d_model=16, got shape \(2, 3, 8\)"),
    ("shift-odd", lambda: shift_matrix(1, 7), ValueError,
     r"d_model must be even for shift_matrix: .* got d_model=7"),
    ("shift-k-float", lambda: shift_matrix(1.5, 8), TypeError, r"k must be an integer, got k=1.5"),
    # 掩码
    ("causal-T", lambda: causal_mask(0), ValueError, r"T must be a positive integer, got T=0"),
    ("padding-1d", lambda: padding_mask(torch.tensor([1, 2, 0]), 0), ValueError,
     r"ids must have shape \(B, S\), got shape \(3,\)"),
    # LayerNorm 与 FFN
    ("ln-eps", lambda: LayerNorm(16, eps=0), ValueError, r"eps must be a finite positive number, got eps=0"),
    ("ln-last-dim", lambda: LayerNorm(16)(_x(B, T, 8)), ValueError,
     r"last dimension of x must equal d_model=16, got shape \(2, 5, 8\)"),
    ("ffn-activation", lambda: PositionWiseFFN(16, 64, activation="swish"), ValueError,
     r"activation must be one of 'relu', 'gelu', 'gelu_tanh', got activation='swish'"),
    ("ffn-d_ff", lambda: PositionWiseFFN(16, 0), ValueError,
     r"d_ff must be a positive integer, got d_ff=0"),
    # 编码器层、解码器层
    ("enc-norm_first", lambda: EncoderLayer(16, 4, 64, norm_first="yes"), TypeError,
     r"norm_first must be a bool, got norm_first='yes'"),
    ("enc-divisible", lambda: EncoderLayer(16, 3, 64), ValueError,
     r"d_model must be divisible by num_heads, got d_model=16, num_heads=3"),
    ("dec-memory-dim", lambda: DecoderLayer(16, 4, 64)(q5, _x(B, S, 8)), ValueError,
     r"last dimension of memory must equal d_model=16, got shape \(2, 7, 8\)"),
    # TransformerConfig / Transformer
    ("cfg-vocab", lambda: _small_transformer_config(src_vocab_size=0), ValueError,
     r"src_vocab_size must be a positive integer, got src_vocab_size=0"),
    ("cfg-divisible", lambda: _small_transformer_config(d_model=10, num_heads=3), ValueError,
     r"d_model must be divisible by num_heads, got d_model=10, num_heads=3"),
    ("cfg-pad_id", lambda: _small_transformer_config(pad_id=20), ValueError,
     r"pad_id must be a valid id in both vocabularies, .* = \[0, 20\), got pad_id=20"),
    ("cfg-activation", lambda: _small_transformer_config(activation="tanh"), ValueError,
     r"activation must be one of 'relu', 'gelu', 'gelu_tanh', got activation='tanh'"),
    ("cfg-dropout", lambda: _small_transformer_config(dropout=1), ValueError,
     r"dropout must be in \[0, 1\), got dropout=1"),
    ("cfg-layers", lambda: _small_transformer_config(num_decoder_layers=0), ValueError,
     r"num_decoder_layers must be a positive integer, got num_decoder_layers=0"),
    ("transformer-config-type", lambda: Transformer({"d_model": 16}), TypeError,
     r"config must be a TransformerConfig, got dict"),
    ("transformer-too-long",
     lambda: Transformer(_small_transformer_config())(_ids(B, 9), _ids(B, 3)), ValueError,
     r"T \+ start = 9 \+ 0 = 9 must be <= max_len=8"),
    ("transformer-tgt-id",
     lambda: Transformer(_small_transformer_config())(_ids(B, 3), _ids(B, 3) + 20), ValueError,
     r"ids must be in \[0, vocab_size\) = \[0, 20\), got 2\d"),
    ("transformer-src-1d",
     lambda: Transformer(_small_transformer_config())(_ids(3), _ids(B, 3)), ValueError,
     r"src must have shape \(B, S\), got shape \(3,\)"),
    # GPTConfig / GPT
    ("gpt-vocab", lambda: GPTConfig(vocab_size=-5), ValueError,
     r"vocab_size must be a positive integer, got vocab_size=-5"),
    ("gpt-d_ff", lambda: GPTConfig(vocab_size=10, d_ff=0), ValueError,
     r"d_ff must be a positive integer, got d_ff=0"),
    ("gpt-tie", lambda: GPTConfig(vocab_size=10, tie_output=None), TypeError,
     r"tie_output must be a bool, got tie_output=None"),
    ("gpt-too-long", lambda: _small_gpt()(_ids(B, 9)), ValueError,
     r"T \+ cached length = 9 \+ 0 = 9 must be <= max_len=8"),
    ("gpt-max_new_tokens", lambda: _small_gpt().generate(_ids(B, 3), 0), ValueError,
     r"max_new_tokens must be a positive integer, got max_new_tokens=0"),
    ("gpt-temperature", lambda: _small_gpt().generate(_ids(B, 3), 2, temperature=0), ValueError,
     r"temperature must be a finite positive number, got temperature=0"),
    ("gpt-top_k", lambda: _small_gpt().generate(_ids(B, 3), 2, top_k=0), ValueError,
     r"top_k must be a positive integer, got top_k=0"),
    ("gpt-generate-too-long", lambda: _small_gpt().generate(_ids(B, 3), 6), ValueError,
     r"T \+ max_new_tokens = 3 \+ 6 = 9 must be <= max_len=8"),
    ("gpt-generator", lambda: _small_gpt().generate(_ids(B, 3), 2, generator=0), TypeError,
     r"generator must be a Generator or None, got int"),
    # KVCache
    ("cache-reorder-range", lambda: _reorder(torch.tensor([0, 5])), ValueError,
     r"indices must be in \[0, batch size\) = \[0, 2\), got 5"),
    ("cache-reorder-dtype", lambda: _reorder(torch.tensor([0.0, 1.0])), TypeError,
     r"indices must be an integer tensor, got dtype=torch.float32"),
    ("cache-reorder-2d", lambda: _reorder(torch.tensor([[0, 1]])), ValueError,
     r"indices must have shape \(N\), got shape \(1, 2\)"),
    ("cache-batch", _cache_batch_mismatch, ValueError,
     r"the cache holds batch size 2 but got batch size 3; use cache.reorder"),
]  # fmt: skip


def test_enough_distinct_bad_inputs():
    names = [name for name, *_ in BAD_INPUTS]
    assert len(names) == len(set(names))
    assert len(names) >= 30


@pytest.mark.parametrize(
    "call, error, message", [row[1:] for row in BAD_INPUTS], ids=[row[0] for row in BAD_INPUTS]
)
def test_bad_input_raises_clear_error(call, error, message):
    with pytest.raises(error, match=message):
        call()
