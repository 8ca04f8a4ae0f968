"""坏输入的钉表（issue 16、26、33、48）：每一行是一个教人东西或钉住一个真实 bug 的坏输入，和它恰好的结局。

- ``ERRORS``：公开入口（模型、注意力、解码、训练、翻译器、分词、BPE、对照）的坏参数 → 异常类型和消息
  （写明参数、取值和规则）；
- ``CHECKPOINTS``：做坏的权重文件 → 恰好一个 ``WeightsError``、它的 ``reason``，消息以文件路径开头、只有一行；
  pickle 里的 ``os.system`` 不运行；
- ``CLI``：两个命令行 → 退出码和 stderr 上恰好一行 ``错误：…``，在训练开始之前（argparse 自己发现的
  用法错误照它的样子打印）。

同一类参数的规则（"``arg`` must be a positive integer, got ``arg``=…"）不逐值列在这里：``test_properties.py``
用 hypothesis 抽取坏值检查。写到一半被打断的检查点见 ``test_atomic.py``，读权重时的命名管道见 ``test_weights.py``。
"""

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file

import tinyformer as tf
from tests.kit import TINY_SRC_VOCAB as SRC_VOCAB
from tests.kit import TINY_TGT_VOCAB as TGT_VOCAB
from tests.kit import (
    Payload,
    captured,
    run_cli,
    tiny_gpt,
    tiny_poet,
    tiny_transformer,
    tiny_transformer_config,
    tiny_translator,
)
from tinyformer import book, seq2seq
from tinyformer.bpe import ByteBPE
from tinyformer.poetry import cli as poetry_cli
from tinyformer.poetry.checkpoint import save_checkpoint as save_poet
from tinyformer.text import tokenize_zh
from tinyformer.translation import cli
from tinyformer.translation.checkpoint import load_checkpoint, save_checkpoint
from tinyformer.translation.corpus import generate_corpus
from tinyformer.translation.training import label_smoothed_cross_entropy, train
from tinyformer.translation.translator import new_translator
from tinyformer.weights import WeightsError, read_metadata

B, T, S, C, H = 2, 5, 7, 16, 4  # C：tiny_transformer、tiny_translator 的 d_model
q5, kv7, x16 = torch.zeros(B, T, C), torch.zeros(B, S, C), torch.zeros(2, 3, C)
LOGITS, TARGET = torch.zeros(2, 3, 7), torch.tensor([[1, 2, 3], [4, 5, 0]])
SRC = torch.tensor([[4, 5, 6]])
EXAMPLES = [([4, 5, 6], [2, 7, 8, 3]), ([5, 6], [2, 8, 3])]
LONG = "好" * 40_000  # 4 万个字符：消息里只引用开头


def _mha(*args, **kwargs):
    """在一个小的多头注意力上调用 forward；位置参数依次是 query, key, value。"""
    torch.manual_seed(0)
    return tf.MultiHeadAttention(C, H)(*args, **kwargs)


def _ids(*shape, high=10):
    return torch.randint(1, high, shape, generator=torch.Generator().manual_seed(0))


def _cache_twice(batch_sizes, static_kv=False):
    """同一个缓存走一步注意力、每次一个批量大小；``static_kv``：交叉注意力（记忆只算一次）。"""
    mha, cache = tf.MultiHeadAttention(C, H), tf.KVCache()
    for n in batch_sizes:
        memory = torch.zeros(n, 5 if static_kv else 1, C)
        mha(torch.zeros(n, 1, C), memory, memory, cache=cache, static_kv=static_kv)


def _train(**kwargs):
    return train(tiny_transformer(), EXAMPLES, **{"max_steps": 1, "progress": False, **kwargs})


def _translate(sentence, **kwargs):
    return tiny_translator().translate(sentence, **kwargs)


def _save_under_a_file(tmp):  # 所在"文件夹"其实是个文件
    (tmp / "file.txt").write_text("x")
    save_checkpoint(tiny_translator(), tmp / "file.txt" / "m.safetensors")


def _beam(model=None, **kwargs):
    return tf.beam_search(
        model or tiny_transformer(), torch.tensor([[5, 6]]), 1, 2, max_len=5, **kwargs
    )


# (编号, 调用(临时文件夹), 异常类型, 消息正则)
ERRORS = [
    # 注意力：形状、掩码的约定（True = 屏蔽，与 torch 相同）、dtype
    ("mha-divisible", lambda t: tf.MultiHeadAttention(10, 3), ValueError,
     r"^d_model must be divisible by num_heads, got d_model=10, num_heads=3$"),
    ("mha-last-dim", lambda t: _mha(torch.zeros(B, T, 8), kv7, kv7), ValueError,
     r"^last dimension of query must equal d_model=16, got shape \(2, 5, 8\)$"),
    ("mha-not-tensor", lambda t: _mha([[0.0] * C], kv7, kv7), TypeError,
     r"^query must be a torch.Tensor of shape \(B, T, C\), got list$"),
    ("mha-key-value-length", lambda t: _mha(q5, kv7, torch.zeros(B, 6, C)), ValueError,
     r"^key and value must have the same length S \(dim -2\), got key shape \(2, 7, 16\), "
     r"value shape \(2, 6, 16\)$"),
    ("mha-mask-float", lambda t: _mha(q5, kv7, kv7, attn_mask=torch.ones(T, S)), TypeError,
     r"^attn_mask must be a bool tensor \(True = masked out, as in torch.nn.MultiheadAttention\), "
     r"got dtype=torch.float32"),
    ("mha-padding-as-attn_mask",
     lambda t: _mha(q5, kv7, kv7, attn_mask=torch.ones(B, S, dtype=torch.bool)), ValueError,
     r"^attn_mask of shape \(2, 7\) does not fit the attention scores of shape \(2, 4, 5, 7\).* "
     r"a \(B, S\) padding mask goes to key_padding_mask"),
    ("mha-padding-(T,S)",
     lambda t: _mha(q5, kv7, kv7, key_padding_mask=torch.ones(T, S, dtype=torch.bool)),
     ValueError, r"^key_padding_mask must have shape \(B, S\) = \(2, 7\) .*got shape \(5, 7\)"),
    ("mha-padding-float", lambda t: _mha(q5, kv7, kv7, key_padding_mask=torch.ones(B, S)),
     TypeError, r"key_padding_mask must be a bool tensor .* build it with padding_mask\(ids, pad_id\)"),
    ("mha-mask-positional", lambda t: _mha(q5, kv7, kv7, torch.ones(T, S, dtype=torch.bool)),
     TypeError, r"takes 4 positional arguments but 5 were given"),  # 掩码只按名字传，与 torch 一样
    ("mha-fp16-input", lambda t: tf.MultiHeadAttention(C, 4)(x16.half(), x16.half(), x16.half()),
     TypeError, r"^query has dtype=torch.float16 but the module's weights have dtype=torch.float32; "
     r"convert the input with query.to\(torch.float32\) or the module with .to\(torch.float16\)$"),
    ("sdpa-key-fp16", lambda t: tf.attention_with_weights(x16, x16.half(), x16), TypeError,
     r"^key and query must have the same dtype, got key dtype=torch.float16, "
     r"query dtype=torch.float32; convert one with .to\(dtype\)$"),
    # issue 33 的外部 fuzz 找到的：meta 张量没有值，曾结束在 torch 内部
    ("attn-mask-meta", lambda t: tf.MultiHeadAttention(C, 4)(*[torch.zeros(2, 3, C)] * 3,
     attn_mask=torch.ones(3, 3, dtype=torch.bool, device="meta")), ValueError,
     r"^attn_mask must hold values, got a meta tensor \(a shape without data\)$"),
    ("rope-head_dim-vs-mha", lambda t: tf.MultiHeadAttention(C, H, rope=tf.RotaryEmbedding(8)),
     ValueError, "rope.head_dim must equal d_model // num_heads = 4"),
    # KV 缓存：换了批量大小要先 reorder（交叉注意力的缓存也一样：issue 33）
    ("cache-batch", lambda t: _cache_twice((B, 3)), ValueError,
     r"^the cache holds batch size 2 but got batch size 3; use cache.reorder"),
    ("cache-cross-attention-other-batch", lambda t: _cache_twice((2, 3), static_kv=True),
     ValueError, r"^the cache holds batch size 2 but got batch size 3; use cache.reorder"),
    # 编码器–解码器
    ("cfg-pad_id", lambda t: tiny_transformer_config(pad_id=12), ValueError,
     r"^pad_id must be a valid id in both vocabularies, .* = \[0, 12\), got pad_id=12$"),
    ("transformer-config-type", lambda t: tf.Transformer({"d_model": 16}), TypeError,
     r"^config must be a TransformerConfig, got dict$"),
    ("transformer-too-long", lambda t: tiny_transformer()(_ids(B, 21), _ids(B, 3)), ValueError,
     r"^T \+ start = 21 \+ 0 = 21 must be <= max_len=20$"),
    ("transformer-tgt-id", lambda t: tiny_transformer()(_ids(1, 3), torch.tensor([[1, 12]])),
     ValueError, r"^ids must be in \[0, vocab_size\) = \[0, 12\), got 12$"),
    ("transformer-src-meta", lambda t: tiny_transformer()(torch.ones(1, 3, dtype=torch.long, device="meta"),
     torch.ones(1, 2, dtype=torch.long)), ValueError, r"must hold values, got a meta tensor"),
    # 放不进内存的模型：在分配之前拒绝，消息给出要多少字节（issue 26）
    ("transformer-d_model-2**20", lambda t: tf.Transformer(tf.TransformerConfig(
        src_vocab_size=10, tgt_vocab_size=10, d_model=2**20, num_heads=1)), ValueError,
     r"^Transformer with .*d_model=1048576.* would need about [\d.]+ TiB \(\d+ bytes\) of memory, "
     r"more than this machine has \([\d.]+ \w+\); choose smaller sizes$"),
    # GPT
    ("gpt-too-long", lambda t: tiny_gpt()(_ids(B, 17)), ValueError,
     r"^T \+ cached length = 17 \+ 0 = 17 must be <= max_len=16$"),
    ("gpt-generate-too-long", lambda t: tiny_gpt().generate(_ids(B, 3), 14), ValueError,
     r"^T \+ max_new_tokens = 3 \+ 14 = 17 must be <= max_len=16$"),
    ("gpt-temperature-underflow", lambda t: tiny_gpt().generate(SRC, 2, temperature=1e-45),
     ValueError, r"^temperature must be in \[0.001, 1000.0\] \(beyond it float32 logits / temperature "
     r"overflows and the distribution becomes nan\), got temperature=1e-45$"),
    ("gpt-num_kv_heads-3", lambda t: tiny_gpt(num_kv_heads=3), ValueError,
     "num_heads must be divisible by num_kv_heads"),
    ("gpt-rope-odd-head_dim", lambda t: tiny_gpt(position="rope", d_model=12), ValueError,
     "d_model // num_heads must be even"),
    ("gpt-vocab_size-long-list", lambda t: tf.GPTConfig(vocab_size=list(range(10_000))), ValueError,
     r"^vocab_size must be a positive integer, got vocab_size=\[0, 1, 2, .*… \(\d+ characters in its repr\)$"),
    ("activation-long-str", lambda t: tiny_transformer_config(activation="好" * 100_000), ValueError,
     r"^activation must be one of 'relu', 'gelu', 'gelu_tanh', 'relu2', "
     r"got activation='好{60}'… \(100000 characters\)$"),
    # 位置编码的公开函数：频率 1/base^(2i/d) 必须有限（issue 26）
    ("sinusoidal-base-1e-310", lambda t: tf.sinusoidal_encoding(10, 512, base=1e-310), ValueError,
     r"^base must keep the frequencies 1/base\^\(2i/d_model\) finite and nonzero in float64, "
     r"got base=1e-310, d_model=512: the frequency of i=\d+ is inf$"),
    ("shift-odd", lambda t: tf.shift_matrix(1, 7), ValueError,
     r"^d_model must be even for shift_matrix: .* got d_model=7"),
    # 解码
    ("greedy-max_len-past-the-model", lambda t: tf.greedy_decode(tiny_transformer(), SRC, 2, 3, max_len=20),
     ValueError, r"^max_len \+ 1 \(for <bos>\) must be <= model.config.max_len=20, got max_len=20$"),
    ("greedy-model-linear", lambda t: tf.greedy_decode(torch.nn.Linear(2, 2), SRC, 2, 3), TypeError,
     r"^model must be a Transformer, got Linear$"),
    ("greedy-bos-out-of-vocab", lambda t: tf.greedy_decode(tiny_transformer(), SRC, 12, 2), ValueError,
     r"^bos_id must be in \[0, tgt_vocab_size\) = \[0, 12\), got bos_id=12$"),
    ("beam-size-10**7", lambda t: _beam(beam_size=10**7), ValueError,
     r"^beam_size must be <= the number of distinct outputs of at most max_len=5 tokens "
     r"\(V \+ V\*\*2 \+ \.\.\. with V=\d+\) = \d+, got beam_size=10000000$"),
    ("beam-size-10**7-big-vocab", lambda t: _beam(tiny_transformer(tgt_vocab_size=500), beam_size=10**7),
     ValueError, r"^beam_search with B=1, beam_size=10000000 would need about [\d.]+ GiB"),
    ("beam-alpha-1e308", lambda t: _beam(alpha=1e308), ValueError,
     r"^alpha must keep the length penalty \(\(5 \+ max_len\) / 6\)\*\*alpha finite in float32, "
     r"got alpha=1e\+308, max_len=5$"),
    # 训练与损失：ignore_index 与 F.cross_entropy 一致，其余编号必须在 [0, V) 内
    ("train-diverges", lambda t: _train(max_steps=5, lr_factor=1e30), ValueError,
     r"^training diverged: the loss became (nan|inf) at step \d; lower lr_factor=1e\+30 "
     r"or raise warmup=400$"),
    ("train-no-limit", lambda t: _train(max_steps=None), ValueError,
     r"^give max_steps or max_seconds \(or both\), got neither$"),
    ("train-seed-2**70", lambda t: _train(seed=2**70), ValueError,
     r"^seed must be in \[0, 2\*\*32\) = \[0, 4294967296\), got seed=1180591620717411303424$"),
    ("loss-target-not-ignored",
     lambda t: label_smoothed_cross_entropy(LOGITS, TARGET.masked_fill(TARGET == 0, -100)),
     ValueError, r"^target must be in \[0, V\) = \[0, 7\), got -100$"),
    ("loss-logits-int", lambda t: label_smoothed_cross_entropy(LOGITS.long(), TARGET), TypeError,
     r"^logits must be a floating-point tensor, got dtype=torch.int64; convert it with logits.float\(\)$"),
    # 翻译器：长输入只引用开头并注明长度
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
    ("save-metric-tensor", lambda t: save_checkpoint(tiny_translator(), t / "m.safetensors",
     bleu=torch.tensor([1.0, 2.0])), TypeError,
     r"^metrics must be numbers or strings, got bleu=tensor\(\[1., 2.\]\) of type Tensor$"),
    ("save-to-dev-null", lambda t: save_checkpoint(tiny_translator(), "/dev/null"), ValueError,
     r"^path must be a regular file, got path='/dev/null'$"),
    ("save-under-a-file", _save_under_a_file, OSError, r"File exists|Not a directory"),
    # 语料：留出全部过去时的否定句 → didn't/没 在训练集里一次也不出现
    ("corpus-held_out-every-past-negative", lambda t: generate_corpus(held_out=[
        ("mood", "negative", "time", "昨天"), ("mood", "negative", "time", "上周")]), ValueError,
     r"^held_out removes every training sentence containing \[\"didn't\", '没'\]; hold out fewer"),
    # 分词与词表
    ("tokenize-zh-two-modes", lambda t: tokenize_zh("我", cut_all=True, search=True), ValueError,
     r"^cut_all and search are two different modes; give at most one$"),
    ("vocab-encode-long-str", lambda t: SRC_VOCAB.encode("好" * 500), TypeError,
     r"^tokens must be a list of tokens, not the str '好{60}'… \(500 characters\); tokenize it first$"),
    ("vocab-decode-2d", lambda t: SRC_VOCAB.decode(torch.ones(2, 2, dtype=torch.long)), ValueError,
     r"^ids must be one sequence \(1-D\), got a tensor of shape \(2, 2\)$"),
    # 第 1 章的 RNN 编码器–解码器
    ("additive-attention-mask", lambda t: seq2seq.AdditiveAttention(2, 3, 4)(torch.randn(1, 2),
     torch.randn(1, 5, 3), torch.ones(1, 4, dtype=torch.bool)), ValueError,
     r"mask must be a bool tensor of shape \(B, S\) = \(1, 5\)"),
    # 字节级 BPE：一个汉字是三个字节，切在中间不是合法的 UTF-8
    ("bpe-vocab_size", lambda t: ByteBPE.train(["春眠不觉晓"], 100), ValueError,
     r"vocab_size must be an int >= 256.*got 100"),
    ("bpe-decode-half-character", lambda t: ByteBPE([(230, 152)]).decode([256]), ValueError,
     r"do not form valid UTF-8.*cut in the middle of a character"),  # 春 的前两个字节
    ("bpe-gpt2-merge-unknown", lambda t: ByteBPE.from_gpt2_merges([("æĺ", "¥")]), ValueError,
     r"merge 0 .* uses a token that no earlier merge made"),
    # 书里核对数值的 agree：只比较有值的东西
    ("agree-meta", lambda t: book.agree(torch.empty(3, device="meta"), torch.zeros(3)), TypeError,
     r"^actual must be a tensor, a number or a \(nested, rectangular\) list of numbers.*"
     r"got a meta tensor \(it has no values\)"),
    ("agree-ragged", lambda t: book.agree(torch.zeros(2), [[1, 2], [3]]), TypeError,
     r"^expected must be .*got \[\[1, 2\], \[3\]\] \(expected sequence of length 2"),
]  # fmt: skip


@pytest.mark.parametrize("name, call, error, match", ERRORS, ids=[row[0] for row in ERRORS])
def test_bad_call_raises_the_pinned_error(name, call, error, match, tmp_path):
    with pytest.raises(error) as info:
        call(tmp_path)
    assert re.search(match, str(info.value)), str(info.value)[:300]


# ---------------------------------------------------------------- 做坏的权重文件
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
    """头里同一个名字出现两次，指向两份不同的数据（旧的 zip 格式曾悄悄读后一份）。"""
    data = good.read_bytes()
    n = int.from_bytes(data[:8], "little")
    header = data[8 : 8 + n].decode()
    entry = re.search(r'"(output\.weight|tgt_embed[^"]*)":(\{[^}]*\})', header)
    name, spec = entry.group(1), json.loads(entry.group(2))
    start, end = spec["data_offsets"]
    body = data[8 + n :]
    spec["data_offsets"] = [len(body), len(body) + end - start]
    new = header[:-1].rstrip() + f',"{name}":{json.dumps(spec)}' + "}"
    new += " " * (-len(new) % 8)
    path.write_bytes(len(new).to_bytes(8, "little") + new.encode() + body + body[start:end])


def _pickled(obj, **kwargs):
    return lambda good, path: torch.save(obj, path, **kwargs)


def _bigger(state):
    bigger = new_translator(SRC_VOCAB, TGT_VOCAB, seed=0, d_model=32, num_layers=1, d_ff=32)
    state.clear()
    state.update({k: v for k, v in bigger.model.state_dict().items() if k != "output.weight"})


def _set(name, change):
    return _resave(tensors=lambda s: s.__setitem__(name, change(s[name])))


def _one_nan(t):
    t = t.clone()
    t.view(-1)[0] = math.nan
    return t


DAMAGED = r"not a valid safetensors file \(truncated or damaged: "
PICKLE = r"a torch.save \(pickle\) file: unsafe to load, .*convert it with: python -m "
META = r"has an invalid translator description: "
NORM = "encoder_layers.0.norm1.bias"
# (编号, 做出文件 (好文件, 路径), WeightsError 的 reason, 消息正则（接在 "'路径': " 之后）)
CHECKPOINTS = [
    ("empty-file", _bytes(b""), "damaged", r"not a valid safetensors file \(it has 0 bytes: an empty file, or a special file"),
    ("truncated-half", _cut(lambda d: d[: len(d) // 2]), "damaged", DAMAGED),
    ("duplicate-weight-name", _duplicate_name, "damaged", DAMAGED),
    ("flipped-byte-in-a-weight", _cut(lambda d: d[:-9] + bytes([d[-9] ^ 0x40]) + d[-8:]), "damaged",
     r"its tensor data does not match its SHA-256 \(damaged\)"),
    ("one-nan-weight", _set("src_embed.embedding.weight", _one_nan), "damaged",
     r"has 1 non-finite values \(nan or inf\) in 'src_embed.embedding.weight'"),
    ("pickle-os-system", _pickled({"format": "tinyformer-translator-1", "payload": Payload()}), "pickle", PICKLE),
    ("pickle-legacy-format", _pickled({"payload": Payload()}, _use_new_zipfile_serialization=False), "pickle", PICKLE),
    ("a-directory", lambda good, path: path.mkdir(), "not_a_file", r"is a directory"),
    ("foreign-safetensors", lambda good, path: save_file({"w": torch.ones(2)}, path), "metadata",
     r"without tinyformer's metadata"),
    ("config-unknown-field", _config(n_layers=2), "metadata", META + r".*unexpected keyword argument 'n_layers'"),
    ("config-max_len-2**31", _config(max_len=2**31), "metadata",
     r"its config asks for position tables of max_len × d_model = 2147483648 × \d+ .*is max_len too large\?$"),
    ("config-pad_id-not-vocab-pad", _config(pad_id=4), "metadata", META + r"config pad_id=4 but <pad> is id 0 in src_itos"),
    ("weight-missing", _resave(tensors=lambda s: s.pop(NORM)), "mismatch",
     rf"does not match the model: the model's '{NORM}' is not in the file$"),
    ("weight-int64", _set(NORM, torch.Tensor.long), "mismatch",
     rf"'{NORM}' has dtype torch.int64 in the file, torch.float32 in the model$"),
    ("weights-of-another-model", _resave(tensors=_bigger), "mismatch",
     r"'src_embed.embedding.weight' has shape \(\d+, 32\) in the file, \(\d+, 16\) in the model \(and \d+ more differences\)$"),
]  # fmt: skip


def _good(tmp: Path) -> Path:
    path = tmp / "good.safetensors"
    if not path.exists():
        save_checkpoint(tiny_translator(), path, test_bleu=12.5)
    return path


@pytest.mark.parametrize("name, make, reason, match", CHECKPOINTS, ids=[r[0] for r in CHECKPOINTS])
def test_bad_checkpoint_is_refused_with_its_reason(name, make, reason, match, tmp_path, capfd):
    path = tmp_path / f"{name}.safetensors"
    make(_good(tmp_path), path)
    with pytest.raises(WeightsError) as info:
        load_checkpoint(path)
    text = str(info.value)
    assert info.value.reason == reason, text
    assert text.startswith(f"{str(path)!r}: ") and "\n" not in text and len(text) < 900, text
    assert re.search(match, text), text
    assert "pwned" not in capfd.readouterr().out  # pickle 里的 os.system 没有运行


# ---------------------------------------------------------------- 命令行
FILES = {  # 命令行的参数里写作 {名字}；{model} 是好文件，{tmp} 是临时文件夹
    "random": _bytes(bytes(range(256)) * 16),
    "payload": _pickled({"format": "tinyformer-translator-1", "payload": Payload()}),
    "hostile": _config(max_len=2**31),
    "poet": lambda good, path: save_poet(path, *tiny_poet(seed=5), metrics={"steps": 0}),
}


def fill(argv, t: Path):
    """``{tmp}`` → 临时文件夹，``{model}`` → 好的检查点，``{random}`` 等 → 按 ``FILES`` 做出的文件。"""
    (t / "file.txt").write_text("x")

    def path(m):
        if m[1] == "tmp":
            return str(t)
        if m[1] == "model":
            return str(_good(t))
        made = t / f"{m[1]}.safetensors"
        if not made.exists():
            FILES[m[1]](_good(t), made)
        return str(made)

    return [re.sub(r"\{(\w+)\}", path, a) for a in argv]


USAGE = r"（用 --help 查看用法）"
TMP = r"'/[^']+'"  # 临时文件夹里的路径
CKPT = r"权重文件 " + TMP
GENERATE = ["generate", "--model", "{poet}"]
# (命令, 编号, 参数, 退出码, stderr 的那一行：正则，去掉开头的 "错误："；argparse 自己的用法错误以 "error: " 开头)
CLI = [
    ("train", "seconds-inf", ["--seconds", "inf"], 2, r"--seconds 应为有限的正数，得到 'inf'" + USAGE),
    ("train", "seed-5000-digits", ["--seed", "9" * 5000], 2,
     r"--seed 应为\[0, 2\*\*32\) 内的整数，得到 '9{60}'…（共 5000 个字符）" + USAGE),
    ("train", "beam-size-above-vocab", ["--steps", "1", "--beam-size", "100000", "--out", "{tmp}/m.safetensors"], 2,
     r"--beam-size 应不大于目标词表的大小 94，得到 100000" + USAGE),
    ("train", "threads-10**9", ["--threads", str(10**9), "--out", "{tmp}/m.safetensors"], 2,
     r"--threads 应为不大于 1024 的正整数，得到 '1000000000'" + USAGE),
    # --out 在训练之前检查：训练完才发现写不进去，整次训练就丢了
    ("train", "out-empty", ["--out", ""], 2, r"--out 应为文件路径，得到 ''" + USAGE),
    ("train", "out-directory", ["--out", "{tmp}"], 2, r"--out " + TMP + " 不是普通文件的路径（是文件夹或设备）" + USAGE),
    ("train", "out-dev-full", ["--out", "/dev/full"], 2, r"--out '/dev/full' 不是普通文件的路径（是文件夹或设备）" + USAGE),
    ("train", "out-under-proc", ["--out", "/proc/zh_en.safetensors"], 2,
     r"--out '/proc/zh_en.safetensors' 写不进去：文件或文件夹不存在" + USAGE),
    ("train", "out-under-a-file", ["--out", "{tmp}/file.txt/m.safetensors"], 2,
     r"--out " + TMP + " 写不进去：" + TMP + " 不是文件夹" + USAGE),
    ("train", "ambiguous-prefix", ["--s", "1"], 2, r"error: ambiguous option: --s could match --seed, --steps, --seconds"),
    ("translate", "no-sentence", ["--model", "{model}"], 2, r"缺少要翻译的句子" + USAGE),
    ("translate", "unknown-option", ["--temperature", "2", "我"], 2, r"error: unrecognized arguments: --temperature"),
    ("translate", "model-missing", ["--model", "{tmp}/none.safetensors", "我"], 3, CKPT + r" 不存在"),
    ("translate", "model-dev-null", ["--model", "/dev/null", "我"], 3, r"权重文件 '/dev/null' 不是普通文件：是字符设备"),
    ("translate", "model-random-bytes", ["--model", "{random}", "我"], 3,
     CKPT + r" 已损坏或被截断：不是有效的 safetensors 文件（头不对或数据不全）"),
    ("translate", "model-pickle-os-system", ["--model", "{payload}", "我"], 3,
     CKPT + r" 是 torch.save 写的 pickle 文件：.*不安全.*python -m tinyformer.translation convert 旧.pt 新.safetensors"),
    ("translate", "model-hostile-config", ["--model", "{hostile}", "我"], 3,
     CKPT + r" 不是本书的检查点，或者里面的配置、词表不对：按配置，位置表要 max_len × d_model = \d+ × \d+（[\d.]+ GiB），"
     r"文件里的张量却只有 [\d.]+ KiB：max_len 太大？"),
    ("translate", "unknown-words-40k-chars", ["--model", "{model}", LONG], 4,
     r"无法翻译 '好{60}'…（共 40000 个字符）：有模型没学过的词 \['好好'\]，模型只能翻译训练语料里的词"),
    ("translate", "too-many-words", ["--model", "{model}", "我明天去北京。" * 20], 4,
     r"无法翻译 '(我明天去北京。){8}我明天去'…（共 140 个字符）：句子太长，超过了模型的位置数 max_len，请拆成短句"),
    ("translate", "empty-sentence", ["--model", "{model}", ""], 4, r"无法翻译 ''：句子里没有词"),
    ("translate", "dash-sentence-after-double-dash", ["--model", "{model}", "--", "-好好"], 4,
     r"无法翻译 '-好好'：有模型没学过的词 \['-', '好好'\]，模型只能翻译训练语料里的词"),
    ("convert", "os-system", ["{payload}", "{tmp}/n.safetensors"], 3,
     CKPT + r" 不安全：它的 pickle 要调用 posix.system，torch.load\(weights_only=True\) 拒绝了它，里面的代码没有运行"),
    ("convert", "no-arguments", [], 2, r"error: the following arguments are required: OLD, NEW"),
    ("poetry", "acrostic-2", [*GENERATE, "--acrostic", "春花"], 2, r"--acrostic 应为 4 或 8 个字.*得到 2 个：'春花'" + USAGE),
    ("poetry", "prefix-unknown", [*GENERATE, "--prefix", "春风吹龙"], 2, r"模型不认识这些字（训练集里不到 2 次）：龙" + USAGE),
    ("poetry", "prefix-and-acrostic", [*GENERATE, "--prefix", "春", "--acrostic", "春花秋月"], 2,
     r"--prefix 与 --acrostic 只能给一个" + USAGE),
    ("poetry", "top-p-1.5", [*GENERATE, "--top-p", "1.5"], 2, r"--top-p 应为 \(0, 1\] 之内的数，得到 '1.5'" + USAGE),
    ("poetry", "muon-lr-0", ["train", "--steps", "1", "--out", "{tmp}/p.safetensors", "--muon-lr", "0"], 2,
     r"--muon-lr 应为 \(0, 1\] 之内的数，得到 '0'" + USAGE),
    ("poetry", "no-command", [], 2, r"error: the following arguments are required: command"),
    ("poetry", "device-tpu", ["train", "--steps", "1", "--out", "x", "--device", "tpu"], 2, r"error: argument --device: invalid choice: 'tpu'"),
    ("poetry", "model-pickle", ["generate", "--model", "{payload}"], 3, CKPT + r" 是 torch.save 写的 pickle 文件：.*不安全.*"),
]  # fmt: skip


@pytest.mark.parametrize(
    "command, name, argv, code, line", CLI, ids=[f"{r[0]}-{r[1]}" for r in CLI]
)
def test_bad_command_line_prints_its_one_line(command, name, argv, code, line, tmp_path, monkeypatch, capfd):  # fmt: skip
    # 训练绝不能开始：命令行的参数要在那之前全部检查完
    monkeypatch.setattr(cli, "train_and_score", lambda *a, **k: pytest.fail("trained"))
    monkeypatch.setattr(poetry_cli, "train", lambda *a, **k: pytest.fail("trained"))
    argv = fill(argv, tmp_path)
    if command == "poetry":
        status, out, err = captured(lambda: poetry_cli.run(argv))
    else:
        status, out, err = run_cli(cli.COMMANDS[command], argv)
    err = "".join(
        line for line in err.splitlines(True) if not line.startswith("提示：没有给 --model")
    )
    assert (status, out) == (code, ""), err
    assert "Traceback" not in err and "pwned" not in capfd.readouterr().out
    if line.startswith("error: "):  # argparse 自己的用法错误：用法一行 + "error: …"
        assert err.startswith("usage: ") and re.search(line, err), err
    else:  # 恰好一行 "错误：…"
        assert err.startswith("错误：") and err.count("\n") == 1 and err.endswith("\n"), err
        assert re.fullmatch(line, err[len("错误：") : -1]), err


def test_the_tables_name_each_case_once():
    for names in ([r[0] for r in ERRORS], [r[0] for r in CHECKPOINTS], [r[:2] for r in CLI]):
        assert len(names) == len(set(names))
    assert (
        len(ERRORS) + len(CHECKPOINTS) + len(CLI) <= 110
    )  # 教人东西或钉住 bug 的行；同类的值交给 hypothesis


SUBPROCESS = [  # (参数, stdout 一开始就关掉（| head 读完就走）, 退出码, stderr 的最后一行)
    (["train", "--seconds", "inf"], False, 2, "错误：--seconds 应为有限的正数，得到 'inf'（用 --help 查看用法）"),
    (["translate", "我明天去北京。"], True, 5, "错误：读写出错：输出被关闭了（例如管道另一端的程序已经退出）"),
]  # fmt: skip


@pytest.mark.parametrize("argv, closed_stdout, code, last_line", SUBPROCESS)
def test_a_real_process_ends_with_one_line(argv, closed_stdout, code, last_line):
    # 真的起一个 python -m tinyformer.translation：没有 traceback，也没有 "Exception ignored"
    stdout, write = subprocess.PIPE, None
    if closed_stdout:
        read, write = os.pipe()
        os.close(read)
        stdout = write
    result = subprocess.run(
        [sys.executable, "-m", "tinyformer.translation", *argv],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        timeout=120,
    )
    if write is not None:
        os.close(write)
    lines = [line for line in result.stderr.splitlines() if not line.startswith("提示：")]
    assert (result.returncode, lines) == (code, [last_line]), result.stderr


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


def test_a_254_character_file_name_saves_and_loads(tmp_path):
    # issue 26：临时文件名曾是 "." + 整个文件名 + 随机串，超过 255 字节，mkstemp 报 File name too long
    path = tmp_path / ("a" * 242 + ".safetensors")
    save_checkpoint(tiny_translator(), path, bleu=1.0)
    assert load_checkpoint(path).metrics == {"bleu": 1.0}
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # 没有留下临时文件


def test_translate_without_model_uses_the_shipped_weights_and_says_so():
    # issue 26：读者的第一次尝试应当能翻译（旧代码：--model 是必需的参数）
    status, out, err = run_cli(cli.translate_main, ["我明天去北京。"])
    assert (status, out) == (0, "I will go to Beijing tomorrow.\n")
    assert re.fullmatch(
        r"提示：没有给 --model，使用随包发布的权重（训练 \d+ 步）\n",
        err,
    )


def test_translate_says_when_a_sentence_is_outside_the_grammar():
    # issue 26：否定疑问句，语料从不生成；每个词都在词表里，模型给出一句流利但错误的译文
    sentence = "他昨天没在商店买衣服吗？"
    status, out, err = run_cli(cli.translate_main, [sentence, "我明天去北京。"])
    assert status == 0 and len(out.splitlines()) == 2  # 照样给出模型的译文
    assert err.splitlines()[1:] == [f"提示：'{sentence}'：这句话的句型不在训练语料里，译文不可信"]


def test_translate_help_says_how_to_pass_a_sentence_starting_with_a_dash(capsys):
    with pytest.raises(SystemExit):
        cli.translate_main(["--help"])
    assert "以 - 开头的句子放在 -- 之后" in capsys.readouterr().out
