"""坏输入一览（第二部分，issue 16）：每个坏输入都有一个清楚的结局，消息钉死在表里。

四张表，与 ``test_checks.py`` 的 ``BAD_INPUTS``（构造函数和 forward 的参数）一起数：

- ``API``：nan/inf、种子范围、dtype 不符、损失的 ignore_index、解码的编号、翻译器……
  → ``ValueError``/``TypeError``，消息写明参数、取值和规则；
- ``CHECKPOINTS``：坏的或故意构造的检查点文件 → ``load_checkpoint`` 抛出 **一个**
  ``ValueError("checkpoint '路径' …")``，在建模型之前；
- ``TRAIN_CLI``、``TRANSLATE_CLI``：命令行参数 → 非零退出码 + stderr 上恰好一行 ``错误：…``，
  训练开始之前；最后几条真的起子进程跑 ``python -m``，确认没有 traceback。

写到一半被打断的检查点见 ``test_atomic.py``。
"""

import copy
import math
import os
import re
import subprocess
import sys
import zipfile

import numpy as np
import pytest
import torch

from tests.kit import TINY_SRC_VOCAB as SRC_VOCAB
from tests.kit import TINY_TGT_VOCAB as TGT_VOCAB
from tests.kit import run_cli, tiny_translator
from tests.kit import tiny_transformer as tiny_model
from tests.unit.test_checks import BAD_INPUTS as CONSTRUCTOR_AND_FORWARD_INPUTS
from tinyformer import (
    GPT,
    EncoderLayer,
    GPTConfig,
    LayerNorm,
    MultiHeadAttention,
    PositionalEncoding,
    PositionWiseFFN,
    TokenEmbedding,
    Transformer,
    TransformerConfig,
    attention_with_weights,
    beam_search,
    greedy_decode,
    shift_matrix,
    sinusoidal_encoding,
)
from tinyformer.layers import recording_weights
from tinyformer.text import Vocab, ZhTokenizer, detokenize_en, tokenize_zh
from tinyformer.translation import cli
from tinyformer.translation.checkpoint import load_checkpoint, save_checkpoint
from tinyformer.translation.training import (
    fit_translator,
    label_smoothed_cross_entropy,
    train,
    warmup_lr,
)
from tinyformer.translation.translator import Translator, new_translator

C = 16  # tiny_transformer、tiny_translator 的 d_model


def tiny_gpt() -> GPT:
    torch.manual_seed(0)
    return GPT(GPTConfig(vocab_size=20, max_len=8, d_model=C, num_heads=4, num_layers=1)).eval()


EXAMPLES = [([4, 5, 6], [2, 7, 8, 3]), ([5, 6], [2, 8, 3])]
SRC = torch.tensor([[4, 5, 6]])
x16 = torch.zeros(2, 3, C)
LOGITS, TARGET = torch.zeros(2, 3, 7), torch.tensor([[1, 2, 3], [4, 5, 0]])


def _train(**kwargs):
    return train(tiny_model(), EXAMPLES, **{"max_steps": 1, "progress": False, **kwargs})


def _translate(sentence, **kwargs):
    return tiny_translator().translate(sentence, **kwargs)


def _save(tmp, **metrics):
    save_checkpoint(tiny_translator(), tmp / "m.pt", **metrics)


def _save_under_a_file(tmp):
    (tmp / "file.txt").write_text("x")
    save_checkpoint(tiny_translator(), tmp / "file.txt" / "m.pt")  # 所在"文件夹"其实是个文件


LONG = "好" * 40_000  # 4 万个字符：消息里只引用开头
# (编号, 调用(tmp_path), 异常类型, 消息正则)
API = [
    # nan / inf：在没有意义的地方一律拒绝
    ("layernorm-eps-inf", lambda t: LayerNorm(C, eps=math.inf), ValueError,
     r"^eps must be a finite positive number, got eps=inf$"),
    ("layernorm-eps-nan", lambda t: LayerNorm(C, eps=math.nan), ValueError,
     r"^eps must be a finite positive number, got eps=nan$"),
    ("layernorm-eps-negative", lambda t: LayerNorm(C, eps=-1e-5), ValueError,
     r"^eps must be a finite positive number, got eps=-1e-05$"),
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
    ("gpt-temperature-inf", lambda t: tiny_gpt().generate(SRC, 2, temperature=math.inf),
     ValueError, r"^temperature must be a finite positive number, got temperature=inf$"),
    ("gpt-temperature-nan", lambda t: tiny_gpt().generate(SRC, 2, temperature=math.nan),
     ValueError, r"^temperature must be a finite positive number, got temperature=nan$"),
    ("gpt-temperature-negative", lambda t: tiny_gpt().generate(SRC, 2, temperature=-1.0),
     ValueError, r"^temperature must be a finite positive number, got temperature=-1.0$"),
    ("gpt-temperature-underflow", lambda t: tiny_gpt().generate(SRC, 2, temperature=1e-45),
     ValueError, r"^temperature=1e-45 is too small: logits / temperature overflows torch.float32; "
     r"use greedy=True to always take the most likely token$"),
    ("gpt-top_k-float", lambda t: tiny_gpt().generate(SRC, 2, top_k=2.5), ValueError,
     r"^top_k must be a positive integer, got top_k=2.5$"),
    ("beam-alpha-inf", lambda t: beam_search(tiny_model(), SRC, 2, 3, max_len=4, alpha=math.inf),
     ValueError, r"^alpha must be a finite number >= 0, got alpha=inf$"),
    ("beam-alpha-nan", lambda t: beam_search(tiny_model(), SRC, 2, 3, max_len=4, alpha=math.nan),
     ValueError, r"^alpha must be a finite number >= 0, got alpha=nan$"),
    ("warmup-d_model-negative", lambda t: warmup_lr(1, -512, 4000), ValueError,
     r"^d_model must be a positive integer, got d_model=-512$"),
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
    ("activation-long-str", lambda t: PositionWiseFFN(C, 32, activation="x" * 100_000),
     ValueError, r"^activation must be one of 'relu', 'gelu', 'gelu_tanh', "
     r"got activation='x{60}'… \(100000 characters\)$"),
    ("norm_first-long-str", lambda t: EncoderLayer(C, 4, 32, norm_first="y" * 5000), TypeError,
     r"^norm_first must be a bool, got norm_first='y{60}'… \(5000 characters\)$"),
    ("config-d_model-long-list", lambda t: GPTConfig(vocab_size=list(range(10_000))), ValueError,
     r"^vocab_size must be a positive integer, got vocab_size=\[0, 1, 2, .*… \(\d+ characters in its repr\)$"),
    # 翻译器
    ("translate-long-unknown", lambda t: _translate(LONG), ValueError,
     r"^sentence '好{60}'… \(40000 characters\) has words not in the source vocabulary: "
     r"\['好好'\]; the model can only translate words it was trained on$"),
    ("translate-many-unknown", lambda t: _translate("上海广州深圳杭州南京天津重庆成都武汉西安苏州"),
     ValueError, r"has words not in the source vocabulary: \[.*\]…（共 1\d 个）; the model can only"),
    ("translate-too-many-words", lambda t: _translate("我明天去北京。" * 20), ValueError,
     r"^sentence '我明天去北京。我明天去北京。.*'… \(140 characters\) has 100 words, but the model reads "
     r"at most max_len=80; split it into shorter sentences$"),
    ("translate-empty", lambda t: _translate(""), ValueError,
     r"^sentence must contain at least one word, got ''$"),
    ("translate-not-str", lambda t: _translate(123), TypeError,
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
    ("save-not-a-translator", lambda t: save_checkpoint(tiny_translator().model, t / "m.pt"), TypeError,
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
    ("recording-weights-not-a-layer", lambda t: recording_weights(MultiHeadAttention(C, 4)).__enter__(),
     TypeError, r"^layers must be EncoderLayer or DecoderLayer, got MultiHeadAttention$"),
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
    "call, error, message", [row[1:] for row in API], ids=[row[0] for row in API]
)
def test_bad_api_input(tmp_path, call, error, message):
    with pytest.raises(error, match=message):
        call(tmp_path)


# ---------------------------------------------------------------- 检查点文件
@pytest.fixture(scope="module")
def good_checkpoint(tmp_path_factory):
    """一个好的检查点（dict）；每一行在它的副本上做一处改动。"""
    path = tmp_path_factory.mktemp("good") / "good.pt"
    save_checkpoint(tiny_translator(), path, test_bleu=12.5)
    return torch.load(path, weights_only=True)


def _with(**changes):
    """把检查点的顶层键换成 ``changes``（值为 ``...`` 表示删掉这个键）。"""

    def change(ck):
        for key, value in changes.items():
            if value is ...:
                del ck[key]
            else:
                ck[key] = value
        return ck

    return change


def _config(**changes):
    def change(ck):
        for key, value in changes.items():
            if value is ...:
                del ck["config"][key]
            else:
                ck["config"][key] = value
        return ck

    return change


def _weights(change_one):
    def change(ck):
        change_one(ck["state_dict"])
        return ck

    return change


def _first_weight_nan(sd):
    sd["src_embed.embedding.weight"][0, 0] = math.nan


def _all_nan(sd):
    for tensor in sd.values():
        tensor.fill_(math.nan)


def _inf_in_ffn(sd):
    sd["encoder_layers.0.ffn.linear1.weight"][3, 4] = -math.inf


def _bigger_model_weights(ck):
    bigger = new_translator(
        SRC_VOCAB, TGT_VOCAB, seed=0, d_model=32, num_heads=4, num_layers=1, d_ff=32
    )
    ck["state_dict"] = bigger.model.state_dict()
    return ck


class Payload:
    def __reduce__(self):  # weights_only=True 必须拒绝它，print 不会被调用
        return (print, ("pwned",))


def _bytes(data):
    return lambda ck: data


def _file_bytes(ck, tmp_path, what):
    good = tmp_path / "good.pt"
    torch.save(ck, good)
    data = good.read_bytes()
    return {"half": data[: len(data) // 2], "671": data[:671], "minus-one": data[:-1]}[what]


SWAPPED = [SRC_VOCAB.itos[1], SRC_VOCAB.itos[0], *SRC_VOCAB.itos[2:]]
READ = r"could not be read \(truncated, or not written by torch.save\): "
# (编号, 改动：检查点 dict → dict / bytes / 特殊值, 消息正则（接在 "checkpoint '路径' " 之后）)
CHECKPOINTS = [
    ("empty-file", _bytes(b""), r"is empty \(0 bytes\): was its save interrupted\?"),
    ("truncated-half", "half", READ + r"BadZipFile: File is not a zip file"),
    ("truncated-671-bytes", "671", READ + r"BadZipFile: File is not a zip file"),
    ("truncated-last-byte", "minus-one", READ + r"BadZipFile: File is not a zip file"),
    ("random-bytes", _bytes(bytes(range(256)) * 16), READ + r"BadZipFile: File is not a zip file"),
    ("text-file", _bytes("我明天去北京。\n".encode()), READ + r"BadZipFile"),
    ("json-file", _bytes(b'{"format": "tinyformer-translator-1"}'), READ + r"BadZipFile"),
    ("pickle-payload", "payload", r"holds objects other than tensors, numbers and strings \(print\); "
     r"refused by torch.load\(weights_only=True\), nothing in it was run"),
    ("pickle-payload-legacy-format", "payload-legacy", READ + r"BadZipFile: File is not a zip file"),
    ("numpy-metric", _with(metrics={"bleu": np.arange(3)}), r"holds objects other than tensors"),
    ("a-tensor", lambda ck: torch.zeros(3), r"is not a tinyformer translator checkpoint "
     r"\(expected format='tinyformer-translator-1'\)"),
    ("a-list", lambda ck: [ck], r"is not a tinyformer translator checkpoint"),
    ("no-format", _with(format=...), r"is not a tinyformer translator checkpoint"),
    ("old-format", _with(format="tinyformer-translator-0"), r"is not a tinyformer translator"),
    ("missing-metrics", _with(metrics=...),
     r"has missing keys \['metrics'\] and unexpected keys \[\]"),
    ("missing-state_dict", _with(state_dict=...), r"has missing keys \['state_dict'\]"),
    ("missing-config-and-itos", _with(config=..., src_itos=...),
     r"has missing keys \['config', 'src_itos'\]"),
    ("extra-key", _with(optimizer={}), r"has missing keys \[\] and unexpected keys \['optimizer'\]"),
    ("config-list", _with(config=[16, 4]), r"has a config of type list, expected a dict"),
    ("config-missing-field", _config(d_model=...),
     r"has config with missing fields \['d_model'\] and unknown fields \[\]"),
    ("config-unknown-field", _config(n_layers=2),
     r"has config with missing fields \[\] and unknown fields \['n_layers'\]"),
    ("config-d_model-str", _config(d_model="16"),
     r"has an invalid config: d_model must be a positive integer, got d_model='16'"),
    ("config-d_model-zero", _config(d_model=0), r"has an invalid config: d_model must be a positive"),
    ("config-heads-not-dividing", _config(num_heads=3),
     r"has an invalid config: d_model must be divisible by num_heads, got d_model=16, num_heads=3"),
    ("config-dropout", _config(dropout=1.5), r"has an invalid config: dropout must be in \[0, 1\)"),
    ("config-dropout-nan", _config(dropout=math.nan), r"invalid config: dropout must be in \[0, 1\), got dropout=nan"),
    ("config-activation", _config(activation="swish"), r"invalid config: activation must be one of"),
    ("config-norm_first-str", _config(norm_first="yes"), r"invalid config: norm_first must be a bool"),
    ("config-pad_id", _config(pad_id=99), r"invalid config: pad_id must be a valid id"),
    ("config-max_len-2**31", _config(max_len=2**31), r"has config max_len=2147483648, above the limit 65536"),
    ("config-layers-10**6", _config(num_encoder_layers=10**6),
     r"has config num_encoder_layers=1000000, above the limit 256"),
    ("config-vocab-10**9", _config(src_vocab_size=10**9), r"has config src_vocab_size=1000000000, above"),
    ("config-huge-positional-table", _config(max_len=65536, d_model=512),
     r"has config max_len \* d_model = 65536 \* 512, above the limit 16777216 for the positional table"),
    ("src_itos-dict", _with(src_itos={"<pad>": 0}), r"has src_itos of type dict, expected a list of str"),
    ("src_itos-int-entry", lambda ck: ck["src_itos"].__setitem__(5, 5) or ck,
     r"has src_itos of type list, expected a list of str"),
    ("src_itos-short", lambda ck: ck["src_itos"].pop() and ck, r"has 13 entries in src_itos but config says 14"),
    ("tgt_itos-duplicate", lambda ck: ck["tgt_itos"].__setitem__(-1, "i") or ck,
     r"has an invalid tgt_itos: itos must start with .* with 1 duplicates"),
    ("src_itos-specials-swapped", _with(src_itos=SWAPPED), r"has an invalid src_itos: itos must start with"),
    ("state_dict-list", lambda ck: _with(state_dict=list(ck["state_dict"].values()))(ck),
     r"has a state_dict that is not a dict of str -> tensor"),
    ("state_dict-float-value", _weights(lambda sd: sd.__setitem__("output.weight", 1.0)),
     r"has a state_dict that is not a dict of str -> tensor"),
    ("state_dict-missing-key", _weights(lambda sd: sd.pop("encoder_layers.0.norm1.bias")),
     r"does not fit its config: 1 missing keys \['encoder_layers.0.norm1.bias'\], 0 unexpected"),
    ("state_dict-extra-key", _weights(lambda sd: sd.__setitem__("encoder_layers.1.norm1.bias", torch.zeros(C))),
     r"does not fit its config: 0 missing keys \[\], 1 unexpected keys \['encoder_layers.1.norm1.bias'\]"),
    ("state_dict-other-model", _bigger_model_weights,
     r"has state_dict\['src_embed.embedding.weight'\] of shape \(14, 32\) and dtype torch.float32, "
     r"but its config needs shape \(14, 16\) and dtype torch.float32"),
    ("state_dict-transposed", _weights(lambda sd: sd.__setitem__(
        "encoder_layers.0.ffn.linear1.weight", sd["encoder_layers.0.ffn.linear1.weight"].T)),
     r"has state_dict\['encoder_layers.0.ffn.linear1.weight'\] with strides \(1, 16\) for shape \(16, 32\)"),
    ("state_dict-float64", _weights(lambda sd: sd.__setitem__("output.weight", sd["output.weight"].double())),
     r"has state_dict\['output.weight'\] of shape \(11, 16\) and dtype torch.float64"),
    ("state_dict-int", _weights(lambda sd: sd.__setitem__(
        "decoder_layers.0.norm3.weight", sd["decoder_layers.0.norm3.weight"].long())),
     r"has state_dict\['decoder_layers.0.norm3.weight'\] of shape \(16,\) and dtype torch.int64"),
    ("one-nan-weight", _weights(_first_weight_nan),
     r"has 1 non-finite values \(nan or inf\) in state_dict\['src_embed.embedding.weight'\]"),
    ("all-nan-weights", _weights(_all_nan),
     r"has 224 non-finite values \(nan or inf\) in state_dict\['src_embed.embedding.weight'\]"),
    ("inf-weight", _weights(_inf_in_ffn),
     r"has 1 non-finite values \(nan or inf\) in state_dict\['encoder_layers.0.ffn.linear1.weight'\]"),
    ("metrics-list", _with(metrics=[1.0]), r"has metrics that are not a dict with str keys: \[1.0\]"),
    ("metrics-int-keys", _with(metrics={1: 2.0}), r"has metrics that are not a dict with str keys: \{1: 2.0\}"),
    ("a-directory", "directory", r"is not a regular file \(a directory or a device\?\)"),
    # issue 26：读一个检查点的代价与文件大小相当；配置与词表、共享权重互相核对
    ("flipped-byte-in-a-weight", "flipped-byte",
     r"is damaged: zip member 'bad/data/\d+' fails its CRC-32 check \(bytes changed after it was saved\)"),
    ("deflated-zip", "deflated", r"has \d+ compressed zip members \(first 'bad/data.pkl'\); "
     r"torch.save stores them uncompressed, so this file was altered"),
    ("deflate-bomb-in-metrics", "bomb", r"has \d+ compressed zip members"),
    ("zip-claims-more-than-file", "claims", r"claims \d+ bytes of content in a \d+-byte file"),
    ("metrics-tensor", _with(metrics={"bleu": torch.zeros(3)}),
     r"has metrics\['bleu'\] of type Tensor; metrics must be numbers, strings or bools"),
    ("metrics-dict", _with(metrics={"bleu": {"a": 1}}), r"has metrics\['bleu'\] of type dict"),
    ("config-pad_id-not-vocab-pad", _config(pad_id=4),
     r"has config pad_id=4 but <pad> is id 0 in src_itos: real words would be masked out as padding"),
    ("stride-0-weight", _weights(lambda sd: sd.__setitem__(
        "output.weight", torch.zeros(1).expand(11, 16))),
     r"has state_dict\['output.weight'\] with strides \(0, 0\) for shape \(11, 16\): weights must be "
     r"contiguous \(not expanded views\)"),
    ("stride-0-huge-config", "stride-0-huge",
     r"has state_dict\['\S+'\] with strides \(0(, 0)?\) for shape \(\d+(, \d+)?\): weights must be contiguous"),
    ("sparse-weight", _weights(lambda sd: sd.__setitem__(
        "encoder_layers.0.norm1.bias", sd["encoder_layers.0.norm1.bias"].to_sparse())),
     r"has state_dict\['encoder_layers.0.norm1.bias'\] with layout=torch.sparse_coo, device=cpu; "
     r"weights must be dense CPU tensors"),
    ("meta-weight", _weights(lambda sd: sd.__setitem__(
        "encoder_layers.0.norm1.bias", torch.empty(C, device="meta"))),
     r"has state_dict\['encoder_layers.0.norm1.bias'\] with layout=torch.strided, device=meta"),
    ("shared-storage", _weights(lambda sd: sd.__setitem__(
        "encoder_layers.0.norm2.bias", sd["encoder_layers.0.norm1.bias"])),
     r"has state_dict\['encoder_layers.0.norm\d.bias'\] sharing its storage with "
     r"state_dict\['encoder_layers.0.norm\d.bias'\]; only tied weights may share"),
    ("tied-weights-differ", _weights(lambda sd: sd.__setitem__("output.weight", sd["output.weight"] + 1)),
     r"has tie_output=True but state_dict\['output.weight'\] and "
     r"state_dict\['tgt_embed.embedding.weight'\] differ: tied weights must be equal"),
]  # fmt: skip


def _rezip(path, compression, member_bytes=None):
    """把 ``path`` 这个 zip 按 ``compression`` 重写；``member_bytes`` 给出要替换内容的成员。"""
    import zipfile

    with zipfile.ZipFile(path) as old:
        members = [(info, old.read(info)) for info in old.infolist()]
    with zipfile.ZipFile(path, "w", compression=compression) as new:
        for info, data in members:
            new.writestr(info.filename, (member_bytes or {}).get(info.filename, data))


def _flip_byte_in_largest_weight(path):
    """翻转最大那个权重数据中间的一个字节（不改 zip 的目录，CRC-32 于是对不上）。"""
    import zipfile

    with zipfile.ZipFile(path) as archive:
        info = max(
            (i for i in archive.infolist() if "/data/" in i.filename), key=lambda i: i.file_size
        )
    data = bytearray(path.read_bytes())
    name_length = int.from_bytes(data[info.header_offset + 26 : info.header_offset + 28], "little")
    extra_length = int.from_bytes(data[info.header_offset + 28 : info.header_offset + 30], "little")
    start = info.header_offset + 30 + name_length + extra_length  # 本地文件头之后就是数据
    data[start + info.file_size // 2] ^= 0x40  # 一个 float32 的指数位：值变了，但仍是有限数
    path.write_bytes(bytes(data))


def _huge_config_of_stride_0_views(ck):
    """issue 26 的 12 KB 文件：配置刚好在上限之内，每个权重都是一个 0 展开成的视图。"""
    config = dict(ck["config"], d_model=8192, d_ff=65536, max_len=2048, num_heads=8)
    with torch.device("meta"):
        expected = Transformer(TransformerConfig(**config)).state_dict()
    zero = torch.zeros(1)
    ck["config"] = config
    ck["state_dict"] = {name: zero.expand(t.shape) for name, t in expected.items()}
    return ck


def _write(row_change, ck, path):
    if row_change == "payload":
        torch.save({"format": "tinyformer-translator-1", "payload": Payload()}, path)
    elif row_change == "payload-legacy":
        torch.save({"payload": Payload()}, path, _use_new_zipfile_serialization=False)
    elif row_change == "directory":
        path.mkdir()
    elif row_change in ("half", "671", "minus-one"):
        path.write_bytes(_file_bytes(ck, path.parent, row_change))
    elif row_change == "flipped-byte":
        torch.save(ck, path)
        _flip_byte_in_largest_weight(path)
    elif row_change == "deflated":
        torch.save(ck, path)
        _rezip(path, zipfile.ZIP_DEFLATED)
    elif row_change == "bomb":  # 64 MiB 的零压缩成几十 KB，藏在 metrics 里
        ck["metrics"] = {"bleu": torch.zeros(2**24)}
        torch.save(ck, path)
        _rezip(path, zipfile.ZIP_DEFLATED)
    elif row_change == "claims":  # 不压缩的成员声称比整个文件还大：目录被改过
        torch.save(ck, path)
        data = bytearray(path.read_bytes())
        end = data.rfind(b"PK\x01\x02")  # 最后一个中央目录项：把它的"原始大小"改大
        data[end + 24 : end + 28] = (2**31).to_bytes(4, "little")
        path.write_bytes(bytes(data))
    elif row_change == "stride-0-huge":
        torch.save(_huge_config_of_stride_0_views(ck), path)
    else:
        result = row_change(ck)
        if isinstance(result, bytes):
            path.write_bytes(result)
        else:
            torch.save(result, path)


@pytest.mark.parametrize(
    "change, message", [row[1:] for row in CHECKPOINTS], ids=[row[0] for row in CHECKPOINTS]
)
def test_bad_checkpoint_is_refused_before_building_a_model(
    tmp_path, monkeypatch, good_checkpoint, change, message, capsys
):
    path = tmp_path / "bad.pt"
    _write(change, copy.deepcopy(good_checkpoint), path)
    real_init = Transformer.__init__

    def only_on_meta(self, config):  # 真正建模型（不在 meta 设备上）就算失败
        if torch.empty(0).device.type != "meta":
            pytest.fail("load_checkpoint built a model from a bad checkpoint")
        real_init(self, config)

    monkeypatch.setattr(Transformer, "__init__", only_on_meta)
    with pytest.raises(ValueError) as info:
        load_checkpoint(path)
    text = str(info.value)
    assert text.startswith(f"checkpoint {str(path)!r} ")
    assert "\n" not in text and len(text) < 500
    assert info.match(message), text
    assert "pwned" not in capsys.readouterr().out  # pickle 里的 print 没有运行


def test_shape_check_does_not_build_the_model(monkeypatch, tmp_path, good_checkpoint):
    # 上面的表用"建模型就失败"来证明拒绝发生在建模型之前；但形状检查本身要在 meta 设备上建
    # 一个模型。这里确认那一步不分配内存：被调用时设备是 meta。
    devices = []
    real_init = Transformer.__init__

    def spy(self, config):
        devices.append(torch.empty(0).device.type)
        real_init(self, config)

    monkeypatch.setattr(Transformer, "__init__", spy)
    bad = copy.deepcopy(good_checkpoint)
    bad["state_dict"]["output.weight"] = bad["state_dict"]["output.weight"][:5]
    torch.save(bad, tmp_path / "bad.pt")
    with pytest.raises(ValueError, match=r"of shape \(5, 16\)"):
        load_checkpoint(tmp_path / "bad.pt")
    assert devices == ["meta"]


def test_numpy_metrics_are_saved_as_plain_numbers(tmp_path):
    save_checkpoint(
        tiny_translator(), tmp_path / "m.pt", bleu=np.float64(12.5), steps=np.int64(3), ok=True
    )
    metrics = load_checkpoint(tmp_path / "m.pt").metrics
    assert metrics == {"bleu": 12.5, "steps": 3, "ok": True}
    assert type(metrics["bleu"]) is float and type(metrics["steps"]) is int


# ---------------------------------------------------------------- 命令行（同一进程里）
@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "tiny.pt"
    save_checkpoint(tiny_translator(), path)
    return path


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory, good_checkpoint):
    folder = tmp_path_factory.mktemp("bad")
    files = {}
    for name, change in [
        ("empty", _bytes(b"")),
        ("random", _bytes(bytes(range(256)) * 16)),
        ("payload", "payload"),
        ("nan", _weights(_all_nan)),
        ("hostile", _config(max_len=2**31)),
        ("other", _bigger_model_weights),
    ]:
        files[name] = folder / f"{name}.pt"
        _write(change, copy.deepcopy(good_checkpoint), files[name])
    return files


USAGE = r"（用 --help 查看用法）"
TMP = r"'/[^']+'"  # 临时文件夹的路径
NUMBER = r"应为有限的正数，得到 "
IN_RANGE = r"应在 \[0, 2\*\*32\) = \[0, 4294967296\) 之内，得到 "
# (编号, 参数（{tmp}、{model} 等换成文件）, 退出码, stderr 的那一行（正则，去掉开头的 "错误："）)
TRAIN_CLI = [
    ("steps-zero", ["--steps", "0"], 2, r"参数 --steps：应为正整数，得到 0" + USAGE),
    ("steps-negative", ["--steps", "-3"], 2, r"参数 --steps：应为正整数，得到 -3" + USAGE),
    ("steps-float", ["--steps", "1.5"], 2, r"参数 --steps：应为正整数，得到 '1.5'" + USAGE),
    ("steps-word", ["--steps", "many"], 2, r"参数 --steps：应为正整数，得到 'many'" + USAGE),
    ("steps-no-value", ["--steps"], 2, r"参数 --steps：需要一个取值" + USAGE),
    ("seconds-inf", ["--seconds", "inf"], 2, r"参数 --seconds：" + NUMBER + "'inf'" + USAGE),
    ("seconds-nan", ["--seconds", "nan"], 2, r"参数 --seconds：" + NUMBER + "'nan'" + USAGE),
    ("seconds-1e400", ["--seconds", "1e400"], 2, r"参数 --seconds：" + NUMBER + "'1e400'" + USAGE),
    ("seconds-zero", ["--seconds", "0"], 2, r"参数 --seconds：" + NUMBER + "'0'" + USAGE),
    ("seconds-negative", ["--seconds", "-5"], 2, r"参数 --seconds：" + NUMBER + "'-5'" + USAGE),
    ("seconds-word", ["--seconds", "soon"], 2, r"参数 --seconds：" + NUMBER + "'soon'" + USAGE),
    ("seed-2**70", ["--seed", str(2**70)], 2,
     r"参数 --seed：" + IN_RANGE + "'1180591620717411303424'" + USAGE),
    ("seed-negative", ["--seed", "-1"], 2, r"参数 --seed：" + IN_RANGE + "'-1'" + USAGE),
    ("seed-float", ["--seed", "0.5"], 2, r"参数 --seed：应为整数，得到 '0.5'" + USAGE),
    ("seed-5000-digits", ["--seed", "9" * 5000], 2,
     r"参数 --seed：" + IN_RANGE + "'9{60}'…（共 5000 个字符）" + USAGE),
    ("beam-size-zero", ["--beam-size", "0"], 2, r"参数 --beam-size：应为正整数，得到 0" + USAGE),
    ("beam-size-100000", ["--steps", "1", "--beam-size", "100000", "--out", "{tmp}/m.pt"], 2,
     r"--beam-size 应不大于目标词表的大小 94，得到 100000" + USAGE),
    ("threads-zero", ["--threads", "0"], 2, r"参数 --threads：应为正整数，得到 0" + USAGE),
    ("threads-10**9", ["--threads", str(10**9), "--out", "{tmp}/m.pt"], 2,
     r"--threads 应不大于 1024，得到 1000000000" + USAGE),
    ("out-empty", ["--out", ""], 2, r"--out 应为文件路径，得到 ''" + USAGE),
    ("out-spaces", ["--out", "  "], 2, r"--out 应为文件路径，得到 '  '" + USAGE),
    ("out-directory", ["--out", "{tmp}"], 2, r"--out " + TMP + " 是一个文件夹；请给出它里面的文件路径" + USAGE),
    ("out-dev-full", ["--out", "/dev/full"], 2,
     r"--out '/dev/full' 不是普通文件（是 /dev/full 这样的设备？）" + USAGE),
    ("out-under-proc", ["--out", "/proc/zh_en.pt"], 2,
     r"--out '/proc/zh_en.pt' 写不进去：文件或文件夹不存在" + USAGE),
    ("out-under-a-file", ["--out", "{tmp}/file.txt/m.pt"], 2, r"--out " + TMP + " 写不进去：已经有同名的文件" + USAGE),
    ("out-long-path", ["--out", "/proc/" + "x" * 3000], 2,
     r"--out '/proc/x{194}'…（共 3006 个字符） 写不进去：文件或文件夹不存在" + USAGE),
    ("unknown-option", ["--lr", "1"], 2, r"不认识的参数：--lr 1" + USAGE),
    ("unknown-choice-like", ["--steps", "1", "--seed"], 2, r"参数 --seed：需要一个取值" + USAGE),
    ("ambiguous-prefix", ["--s", "1"], 2, r"选项 --s 有歧义，可能是 --seed, --steps, --seconds" + USAGE),
    ("explicit-value-for-flag", ["--no-progress=yes"], 2, r"参数 --no-progress：这个选项不取值，却给了 'yes'" + USAGE),
]  # fmt: skip

UNKNOWN = r"：有模型没学过的词 \['好好'\]，模型只能翻译训练语料里的词"
CKPT = r"检查点 " + TMP
TRANSLATE_CLI = [
    ("no-model-no-sentence", [], 2, r"缺少必需的参数：句子" + USAGE),
    ("unknown-long-option", ["--model", "{model}", "--temperature", "2", "我"], 2,
     r"不认识的参数：--temperature" + USAGE),
    ("unknown-short-option", ["--model", "{model}", "-x", "我"], 2, r"不认识的参数：-x" + USAGE),
    ("no-sentence", ["--model", "{model}"], 2, r"缺少必需的参数：句子" + USAGE),
    ("beam-size-zero", ["--model", "{model}", "--beam-size", "0", "我"], 2,
     r"参数 --beam-size：应为正整数，得到 0" + USAGE),
    ("beam-size-word", ["--model", "{model}", "--beam-size", "wide", "我"], 2,
     r"参数 --beam-size：应为正整数，得到 'wide'" + USAGE),
    ("beam-size-above-vocab", ["--model", "{model}", "--beam-size", "100000", "我"], 2,
     r"--beam-size 应不大于目标词表的大小 11，得到 100000" + USAGE),
    ("model-no-value", ["--model"], 2, r"参数 --model：需要一个取值" + USAGE),
    ("model-missing", ["--model", "{tmp}/none.pt", "我"], 3, r"找不到 '/[^']+/none.pt'"),
    ("model-directory", ["--model", "{tmp}", "我"], 3, CKPT + r" 不是普通文件（是文件夹还是设备？）"),
    ("model-dev-null", ["--model", "/dev/null", "我"], 3, r"检查点 '/dev/null' 不是普通文件（是文件夹还是设备？）"),
    ("model-empty", ["--model", "{empty}", "我"], 3, CKPT + r" 是空的（0 字节）：保存时被打断了？"),
    ("model-random-bytes", ["--model", "{random}", "我"], 3,
     CKPT + r" 读不出来（被截断了，或者不是 torch.save 写的）"),
    ("model-pickle-payload", ["--model", "{payload}", "我"], 3,
     CKPT + r" 含有张量、数字和字符串以外的对象（print），"
     r"torch.load\(weights_only=True\) 拒绝了它，里面的代码没有运行"),
    ("model-all-nan", ["--model", "{nan}", "我"], 3,
     CKPT + r" 的权重 'src_embed.embedding.weight' 里有 224 个非有限数（nan 或 inf）"),
    ("model-hostile-config", ["--model", "{hostile}", "我"], 3, CKPT + " 的配置 max_len=2147483648 超过上限 65536"),
    ("model-other-config", ["--model", "{other}", "我"], 3, CKPT +
     r" 的权重 'src_embed.embedding.weight' 形状 \(14, 32\)、类型 torch.float32，"
     r"配置要的是形状 \(14, 16\)、类型 torch.float32"),
    ("unknown-words-40k-chars", ["--model", "{model}", LONG], 4, r"无法翻译 '好{60}'…（共 40000 个字符）" + UNKNOWN),
    ("too-many-words", ["--model", "{model}", "我明天去北京。" * 20], 4,
     r"无法翻译 '(我明天去北京。){8}我明天去'…（共 140 个字符）：句子太长，超过了模型的位置数 max_len，请拆成短句"),
    ("empty-sentence", ["--model", "{model}", ""], 4, r"无法翻译 ''：句子里没有词"),
    ("dash-sentence", ["--model", "{model}", "-好好"], 4, r"无法翻译 '-好好'：有模型没学过的词 \['-', '好好'\]，"
     r"模型只能翻译训练语料里的词"),
    ("dash-sentence-after-double-dash", ["--model", "{model}", "--", "-好好"], 4,
     r"无法翻译 '-好好'：有模型没学过的词 \['-', '好好'\]，模型只能翻译训练语料里的词"),
]  # fmt: skip


def _fill(argv, tmp_path, files):
    names = {"tmp": str(tmp_path), **{k: str(v) for k, v in files.items()}}
    return [a.format(**names) if "{" in a else a for a in argv]


@pytest.mark.parametrize(
    "command, argv, code, message",
    [(cli.train_main, *row[1:]) for row in TRAIN_CLI] + [(cli.translate_main, *row[1:]) for row in TRANSLATE_CLI],
    ids=[f"train-{row[0]}" for row in TRAIN_CLI] + [f"translate-{row[0]}" for row in TRANSLATE_CLI],
)  # fmt: skip
def test_bad_cli_argument_gives_one_line(
    tmp_path, capsys, monkeypatch, model_file, bad_files, command, argv, code, message
):
    (tmp_path / "file.txt").write_text("x")
    # 训练绝不能开始：参数要在那之前全部检查完
    monkeypatch.setattr(cli, "fit_translator", lambda *a, **k: pytest.fail("trained"))
    argv = _fill(argv, tmp_path, {"model": model_file, **bad_files})
    status, out, err = run_cli(command, argv, capsys)
    assert status == code
    assert out == ""
    assert err.startswith("错误：") and err.endswith("\n") and err.count("\n") == 1, err
    assert len(err) < 500 and "Traceback" not in err
    assert re.fullmatch(message, err[len("错误：") : -1]), err


# ---------------------------------------------------------------- 命令行（真的子进程）
SUBPROCESS_CLI = [
    ("train-seconds-inf", ["tinyformer.translation", "train", "--seconds", "inf"], 2,
     "错误：参数 --seconds：应为有限的正数，得到 'inf'（用 --help 查看用法）\n"),
    ("train-out-dev-full", ["tinyformer.translation", "train", "--steps", "1", "--out", "/dev/full"], 2,
     "错误：--out '/dev/full' 不是普通文件（是 /dev/full 这样的设备？）（用 --help 查看用法）\n"),
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
        assert result.stderr.startswith(f"错误：检查点 {str(bad_files['random'])!r} 读不出来")
    else:
        assert result.stderr == expected


# ---------------------------------------------------------------- 计数
def test_count_of_bad_inputs():
    tables = {
        "constructor/forward (test_checks.py)": CONSTRUCTOR_AND_FORWARD_INPUTS,
        "API": API,
        "checkpoint files": CHECKPOINTS,
        "train CLI in-process": TRAIN_CLI,
        "translate CLI in-process": TRANSLATE_CLI,
        "CLI subprocess": SUBPROCESS_CLI,
    }
    for name, rows in tables.items():
        ids = [row[0] for row in rows]
        assert len(ids) == len(set(ids)), f"duplicate ids in {name}"
    assert sum(len(rows) for rows in tables.values()) >= 200


def test_a_254_character_file_name_saves_and_loads(tmp_path):
    # issue 26：临时文件名曾是 "." + 整个文件名 + 随机串，超过 255 字节，mkstemp 报 File name too long
    path = tmp_path / ("a" * 251 + ".pt")
    save_checkpoint(tiny_translator(), path, bleu=1.0)
    assert load_checkpoint(path).metrics == {"bleu": 1.0}
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # 没有留下临时文件


def test_a_hostile_checkpoint_costs_about_what_the_file_holds(tmp_path, good_checkpoint):
    # issue 26：12 KB 的文件（步长为 0 的视图）曾让读取分配约 12 GB；压缩炸弹曾解压出 1.5 GiB。
    # 在子进程里读，比较读之前与之后的峰值内存（ru_maxrss，KiB）。
    files = {}
    for name, change in (("stride-0", "stride-0-huge"), ("bomb", "bomb")):
        files[name] = tmp_path / f"{name}.pt"
        _write(change, copy.deepcopy(good_checkpoint), files[name])
    assert all(path.stat().st_size < 200_000 for path in files.values())
    code = (
        "import resource, sys\n"
        "from tinyformer.translation.checkpoint import load_checkpoint\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "for path in sys.argv[1:]:\n"
        "    try:\n"
        "        load_checkpoint(path)\n"
        "    except ValueError as err:\n"
        "        print('refused', str(err)[-60:])\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, *map(str, files.values())],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines[:-1]] == ["refused", "refused"]
    assert int(lines[-1]) < 64 * 1024  # 读两个文件，峰值内存增加不到 64 MiB


def test_translate_without_model_uses_the_shipped_weights_and_says_so(capsys):
    # issue 26：读者的第一次尝试应当能翻译（旧代码：--model 是必需的参数）
    status, out, err = run_cli(cli.translate_main, ["我明天去北京。"], capsys)
    assert (status, out) == (0, "I will go to Beijing tomorrow.\n")
    assert re.fullmatch(
        r"提示：没有给 --model，使用随包发布的权重（训练 \d+ 步，tinyformer.translation.pretrained）\n",
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
