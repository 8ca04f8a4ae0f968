"""Hostile or ambiguous inputs for the public API and the command line: ONE table, two readers.

    .venv/bin/python -m tools.fuzz_edges            # summary table, then every obscure/wrong case
    .venv/bin/python -m tools.fuzz_edges --verbose  # every case with its outcome

Each case is a call (given a scratch folder for files) plus, for a call that returns, a property the
result must have. A case may pin its exact clear ending (``error``: an exception type, a
``WeightsError`` reason, or a CLI exit code; ``match``: the message's regex):
``tests/unit/test_bad_inputs.py`` runs every pinned case and requires exactly that ending. Outcomes:

- clear:    the pinned ending; else ValueError/TypeError whose message names the argument or the file
            (for the CLI: exactly one Chinese line "错误：…", no English sentence, a nonzero exit code);
- handled:  a valid edge input and a result with the property checked;
- obscure:  any other exception, a message from torch's internals, or not the pinned message;
- wrong:    returned normally but the property does not hold (nan/inf, wrong shape, mask ignored),
            or a pinned bad input was accepted;
- crash:    the call did not finish within 60 s, or memory ran out (run under ``ulimit -v``).

Issue 26 asks for no wrong result, no crash, and obscure errors under 3 % of the bad inputs. The run
sets a 6 GiB address-space limit on itself and takes a few minutes on two cores.
"""

from __future__ import annotations

import inspect
import json
import math
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from collections.abc import Callable
from functools import cache, partial
from pathlib import Path
from typing import NamedTuple

import torch
from safetensors.torch import load_file, save_file

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests.kit, also when run as a script
import tinyformer as tf  # noqa: E402
from tests.kit import TINY_SRC_VOCAB as SRC_VOCAB  # noqa: E402
from tests.kit import TINY_TGT_VOCAB as TGT_VOCAB  # noqa: E402
from tests.kit import (  # noqa: E402
    Payload,
    captured,
    run_cli,
    tiny_gpt,
    tiny_poet,
    tiny_transformer_config,
    tiny_translator,
)
from tests.kit import tiny_transformer as tiny_model  # noqa: E402
from tinyformer import book, seq2seq  # noqa: E402
from tinyformer.bpe import ByteBPE  # noqa: E402
from tinyformer.layers import recording_weights  # noqa: E402
from tinyformer.poetry import cli as poetry_cli  # noqa: E402
from tinyformer.poetry.checkpoint import save_checkpoint as save_poet  # noqa: E402
from tinyformer.text import Vocab, ZhTokenizer, detokenize_en, pad_sequences, tokenize_zh  # noqa: E402
from tinyformer.translation import cli  # noqa: E402
from tinyformer.translation.checkpoint import (  # noqa: E402
    convert_checkpoint,
    load_checkpoint,
    save_checkpoint,
)
from tinyformer.translation.corpus import OUT_OF_GRAMMAR, generate_corpus  # noqa: E402
from tinyformer.translation.pretrained import load_translator  # noqa: E402
from tinyformer.translation.training import (  # noqa: E402
    fit_translator,
    label_smoothed_cross_entropy,
    train,
    warmup_lr,
)
from tinyformer.translation.translator import Translator, new_translator  # noqa: E402
from tinyformer.weights import WeightsError, read_metadata  # noqa: E402

TIMEOUT = 60
ENGLISH = re.compile(r"[A-Za-z]{2,}(?: [A-Za-z]{2,}){2,}")
TORCH_INTERNAL = re.compile(r"at::|c10::|Expected .* but got|size mismatch|DefaultCPUAllocator|"
                            r"index out of range in self|mat1 and mat2|The size of tensor a")  # fmt: skip
TORCH_NAMES_SIZE = re.compile(
    r"can't allocate memory: you tried to allocate \d+ bytes|Storage size calculation overflowed"
)
NAMES_ARGUMENT = re.compile(
    r"must|got|expected|checkpoint|give|need|has |does not|convert|positional argument"
)


class Case(NamedTuple):
    group: str
    name: str
    call: Callable[[Path], object]  # gets a scratch folder for the files it writes
    check: object = None  # a returned result: callable → problem or None; None → finite; "cli"
    error: type | str | int | None = None  # pinned: exception type, WeightsError reason, exit code
    match: str | None = None  # pinned message (regex; for the CLI the line after "错误：")


CASES: list[Case] = []


def cases_of(group):
    """``case(name, call, check=None, error=None, match=None)``：把一个情形记进 ``group`` 这一组。"""
    return lambda *args, **kwargs: CASES.append(Case(group, *args, **kwargs))


def must(group, name, call, arg, values, rule):
    """Pins ``call(arg=value)`` for each value: "{arg} must be {rule}, got {arg}={value!r}"."""
    case = cases_of(group)
    error = TypeError if rule in ("a bool", "an integer", "an int") else ValueError
    for value in values:
        pin = "^" + re.escape(f"{arg} must be {rule}, got {arg}={value!r}") + "$"
        thunk = partial(call, **{arg: value})
        case(f"{name} {arg}={value!r}", lambda t, f=thunk: f(), None, error, pin)


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


BAD_INTS = [0, -1, 1.5, True, None, "8", math.nan, -(2**63)]
BAD_FLOATS = [-0.1, 1.0, 1.5, math.nan, math.inf, None, "0.1", True]
POSITIVE = "a positive integer"
FINITE = "a finite positive number"
AT_LEAST_0 = "a finite number >= 0"
UNIT = "in [0, 1)"
SEED = "in [0, 2**32) = [0, 4294967296)"
ACTIVATION = "one of 'relu', 'gelu', 'gelu_tanh'"


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
    # the door's one message per argument, pinned for every class that takes it: (rule, more values)
    rules = {
        "dropout": (UNIT, [1.0, -0.5, math.nan]),
        "eps": (FINITE, [0.0, -1e-5, math.nan]),
        "activation": (ACTIVATION, ["tanh", None]),
        "bias": ("a bool", ["yes"]),
        "norm_first": ("a bool", [1]),
    }
    # 2**62 and the base/padding_idx values end in size or range messages of their own: not pinned
    unpinned = [("base", 1e-310), ("base", 1.0), ("base", -2.0), ("padding_idx", -11)]
    for cls_name, (cls, good) in builders.items():
        door, params = partial(cls, **good), inspect.signature(cls).parameters
        for arg in good:
            rule = UNIT if arg == "p" else POSITIVE
            must("constructors", cls_name, door, arg, BAD_FLOATS if arg == "p" else BAD_INTS, rule)
        for arg in [arg for arg in rules if arg in params]:
            must("constructors", cls_name, door, arg, rules[arg][1], rules[arg][0])
        for arg, value in [(arg, 2**62) for arg in good if arg != "p"] + unpinned:
            if arg in params:
                case(
                    f"{cls_name}({arg}={value!r})", lambda t, c=cls, k={**good, arg: value}: c(**k)
                )
    for arg, value in [("pad_id", -1), ("tie_output", "no"), ("tgt_vocab_size", 1), ("max_len", 0),
                       ("d_model", 7)]:  # fmt: skip
        case(f"Transformer({arg}={value!r})", lambda t, k={arg: value}: tiny_model(**k))
    for arg, value in [("vocab_size", 10**9), ("max_len", 10**9), ("d_ff", 2**40), ("num_heads", 5),
                       ("activation", "swish"), ("rope_layout", None)]:  # fmt: skip
        case(f"GPT({arg}={value!r})", lambda t, k={arg: value}: tiny_gpt(**k))
    # valid edges
    case("MultiHeadAttention(1, 1)", lambda t: tf.MultiHeadAttention(1, 1))
    case("EncoderLayer(num_heads=d_model)", lambda t: tf.EncoderLayer(8, 8, 1))
    case("Dropout(p=0)", lambda t: tf.Dropout(0.0))
    case("PositionalEncoding(max_len=1)", lambda t: tf.PositionalEncoding(8, 1))


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
        if not torch.allclose(out[0], mha(q, kv2, kv2, key_padding_mask=pad)[0], atol=1e-6):
            return "padding mask ignored"

    case("key_padding_mask (B, S)", lambda t: mha(q, kv, kv, key_padding_mask=pad),
         respects_padding)  # fmt: skip
    bad_masks = {
        "key_padding_mask (S,)": dict(key_padding_mask=pad[0]),
        "key_padding_mask list": dict(key_padding_mask=pad.tolist()),
        "attn_mask (B, S) when B == T": dict(attn_mask=pad),
        "attn_mask numpy": dict(attn_mask=torch.ones(T, S, dtype=torch.bool).numpy()),
        "attn_mask 0-dim": dict(attn_mask=torch.tensor(True)),
    }  # fmt: skip
    for name, kwargs in bad_masks.items():
        case(
            f"MultiHeadAttention {name}", lambda t, k=kwargs: mha(q, kv, kv, **k), shape((B, T, C))
        )
    case("attn_mask (T, S) all False", lambda t: mha(q, kv, kv, attn_mask=torch.zeros(T, S, dtype=torch.bool)),
         shape((B, T, C)))  # fmt: skip
    case("every key padding", lambda t: mha(q, kv, kv, key_padding_mask=torch.ones(B, S, dtype=torch.bool)),
         shape((B, T, C)))  # fmt: skip
    theirs = torch.nn.MultiheadAttention(C, 2, batch_first=True).eval()
    same_as_torch = tf.copy_from_torch(tf.MultiHeadAttention(C, 2), theirs).eval()
    causal = torch.ones(T, S, dtype=torch.bool).triu(1)  # True = masked, as torch takes it

    def matches_torch(out):
        expected = theirs(q, kv, kv, key_padding_mask=pad, attn_mask=causal)[0]
        if not torch.allclose(out[0], expected, atol=1e-6):
            return "differs from nn.MultiheadAttention"

    case("torch's masks, same meaning as nn.MultiheadAttention",
         lambda t: same_as_torch(q, kv, kv, key_padding_mask=pad, attn_mask=causal), matches_torch)  # fmt: skip
    for name, (a, b, c) in {
        "key wrong C": (q, torch.randn(B, S, C + 1), kv),
        "empty S": (q, kv[:, :0], kv[:, :0]),
        "None key": (q, None, kv),
    }.items():
        case(f"MultiHeadAttention {name}", lambda t, a=a, b=b, c=c: mha(a, b, c), shape((B, T, C)))
    # nan in, nan out (like torch); an empty query gives an empty output
    case("MultiHeadAttention nan query", lambda t: mha(torch.full_like(q, float("nan")), kv, kv),
         lambda r: None if r[0].shape == q.shape else f"shape {tuple(r[0].shape)}")  # fmt: skip
    case("MultiHeadAttention empty T", lambda t: mha(q[:, :0], kv, kv), shape((B, 0, C)))
    # sdpa
    Q, K, V = torch.randn(B, 2, T, 4), torch.randn(B, 2, S, 4), torch.randn(B, 2, S, 4)
    for name, kwargs in {
        "attn_mask keyword (F.sdpa's name)": dict(attn_mask=pad),
        "mask (B, S) as (T, S)": dict(mask=pad),
        "mask (B, H, T, S)": dict(mask=torch.zeros(B, 2, T, S, dtype=torch.bool)),
        "mask (B, H, T, S+1)": dict(mask=torch.zeros(B, 2, T, S + 1, dtype=torch.bool)),
    }.items():
        case(f"sdpa {name}", lambda t, k=kwargs: tf.attention_with_weights(Q, K, V, **k),
             shape((B, 2, T, 4)))  # fmt: skip
    # layers and full model
    enc, dec = tf.EncoderLayer(C, 2, 16).eval(), tf.DecoderLayer(C, 2, 16).eval()
    x, mem = torch.randn(B, S, C), torch.randn(B, S, C)
    for name, thunk, out in [
        ("EncoderLayer src_key_padding_mask", lambda t: enc(x, src_key_padding_mask=pad), (B, S, C)),
        ("EncoderLayer attn_mask keyword", lambda t: enc(x, attn_mask=pad), (B, S, C)),
        ("EncoderLayer positional mask", lambda t: enc(x, pad), (B, S, C)),
        ("DecoderLayer memory_mask keyword", lambda t: dec(q, mem, memory_mask=pad), (B, T, C)),
        ("DecoderLayer tgt_mask (T, S)", lambda t: dec(q, mem, tgt_mask=torch.zeros(T, S, dtype=torch.bool)), (B, T, C)),
        ("DecoderLayer memory_key_padding_mask", lambda t: dec(q, mem, memory_key_padding_mask=pad), (B, T, C)),
    ]:  # fmt: skip
        case(name, thunk, shape(out))
    model = tiny_model(d_model=8, num_heads=2, d_ff=16, max_len=16, dropout=0.1)
    src, tgt = torch.tensor([[1, 2, 0], [3, 0, 0]]), torch.tensor([[1, 4], [1, 5]])
    for name, thunk, out in [
        ("Transformer src_mask=src == 0", lambda t: model(src, tgt, src_mask=src == 0), (B, T, 12)),
        ("Transformer src_key_padding_mask", lambda t: model(src, tgt, src_key_padding_mask=src == 0), (B, T, 12)),
        ("causal_mask(1, start=100000) builds one row", lambda t: tf.causal_mask(1, start=100_000), (1, 100_001)),
    ]:  # fmt: skip
        case(name, thunk, shape(out))
    for name, (s, g) in {
        "tgt longer than max_len": (src[:1], torch.ones(1, 17, dtype=torch.long)),
        "batch mismatch": (src, tgt[:1]),
        "empty src": (src[:, :0], tgt),
        "src bool": (src.bool(), tgt),
    }.items():
        case(
            f"Transformer {name}", lambda t, s=s, g=g: model(s, g), shape((len(g), g.shape[-1], 12))
        )
    case("padding_mask pad_id=-1", lambda t: tf.padding_mask(src, -1))
    case("padding_mask float ids", lambda t: tf.padding_mask(src.float(), 0))
    case("padding_mask list", lambda t: tf.padding_mask([[1, 0]], 0))
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
        ("shape mismatch", torch.ones(2), torch.ones(3), {}, None),
        ("bools", torch.tensor([True]), torch.tensor([False]), {}, verdict(False)),
        ("empty", torch.ones(0), torch.ones(0), {}, verdict(True)),
        ("python floats", 0.1 + 0.2, 0.3, {}, verdict(True)),
        ("sparse", torch.ones(2).to_sparse(), torch.ones(2), {}, None),
        ("float16 vs float64", torch.ones(2, dtype=torch.float16), torch.ones(2, dtype=torch.float64), {}, verdict(True)),
        ("nested lists", [[1.0, 2.0]], [[1.0, 2.0]], {}, verdict(True)),
    ]  # fmt: skip
    for name, a, b, kwargs, check in cases:
        case(f"agree {name}", lambda t, a=a, b=b, k=kwargs: book.agree(a, b, **k), check)
    for name, value in [("inf", float("inf")), ("nan", float("nan")), ("tensor", torch.ones(3)),
                        ("complex", 1 + 2j), ("huge int", 10**400), ("zero", 0.0), ("negative", -1e-300)]:  # fmt: skip
        case(f"magnitude {name}", lambda t, v=value: book.magnitude(v),
             lambda r: None if isinstance(r, str) else "not a str")  # fmt: skip
    rule = r" must be a tensor, a number or a \(nested, rectangular\) list of numbers.*"
    for name, value, got in [("None", None, "got NoneType"), ("str", "1.0", "got str"), ("dict", {"a": 1}, "got dict"),
                             ("ragged", [[1, 2], [3]], r"got \[\[1, 2\], \[3\]\] \(expected sequence of length 2"),
                             ("meta", torch.empty(3, device="meta"), r"got a meta tensor \(it has no values\)")]:  # fmt: skip
        for role, call in [("actual", lambda v: book.agree(v, torch.zeros(3))),
                           ("expected", lambda v: book.agree(torch.zeros(3), v)), ("value", book.magnitude)]:  # fmt: skip
            pin = f"^{role}{rule}{got}"
            case(f"{role} {name}", lambda t, f=call, v=value: f(v), None, TypeError, pin)
    agree = partial(book.agree, 1.0, 1.0)
    must("agree", "agree", agree, "tol", [-1e-6, math.inf, math.nan], AT_LEAST_0)
    for tol, got in [("1e-6", "str"), (True, "bool")]:
        pin = f"^tol must be a number, got {got}$"
        case(f"agree tol={tol!r}", lambda t, v=tol: agree(tol=v), None, TypeError, pin)


# ---------------------------------------------------------------- positional encodings
def positional():
    case = cases_of("positional")
    for max_len, d_model, base in [(8, 4, 1e-310), (8, 4, 1.0), (8, 4, 1e308), (8, 3, 10000.0),
                                   (10**9, 512, 10000.0), (1, 2, 10000.0), (8, 4, 2.0)]:  # fmt: skip
        case(f"sinusoidal_encoding({max_len}, {d_model}, base={base!r})",
             lambda t, a=max_len, b=d_model, c=base: tf.sinusoidal_encoding(a, b, base=c),
             lambda r, a=max_len, b=d_model: shape((a, b))(r))  # fmt: skip
    for k, d_model in [(1, 4), (-3, 4), (10**18, 4), (1, 2**20), (0, 4)]:
        case(f"shift_matrix({k}, {d_model})", lambda t, k=k, d=d_model: tf.shift_matrix(k, d),
             lambda r, d=d_model: shape((d, d))(r))  # fmt: skip
    case("PositionalEncoding 2-D", lambda t: tf.PositionalEncoding(8, 16)(torch.zeros(4, 8)))


# ---------------------------------------------------------------- Vocab and tokenizers
def text():
    case = cases_of("text")
    vocab = tf.Vocab([["我", "爱", "北京"]])

    def four(v):  # 只有 4 个特殊记号
        return None if len(v) == 4 else f"len {len(v)}"

    case("Vocab('abc')", lambda t: tf.Vocab("abc"))
    case("Vocab([['<pad>']])", lambda t: tf.Vocab([["<pad>"]]), four)
    case("Vocab([])", lambda t: tf.Vocab([]), four)
    case("Vocab(['abc'])", lambda t: tf.Vocab(["abc"]))
    case("encode unknown", lambda t: vocab.encode(["上海"]))
    case("encode str", lambda t: vocab.encode("我爱"))
    case("encode ints", lambda t: vocab.encode([1, 2]))
    case("decode id = len", lambda t: vocab.decode([len(vocab)]))
    case("decode negative", lambda t: vocab.decode([-1]))
    case("decode empty", lambda t: vocab.decode([]), lambda r: None if r == [] else repr(r))
    case("decode bool", lambda t: vocab.decode([True]))
    case("from_itos missing specials", lambda t: tf.Vocab.from_itos(["a", "b"]))
    case("from_itos duplicates", lambda t: tf.Vocab.from_itos(list(vocab.itos) + ["我"]))

    def is_list(r):
        return None if isinstance(r, list) and all(isinstance(t, str) for t in r) else repr(r)[:40]

    for value in [None, 123, "", "   ", "好" * 100_000, "🙂🙂", "\x00", "我\n爱\t北京",
                  "ABC def", "——……", "我明天去北京。" * 50, ["我"], "\ud800"]:  # fmt: skip
        case(f"tokenize_zh({value!r:.30})", lambda t, v=value: tf.tokenize_zh(v), is_list)
        case(f"tokenize_en({value!r:.30})", lambda t, v=value: tf.tokenize_en(v), is_list)
    case("tokenize_zh cut_all='yes'", lambda t: tf.tokenize_zh("我", cut_all="yes"), is_list)


# ---------------------------------------------------------------- decoding
def decoding(model):
    case = cases_of("decoding")
    src = torch.tensor([[1, 2, 3], [4, 5, 0]])

    def decoded(r):
        if r.dtype != torch.long or r.dim() != 2 or r.shape[0] != 2 or not (r[:, 0] == 1).all():
            return f"bad output {tuple(r.shape)} {r.dtype}"
        return None

    for fn in (tf.greedy_decode, tf.beam_search):
        call = partial(fn, model, src, bos_id=1, eos_id=2, max_len=5)
        must("decoding", fn.__name__, call, "max_len", [0, -1, 1.5, None], POSITIVE)
        must("decoding", fn.__name__, call, "bos_id", [1.0, torch.tensor(2)], "an integer")
        must("decoding", fn.__name__, call, "eos_id", [None], "an integer")
        for arg, value in (("bos_id", 12), ("eos_id", -1)):
            must("decoding", fn.__name__, call, arg, [value], "in [0, tgt_vocab_size) = [0, 12)")
        must("decoding", fn.__name__, call, "use_cache", ["no", 1], "a bool")
        for name, s in {
            "src empty S": src[:, :0],
            "src empty B": src[:0],
            "src list": src.tolist(),
        }.items():
            case(f"{fn.__name__} {name}", lambda t, f=fn, s=s: f(model, s, 1, 2, max_len=4),
                 lambda r: None if isinstance(r, torch.Tensor) else "not a tensor")  # fmt: skip
        case(f"{fn.__name__} model in train mode", lambda t, f=fn: f(model.train(), src, 1, 2, max_len=3),
             decoded)  # fmt: skip
        model.eval()
    beam = partial(tf.beam_search, model, src, bos_id=1, eos_id=2, max_len=4)
    must("decoding", "beam_search", beam, "beam_size", [0, -2, 1.5, True, 2.0], POSITIVE)
    must("decoding", "beam_search", beam, "alpha", [math.nan, -1.0, math.inf], AT_LEAST_0)
    case("beam_search beam_size=12 (vocab)", lambda t: beam(beam_size=12), decoded)


# ---------------------------------------------------------------- pinned messages
B, T, S, C, H = 2, 5, 7, 16, 4  # C：tiny_transformer、tiny_translator 的 d_model


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
    return cache


def _reorder(indices):
    _cache_twice((B,)).reorder(indices)  # 先存一步，批量大小 2


q5, kv7 = torch.zeros(B, T, C), torch.zeros(B, S, C)

EXAMPLES = [([4, 5, 6], [2, 7, 8, 3]), ([5, 6], [2, 8, 3])]
SRC = torch.tensor([[4, 5, 6]])
x16 = torch.zeros(2, 3, C)
LOGITS, TARGET = torch.zeros(2, 3, 7), torch.tensor([[1, 2, 3], [4, 5, 0]])


def _train(**kwargs):
    return train(tiny_model(), EXAMPLES, **{"max_steps": 1, "progress": False, **kwargs})


def _generate(**kwargs):
    return tiny_gpt().generate(_ids(B, 3), **{"max_new_tokens": 2, **kwargs})


def _translate(sentence, **kwargs):
    return tiny_translator().translate(sentence, **kwargs)


def _save(tmp, **metrics):
    save_checkpoint(tiny_translator(), tmp / "m.safetensors", **metrics)


def _save_under_a_file(tmp):  # 所在"文件夹"其实是个文件
    (tmp / "file.txt").write_text("x")
    save_checkpoint(tiny_translator(), tmp / "file.txt" / "m.safetensors")


LONG = "好" * 40_000  # 4 万个字符：消息里只引用开头


# 钉死消息的坏输入 (编号, 调用(临时文件夹), 异常类型, 消息正则)：公开构造函数和 forward 的参数，
# ``_checks.py`` 里的每条规则至少被一种真实的误用触发一次；nan/inf、种子范围、dtype 不符、损失的
# ignore_index、解码的编号、翻译器…… → ``ValueError``/``TypeError``，消息写明参数、取值和规则。
MESSAGES = [
    ("mha-divisible", lambda t: tf.MultiHeadAttention(10, 3), ValueError,
     r"d_model must be divisible by num_heads, got d_model=10, num_heads=3"),
    ("mha-last-dim", lambda t: _mha(torch.zeros(B, T, 8), kv7, kv7), ValueError,
     r"last dimension of query must equal d_model=16, got shape \(2, 5, 8\)"),
    ("mha-ndim", lambda t: _mha(torch.zeros(T, C), kv7, kv7), ValueError,
     r"query must have shape \(B, T, C\), got shape \(5, 16\)"),
    ("mha-not-tensor", lambda t: _mha([[0.0] * C], kv7, kv7), TypeError,
     r"query must be a torch.Tensor of shape \(B, T, C\), got list"),
    ("mha-key-value-length", lambda t: _mha(q5, kv7, torch.zeros(B, 6, C)), ValueError,
     r"key and value must have the same length S \(dim -2\), got key shape \(2, 7, 16\), "
     r"value shape \(2, 6, 16\)"),
    ("mha-batch", lambda t: _mha(q5, torch.zeros(3, S, C), torch.zeros(3, S, C)), ValueError,
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
    ("sdpa-head-dim", lambda t: tf.attention_with_weights(torch.zeros(B, T, 8), torch.zeros(B, S, 4), torch.zeros(B, S, 4)),
     ValueError, r"query and key must have the same last dimension D"),
    ("sdpa-mask-last-dim-1",
     lambda t: tf.attention_with_weights(q5, kv7, kv7, mask=torch.ones(T, 1, dtype=torch.bool)),
     ValueError, r"mask of shape \(5, 1\) does not fit .* the last one exactly S"),
    ("sdpa-1d", lambda t: tf.attention_with_weights(torch.zeros(C), kv7, kv7), ValueError,
     r"query must have shape \(\.\.\., T, D\), got shape \(16,\)"),
    ("sdpa-batch", lambda t: tf.attention_with_weights(torch.zeros(2, T, C), torch.zeros(3, S, C), torch.zeros(3, S, C)),
     ValueError, r"the leading \(batch\) dimensions of query and key must broadcast"),
    ("emb-id-too-big", lambda t: tf.TokenEmbedding(10, 16)(torch.tensor([[1, 12]])), ValueError,
     r"ids must be in \[0, vocab_size\) = \[0, 10\), got 12"),
    ("emb-id-negative", lambda t: tf.TokenEmbedding(10, 16)(torch.tensor([[-1, 2]])), ValueError,
     r"ids must be in \[0, vocab_size\) = \[0, 10\), got -1"),
    ("emb-float-ids", lambda t: tf.TokenEmbedding(10, 16)(torch.tensor([[1.0, 2.0]])), TypeError,
     r"ids must be an integer tensor, got dtype=torch.float32"),
    ("emb-ids-3d", lambda t: tf.TokenEmbedding(10, 16)(torch.zeros(1, 2, 3, dtype=torch.long)),
     ValueError, r"ids must have shape \(B, T\), got shape \(1, 2, 3\)"),
    ("pe-too-long", lambda t: tf.PositionalEncoding(16, max_len=10)(torch.zeros(B, 11, 16)), ValueError,
     r"T \+ start = 11 \+ 0 = 11 must be <= max_len=10"),
    ("pe-start-too-far", lambda t: tf.PositionalEncoding(16, max_len=10)(torch.zeros(B, 3, 16), start=8),
     ValueError, r"T \+ start = 3 \+ 8 = 11 must be <= max_len=10"),
    ("pe-last-dim", lambda t: tf.PositionalEncoding(16)(torch.zeros(B, 3, 8)), ValueError,
     r"last dimension of x must equal d_model=16, got shape \(2, 3, 8\)"),
    ("shift-odd", lambda t: tf.shift_matrix(1, 7), ValueError,
     r"d_model must be even for shift_matrix: .* got d_model=7"),
    ("padding-1d", lambda t: tf.padding_mask(torch.tensor([1, 2, 0]), 0), ValueError,
     r"ids must have shape \(B, S\), got shape \(3,\)"),
    ("ln-last-dim", lambda t: tf.LayerNorm(16)(torch.zeros(B, T, 8)), ValueError,
     r"last dimension of x must equal d_model=16, got shape \(2, 5, 8\)"),
    ("enc-divisible", lambda t: tf.EncoderLayer(16, 3, 64), ValueError,
     r"d_model must be divisible by num_heads, got d_model=16, num_heads=3"),
    ("dec-memory-dim", lambda t: tf.DecoderLayer(16, 4, 64)(q5, torch.zeros(B, S, 8)), ValueError,
     r"last dimension of memory must equal d_model=16, got shape \(2, 7, 8\)"),
    ("cfg-divisible", lambda t: tiny_transformer_config(d_model=10, num_heads=3), ValueError,
     r"d_model must be divisible by num_heads, got d_model=10, num_heads=3"),
    ("cfg-pad_id", lambda t: tiny_transformer_config(pad_id=12), ValueError,
     r"pad_id must be a valid id in both vocabularies, .* = \[0, 12\), got pad_id=12"),
    ("transformer-config-type", lambda t: tf.Transformer({"d_model": 16}), TypeError,
     r"config must be a TransformerConfig, got dict"),
    ("transformer-too-long", lambda t: tiny_model()(_ids(B, 21), _ids(B, 3)), ValueError,
     r"T \+ start = 21 \+ 0 = 21 must be <= max_len=20"),
    ("transformer-tgt-id", lambda t: tiny_model()(_ids(1, 3), torch.tensor([[1, 12]])), ValueError,
     r"ids must be in \[0, vocab_size\) = \[0, 12\), got 12"),
    ("transformer-src-1d", lambda t: tiny_model()(_ids(3), _ids(B, 3)), ValueError,
     r"src must have shape \(B, S\), got shape \(3,\)"),
    ("gpt-too-long", lambda t: tiny_gpt()(_ids(B, 17)), ValueError,
     r"T \+ cached length = 17 \+ 0 = 17 must be <= max_len=16"),
    ("gpt-generate-too-long", lambda t: tiny_gpt().generate(_ids(B, 3), 14), ValueError,
     r"T \+ max_new_tokens = 3 \+ 14 = 17 must be <= max_len=16"),
    ("gpt-generator", lambda t: tiny_gpt().generate(_ids(B, 3), 2, generator=0), TypeError,
     r"generator must be a Generator or None, got int"),
    ("cache-reorder-range", lambda t: _reorder(torch.tensor([0, 5])), ValueError,
     r"indices must be in \[0, batch size\) = \[0, 2\), got 5"),
    ("cache-reorder-dtype", lambda t: _reorder(torch.tensor([0.0, 1.0])), TypeError,
     r"indices must be an integer tensor, got dtype=torch.float32"),
    ("cache-reorder-2d", lambda t: _reorder(torch.tensor([[0, 1]])), ValueError,
     r"indices must have shape \(N\), got shape \(1, 2\)"),
    ("cache-batch", lambda t: _cache_twice((B, 3)), ValueError,
     r"the cache holds batch size 2 but got batch size 3; use cache.reorder"),
    # issue 26：数值参数只在结果有限时接受；放不进内存的尺寸在分配之前被拒绝，消息给出要多少字节
    ("pe-base-1e-310", lambda t: tf.sinusoidal_encoding(10, 512, base=1e-310), ValueError,
     r"^base must keep the frequencies 1/base\^\(2i/d_model\) finite and nonzero in float64, "
     r"got base=1e-310, d_model=512: the frequency of i=\d+ is inf$"),
    ("shift-base-1e-310", lambda t: tf.shift_matrix(1, 512, base=1e-310), ValueError,
     r"^base must keep the frequencies"),
    ("transformer-d_model-2**20", lambda t: tf.Transformer(tf.TransformerConfig(
        src_vocab_size=10, tgt_vocab_size=10, d_model=2**20, num_heads=1)), ValueError,
     r"^Transformer with .*d_model=1048576.* would need about [\d.]+ TiB \(\d+ bytes\) of memory, "
     r"more than this machine has \([\d.]+ \w+\); choose smaller sizes$"),
    ("transformer-max_len-1e9", lambda t: tf.Transformer(tf.TransformerConfig(
        src_vocab_size=10, tgt_vocab_size=10, d_model=16, num_heads=4, max_len=10**9)), ValueError,
     r"max_len=1000000000.* would need about [\d.]+ GiB \(\d+ bytes\) of memory"),
    ("transformer-src_vocab-1e9", lambda t: tf.Transformer(tf.TransformerConfig(
        src_vocab_size=10**9, tgt_vocab_size=10, d_model=512, num_heads=8)), ValueError,
     r"src_vocab_size=1000000000.* would need about [\d.]+ TiB"),
    ("transformer-d_ff-2**36", lambda t: tf.Transformer(tf.TransformerConfig(
        src_vocab_size=10, tgt_vocab_size=10, d_model=16, num_heads=4, d_ff=2**36)), ValueError,
     r"d_ff=68719476736.* would need about [\d.]+ TiB"),
    ("transformer-layers-10**6", lambda t: tf.Transformer(tf.TransformerConfig(
        src_vocab_size=10, tgt_vocab_size=10, d_model=16, num_heads=4, d_ff=32,
        num_encoder_layers=10**6)), ValueError,
     r"num_encoder_layers=1000000.* would need about [\d.]+ GiB"),
    ("gpt-layers-10**6", lambda t: tf.GPT(tf.GPTConfig(vocab_size=10, d_model=16, num_heads=4,
        num_layers=10**6)), ValueError, r"^GPT with .*num_layers=1000000 would need about"),
    # 一个放不进内存的张量：torch 的分配器自己说要多少字节，这就够清楚（构件里不再另算一遍）
    ("embedding-1e9x512", lambda t: tf.TokenEmbedding(10**9, 512), RuntimeError,
     r"can't allocate memory: you tried to allocate 2048000000000 bytes"),
    ("ffn-d_ff-2**40", lambda t: tf.PositionWiseFFN(16, 2**40), RuntimeError,
     r"can't allocate memory: you tried to allocate 70368744177664 bytes"),
    ("mha-d_model-2**20", lambda t: tf.MultiHeadAttention(2**20, 1), RuntimeError,
     r"can't allocate memory: you tried to allocate 4398046511104 bytes"),
    ("beam-size-10**7", lambda t: tf.beam_search(tiny_model(), torch.tensor([[5, 6]]), 1, 2, max_len=5,
        beam_size=10**7), ValueError,
     r"^beam_size must be <= the number of distinct outputs of at most max_len=5 tokens "
     r"\(V \+ V\*\*2 \+ \.\.\. with V=\d+\) = \d+, got beam_size=10000000$"),
    ("beam-alpha-1e308", lambda t: tf.beam_search(tiny_model(), torch.tensor([[5, 6]]), 1, 2, max_len=5,
        alpha=1e308), ValueError,
     r"^alpha must keep the length penalty \(\(5 \+ max_len\) / 6\)\*\*alpha finite in float32, "
     r"got alpha=1e\+308, max_len=5$"),
    ("beam-size-10**7-big-vocab", lambda t: tf.beam_search(tiny_model(tgt_vocab_size=500), torch.tensor(
        [[5, 6]]), 1, 2, max_len=5, beam_size=10**7), ValueError,
     r"^beam_search with B=1, beam_size=10000000 would need about [\d.]+ GiB"),
    ("gpt-temperature-underflow", lambda t: tiny_gpt().generate(SRC, 2, temperature=1e-45),
     ValueError, r"^temperature must be in \[0.001, 1000.0\] \(beyond it float32 logits / temperature "
     r"overflows and the distribution becomes nan\), got temperature=1e-45$"),
    # 训练循环
    ("train-diverges", lambda t: _train(max_steps=5, lr_factor=1e30), ValueError,
     r"^training diverged: the loss became (nan|inf) at step \d; lower lr_factor=1e\+30 "
     r"or raise warmup=400$"),
    ("train-no-limit", lambda t: _train(max_steps=None), ValueError,
     r"^give max_steps or max_seconds \(or both\), got neither$"),
    ("train-not-a-translation-model", lambda t: train(torch.nn.Linear(2, 2), EXAMPLES, max_steps=1),
     TypeError, r"^model.config must be a TransformerConfig, got NoneType$"),
    ("train-no-examples", lambda t: train(tiny_model(), [], max_steps=1), ValueError,
     r"^examples must not be empty$"),
    ("pad-nothing", lambda t: pad_sequences([], 0), ValueError, r"^sequences must not be empty$"),
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
    ("loss-logits-int", lambda t: label_smoothed_cross_entropy(LOGITS.long(), TARGET), TypeError,
     r"^logits must be a floating-point tensor, got dtype=torch.int64; "
     r"convert it with logits.float\(\)$"),
    ("loss-target-list", lambda t: label_smoothed_cross_entropy(LOGITS, [[1, 2, 3]]), ValueError,
     r"^target must have shape logits.shape\[:-1\] = \(2, 3\), got list$"),
    # 解码：<bos>/<eos> 编号
    ("greedy-src-ids-too-big", lambda t: tf.greedy_decode(tiny_model(), SRC + 10, 2, 3, max_len=4),
     ValueError, r"^ids must be in \[0, vocab_size\) = \[0, 12\), got 14$"),
    ("greedy-max_len-past-the-model", lambda t: tf.greedy_decode(tiny_model(), SRC, 2, 3, max_len=20),
     ValueError, r"^max_len \+ 1 \(for <bos>\) must be <= model.config.max_len=20, got max_len=20$"),
    ("greedy-model-linear", lambda t: tf.greedy_decode(torch.nn.Linear(2, 2), SRC, 2, 3), TypeError,
     r"^model must be a Transformer, got Linear$"),
    ("greedy-src-1d", lambda t: tf.greedy_decode(tiny_model(), SRC[0], 2, 3), ValueError,
     r"^src must have shape \(B, S\), got shape \(3,\)$"),
    # dtype 不符：消息写明两个 dtype 和改法
    ("mha-fp16-input", lambda t: tf.MultiHeadAttention(C, 4)(x16.half(), x16.half(), x16.half()),
     TypeError, r"^query has dtype=torch.float16 but the module's weights have dtype=torch.float32; "
     r"convert the input with query.to\(torch.float32\) or the module with .to\(torch.float16\)$"),
    ("mha-int64-input", lambda t: tf.MultiHeadAttention(C, 4)(x16.long(), x16, x16), TypeError,
     r"^query must be a floating-point tensor, got dtype=torch.int64; convert it with query.float\(\)$"),
    ("mha-fp64-value", lambda t: tf.MultiHeadAttention(C, 4)(x16, x16, x16.double()), TypeError,
     r"^value has dtype=torch.float64 but the module's weights have dtype=torch.float32"),
    ("sdpa-int64", lambda t: tf.attention_with_weights(x16.long(), x16, x16), TypeError,
     r"^query must be a floating-point tensor, got dtype=torch.int64"),
    ("sdpa-key-fp16", lambda t: tf.attention_with_weights(x16, x16.half(), x16), TypeError,
     r"^key and query must have the same dtype, got key dtype=torch.float16, "
     r"query dtype=torch.float32; convert one with .to\(dtype\)$"),
    ("sdpa-value-bf16", lambda t: tf.attention_with_weights(x16, x16, x16.bfloat16()),
     TypeError, r"^value and query must have the same dtype, got value dtype=torch.bfloat16"),
    ("layernorm-int64", lambda t: tf.LayerNorm(C)(x16.long()), TypeError,
     r"^x must be a floating-point tensor, got dtype=torch.int64; convert it with x.float\(\)$"),
    ("layernorm-bool", lambda t: tf.LayerNorm(C)(x16.bool()), TypeError,
     r"^x must be a floating-point tensor, got dtype=torch.bool"),
    ("ffn-int64", lambda t: tf.PositionWiseFFN(C, 32)(x16.long()), TypeError,
     r"^x must be a floating-point tensor, got dtype=torch.int64"),
    ("ffn-fp64", lambda t: tf.PositionWiseFFN(C, 32)(x16.double()), TypeError,
     r"^x has dtype=torch.float64 but the module's weights have dtype=torch.float32"),
    ("encoder-layer-fp16", lambda t: tf.EncoderLayer(C, 4, 32)(x16.half()), TypeError,
     r"^query has dtype=torch.float16 but the module's weights have dtype=torch.float32"),
    # 很长的输入：消息只引用开头并注明长度
    ("activation-long-str", lambda t: tf.EncoderLayer(C, 4, 32, activation="好" * 100_000),
     ValueError, r"^activation must be one of 'relu', 'gelu', 'gelu_tanh', "
     r"got activation='好{60}'… \(100000 characters\)$"),
    ("vocab-encode-long-str", lambda t: SRC_VOCAB.encode("好" * 500), TypeError,
     r"^tokens must be a list of tokens, not the str '好{60}'… \(500 characters\); tokenize it first$"),
    ("norm_first-long-str", lambda t: tf.EncoderLayer(C, 4, 32, norm_first="y" * 5000), TypeError,
     r"^norm_first must be a bool, got norm_first='y{60}'… \(5000 characters\)$"),
    ("config-d_model-long-list", lambda t: tf.GPTConfig(vocab_size=list(range(10_000))), ValueError,
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
    ("recording-weights-not-a-layer", lambda t: recording_weights(tf.MultiHeadAttention(C, 4)).__enter__(),
     TypeError, r"^layers must be EncoderLayer or DecoderLayer, got MultiHeadAttention$"),
    # issue 33 的外部 fuzz 找到的：结束在 torch 内部的两处
    ("layernorm-float64-in-float32", lambda t: tf.LayerNorm(C)(torch.randn(2, C, dtype=torch.float64)),
     TypeError, r"^x has dtype=torch.float64 but the module's weights have dtype=torch.float32; "),
    ("cache-cross-attention-other-batch", lambda t: _cache_twice((2, 3), static_kv=True),
     ValueError, r"^the cache holds batch size 2 but got batch size 3; use cache.reorder"),
    # 第二次 fuzz run（issue 26）找到的：torch 内部的 RuntimeError、Python 的 "not iterable"
    ("layernorm-d-model-2**62", lambda t: tf.LayerNorm(2**62), RuntimeError,
     r"^Storage size calculation overflowed with sizes=\[4611686018427387904\]"),
    ("attn-mask-meta", lambda t: tf.MultiHeadAttention(C, 4)(*[torch.zeros(2, 3, C)] * 3,
     attn_mask=torch.ones(3, 3, dtype=torch.bool, device="meta")), ValueError,
     r"^attn_mask must hold values, got a meta tensor \(a shape without data\)$"),
    ("key-padding-mask-meta", lambda t: tf.MultiHeadAttention(C, 4)(*[torch.zeros(2, 3, C)] * 3,
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
    # 第 1 章的 RNN 编码器–解码器（tinyformer.seq2seq）
    ("seq2seq-lengths-empty", lambda t: seq2seq.make_copy_batch([], torch.Generator()), ValueError,
     r"lengths must be a non-empty list"),
    ("seq2seq-length-zero", lambda t: seq2seq.make_copy_batch([3, 0], torch.Generator()), ValueError,
     r"each length in lengths must be a positive"),
    ("additive-attention-mask", lambda t: seq2seq.AdditiveAttention(2, 3, 4)(torch.randn(1, 2), torch.randn(1, 5, 3),
     torch.ones(1, 4, dtype=torch.bool)), ValueError, r"mask must be a bool tensor of shape \(B, S\) = \(1, 5\)"),
    ("gru-encoder-1d", lambda t: seq2seq.GRUEncoder(seq2seq.VOCAB_SIZE, 4, 4)(torch.tensor([3, 4])), ValueError,
     r"src must have shape \(B, S\)"),
    ("copy-train-max_len", lambda t: seq2seq.train_copy_model(seq2seq.Seq2Seq(), steps=1, min_len=5, max_len=3), ValueError,
     r"max_len must be >= 5, got max_len=3"),
    # 字节级 BPE（tinyformer.bpe）
    ("bpe-vocab_size", lambda t: ByteBPE.train(["春眠不觉晓"], 100), ValueError,
     r"vocab_size must be an int >= 256.*got 100"),
    ("bpe-texts-str", lambda t: ByteBPE.train("春眠不觉晓", 300), TypeError, r"texts must be a list of strings"),
    ("bpe-encode-bytes", lambda t: ByteBPE([(230, 152)]).encode(b"abc"), TypeError,
     r"text must be a str, got bytes"),
    ("bpe-decode-id", lambda t: ByteBPE([(230, 152)]).decode([257]), ValueError,
     r"token id must be in \[0, 257\), got 257"),
    ("bpe-decode-half-character", lambda t: ByteBPE([(230, 152)]).decode([256]), ValueError,
     r"do not form valid UTF-8.*cut in the middle of a character"),  # 春 的前两个字节
    ("bpe-merge-unknown-token", lambda t: ByteBPE([(256, 1)]), ValueError,
     r"merge 0 must join two existing tokens.*\(256, 1\)"),
    ("bpe-merge-repeated", lambda t: ByteBPE([(1, 2), (1, 2)]), ValueError, r"merge 1 repeats merge 256"),
    ("bpe-gpt2-merge-unknown", lambda t: ByteBPE.from_gpt2_merges([("æĺ", "¥")]), ValueError,
     r"merge 0 .* uses a token that no earlier merge made"),
    # GPT 的现代选项与 RoPE
    ("gpt-num_kv_heads-3", lambda t: tiny_gpt(num_kv_heads=3), ValueError,
     "num_heads must be divisible by num_kv_heads"),
    ("gpt-num_kv_heads-8", lambda t: tiny_gpt(num_kv_heads=8), ValueError,
     "num_heads must be divisible by num_kv_heads"),
    ("gpt-rope-odd-head_dim", lambda t: tiny_gpt(position="rope", d_model=12), ValueError,
     "d_model // num_heads must be even"),
    ("rope-head_dim-odd", lambda t: tf.RotaryEmbedding(5), ValueError, "head_dim must be even"),
    ("rope-base-1e-310", lambda t: tf.RotaryEmbedding(1024, max_len=2, base=1e-310), ValueError,
     r"frequencies 1/base\^\(2i/head_dim\).*head_dim=1024"),  # ω_511 = 1e310^(1022/1024) 溢出成 inf
    ("rope-layout", lambda t: tf.RotaryEmbedding(8, layout="neox"), ValueError, "layout must be one of"),
    ("rope-head_dim-vs-mha", lambda t: tf.MultiHeadAttention(C, H, rope=tf.RotaryEmbedding(8)), ValueError,
     "rope.head_dim must equal d_model // num_heads = 4"),
    ("rope-too-long", lambda t: tf.RotaryEmbedding(4, max_len=10)(torch.zeros(1, 3, 4), start=8), ValueError,
     r"T \+ start = 3 \+ 8 = 11 must be <= max_len=10"),
]  # fmt: skip


_warmup = partial(warmup_lr, step=1, d_model=512, warmup=4000)
_loss = partial(label_smoothed_cross_entropy, LOGITS, TARGET)
_emb = partial(tf.TokenEmbedding, 10, 16)
# 消息恰好是 "参数 must be 规则, got 参数=repr(取值)" 的坏输入 (名字, 调用, 参数, 取值, 规则)：调用(参数=取值)
RULES = [
    ("mha", partial(_mha, q5, kv7, kv7), "need_weights", [1], "a bool"),
    ("sdpa", partial(tf.attention_with_weights, q5, kv7, kv7), "dropout_p", [1.5, math.nan], UNIT),
    ("emb", _emb, "scale", [1], "a bool"),
    ("emb", _emb, "padding_idx", [10], "in [0, vocab_size) = [0, 10)"),
    ("LayerNorm", partial(tf.LayerNorm, C), "eps", [math.inf, "1e-5"], FINITE),
    ("PositionalEncoding", partial(tf.PositionalEncoding, C), "base", [-math.inf], FINITE),
    ("pe", partial(tf.PositionalEncoding(C, max_len=10), x16), "start", [-1], ">= 0"),
    ("sinusoidal", partial(tf.sinusoidal_encoding, 10, C), "base", [math.inf, math.nan, 0], FINITE),
    ("sinusoidal", partial(tf.sinusoidal_encoding, 8, 4), "base", [-10.0, "10000"], FINITE),
    ("sinusoidal", partial(tf.sinusoidal_encoding, d_model=4), "max_len", [0, 8.0, -1], POSITIVE),
    ("sinusoidal", partial(tf.sinusoidal_encoding, 8), "d_model", [0], POSITIVE),
    ("shift_matrix", partial(tf.shift_matrix, 1, C), "base", [math.inf], FINITE),
    ("shift_matrix", partial(tf.shift_matrix, d_model=8), "k", [1.5], "an integer"),
    ("causal_mask", tf.causal_mask, "T", [0, -1, 2.0], POSITIVE),
    ("causal_mask", partial(tf.causal_mask, 3), "start", [-1], ">= 0"),
    ("TransformerConfig", tiny_transformer_config, "src_vocab_size", [0], POSITIVE),
    ("TransformerConfig", tiny_transformer_config, "num_decoder_layers", [0], POSITIVE),
    ("TransformerConfig", tiny_transformer_config, "activation", ["tanh"], ACTIVATION),
    ("TransformerConfig", tiny_transformer_config, "dropout", [1], UNIT),
    ("GPTConfig", tf.GPTConfig, "vocab_size", [-5], POSITIVE),
    ("GPTConfig", partial(tf.GPTConfig, vocab_size=10), "d_ff", [0], POSITIVE),
    ("GPTConfig", partial(tf.GPTConfig, vocab_size=10), "tie_output", [None], "a bool"),
    ("GPTConfig", tiny_gpt, "norm", ["batchnorm"], "one of 'layernorm', 'rmsnorm'"),
    ("GPTConfig", tiny_gpt, "position", ["sinusoidal"], "one of 'learned', 'rope', 'none'"),
    ("GPTConfig", tiny_gpt, "rope_layout", ["neox"], "one of 'half', 'interleaved'"),
    ("GPTConfig", tiny_gpt, "ffn", ["geglu"], "one of 'mlp', 'swiglu'"),
    ("GPTConfig", tiny_gpt, "num_kv_heads", [0], POSITIVE),
    ("GPTConfig", tiny_gpt, "bias", ["False"], "a bool"),
    ("GPT.generate", _generate, "max_new_tokens", [0], POSITIVE),
    ("GPT.generate", _generate, "temperature", [0, math.inf, math.nan], FINITE),
    ("GPT.generate", _generate, "top_k", [0, 2.5], POSITIVE),
    ("warmup_lr", _warmup, "d_model", [0], POSITIVE),
    ("warmup_lr", _warmup, "factor", [math.inf, math.nan, -1.0], AT_LEAST_0),
    ("warmup_lr", _warmup, "step", [1.5], POSITIVE),
    ("warmup_lr", _warmup, "warmup", [0], POSITIVE),
    ("train", partial(_train, max_steps=None), "max_seconds", [math.inf], FINITE),
    ("train", _train, "max_seconds", [math.nan, -1], FINITE),
    ("train", _train, "max_steps", [1.5], POSITIVE),
    ("train", _train, "lr_factor", [math.inf, math.nan], AT_LEAST_0),
    ("train", _train, "seed", [2**70, -1], SEED),
    ("train", _train, "seed", [1.0], "an integer"),
    ("train", _train, "smoothing", [math.nan], UNIT),
    ("train", _train, "batch_size", [0], POSITIVE),
    ("new_translator", partial(new_translator, SRC_VOCAB, TGT_VOCAB), "seed", [2**64], SEED),
    ("loss", _loss, "ignore_index", [0.5], "an integer"),
    ("loss", _loss, "smoothing", [1.0], UNIT),
    ("translate", partial(_translate, "我明天去北京。"), "beam_size", [0, 2.5], POSITIVE),
    ("translate", partial(_translate, "我明天去北京。"), "max_len", [0, -5], POSITIVE),
    ("generate_corpus", generate_corpus, "valid_fraction", [1.0], UNIT),
    ("generate_corpus", generate_corpus, "seed", ["0"], "an int"),
    ("Vocab", partial(Vocab, [["a"]]), "min_freq", [0, 1.5], POSITIVE),
    ("Seq2Seq", seq2seq.Seq2Seq, "hidden_size", [0], POSITIVE),
    ("Seq2Seq", seq2seq.Seq2Seq, "attention", ["yes"], "a bool"),
    ("copy_accuracy", partial(seq2seq.copy_accuracy, seq2seq.Seq2Seq()), "length", [0], POSITIVE),
]


def messages():
    for name, call, error, match in MESSAGES:
        CASES.append(Case("messages", name, call, None, error, match))
    for row in RULES:
        must("messages", *row)


# ---------------------------------------------------------------- checkpoints
def _bytes(data):
    return lambda good, path: path.write_bytes(data)


def _cut(keep):
    return lambda good, path: path.write_bytes(keep(good.read_bytes()))


def _resave(meta=None, tensors=None, raw_meta=None):
    """读出好文件的元数据和张量，改一处，用 safetensors 自己的 save_file 写回。"""

    def make(good, path):
        metadata, state = read_metadata(good), load_file(good)
        if meta:
            meta(metadata)
        if tensors:
            tensors(state)
        save_file(state, path, metadata=raw_meta or {"tinyformer": json.dumps(metadata)})

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


def _pickled(obj, **kwargs):
    return lambda good, path: torch.save(obj, path, **kwargs)


def _old_format(good, path):
    """第一版格式：torch.save 的 dict。"""
    state = tiny_translator().model.state_dict()
    meta = {**read_metadata(good), "format": "tinyformer-translator-1"}
    torch.save({**meta, "state_dict": state}, path)


def _bigger(state):
    bigger = new_translator(SRC_VOCAB, TGT_VOCAB, seed=0, d_model=32, num_layers=1, d_ff=32)
    state.clear()
    state.update({k: v for k, v in bigger.model.state_dict().items() if k != "output.weight"})


DAMAGED = r"not a valid safetensors file \(truncated or damaged: "
PICKLE = r"a torch.save \(pickle\) file: unsafe to load, .*convert it with: python -m "
META = r"has an invalid translator description: "
# 钉死原因的坏检查点 (编号, 做出文件 (好文件, 路径), WeightsError 的 reason, 消息正则（接在 "'路径': " 之后）)
CHECKPOINTS = [
    ("empty-file", _bytes(b""), "damaged", r"not a valid safetensors file \(it has 0 bytes: an empty file, or a special file"),
    ("truncated-half", _cut(lambda d: d[: len(d) // 2]), "damaged", DAMAGED),
    ("truncated-last-byte", _cut(lambda d: d[:-1]), "damaged", DAMAGED),
    ("truncated-header", _cut(lambda d: d[:100]), "damaged", DAMAGED),
    ("random-bytes", _bytes(bytes(range(256)) * 16), "damaged", DAMAGED),
    ("text-file", _bytes("我明天去北京。\n".encode()), "damaged", DAMAGED),
    ("appended-garbage", _cut(lambda d: d + b"\0" * 100), "damaged", DAMAGED),
    ("duplicate-weight-name", _duplicate_name, "damaged", DAMAGED),
    ("pickle-os-system", _pickled({"format": "tinyformer-translator-1", "payload": Payload()}), "pickle", PICKLE),
    ("pickle-legacy-format", _pickled({"payload": Payload()}, _use_new_zipfile_serialization=False), "pickle", PICKLE),
    ("a-directory", lambda good, path: path.mkdir(), "not_a_file", r"is a directory"),
    ("foreign-safetensors", lambda good, path: save_file({"w": torch.ones(2)}, path), "metadata", r"without tinyformer's metadata"),
    ("old-format", _resave(meta=lambda m: m.update(format="x")), "metadata",
     r"is not a tinyformer translator \(format='tinyformer-translator-2'\)"),
    ("missing-config", _resave(meta=lambda m: m.pop("config")), "metadata", META + r"missing 'config'"),
    ("config-unknown-field", _config(n_layers=2), "metadata", META + r".*unexpected keyword argument 'n_layers'"),
    ("config-d_model-zero", _config(d_model=0), "metadata", META + r"d_model must be a positive"),
    ("config-heads-not-dividing", _config(num_heads=3), "metadata", META + r"d_model must be divisible"),
    ("config-max_len-2**31", _config(max_len=2**31), "metadata",
     r"its config asks for position tables of max_len × d_model = 2147483648 × \d+ .*is max_len too large\?$"),
    ("config-max_len-1", _config(max_len=1), "metadata", META + r".*needs max_len >= 2"),
    ("config-pad_id-not-vocab-pad", _config(pad_id=4), "metadata",
     META + r"config pad_id=4 but <pad> is id 0 in src_itos"),
    ("src_itos-short", _resave(meta=lambda m: m["src_itos"].pop()), "metadata",
     META + r"len\(src_vocab\) must equal the model's src_vocab_size=14, got 13"),
    ("tgt_itos-duplicate", _resave(meta=lambda m: m["tgt_itos"].__setitem__(-1, "i")), "metadata",
     META + r"itos must start with"),
    ("metrics-list", _resave(meta=lambda m: m.update(metrics=[1.0])), "metadata", META),
    ("weight-missing", _resave(tensors=lambda s: s.pop("encoder_layers.0.norm1.bias")), "mismatch",
     r"does not match the model: the model's 'encoder_layers.0.norm1.bias' is not in the file$"),
    ("weight-extra", _resave(tensors=lambda s: s.__setitem__("evil", torch.ones(1))), "mismatch",
     r"does not match the model: the file's 'evil' is not in the model$"),
    ("weight-int64", _resave(tensors=lambda s: s.__setitem__("encoder_layers.0.norm1.bias", s["encoder_layers.0.norm1.bias"].long())),
     "mismatch", r"'encoder_layers.0.norm1.bias' has dtype torch.int64 in the file, torch.float32 in the model$"),
    ("flipped-byte-in-a-weight", _cut(lambda d: d[:-9] + bytes([d[-9] ^ 0x40]) + d[-8:]), "damaged",
     r"its tensor data does not match its SHA-256 \(damaged\)"),
    ("weights-of-another-model", _resave(tensors=_bigger), "mismatch",
     r"'src_embed.embedding.weight' has shape \(14, 32\) in the file, \(14, 16\) in the model \(and \d+ more differences\)$"),
    ("one-nan-weight", _resave(tensors=lambda s: s["src_embed.embedding.weight"].__setitem__((0, 0), math.nan)),
     "damaged", r"has 1 non-finite values \(nan or inf\) in 'src_embed.embedding.weight'"),
]  # fmt: skip


FILES = {  # 命令行的行里写作 {名字}；{model} 是好文件，{tmp} 是临时文件夹
    "empty": _bytes(b""),
    "random": _bytes(bytes(range(256)) * 16),
    "payload": _pickled({"format": "tinyformer-translator-1", "payload": Payload()}),
    "hostile": _config(max_len=2**31),
    "other": _resave(tensors=_bigger),
    "truncated": _cut(lambda d: d[:100]),
    "old": _old_format,
    "evil": _pickled({"payload": Payload()}),
    "poet": lambda good, path: save_poet(path, *tiny_poet(seed=5), metrics={"steps": 0}),
}


def made(t: Path, name: str, make=None) -> Path:
    """``t/name.safetensors``, written on first use by ``make(good file, path)`` (default ``FILES[name]``)."""
    path = t / f"{name}.safetensors"
    if not path.exists():
        if name == "good":
            save_checkpoint(tiny_translator(), path, test_bleu=12.5)
        else:
            (make or FILES[name])(made(t, "good"), path)
    return path


def same_as_saved(loaded):
    reference, state = tiny_translator().model.state_dict(), loaded.model.state_dict()
    if any(not torch.equal(state[k], reference[k]) for k in reference):
        return "loaded weights differ from the saved ones"


def _flip(position):
    """Flip the lowest bit of the byte at ``position`` (a fraction of the file's length)."""
    return _cut(lambda d: d[: int(len(d) * position)] + bytes([d[int(len(d) * position)] ^ 1])
                + d[int(len(d) * position) + 1 :])  # fmt: skip


def checkpoints():
    case = cases_of("checkpoint")

    def crafted(name, make, reason=None, match=None):
        case(name, lambda t: load_checkpoint(made(t, name, make)), same_as_saved, reason, match)

    for row in CHECKPOINTS:
        crafted(*row)
    for cut in (1, 7, 8, 10, -100):  # 0, 100, a half and -1 byte: pinned above
        crafted(f"truncated at {cut}", _cut(lambda d, c=cut: d[:c]))
    crafted("truncated at a third", _cut(lambda d: d[: len(d) // 3]))
    for i in range(60):
        crafted(f"byte {i} of 60 flipped", _flip(i / 60))  # no "/" in a name: it is a file name
    crafted("os.urandom bytes", _bytes(os.urandom(4096)))
    for field, value in [("d_model", 8192), ("src_vocab_size", 10**7),
                         ("dropout", float("nan")), ("tie_output", 1), ("activation", "evil"),
                         ("d_ff", 65536), ("num_encoder_layers", 0), ("norm_first", "yes"),
                         ("pad_id", -1), ("d_model", 32)]:  # fmt: skip
        crafted(f"config {field}={value!r}", _config(**{field: value}))
    for name, change in [
        ("config is a list", lambda m: m.__setitem__("config", [1, 2])),
        ("metrics nested", lambda m: m["metrics"].__setitem__("x", {"a": 1})),
        ("src_itos duplicate", lambda m: m["src_itos"].__setitem__(5, m["src_itos"][4])),
        ("tgt_itos not list", lambda m: m.__setitem__("tgt_itos", "abc")),
        ("itos with int", lambda m: m["src_itos"].__setitem__(5, 5)),
        ("pad swapped in itos", lambda m: m["src_itos"].insert(0, m["src_itos"].pop(1))),
    ]:
        crafted(name, _resave(meta=change))
    crafted("metadata not JSON", _resave(raw_meta={"tinyformer": "{"}))
    crafted("metadata a list", _resave(raw_meta={"tinyformer": "[1]"}))
    # the first, a middle and the last weight in the file
    for name in ("decoder_layers.0.cross_attn.k_proj.bias", "decoder_layers.0.self_attn.q_proj.bias",
                 "tgt_embed.embedding.weight"):  # fmt: skip
        for change, new in [("nan", lambda t: torch.full_like(t, float("nan"))), ("float64", torch.Tensor.double),
                            ("reshaped", lambda t: t.reshape(-1)[None]), ("int", torch.Tensor.long)]:  # fmt: skip
            crafted(
                f"{name} {change}",
                _resave(tensors=lambda s, n=name, f=new: s.__setitem__(n, f(s[n]))),
            )
        crafted(f"{name} missing", _resave(tensors=lambda s, n=name: s.pop(n)))
    for name in ("old", "evil", "truncated"):
        case(f"convert {name}", lambda t, n=name: convert_checkpoint(made(t, n), t / f"{n}-new.safetensors"),
             same_as_saved)  # fmt: skip
    case("/dev/null", lambda t: load_checkpoint("/dev/null"), same_as_saved)
    case("missing file", lambda t: load_checkpoint(t / "none.safetensors"), same_as_saved)
    case("path None", lambda t: load_checkpoint(None), same_as_saved)
    case("path 254 chars", lambda t: load_checkpoint(t / ("a" * 242 + ".safetensors")), same_as_saved)  # fmt: skip
    case("good file", lambda t: load_checkpoint(made(t, "good")), same_as_saved)


# ---------------------------------------------------------------- Translator
@cache
def shipped():
    return load_translator()


def translator_cases():
    case = cases_of("translator")

    def strings(count):
        def check(r):
            r = [r] if isinstance(r, str) else r
            if len(r) != count or not all(isinstance(s, str) for s in r):
                return f"expected {count} strings, got {r!r:.60}"

        return check

    for value in ["", "。", "我", "我明天去北京。", "他昨天没在商店买衣服吗？", "I will go.", "🙂",
                  "\x00", "我明天去北京", "-我明天去北京。", None, b"bytes", ("我明天去北京。",), [],
                  iter(["我"]), [["我"]], {"我明天去北京。"}]:  # fmt: skip
        count = 1 if isinstance(value, str) else len(value) if isinstance(value, (list, tuple)) else 0  # fmt: skip
        case(f"translate({value!r:.30})", lambda t, v=value: shipped().translate(v), strings(count))

    def noted(r):
        if r.in_grammar == bool(r.note):
            return f"in_grammar={r.in_grammar} but note={r.note!r}"

    for value in ["我明天去北京。", "他昨天没在商店买衣服吗？", "我每天不喝绿茶。", "他们上周没去公园吗？"]:  # fmt: skip
        case(
            f"translate_checked({value})", lambda t, v=value: shipped().translate_checked(v), noted
        )
    case("translate_checked out of grammar has the note",
         lambda t: shipped().translate_checked("他昨天没在商店买衣服吗？"),
         lambda r: None if r.note == OUT_OF_GRAMMAR else "no note")  # fmt: skip
    for arg, value in [("beam_size", 4), ("max_len", 1)]:
        case(f"translate {arg}={value}", lambda t, k={arg: value}: shipped().translate("我明天去北京。", **k),
             strings(1))  # fmt: skip
    case("cross_attention layer=5", lambda t: shipped().cross_attention("我明天去北京。", layer=5))
    case("cross_attention layer=-1", lambda t: shipped().cross_attention("我明天去北京。", layer=-1),
         lambda r: finite(r[2]))  # fmt: skip
    case("evaluate([])", lambda t: shipped().evaluate([]))
    case("evaluate batch_size=0", lambda t: shipped().evaluate([1], batch_size=0))


# ---------------------------------------------------------------- CLIs
USAGE = r"（用 --help 查看用法）"
TMP = r"'/[^']+'"  # 临时文件夹的路径
NUMBER = r"应为有限的正数，得到 "
IN_RANGE = r"应为\[0, 2\*\*32\) 内的整数，得到 "
# 钉死的命令行 (编号, 参数（{tmp}、{model} 等换成文件）, 退出码, stderr 的那一行（正则，去掉开头的 "错误："）)
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
    ("out-under-a-file", ["--out", "{tmp}/file.txt/m.safetensors"], 2, r"--out " + TMP + " 写不进去：" + TMP + " 不是文件夹" + USAGE),
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
    ("model-directory", ["--model", "{tmp}", "我"], 3, CKPT + r" 不是普通文件：是文件夹"),
    ("model-dev-null", ["--model", "/dev/null", "我"], 3, r"权重文件 '/dev/null' 不是普通文件：是字符设备"),
    ("model-empty", ["--model", "{empty}", "我"], 3, CKPT + r" 已损坏或被截断：有 0 个字节（空文件，.*"),
    ("model-random-bytes", ["--model", "{random}", "我"], 3, CKPT + r" 已损坏或被截断：不是有效的 safetensors 文件（头不对或数据不全）"),
    ("model-pickle-os-system", ["--model", "{payload}", "我"], 3, CKPT + r" 是 torch.save 写的 pickle 文件：.*不安全.*"
     r"python -m tinyformer.translation convert 旧.pt 新.safetensors"),
    ("model-hostile-config", ["--model", "{hostile}", "我"], 3, CKPT + r" 不是本书的检查点，或者里面的配置、词表不对：按配置，位置表要 max_len × d_model = \d+ × \d+（[\d.]+ GiB），"
     r"文件里的张量却只有 [\d.]+ KiB：max_len 太大？"),
    ("model-other-weights", ["--model", "{other}", "我"], 3, CKPT + r" 里的权重与它的配置不符：.+"),
    ("convert-missing", ["convert", "{tmp}/none.pt", "{tmp}/n.safetensors"], 3, CKPT + r" 不存在"),
    ("convert-random-bytes", ["convert", "{random}", "{tmp}/n.safetensors"], 3, CKPT + r" 已损坏或被截断：不是 torch.save 写的检查点（或已被截断）"),
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
ARGPARSE_CLI = [  # (编号, 命令, 参数, "error: " 之后的正则)
    ("train-steps-no-value", "train", ["--steps"], r"argument --steps: expected one argument"),
    ("train-unknown-option", "train", ["--lr", "1"], r"unrecognized arguments: --lr 1"),
    ("train-ambiguous-prefix", "train", ["--s", "1"], r"ambiguous option: --s could match --seed, --steps, --seconds"),
    ("train-explicit-value-for-flag", "train", ["--no-progress=yes"], r"argument --no-progress: ignored explicit argument 'yes'"),
    ("translate-unknown-long-option", "translate", ["--temperature", "2", "我"], r"unrecognized arguments: --temperature"),
    ("translate-unknown-short-option", "translate", ["-x", "我"], r"unrecognized arguments: -x"),
    ("translate-model-no-value", "translate", ["--model"], r"argument --model: expected one argument"),
    ("convert-no-arguments", "convert", [], r"the following arguments are required: OLD, NEW"),
]  # fmt: skip

# 没有钉死消息的：照 classify_cli 的规则判（一行中文、没有 traceback）
TRANSLATE_MORE = [
    ["--beam-size", "100000", "我明天去北京。"], ["--model", "{truncated}", "我"], ["--model", "", "我"],
    ["我爱你"], ["--beam", "2", "我明天去北京。"], ["--help"], ["--beam-size=2", "我明天去北京。"],
    ["我明天去北京。", "他昨天没在商店买衣服吗？"], ["--model={model}", "我明天去北京。"], ["\x00"], ["🙂"],
    ["--beam-size", "-1", "我"], ["--beam-size", "1e3", "我"],
    ["--model", "{model}", "--model", "{truncated}", "我"],
]  # fmt: skip
TRAIN_MORE = [
    ["--seconds", "-1"], ["--seed", "-1"], ["--seed", "x"], ["positional"], ["--help"],
    ["--out", "/" + "x" * 300 + "/m.safetensors"], ["--out", "{tmp}/" + "a" * 300 + ".safetensors"],
]  # fmt: skip
# 真的起子进程跑 python -m tinyformer.translation：(参数, stdout 一开始就关掉, 退出码, 那一行)
SUBPROCESS_CLI = [
    (["train", "--seconds", "inf"], False, 2, r"--seconds 应为有限的正数，得到 'inf'" + USAGE),
    (["train", "--steps", "1", "--out", "/dev/full"], False, 2,
     r"--out '/dev/full' 不是普通文件的路径（是文件夹或设备）" + USAGE),
    (["translate", "--model", "{random}", "我"], False, 3, CKPT + r" 已损坏或被截断：不是有效的 safetensors 文件（头不对或数据不全）"),
    (["translate", "我明天去北京。"], False, None, None),
    (["translate", "他昨天没在商店买衣服吗？"], False, None, None),
    (["bogus"], False, None, None),
    ([], False, None, None),
    (["translate", "我明天去北京。"], True, None, None),
]  # fmt: skip


GENERATE = ["generate", "--model", "{poet}"]
# python -m tinyformer.poetry：(编号, 参数, 退出码, stderr 的那一行（正则，去掉开头的 "错误："）)
POETRY_CLI = [
    ("acrostic-2", [*GENERATE, "--acrostic", "春花"], 2, r"--acrostic 须是 4 或 8 个字.*得到 2 个：'春花'" + USAGE),
    ("acrostic-unknown", [*GENERATE, "--acrostic", "春花秋X"], 2, r"模型不认识这些字（训练集里不到 2 次）：X" + USAGE),
    ("prefix-latin", [*GENERATE, "--prefix", "春风abc"], 2, r"--prefix 只能有汉字和 ，。：'abc' 不行" + USAGE),
    ("prefix-unknown", [*GENERATE, "--prefix", "春风吹龙"], 2, r"模型不认识这些字（训练集里不到 2 次）：龙" + USAGE),
    ("prefix-and-acrostic", [*GENERATE, "--prefix", "春", "--acrostic", "春花秋月"], 2,
     r"--prefix 与 --acrostic 只能给一个" + USAGE),
    ("top-p-1.5", [*GENERATE, "--top-p", "1.5"], 2, r".*--top-p.*须是 \(0, 1\] 之内的数，得到 '1.5'.*"),
    ("temperature-nan", [*GENERATE, "--temperature", "nan"], 2, r".*--temperature.*须是 \[0\.001, 1000\] 之内的数，得到 'nan'.*"),
    ("temperature-word", [*GENERATE, "--temperature", "abc"], 2,
     r"参数 --temperature: 须是 \[0\.001, 1000\] 之内的数，得到 'abc'（用 --help 查看用法）"),
    ("top-k-float", [*GENERATE, "--top-k", "1.5"], 2, r"参数 --top-k: 须是正整数，得到 '1.5'（用 --help 查看用法）"),
    ("n-zero", [*GENERATE, "--n", "0"], 2, r".*--n.*须是正整数，得到 '0'.*"),
    ("no-command", [], 2, r"缺少参数：command（用 --help 查看用法）"),
    ("unknown-option", ["generate", "--bogus"], 2, r"不认识的参数：--bogus（用 --help 查看用法）"),
    ("device-tpu", ["train", "--steps", "1", "--out", "x", "--device", "tpu"], 2, r"参数 --device: 取值不对：'tpu'.*"),
    ("model-missing", ["generate", "--model", "{tmp}/none.safetensors"], 3,
     CKPT + r" 不存在"),
    ("model-pickle", ["generate", "--model", "{evil}"], 3, CKPT + r" 是 torch.save 写的 pickle 文件：.*不安全.*"),
    ("model-damaged", ["generate", "--model", "{random}"], 3,
     CKPT + r" 已损坏或被截断：不是有效的 safetensors 文件（头不对或数据不全）"),
]  # fmt: skip


def fill(argv, t: Path):
    """``{tmp}`` → the scratch folder t, ``{model}`` → the good checkpoint, ``{random}``… → ``FILES``."""
    (t / "file.txt").write_text("x")  # out-under-a-file

    def path(m):
        return str(t) if m[1] == "tmp" else str(made(t, "good" if m[1] == "model" else m[1]))

    return [re.sub(r"\{(\w+)\}", path, a) for a in argv]


def in_process(command, argv, t):
    if command == "poetry":
        return captured(lambda: poetry_cli.run(fill(argv, t)))
    if argv[:1] == ["convert"]:
        command, argv = "convert", argv[1:]
    return run_cli(cli.COMMANDS[command], fill(argv, t))


def subprocess_cli(argv, closed_stdout, t):
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    stdout = subprocess.PIPE
    if closed_stdout:
        read, write = os.pipe()
        os.close(read)
        stdout = write
    result = subprocess.run(
        [sys.executable, "-m", "tinyformer.translation", *fill(argv, t)],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        timeout=TIMEOUT,
    )
    if closed_stdout:
        os.close(write)
    return result.returncode, result.stdout or "", result.stderr


def cli_cases():
    case = cases_of("cli")
    for command, rows in (
        ("train", TRAIN_CLI),
        ("translate", TRANSLATE_CLI),
        ("poetry", POETRY_CLI),
    ):
        for name, argv, code, message in rows:
            case(f"{command} {name}", partial(in_process, command, argv), "cli", code, message)
    for name, command, argv, message in ARGPARSE_CLI:
        case(name, partial(in_process, command, argv), "cli", 2, "error: " + message)
    for command, rows in (("translate", TRANSLATE_MORE), ("train", TRAIN_MORE)):
        for argv in rows:
            name = f"{command} {' '.join(a[:30] for a in argv)[:80]}"
            case(name, partial(in_process, command, argv), "cli")
    for argv, closed, code, message in SUBPROCESS_CLI:
        name = f"subprocess {' '.join(argv)[:60]}{' (stdout closed)' if closed else ''}"
        case(name, partial(subprocess_cli, argv, closed), "cli", code, message)


def pinned_problem(case: Case, t: Path, result=None, error=None) -> str | None:
    """What differs from the ending ``case`` pins; None when it ended exactly so (a pytest per case)."""
    if isinstance(case.error, int):  # the command line: (exit code, stdout, stderr)
        if error is not None:
            return f"the command line raised {type(error).__name__}: {str(error)[:300]}"
        code, out, err = result
        err = "".join(
            line for line in err.splitlines(True) if not line.startswith("提示：没有给 --model")
        )
        if case.match.startswith("error: "):  # argparse's own usage error, printed as argparse does
            ok = err.startswith("usage: ") and re.search(case.match, err)
        else:  # exactly one line "错误：…"
            ok = err.startswith("错误：") and err.endswith("\n") and err.count("\n") == 1
            ok = ok and len(err) < 500 and re.fullmatch(case.match, err[len("错误：") : -1])
        if ok and code == case.error and out == "" and "Traceback" not in err:
            return None
        return f"exit {code}, stdout {out[:60]!r}, stderr {err[:300]!r}"
    if error is None:
        return f"returned {result!r:.80} instead of raising"
    text = str(error)
    if isinstance(case.error, str):  # a checkpoint file: one WeightsError line naming the file
        path = t / f"{case.name}.safetensors"  # where checkpoints() writes it
        ok = isinstance(error, WeightsError) and error.reason == case.error
        ok = ok and text.startswith(f"{str(path)!r}: ") and "\n" not in text and len(text) < 900
    else:
        ok = isinstance(error, case.error)
    return None if ok and re.search(case.match, text) else f"{type(error).__name__}: {text[:300]}"


def classify_cli(result):
    code, out, err = result
    lines = [line for line in err.splitlines() if not line.startswith("提示：")]
    if "Traceback" in err or "Exception ignored" in err:
        return "obscure", err.strip().splitlines()[-1][:120]
    if code == 0 and lines:
        return "obscure", f"exit 0 with stderr {lines[0][:80]}"
    if code == 0:
        return "handled", f"exit 0 {out[:60]!r}"
    if code == 2 and err.startswith("usage: ") and ": error: " in lines[-1]:
        return "clear", f"exit 2 (argparse): {lines[-1][:120]}"  # argparse's own usage error
    if len(lines) != 1 or not lines[0].startswith("错误："):
        return "obscure", f"exit {code}, stderr {err[:120]!r}"
    if "意外的内部错误" in lines[0]:
        return "obscure", lines[0][:120]
    if ENGLISH.search(lines[0].replace("python -m tinyformer", "")):
        return "obscure", f"English in {lines[0][:120]}"
    return "clear", f"exit {code}: {lines[0][:120]}"


def classify(error: BaseException):
    message = str(error)
    ours = isinstance(error, (ValueError, TypeError)) and not TORCH_INTERNAL.search(message)
    if (
        isinstance(error, WeightsError)  # names the file and its reason (missing, pickle, …)
        or (isinstance(error, FileNotFoundError) and error.filename is not None)
        or TORCH_NAMES_SIZE.search(message)  # torch itself names the bytes or sizes asked for
        or (ours and NAMES_ARGUMENT.search(message))  # "must … got …", signature errors
    ):
        return "clear", message[:140]
    return "obscure", f"{type(error).__name__}: {message[:140]}"


def _alarm(signum, frame):
    raise TimeoutError


def run_case(case: Case, t: Path):
    result = error = None
    signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(TIMEOUT)
    try:
        result = case.call(t)
    except TimeoutError:
        return "crash", f"no result after {TIMEOUT} s"
    except MemoryError:
        return "crash", "MemoryError"
    except Exception as err:  # noqa: BLE001
        error = err
    finally:
        signal.alarm(0)
    if case.error is not None:
        problem = pinned_problem(case, t, result, error)
        if problem is None:
            return "clear", str(error or result[2])[:140]
        return ("wrong" if error is None and case.check != "cli" else "obscure"), problem
    if error is not None:
        if "can't allocate memory" in str(error) and "you tried to allocate" not in str(error):
            return "crash", "allocator ran out of memory"
        return classify(error)
    if case.check == "cli":
        return classify_cli(result)
    problem = case.check(result) if callable(case.check) else finite(result)
    return ("wrong", problem) if problem else ("handled", "")


constructors()
MODEL = attention()
compare()
positional()
text()
decoding(MODEL)
messages()
checkpoints()
translator_cases()
cli_cases()


def main():
    limit = 6 * 2**30
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    torch.set_num_threads(1)
    by_group, notes = defaultdict(Counter), []
    with tempfile.TemporaryDirectory() as tmp:
        for case in CASES:
            outcome, note = run_case(case, Path(tmp))
            by_group[case.group][outcome] += 1
            if "--verbose" in sys.argv or outcome in ("obscure", "wrong", "crash"):
                notes.append(f"  [{outcome}] {case.group}: {case.name}  {note}")
    outcomes = sum(by_group.values(), Counter())
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
