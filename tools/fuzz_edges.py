"""Throw hostile or ambiguous inputs at the public API and both command-line tools; count outcomes.

    .venv/bin/python -m tools.fuzz_edges            # summary table, then every obscure/wrong case
    .venv/bin/python -m tools.fuzz_edges --verbose  # every case with its outcome

Each case is a call plus (for a call that returns) a property the result must have. Outcomes:

- clear:    ValueError/TypeError whose message names the argument or the file (for the CLI: exactly
            one Chinese line "错误：…", no English sentence, a nonzero exit code);
- handled:  a valid edge input and a result with the property checked;
- obscure:  any other exception, or a message from torch's internals;
- wrong:    returned normally but the property does not hold (nan/inf, wrong shape, mask ignored);
- crash:    the call did not finish within 60 s, or memory ran out (run under ``ulimit -v``).

Issue 26 asks for no wrong result, no crash, and obscure errors under 3 % of the bad inputs. The run
sets a 6 GiB address-space limit on itself and takes about a minute on two cores.
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import io
import json
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import torch
from safetensors.torch import load_file, save

import tinyformer as tf
from tinyformer import book
from tinyformer.translation import cli
from tinyformer.translation.checkpoint import convert_checkpoint, load_checkpoint, save_checkpoint
from tinyformer.translation.corpus import OUT_OF_GRAMMAR
from tinyformer.translation.pretrained import load_translator
from tinyformer.translation.translator import new_translator
from tinyformer.weights import WeightsError, read_metadata

TIMEOUT = 60
ENGLISH = re.compile(r"[A-Za-z]{2,}(?: [A-Za-z]{2,}){2,}")
TORCH_INTERNAL = re.compile(r"at::|c10::|Expected .* but got|size mismatch|DefaultCPUAllocator|"
                            r"index out of range in self|mat1 and mat2|The size of tensor a")  # fmt: skip
CASES: list[tuple[str, str, object, object]] = []  # (group, name, thunk, check)


def cases_of(group):
    """``case(name, thunk, check=None)``：把一个情形记进 ``group`` 这一组。"""
    return lambda name, thunk, check=None: CASES.append((group, name, thunk, check))


def finite(value):
    tensors = value if isinstance(value, (tuple, list)) else [value]
    for t in tensors:
        if isinstance(t, torch.Tensor) and t.is_floating_point() and not torch.isfinite(t).all():
            return "non-finite values in the result"
    return None


def shape(expected):
    def check(value):
        t = value[0] if isinstance(value, tuple) else value
        if tuple(t.shape) != tuple(expected):
            return f"shape {tuple(t.shape)}, expected {tuple(expected)}"
        return finite(value)

    return check


BAD_INTS = [0, -1, 1.5, True, None, "8", float("nan"), 2**62, -(2**63)]
BAD_FLOATS = [-0.1, 1.0, 1.5, float("nan"), float("inf"), None, "0.1", True]


# ---------------------------------------------------------------- constructors
def constructors():
    case = cases_of("constructors")
    small = dict(d_model=8, num_heads=2, d_ff=16)
    builders = {
        "MultiHeadAttention": (tf.MultiHeadAttention, dict(d_model=8, num_heads=2)),
        "PositionWiseFFN": (tf.PositionWiseFFN, dict(d_model=8, d_ff=16)),
        "LayerNorm": (tf.LayerNorm, dict(d_model=8)),
        "TokenEmbedding": (tf.TokenEmbedding, dict(vocab_size=10, d_model=8)),
        "PositionalEncoding": (tf.PositionalEncoding, dict(d_model=8, max_len=16)),
        "EncoderLayer": (tf.EncoderLayer, dict(small)),
        "DecoderLayer": (tf.DecoderLayer, dict(small)),
        "Dropout": (tf.Dropout, dict(p=0.5)),
    }
    for cls_name, (cls, good) in builders.items():
        for arg in good:
            values = BAD_FLOATS if arg in ("p",) else BAD_INTS
            for value in values:
                kwargs = {**good, arg: value}
                case(f"{cls_name}({arg}={value!r})", lambda c=cls, k=kwargs: c(**k))
    for arg, value in [("dropout", 1.0), ("dropout", -0.5), ("dropout", float("nan")),
                       ("activation", "tanh"), ("activation", None), ("eps", 0.0), ("eps", -1e-5),
                       ("eps", float("nan")), ("base", 1e-310), ("base", 1.0), ("base", -2.0),
                       ("base", float("inf")), ("padding_idx", 10), ("padding_idx", -11),
                       ("bias", "yes"), ("norm_first", 1)]:  # fmt: skip
        for cls_name, (cls, good) in builders.items():
            if arg in inspect.signature(cls).parameters:
                kwargs = {**good, arg: value}
                case(f"{cls_name}({arg}={value!r})", lambda c=cls, k=kwargs: c(**k))
    config = dict(src_vocab_size=12, tgt_vocab_size=12, d_model=8, num_heads=2,
                  num_encoder_layers=1, num_decoder_layers=1, d_ff=16, max_len=16)  # fmt: skip
    for arg, value in [("d_model", 2**20), ("max_len", 10**9), ("src_vocab_size", 10**9),
                       ("d_ff", 2**36), ("num_encoder_layers", 10**6), ("num_heads", 3),
                       ("pad_id", 12), ("pad_id", -1), ("tie_output", "no"), ("dropout", 2.0),
                       ("tgt_vocab_size", 1), ("max_len", 0), ("d_model", 7)]:  # fmt: skip
        kwargs = {**config, arg: value}
        case(f"Transformer({arg}={value!r})",
             lambda k=kwargs: tf.Transformer(tf.TransformerConfig(**k)))  # fmt: skip
    gpt = dict(vocab_size=12, max_len=16, d_model=8, num_heads=2, num_layers=1)
    for arg, value in [("vocab_size", 10**9), ("max_len", 10**9), ("num_layers", 10**6),
                       ("d_ff", 0), ("d_ff", 2**40), ("num_heads", 5), ("activation", "swish"),
                       ("norm", "batchnorm"), ("position", "sinusoidal"), ("rope_layout", None),
                       ("ffn", "geglu"), ("num_kv_heads", 3), ("num_kv_heads", 0),
                       ("bias", 1)]:  # fmt: skip
        kwargs = {**gpt, arg: value}
        case(f"GPT({arg}={value!r})", lambda k=kwargs: tf.GPT(tf.GPTConfig(**k)))
    # valid edges
    case("MultiHeadAttention(1, 1)", lambda: tf.MultiHeadAttention(1, 1))
    case("EncoderLayer(num_heads=d_model)", lambda: tf.EncoderLayer(8, 8, 1))
    case("Dropout(p=0)", lambda: tf.Dropout(0.0))
    case("PositionalEncoding(max_len=1)", lambda: tf.PositionalEncoding(8, 1))


# ---------------------------------------------------------------- attention with masks
def attention():
    case = cases_of("attention")
    torch.manual_seed(0)
    B, T, S, C = 2, 2, 3, 8
    mha = tf.MultiHeadAttention(C, 2).eval()
    q, kv = torch.randn(B, T, C), torch.randn(B, S, C)
    pad = torch.tensor([[False, False, True], [False, True, True]])  # True = padding, as in torch

    def respects_padding(out):
        kv2 = kv.clone()
        kv2[pad] = 100.0  # changing masked keys must not change anything
        again = mha(q, kv2, kv2, key_padding_mask=pad)[0]
        return None if torch.allclose(out[0], again, atol=1e-6) else "padding mask ignored"

    case("key_padding_mask (B, S)", lambda: mha(q, kv, kv, key_padding_mask=pad),
         respects_padding)  # fmt: skip
    bad_masks = {
        "key_padding_mask (B, T) instead of (B, S)": dict(key_padding_mask=torch.ones(B, T, dtype=torch.bool)),
        "key_padding_mask float": dict(key_padding_mask=pad.float()),
        "key_padding_mask int": dict(key_padding_mask=pad.long()),
        "key_padding_mask (S,)": dict(key_padding_mask=pad[0]),
        "key_padding_mask (B, S, 1)": dict(key_padding_mask=pad[..., None]),
        "key_padding_mask list": dict(key_padding_mask=pad.tolist()),
        "attn_mask (B, S) when B == T": dict(attn_mask=pad),
        "attn_mask (S, T) transposed": dict(attn_mask=torch.ones(S, T, dtype=torch.bool)),
        "attn_mask float": dict(attn_mask=torch.zeros(T, S)),
        "attn_mask (T, S, 1)": dict(attn_mask=torch.ones(T, S, 1, dtype=torch.bool)),
        "attn_mask numpy": dict(attn_mask=torch.ones(T, S, dtype=torch.bool).numpy()),
        "attn_mask meta": dict(attn_mask=torch.ones(T, S, dtype=torch.bool, device="meta")),
        "attn_mask 0-dim": dict(attn_mask=torch.tensor(True)),
        "key_padding_mask meta": dict(key_padding_mask=torch.ones(B, S, dtype=torch.bool, device="meta")),
    }  # fmt: skip
    for name, kwargs in bad_masks.items():
        case(f"MultiHeadAttention {name}", lambda k=kwargs: mha(q, kv, kv, **k), shape((B, T, C)))
    case("attn_mask (T, S) all False", lambda: mha(q, kv, kv, attn_mask=torch.zeros(T, S, dtype=torch.bool)),
         shape((B, T, C)))  # fmt: skip
    case("every key padding", lambda: mha(q, kv, kv, key_padding_mask=torch.ones(B, S, dtype=torch.bool)),
         shape((B, T, C)))  # fmt: skip
    case("key_padding_mask inverted (ids != pad)", lambda: mha(q, kv[:1], kv[:1], key_padding_mask=torch.ones(1, S, dtype=torch.bool)),
         shape((1, T, C)))  # fmt: skip
    theirs = torch.nn.MultiheadAttention(C, 2, batch_first=True).eval()
    same_as_torch = tf.copy_from_torch(tf.MultiHeadAttention(C, 2), theirs).eval()
    causal = torch.ones(T, S, dtype=torch.bool).triu(1)  # True = masked, as torch takes it

    def matches_torch(out):
        expected = theirs(q, kv, kv, key_padding_mask=pad, attn_mask=causal)[0]
        return (
            None
            if torch.allclose(out[0], expected, atol=1e-6)
            else "differs from nn.MultiheadAttention"
        )

    case("torch's masks, same meaning as nn.MultiheadAttention",
         lambda: same_as_torch(q, kv, kv, key_padding_mask=pad, attn_mask=causal), matches_torch)  # fmt: skip
    for name, (a, b, c) in {
        "query 2-D": (q[0], kv, kv),
        "key wrong C": (q, torch.randn(B, S, C + 1), kv),
        "value wrong S": (q, kv, torch.randn(B, S + 1, C)),
        "batch mismatch": (q, kv[:1], kv[:1]),
        "int query": (q.long(), kv, kv),
        "float64 query": (q.double(), kv, kv),
        "empty S": (q, kv[:, :0], kv[:, :0]),
        "list query": (q.tolist(), kv, kv),
        "None key": (q, None, kv),
    }.items():
        case(f"MultiHeadAttention {name}", lambda a=a, b=b, c=c: mha(a, b, c), shape((B, T, C)))
    # nan in, nan out (like torch); an empty query gives an empty output
    case("MultiHeadAttention nan query", lambda: mha(torch.full_like(q, float("nan")), kv, kv),
         lambda r: None if r[0].shape == q.shape else f"shape {tuple(r[0].shape)}")  # fmt: skip
    case("MultiHeadAttention empty T", lambda: mha(q[:, :0], kv, kv), shape((B, 0, C)))
    # sdpa
    Q, K, V = torch.randn(B, 2, T, 4), torch.randn(B, 2, S, 4), torch.randn(B, 2, S, 4)
    for name, kwargs in {
        "attn_mask keyword (F.sdpa's name)": dict(attn_mask=pad),
        "mask (B, S) as (T, S)": dict(mask=pad),
        "dropout_p 1.5": dict(dropout_p=1.5),
        "dropout_p nan": dict(dropout_p=float("nan")),
        "mask (B, H, T, S)": dict(mask=torch.zeros(B, 2, T, S, dtype=torch.bool)),
        "mask (B, H, T, S+1)": dict(mask=torch.zeros(B, 2, T, S + 1, dtype=torch.bool)),
    }.items():
        case(f"sdpa {name}", lambda k=kwargs: tf.attention_with_weights(Q, K, V, **k),
             shape((B, 2, T, 4)))  # fmt: skip
    # layers and full model
    enc, dec = tf.EncoderLayer(C, 2, 16).eval(), tf.DecoderLayer(C, 2, 16).eval()
    x, mem = torch.randn(B, S, C), torch.randn(B, S, C)
    for name, thunk, out in [
        ("EncoderLayer src_key_padding_mask", lambda: enc(x, src_key_padding_mask=pad), (B, S, C)),
        ("EncoderLayer attn_mask keyword", lambda: enc(x, attn_mask=pad), (B, S, C)),
        ("EncoderLayer positional mask", lambda: enc(x, pad), (B, S, C)),
        ("DecoderLayer memory_mask keyword", lambda: dec(q, mem, memory_mask=pad), (B, T, C)),
        ("DecoderLayer tgt_mask (T, S)", lambda: dec(q, mem, tgt_mask=torch.zeros(T, S, dtype=torch.bool)), (B, T, C)),
        ("DecoderLayer memory_key_padding_mask", lambda: dec(q, mem, memory_key_padding_mask=pad), (B, T, C)),
    ]:  # fmt: skip
        case(name, thunk, shape(out))
    config = tf.TransformerConfig(12, 12, d_model=8, num_heads=2, num_encoder_layers=1,
                                  num_decoder_layers=1, d_ff=16, max_len=16)  # fmt: skip
    model = tf.Transformer(config).eval()
    src, tgt = torch.tensor([[1, 2, 0], [3, 0, 0]]), torch.tensor([[1, 4], [1, 5]])
    for name, thunk, out in [
        ("Transformer src_mask=src == 0", lambda: model(src, tgt, src_mask=src == 0), (B, T, 12)),
        ("Transformer src_key_padding_mask", lambda: model(src, tgt, src_key_padding_mask=src == 0), (B, T, 12)),
        ("causal_mask(1, start=100000) builds one row", lambda: tf.causal_mask(1, start=100_000), (1, 100_001)),
        ("causal_mask(0)", lambda: tf.causal_mask(0), (0, 0)),
    ]:  # fmt: skip
        case(name, thunk, shape(out))
    for name, (s, t) in {
        "src id = vocab size": (torch.tensor([[12]]), tgt[:1]),
        "src negative id": (torch.tensor([[-1]]), tgt[:1]),
        "src float": (src.float(), tgt),
        "src longer than max_len": (torch.ones(1, 17, dtype=torch.long), tgt[:1]),
        "tgt longer than max_len": (src[:1], torch.ones(1, 17, dtype=torch.long)),
        "src 1-D": (src[0], tgt),
        "batch mismatch": (src, tgt[:1]),
        "empty src": (src[:, :0], tgt),
        "src bool": (src.bool(), tgt),
        "src on meta": (src.to("meta"), tgt),
    }.items():
        case(f"Transformer {name}", lambda s=s, t=t: model(s, t), shape((len(t), t.shape[-1], 12)))
    for name, thunk in [
        ("causal_mask(-1)", lambda: tf.causal_mask(-1)),
        ("causal_mask(3, start=-1)", lambda: tf.causal_mask(3, start=-1)),
        ("causal_mask(2.0)", lambda: tf.causal_mask(2.0)),
        ("padding_mask pad_id=-1", lambda: tf.padding_mask(src, -1)),
        ("padding_mask float ids", lambda: tf.padding_mask(src.float(), 0)),
        ("padding_mask list", lambda: tf.padding_mask([[1, 0]], 0)),
    ]:
        case(name, thunk)
    return model


# ---------------------------------------------------------------- agree / magnitude
def compare():
    case = cases_of("agree")

    def verdict(expected_ok):
        def check(result):
            ok = bool(getattr(result, "ok", None))
            return None if ok == expected_ok else f"agree said ok={ok}, expected {expected_ok}"

        return check

    inf = float("inf")
    cases = [
        ("identical [1, inf]", torch.tensor([1.0, inf]), torch.tensor([1.0, inf]), {}, verdict(True)),
        ("inf vs -inf", torch.tensor([inf]), torch.tensor([-inf]), {}, verdict(False)),
        ("nan vs nan", torch.tensor([float("nan")]), torch.tensor([float("nan")]), {}, None),
        ("1j vs 2j", torch.tensor([1j]), torch.tensor([2j]), {}, verdict(False)),
        ("big ints differ by 1, tol=0", torch.tensor([2**60]), torch.tensor([2**60 + 1]), dict(tol=0), verdict(False)),
        ("big ints equal", torch.tensor([2**62]), torch.tensor([2**62]), dict(tol=0), verdict(True)),
        ("int64 extremes", torch.tensor([-(2**63)]), torch.tensor([2**63 - 1]), {}, verdict(False)),
        ("None", None, torch.ones(1), {}, None),
        ("str", "1.0", torch.ones(1), {}, None),
        ("ragged", [[1.0], [1.0, 2.0]], [[1.0], [1.0, 2.0]], {}, None),
        ("meta", torch.ones(2, device="meta"), torch.ones(2), {}, None),
        ("shape mismatch", torch.ones(2), torch.ones(3), {}, None),
        ("tol negative", torch.ones(2), torch.ones(2), dict(tol=-1.0), None),
        ("tol nan", torch.ones(2), torch.ones(2), dict(tol=float("nan")), None),
        ("tol inf", torch.ones(2), torch.zeros(2), dict(tol=inf), None),
        ("bools", torch.tensor([True]), torch.tensor([False]), {}, verdict(False)),
        ("empty", torch.ones(0), torch.ones(0), {}, verdict(True)),
        ("python floats", 0.1 + 0.2, 0.3, {}, verdict(True)),
        ("dict", {"a": 1}, {"a": 1}, {}, None),
        ("sparse", torch.ones(2).to_sparse(), torch.ones(2), {}, None),
        ("float16 vs float64", torch.ones(2, dtype=torch.float16), torch.ones(2, dtype=torch.float64), {}, verdict(True)),
        ("nested lists", [[1.0, 2.0]], [[1.0, 2.0]], {}, verdict(True)),
    ]  # fmt: skip
    for name, a, b, kwargs, check in cases:
        case(f"agree {name}", lambda a=a, b=b, k=kwargs: book.agree(a, b, **k), check)
    for name, value in [("inf", float("inf")), ("nan", float("nan")), ("None", None), ("str", "x"),
                        ("tensor", torch.ones(3)), ("complex", 1 + 2j), ("huge int", 10**400),
                        ("zero", 0.0), ("negative", -1e-300), ("meta", torch.ones(1, device="meta"))]:  # fmt: skip
        case(f"magnitude {name}", lambda v=value: book.magnitude(v),
             lambda r: None if isinstance(r, str) else "not a str")  # fmt: skip


# ---------------------------------------------------------------- positional encodings
def positional():
    case = cases_of("positional")
    for max_len, d_model, base in [(8, 4, 1e-310), (8, 4, 1.0), (8, 4, 0.0), (8, 4, -10.0),
                                   (8, 4, float("inf")), (8, 4, float("nan")), (8, 4, 1e308),
                                   (8, 3, 10000.0), (0, 4, 10000.0), (8, 0, 10000.0),
                                   (10**9, 512, 10000.0), (8, 4, "10000"), (8.0, 4, 10000.0),
                                   (1, 2, 10000.0), (8, 4, 2.0), (-1, 4, 10000.0)]:  # fmt: skip
        case(f"sinusoidal_encoding({max_len}, {d_model}, base={base!r})",
             lambda a=max_len, b=d_model, c=base: tf.sinusoidal_encoding(a, b, base=c),
             lambda r, a=max_len, b=d_model: shape((a, b))(r))  # fmt: skip
    for k, d_model in [(1, 4), (-3, 4), (10**18, 4), (1, 3), (1, 2**20), (1.5, 4), (0, 4)]:
        case(f"shift_matrix({k}, {d_model})", lambda k=k, d=d_model: tf.shift_matrix(k, d),
             lambda r, d=d_model: shape((d, d))(r))  # fmt: skip
    pe = tf.PositionalEncoding(8, 16)
    for name, x in [("input longer than max_len", torch.zeros(1, 17, 8)),
                    ("wrong C", torch.zeros(1, 4, 9)), ("2-D", torch.zeros(4, 8))]:  # fmt: skip
        case(f"PositionalEncoding {name}", lambda x=x: pe(x), shape(x.shape))


# ---------------------------------------------------------------- Vocab and tokenizers
def text():
    case = cases_of("text")
    vocab = tf.Vocab([["我", "爱", "北京"]])
    for name, thunk, check in [
        ("Vocab(None)", lambda: tf.Vocab(None), None),
        ("Vocab('abc')", lambda: tf.Vocab("abc"), None),
        ("Vocab([[1, 2]])", lambda: tf.Vocab([[1, 2]]), None),
        (
            "Vocab([['<pad>']])",
            lambda: tf.Vocab([["<pad>"]]),
            lambda v: None if len(v) == 4 else f"len {len(v)}",
        ),  # fmt: skip
        ("Vocab([])", lambda: tf.Vocab([]), lambda v: None if len(v) == 4 else f"len {len(v)}"),
        ("Vocab(min_freq=0)", lambda: tf.Vocab([["a"]], min_freq=0), None),
        ("Vocab(min_freq=1.5)", lambda: tf.Vocab([["a"]], min_freq=1.5), None),
        ("Vocab(['abc'])", lambda: tf.Vocab(["abc"]), None),
        ("encode unknown", lambda: vocab.encode(["上海"]), None),
        ("encode str", lambda: vocab.encode("我爱"), None),
        ("encode ints", lambda: vocab.encode([1, 2]), None),
        ("decode id = len", lambda: vocab.decode([len(vocab)]), None),
        ("decode negative", lambda: vocab.decode([-1]), None),
        ("decode float", lambda: vocab.decode([1.5]), None),
        ("decode tensor 2-D", lambda: vocab.decode(torch.ones(2, 2, dtype=torch.long)), None),
        ("decode empty", lambda: vocab.decode([]), lambda r: None if r == [] else repr(r)),
        ("decode bool", lambda: vocab.decode([True]), None),
        ("from_itos missing specials", lambda: tf.Vocab.from_itos(["a", "b"]), None),
        ("from_itos duplicates", lambda: tf.Vocab.from_itos(list(vocab.itos) + ["我"]), None),
        ("from_itos non-str", lambda: tf.Vocab.from_itos(list(vocab.itos) + [3]), None),
    ]:
        case(name, thunk, check)

    def is_list(r):
        return None if isinstance(r, list) and all(isinstance(t, str) for t in r) else repr(r)[:40]

    for value in [None, 123, b"bytes", "", "   ", "好" * 100_000, "🙂🙂", "\x00", "我\n爱\t北京",
                  "ABC def", "——……", "我明天去北京。" * 50, ["我"], "\ud800"]:  # fmt: skip
        case(f"tokenize_zh({value!r:.30})", lambda v=value: tf.tokenize_zh(v), is_list)
        case(f"tokenize_en({value!r:.30})", lambda v=value: tf.tokenize_en(v), is_list)
    for name, kwargs in [("cut_all='yes'", dict(cut_all="yes")),
                         ("cut_all and search", dict(cut_all=True, search=True))]:  # fmt: skip
        case(f"tokenize_zh {name}", lambda k=kwargs: tf.tokenize_zh("我", **k), is_list)


# ---------------------------------------------------------------- decoding
def decoding(model):
    case = cases_of("decoding")
    src = torch.tensor([[1, 2, 3], [4, 5, 0]])

    def decoded(r):
        if r.dtype != torch.long or r.dim() != 2 or r.shape[0] != 2 or not (r[:, 0] == 1).all():
            return f"bad output {tuple(r.shape)} {r.dtype}"
        return None

    for fn_name, fn in (("greedy_decode", tf.greedy_decode), ("beam_search", tf.beam_search)):
        for name, kwargs in {
            "max_len=0": dict(max_len=0),
            "max_len=-1": dict(max_len=-1),
            "max_len=10**9": dict(max_len=10**9),
            "max_len=1.5": dict(max_len=1.5),
            "max_len=None": dict(max_len=None),
            "max_len=16 (model's max_len)": dict(max_len=16),
            "bos_id=12": dict(bos_id=12),
            "eos_id=-1": dict(eos_id=-1),
            "bos_id=1.0": dict(bos_id=1.0),
            "use_cache='no'": dict(use_cache="no"),
        }.items():
            kw = dict(bos_id=1, eos_id=2, max_len=5) | kwargs
            case(f"{fn_name} {name}", lambda f=fn, k=kw: f(model, src, **k), decoded)
        for name, s in {
            "src float": src.float(),
            "src 1-D": src[0],
            "src empty S": src[:, :0],
            "src empty B": src[:0],
            "src id 99": torch.tensor([[99]]),
            "src list": src.tolist(),
        }.items():
            case(f"{fn_name} {name}", lambda f=fn, s=s: f(model, s, 1, 2, max_len=4),
                 lambda r: None if isinstance(r, torch.Tensor) else "not a tensor")  # fmt: skip
        case(f"{fn_name} model=None", lambda f=fn: f(None, src, 1, 2))
        case(f"{fn_name} model in train mode", lambda f=fn: f(model.train(), src, 1, 2, max_len=3),
             decoded)  # fmt: skip
        model.eval()
    for name, kwargs in {
        "beam_size=0": dict(beam_size=0),
        "beam_size=-2": dict(beam_size=-2),
        "beam_size=1.5": dict(beam_size=1.5),
        "beam_size=True": dict(beam_size=True),
        "beam_size=10**7": dict(beam_size=10**7),
        "beam_size=12 (vocab)": dict(beam_size=12),
        "alpha=nan": dict(alpha=float("nan")),
        "alpha=-1": dict(alpha=-1.0),
        "alpha=1e308": dict(alpha=1e308),
        "alpha=inf": dict(alpha=float("inf")),
    }.items():
        kw = dict(bos_id=1, eos_id=2, max_len=4) | kwargs
        case(f"beam_search {name}", lambda k=kw: tf.beam_search(model, src, **k), decoded)


# ---------------------------------------------------------------- checkpoints
def checkpoints(folder: Path):
    case = cases_of("checkpoint")
    translator = new_translator(
        tf.Vocab([["我", "明天", "去", "北京", "。"]]), tf.Vocab([["i", "will", "go", "."]]),
        seed=0, d_model=16, num_heads=4, num_layers=1, d_ff=32, max_len=16,
    )  # fmt: skip
    good = folder / "good.safetensors"
    save_checkpoint(translator, good, bleu=1.0)
    data = good.read_bytes()
    reference = translator.model.state_dict()

    def same_as_saved(loaded):
        state = loaded.model.state_dict()
        if any(not torch.equal(state[k], reference[k]) for k in reference):
            return "loaded weights differ from the saved ones"
        return None

    def crafted(name, raw: bytes, suffix=".safetensors"):
        path = folder / f"{name}{suffix}"
        path.write_bytes(raw)
        case(name, lambda p=path: load_checkpoint(p), same_as_saved)

    for cut in (
        0,
        1,
        7,
        8,
        10,
        100,
        len(data) // 3,
        len(data) // 2,
        len(data) - 100,
        len(data) - 1,
    ):
        crafted(f"truncated at {cut}", data[:cut])
    for position in range(0, len(data), max(1, len(data) // 60)):  # ~60 single flipped bytes
        flipped = bytearray(data)
        flipped[position] ^= 0x01
        crafted(f"byte {position} flipped", bytes(flipped))
    crafted("random bytes", os.urandom(4096))
    crafted("appended garbage", data + b"\x00" * 100)

    base_meta, base_tensors = read_metadata(good), load_file(good)

    def variant(name, meta=None, tensors=None, raw_meta=None):
        metadata, state = copy.deepcopy(base_meta), dict(base_tensors)
        if meta:
            meta(metadata)
        if tensors:
            tensors(state)
        buffer = save(state, metadata=raw_meta or {"tinyformer": json.dumps(metadata)})
        crafted(name, buffer)

    for field, value in [("d_model", 8192), ("max_len", 2**31), ("num_heads", 3), ("pad_id", 1),
                         ("src_vocab_size", 10**7), ("dropout", float("nan")), ("tie_output", 1),
                         ("activation", "evil"), ("d_ff", 65536), ("num_encoder_layers", 0),
                         ("norm_first", "yes"), ("pad_id", -1), ("d_model", 32), ("max_len", 1)]:  # fmt: skip
        variant(f"config {field}={value!r}", meta=lambda m, f=field, v=value: m["config"].__setitem__(f, v))  # fmt: skip
    variant("config missing", meta=lambda m: m.pop("config"))
    variant("config extra field", meta=lambda m: m["config"].__setitem__("evil", 1))
    variant("config is a list", meta=lambda m: m.__setitem__("config", [1, 2]))
    variant("format wrong", meta=lambda m: m.__setitem__("format", "other"))
    variant("metrics list", meta=lambda m: m.__setitem__("metrics", [1]))
    variant("metrics nested", meta=lambda m: m["metrics"].__setitem__("x", {"a": 1}))
    variant("src_itos duplicate", meta=lambda m: m["src_itos"].__setitem__(5, m["src_itos"][4]))
    variant("src_itos short", meta=lambda m: m["src_itos"].pop())
    variant("tgt_itos not list", meta=lambda m: m.__setitem__("tgt_itos", "abc"))
    variant("itos with int", meta=lambda m: m["src_itos"].__setitem__(5, 5))
    variant("pad swapped in itos", meta=lambda m: m["src_itos"].insert(0, m["src_itos"].pop(1)))
    variant("no tinyformer metadata", raw_meta={"other": "x"})
    variant("metadata not JSON", raw_meta={"tinyformer": "{"})
    variant("metadata a list", raw_meta={"tinyformer": "[1]"})
    names = list(base_tensors)
    for name in (names[0], names[len(names) // 2], names[-1]):
        for change, new in [("nan", lambda t: torch.full_like(t, float("nan"))), ("float64", torch.Tensor.double),
                            ("reshaped", lambda t: t.reshape(-1)[None]), ("int", torch.Tensor.long)]:  # fmt: skip
            variant(f"{name} {change}", tensors=lambda s, n=name, f=new: s.__setitem__(n, f(s[n])))
        variant(f"{name} missing", tensors=lambda s, n=name: s.pop(n))
    variant("extra weight", tensors=lambda s: s.__setitem__("evil", torch.ones(1)))
    # the same weight name twice in the header, pointing at two different copies
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + n])
    name = next(k for k in header if k != "__metadata__")
    start, end = header[name]["data_offsets"]
    body = data[8 + n :]
    extra = json.dumps(
        {name: {**header[name], "data_offsets": [len(body), len(body) + end - start]}}
    )
    text = data[8 : 8 + n].decode().rstrip()[:-1] + "," + extra[1:]
    text += " " * (-len(text) % 8)
    changed = bytes(body[start:end]) if end == start else bytes(x ^ 1 for x in body[start:end])
    crafted(
        "duplicate weight name", len(text).to_bytes(8, "little") + text.encode() + body + changed
    )
    # pickles: the old format, and a hostile one that names os.system
    old = {"format": "tinyformer-translator-1", "config": base_meta["config"],
           "src_itos": base_meta["src_itos"], "tgt_itos": base_meta["tgt_itos"],
           "state_dict": translator.model.state_dict(), "metrics": base_meta["metrics"]}  # fmt: skip
    torch.save(old, folder / "old.pt")
    torch.save({"payload": Payload()}, folder / "evil.pt")
    case("old .pt file", lambda: load_checkpoint(folder / "old.pt"), same_as_saved)
    case("pickle naming os.system", lambda: load_checkpoint(folder / "evil.pt"), same_as_saved)
    case("convert old .pt",
         lambda: convert_checkpoint(folder / "old.pt", folder / "new.safetensors"), same_as_saved)  # fmt: skip
    case("convert os.system pickle",
         lambda: convert_checkpoint(folder / "evil.pt", folder / "evil.safetensors"), same_as_saved)  # fmt: skip
    case("convert truncated .pt",
         lambda: convert_checkpoint(folder / "truncated at 100.safetensors", folder / "x.safetensors"), same_as_saved)  # fmt: skip
    case("directory", lambda: load_checkpoint(folder), same_as_saved)
    case("/dev/null", lambda: load_checkpoint("/dev/null"), same_as_saved)
    case("missing file", lambda: load_checkpoint(folder / "none.safetensors"), same_as_saved)
    case("path None", lambda: load_checkpoint(None), same_as_saved)
    case("path 254 chars", lambda: load_checkpoint(folder / ("a" * 242 + ".safetensors")), same_as_saved)  # fmt: skip
    case("good file", lambda: load_checkpoint(good), same_as_saved)
    return good


class Payload:
    def __reduce__(self):  # torch.load(weights_only=True) must refuse it; nothing runs
        return (os.system, ("echo pwned",))


# ---------------------------------------------------------------- Translator
def translator_cases(translator):
    case = cases_of("translator")

    def strings(count):
        def check(r):
            r = [r] if isinstance(r, str) else r
            if len(r) != count or not all(isinstance(s, str) for s in r):
                return f"expected {count} strings, got {r!r:.60}"
            return None

        return check

    for value in ["", " ", "。", "我", "我明天去北京。", "他昨天没在商店买衣服吗？", "好" * 5000,
                  "我明天去北京。" * 20, "I will go.", "🙂", "\x00", "我明天去北京", "-我明天去北京。",
                  None, 5, b"bytes", ["我明天去北京。", 3], ("我明天去北京。",), [], iter(["我"]),
                  [["我"]], {"我明天去北京。"}]:  # fmt: skip
        count = 1 if isinstance(value, str) else len(value) if isinstance(value, (list, tuple)) else 0  # fmt: skip
        case(f"translate({value!r:.30})", lambda v=value: translator.translate(v), strings(count))

    def noted(r):
        if r.in_grammar == bool(r.note):
            return f"in_grammar={r.in_grammar} but note={r.note!r}"
        return None

    for value in ["我明天去北京。", "他昨天没在商店买衣服吗？", "我每天不喝绿茶。", "他们上周没去公园吗？"]:  # fmt: skip
        case(f"translate_checked({value})", lambda v=value: translator.translate_checked(v), noted)
    case("translate_checked out of grammar has the note",
         lambda: translator.translate_checked("他昨天没在商店买衣服吗？"),
         lambda r: None if r.note == OUT_OF_GRAMMAR else "no note")  # fmt: skip
    for name, kwargs in {"beam_size=0": dict(beam_size=0), "beam_size=10**7": dict(beam_size=10**7),
                         "beam_size=2.5": dict(beam_size=2.5), "max_len=0": dict(max_len=0),
                         "max_len=-5": dict(max_len=-5), "max_len=10**9": dict(max_len=10**9),
                         "beam_size=4": dict(beam_size=4), "max_len=1": dict(max_len=1)}.items():  # fmt: skip
        case(f"translate {name}", lambda k=kwargs: translator.translate("我明天去北京。", **k), strings(1))  # fmt: skip
    case("cross_attention layer=5", lambda: translator.cross_attention("我明天去北京。", layer=5))
    case("cross_attention layer=-1", lambda: translator.cross_attention("我明天去北京。", layer=-1),
         lambda r: finite(r[2]))  # fmt: skip
    case("evaluate([])", lambda: translator.evaluate([]))
    case("evaluate batch_size=0", lambda: translator.evaluate([1], batch_size=0))


# ---------------------------------------------------------------- CLIs
def cli_cases(model_file: Path, bad_file: Path, folder: Path):
    case = cases_of("cli")

    def in_process(command, argv):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = cli.run(lambda: command(argv))
            except SystemExit as exit_info:
                code = exit_info.code
        return code, out.getvalue(), err.getvalue()

    translate = [
        [], ["--model"], ["--model", str(model_file)], ["--beam-size", "0", "我"], ["--beam-size", "x", "我"],
        ["--beam-size", "100000", "我明天去北京。"], ["--bogus", "我"], ["-x", "我"], ["--model", str(bad_file), "我"],
        ["--model", str(folder), "我"], ["--model", "/dev/null", "我"], ["--model", str(folder / "no.safetensors"), "我"],
        ["--model", "", "我"], ["", "我明天去北京。"], ["我爱你"], ["好" * 40_000], ["我明天去北京。" * 20],
        ["--", "-我明天去北京。"], ["-我明天去北京。"], ["--beam", "2", "我明天去北京。"], ["--help"],
        ["我明天去北京。", "他昨天没在商店买衣服吗？"], ["--beam-size=2", "我明天去北京。"],
        ["--model=" + str(model_file), "我明天去北京。"], ["\x00"], ["🙂"], ["--beam-size", "-1", "我"],
        ["--beam-size", "1e3", "我"], ["--beam-size", str(2**70), "我"], ["--model", str(model_file), "--model", str(bad_file), "我"],
    ]  # fmt: skip
    train = [
        ["--steps", "0"], ["--steps"], ["--seconds", "inf"], ["--seconds", "nan"], ["--seconds", "-1"],
        ["--seed", "-1"], ["--seed", "x"], ["--seed", str(2**70)], ["--out", ""], ["--out", str(folder)],
        ["--out", "/dev/full"], ["--out", "/proc/x.safetensors"], ["--out", "/" + "x" * 300 + "/m.safetensors"],
        ["--threads", "0"], ["--threads", str(10**9), "--out", str(folder / "m.safetensors")], ["--beam-size", "0"],
        ["--lr", "1"], ["--s", "1"], ["--no-progress=1"], ["positional"], ["--help"],
        ["--out", str(folder / ("a" * 300 + ".safetensors"))],
    ]  # fmt: skip
    for name, command, rows in (
        ("translate", cli.translate_main, translate),
        ("train", cli.train_main, train),
    ):
        for argv in rows:
            case(f"{name} {' '.join(a[:30] for a in argv)[:80]}", lambda c=command, a=argv: in_process(c, a), "cli")  # fmt: skip
    for argv, pipe in [
        (["translate", "我明天去北京。"], False),
        (["translate", "--model", str(bad_file), "我"], False),
        (["translate", "他昨天没在商店买衣服吗？"], False),
        (["train", "--seconds", "inf"], False),
        (["bogus"], False),
        ([], False),
        (["translate", "我明天去北京。"], True),  # stdout closed at once
    ]:
        argv = ["tinyformer.translation", *argv]
        case(f"subprocess {' '.join(argv)[:60]}{' (stdout closed)' if pipe else ''}",
             lambda a=argv, p=pipe: subprocess_cli(a, p), "cli")  # fmt: skip


def subprocess_cli(argv, closed_stdout):
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    stdout = subprocess.PIPE
    if closed_stdout:
        read, write = os.pipe()
        os.close(read)
        stdout = write
    result = subprocess.run([sys.executable, "-m", *argv], stdout=stdout, stderr=subprocess.PIPE,
                            text=True, env=env, timeout=TIMEOUT)  # fmt: skip
    if closed_stdout:
        os.close(write)
    return result.returncode, result.stdout or "", result.stderr


def classify_cli(result):
    code, out, err = result
    lines = [line for line in err.splitlines() if not line.startswith("提示：")]
    if "Traceback" in err or "Exception ignored" in err:
        return "obscure", err.strip().splitlines()[-1][:120]
    if code == 0:
        return ("obscure", f"exit 0 with stderr {lines[0][:80]}") if lines else ("handled", f"exit 0 {out[:60]!r}")  # fmt: skip
    if code == 2 and err.startswith("usage: ") and ": error: " in lines[-1]:
        return "clear", f"exit 2 (argparse): {lines[-1][:120]}"  # argparse's own usage error
    if len(lines) != 1 or not lines[0].startswith("错误："):
        return "obscure", f"exit {code}, stderr {err[:120]!r}"
    if "意外的内部错误" in lines[0]:
        return "obscure", lines[0][:120]
    english = ENGLISH.findall(lines[0].replace("python -m tinyformer", ""))
    if english:
        return "obscure", f"English in {lines[0][:120]}"
    return "clear", f"exit {code}: {lines[0][:120]}"


def classify(error: BaseException):
    message = str(error)
    if isinstance(error, WeightsError):
        return "clear", message[:140]  # names the file and its reason (missing, pickle, damaged, …)
    if isinstance(error, FileNotFoundError) and error.filename is not None:
        return "clear", message[:140]  # names the missing file
    if re.search(r"can't allocate memory: you tried to allocate \d+ bytes|Storage size calculation "
                 r"overflowed with sizes=", message):  # fmt: skip
        return "clear", message[:140]  # torch itself names the bytes or sizes asked for
    if isinstance(error, (ValueError, TypeError)) and not TORCH_INTERNAL.search(message):
        # our checks ("must … got …") and Python's own signature errors name the argument
        if re.search(r"must|got|expected|checkpoint|give|need|has |does not|convert|positional argument", message):  # fmt: skip
            return "clear", message[:140]
    return "obscure", f"{type(error).__name__}: {message[:140]}"


class Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise Timeout


def run_case(thunk, check):
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(TIMEOUT)
    try:
        result = thunk()
    except Timeout:
        return "crash", f"no result after {TIMEOUT} s"
    except MemoryError:
        return "crash", "MemoryError"
    except Exception as err:  # noqa: BLE001
        if "can't allocate memory" in str(err) and "you tried to allocate" not in str(err):
            return "crash", "allocator ran out of memory"
        return classify(err)
    finally:
        signal.alarm(0)
    if check == "cli":
        return classify_cli(result)
    problem = check(result) if callable(check) else finite(result)
    return ("wrong", problem) if problem else ("handled", "")


def main():
    verbose = "--verbose" in sys.argv
    limit = 6 * 2**30
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    torch.manual_seed(0)
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        constructors()
        model = attention()
        compare()
        positional()
        text()
        decoding(model)
        good = checkpoints(folder)
        bad = folder / "truncated at 100.safetensors"
        translator_cases(load_translator())
        cli_cases(good, bad, folder)
        outcomes, notes = Counter(), []
        by_group: dict[str, Counter] = {}
        for group, name, thunk, check in CASES:
            outcome, note = run_case(thunk, check)
            outcomes[outcome] += 1
            by_group.setdefault(group, Counter())[outcome] += 1
            if verbose or outcome in ("obscure", "wrong", "crash"):
                notes.append(f"  [{outcome}] {group}: {name}  {note}")
    kinds = ("clear", "handled", "obscure", "wrong", "crash")
    print(f"{'group':<13}" + "".join(f"{k:>9}" for k in kinds) + f"{'total':>9}")
    for group, counts in [*by_group.items(), ("all", outcomes)]:
        print(f"{group:<13}" + "".join(f"{counts[k]:>9}" for k in kinds) + f"{counts.total():>9}")
    bad_inputs = outcomes["clear"] + outcomes["obscure"]
    share = outcomes["obscure"] / bad_inputs if bad_inputs else 0.0
    print(f"obscure: {outcomes['obscure']} of {bad_inputs} inputs that raised ({share:.1%})")
    print("\n".join(notes))
    return 0 if not (outcomes["wrong"] or outcomes["crash"]) and share < 0.03 else 1


if __name__ == "__main__":
    sys.exit(main())
