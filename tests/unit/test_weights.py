"""tinyformer.weights 与两个应用的检查点：safetensors + JSON 的存取，坏文件各有写明原因的错误。"""

import dataclasses
import json
import math
import os
import re
import socket
import subprocess
import sys

import pytest
import torch
from safetensors.torch import load_file, save_file

from tests.kit import deadline, tiny_gpt, tiny_poet, tiny_translator
from tinyformer import GPT, GPTConfig
from tinyformer.poetry.checkpoint import load_checkpoint as load_poetry
from tinyformer.poetry.checkpoint import save_checkpoint as save_poetry
from tinyformer.poetry.corpus import SPECIALS
from tinyformer.poetry.corpus import Vocab as PoetryVocab
from tinyformer.translation.checkpoint import convert_checkpoint
from tinyformer.translation.checkpoint import load_checkpoint as load_translator
from tinyformer.translation.checkpoint import save_checkpoint as save_translator
from tinyformer.weights import (
    WeightsError,
    load_weights,
    open_for_reading,
    read_metadata,
    save_weights,
)


@pytest.fixture
def saved(tmp_path):
    model = tiny_gpt()
    path = tmp_path / "gpt.safetensors"
    save_weights(path, model, {"config": {"vocab_size": 50}, "itos": ["春", "夏"]})
    return model, path


def test_round_trip_keeps_metadata_weights_and_tying(saved):
    model, path = saved
    assert read_metadata(path) == {"config": {"vocab_size": 50}, "itos": ["春", "夏"]}
    fresh = tiny_gpt(seed=1)
    load_weights(path, fresh)
    for (name, a), b in zip(model.state_dict().items(), fresh.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    assert fresh.output.weight is fresh.token_embedding.embedding.weight


def test_the_file_holds_no_pickle_and_one_copy_of_a_tied_weight(saved):
    model, path = saved
    data = path.read_bytes()
    assert not data.startswith(b"PK") and b"\x80\x02" not in data[:64]
    header = 8 + int.from_bytes(data[:8], "little")
    every_name = sum(t.numel() * 4 for t in model.state_dict().values())
    assert len(data) - header == every_name - model.output.weight.numel() * 4


def test_a_header_length_too_large_is_damage(saved):
    _, path = saved
    path.write_bytes(b"\xff" * 8 + b"{}")  # safetensors 0.4 的措辞是 HeaderTooLarge
    with pytest.raises(WeightsError, match=r"(?i)header ?too ?large") as caught:
        load_weights(path, tiny_gpt())
    assert caught.value.reason == "damaged"


def test_a_header_length_that_starts_like_a_pickle_still_loads(tmp_path):
    # 头长度 0x280 的小端字节是 80 02 00 00 …，与 pickle 协议 2 的开头相同：它仍是 safetensors
    model, path = torch.nn.Linear(3, 2), tmp_path / "m.safetensors"
    for pad in range(1000):
        save_weights(path, model, {"pad": "x" * pad})
        if path.read_bytes()[:2] == b"\x80\x02":
            break
    else:
        pytest.fail("no padding gave a header length of 0x..280")
    load_weights(path, torch.nn.Linear(3, 2))
    assert read_metadata(path) == {"pad": "x" * pad}


# ---------------------------------------------------------------- 不是普通文件：打开之前就拒绝（issue 52 第 1 项）
def every_reader(tmp_path):
    """读权重文件的每一扇门：(名字, 读 path 的函数)。"""
    return [
        ("read_metadata", read_metadata),
        ("load_weights", lambda path: load_weights(path, torch.nn.Linear(3, 2))),
        ("open_for_reading", lambda path: open_for_reading(path).__enter__()),
        ("poetry", load_poetry),
        ("translation", load_translator),
        ("convert", lambda path: convert_checkpoint(path, tmp_path / "new.safetensors")),
    ]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes on this system")
def test_a_named_pipe_is_refused_before_it_is_opened(tmp_path):
    fifo = tmp_path / "weights.safetensors"
    os.mkfifo(fifo)
    for door, read in every_reader(tmp_path):
        with deadline(5), pytest.raises(WeightsError) as caught:
            read(fifo)
        assert caught.value.reason == "not_a_file", door
        assert caught.value.message == "is a named pipe (FIFO), not a weights file", door


def test_a_directory_a_device_and_a_socket_are_named_for_what_they_are(tmp_path):
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tmp_path / "socket"))
    with server:
        for path, kind in [
            (tmp_path, "a directory"),
            ("/dev/null", "a character device"),
            (tmp_path / "socket", "a socket"),
        ]:
            for door, read in every_reader(tmp_path):
                with deadline(5), pytest.raises(WeightsError) as caught:
                    read(path)
                assert caught.value.reason == "not_a_file", (door, path)
                assert caught.value.message == f"is {kind}, not a weights file", (door, path)


def test_an_empty_path_is_an_empty_path_not_the_current_folder(tmp_path):
    for door, read in every_reader(tmp_path):
        with pytest.raises(WeightsError) as caught:
            read("")
        assert (caught.value.reason, caught.value.message) == (
            "missing",
            "an empty path, not a file name",
        ), door


@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="no /proc on this system")
@pytest.mark.parametrize("path", ["/proc/self/status", "/proc/self/mem"])
def test_a_file_under_proc_is_refused_with_its_reason(path, tmp_path):
    # /proc 下的文件报告 0 字节却读得出东西（/proc/self/mem 一读就 EIO，/proc/kmsg 一读就等）：不打开
    for door, read in every_reader(tmp_path):
        with deadline(5), pytest.raises(WeightsError) as caught:
            read(path)
        what = "a torch.save checkpoint" if door == "convert" else "a valid safetensors file"
        if door == "open_for_reading":
            what = "a weights file"
        assert caught.value.reason == "damaged", door
        assert caught.value.message == (
            f"not {what} (it has 0 bytes: an empty file, or a special file like those under /proc)"
        ), door


# ---------------------------------------------------------------- 先核对头，再碰数据（issue 52 第 2 项）
def sparse_safetensors(path, name, dtype, shape):
    """一个自洽的 safetensors 文件：头声明一个 ``shape`` 的张量，数据区是稀疏的零（不占磁盘）。"""
    size = {"F32": 4, "F64": 8}[dtype] * math.prod(shape)
    header = json.dumps({name: {"dtype": dtype, "shape": shape, "data_offsets": [0, size]}})
    header += " " * (-len(header) % 8)
    with open(path, "wb") as file:
        file.write(len(header).to_bytes(8, "little") + header.encode())
        file.truncate(8 + len(header) + size)


# 子进程里建好模型、量一次峰值内存，refuse 之后再量一次：差值就是拒绝一个文件花掉的内存
REFUSE_AND_MEASURE = """
import resource, sys, torch
from tinyformer.weights import WeightsError, load_weights
model = torch.nn.Linear(int(sys.argv[2]), int(sys.argv[3]), bias=False)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    load_weights(sys.argv[1], model)
except WeightsError as error:
    print(error.reason, error.message)
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)  # KiB -> MiB
"""


@pytest.mark.parametrize(
    "dtype, shape, model_shape, message",
    [
        (
            "F32",
            [2**28],
            (3, 2),
            "'weight' has shape (268435456,) in the file, (2, 3) in the model",
        ),
        (
            "F64",
            [2**12, 2**13],
            (2**13, 2**12),
            "'weight' has dtype torch.float64 in the file, torch.float32 in the model",
        ),
    ],
)
def test_a_mismatch_is_refused_from_the_header_without_reading_the_data(
    tmp_path, dtype, shape, model_shape, message
):
    # 旧的 load_weights 先把整个文件读进内存再比较名字：拒绝 1 GiB 的张量要花 2.3 GB
    path = tmp_path / "big.safetensors"
    sparse_safetensors(path, "weight", dtype, shape)
    result = subprocess.run(
        [sys.executable, "-c", REFUSE_AND_MEASURE, str(path), *map(str, model_shape)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    reason_and_message, grown = result.stdout.splitlines()
    assert reason_and_message == f"mismatch does not match the model: {message}", result.stderr
    assert int(grown) < 64, f"refusing the file took {grown} MiB more memory"


def test_a_tied_weight_may_be_stored_twice_only_with_equal_values(tmp_path):
    model, path = tiny_gpt(), tmp_path / "twice.safetensors"
    state = {name: tensor.clone() for name, tensor in model.state_dict().items()}
    save_file(state, path)  # 两个名字各存一份
    fresh = tiny_gpt(seed=1)
    load_weights(path, fresh)
    assert torch.equal(fresh.output.weight, model.output.weight)
    state["output.weight"][0, 0] += 1.0
    save_file(state, path)
    with pytest.raises(WeightsError) as caught:
        load_weights(path, tiny_gpt(seed=1))
    assert (caught.value.reason, caught.value.message) == (
        "damaged",
        "holds different values for 'token_embedding.embedding.weight' and 'output.weight', "
        "which the model ties (one shared tensor): refusing to keep one of them silently",
    )


def test_a_loaded_model_is_bit_identical_and_keeps_its_tying(saved):
    model, path = saved
    fresh = tiny_gpt(seed=1)
    load_weights(path, fresh)
    state = fresh.state_dict()
    for name, tensor in model.state_dict().items():
        assert tensor.dtype == state[name].dtype and torch.equal(tensor, state[name]), name
    fresh.output.weight.data.add_(1.0)  # 装入没有拆开共享：两个名字仍是同一块内存
    assert torch.equal(fresh.output.weight, fresh.token_embedding.embedding.weight)


def hostile(path, config_change, make):
    """把 ``make(path)`` 写出的检查点的配置改一处（张量不动），用 safetensors 的 save_file 写回。"""
    make(path)
    metadata = read_metadata(path)
    metadata["config"].update(config_change)
    save_file(load_file(path), path, metadata={"tinyformer": json.dumps(metadata)})
    return path


def test_a_config_with_a_huge_max_len_is_refused_before_building(tmp_path):
    # 30 KB 的文件写着 max_len=2**22：正弦位置编码表要 256 MiB（建表时 float64 还要翻倍），文件里没有它
    path = hostile(
        tmp_path / "t.safetensors",
        {"max_len": 2**22},
        lambda p: save_translator(tiny_translator(), p),
    )
    with pytest.raises(WeightsError) as caught:
        load_translator(path)
    assert caught.value.reason == "metadata"
    assert caught.value.message == (
        "its config asks for position tables of max_len × d_model = 4194304 × 16 (256.0 MiB as "
        "float32) that the file does not justify; at most 64.0 MiB is allowed, or as much as "
        f"the file's {held_text(path)} of tensors when that is more: is max_len too large?"
    )


def test_a_poetry_config_with_a_huge_max_len_is_refused_before_building(tmp_path):
    _, vocab = tiny_poet()

    def rope_poet(path):
        torch.manual_seed(0)
        config = GPTConfig(
            vocab_size=len(vocab), max_len=16, d_model=16, num_heads=4, num_layers=1,
            position="rope",
        )  # fmt: skip
        save_poetry(path, GPT(config), vocab)

    path = hostile(tmp_path / "rope.safetensors", {"max_len": 2**23}, rope_poet)
    with pytest.raises(WeightsError) as caught:
        load_poetry(path)
    assert caught.value.reason == "metadata"
    assert caught.value.message.startswith(
        "its config asks for position tables of max_len × d_model = 8388608 × 16 (512.0 MiB as "
        "float32) that the file does not justify; at most 64.0 MiB is allowed"
    )
    # 学到的位置嵌入在文件里：max_len 稍大一点，建得起来，读数据之前就查出张量对不上
    path = hostile(
        tmp_path / "learned.safetensors",
        {"max_len": 1000},
        lambda p: save_poetry(p, *tiny_poet()),
    )
    with pytest.raises(WeightsError) as caught:
        load_poetry(path)
    assert (caught.value.reason, caught.value.message) == (
        "mismatch",
        "does not match the model: 'position_embedding.weight' has shape (40, 16) in the file, "
        "(1000, 16) in the model",
    )


def held_text(path):
    """文件里张量的字节数，按消息的写法（KiB）。"""
    data = path.read_bytes()
    return f"{(len(data) - 8 - int.from_bytes(data[:8], 'little')) / 1024:.1f} KiB"


@pytest.mark.parametrize("value, count", [(math.nan, 1), (math.inf, 3)])
def test_a_poetry_checkpoint_with_non_finite_weights_is_refused(tmp_path, value, count):
    # 以前写诗的检查点不查：nan 的权重读得进来，generate --greedy 打出一串 <pad>
    model, vocab = tiny_poet()
    with torch.no_grad():
        model.token_embedding.embedding.weight.view(-1)[:count] = value
    save_poetry(tmp_path / "poet.safetensors", model, vocab)
    with pytest.raises(WeightsError) as caught:
        load_poetry(tmp_path / "poet.safetensors")
    assert (caught.value.reason, caught.value.message) == (
        "damaged",
        f"has {count} non-finite values (nan or inf) in 'token_embedding.embedding.weight'",
    )


@pytest.mark.parametrize(
    "itos, message",
    [
        (
            [*SPECIALS, "春", "风", "春"],
            "got itos[6]='春', a duplicate of itos[4]",
        ),
        ([*SPECIALS, "春", 7], "got itos[5]=7 (int)"),
        ([*SPECIALS, "春风"], "got itos[4]='春风' (2 characters)"),
        ([*SPECIALS, ""], "got itos[4]='' (0 characters)"),
        ([*SPECIALS, "春", "<pad>"], "got itos[5]='<pad>' (5 characters)"),
    ],
)
def test_a_poetry_checkpoint_refuses_duplicate_or_non_character_itos(tmp_path, itos, message):
    rule = "itos entries after the 4 specials must be distinct one-character strings, "
    with pytest.raises(ValueError, match=f"^{re.escape(rule + message)}$"):
        PoetryVocab.from_itos(itos)
    # 从检查点读到这样的字表：是元数据的问题
    model, _ = tiny_poet()
    config = dataclasses.asdict(model.config) | {"vocab_size": len(itos)}
    save_weights(tmp_path / "poet.safetensors", model, {"config": config, "itos": itos})
    with pytest.raises(WeightsError) as caught:
        load_poetry(tmp_path / "poet.safetensors")
    assert (caught.value.reason, caught.value.message) == (
        "metadata",
        f"not a poetry checkpoint ({rule}{message})",
    )


def test_a_half_precision_poetry_model_is_refused_when_saving(tmp_path):
    model, vocab = tiny_poet()
    with pytest.raises(TypeError) as caught:
        save_poetry(tmp_path / "poet.safetensors", model.half(), vocab)
    assert str(caught.value) == (
        "model must hold float32 weights to be saved as a checkpoint (the loader builds a "
        "float32 model), got 'token_embedding.embedding.weight' with dtype=torch.float16; "
        "call model.float() first"
    )
    assert not (tmp_path / "poet.safetensors").exists()
