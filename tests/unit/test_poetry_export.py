"""tinyformer.poetry.export：导出的写诗模型在 onnxruntime 里与 PyTorch 给出相同的 logits。

参照物是随包发布的写诗模型（第 9 章的、网页上运行的那一个）。把 Python 的 ``write`` 实际送进模型的
每个前缀（贪心的几首诗、一首藏头诗、几首采样的诗，逐字）送进 poet.onnx：最后一个位置的 logits 与
``model(ids)[0, -1]`` 相差 ≤ LOGITS_TOL，且（不含被禁的 <pad>/<bos>/<unk>）最大者相同。
采样循环只有网页上的一份（live_translator.js 的 sampleDecode），浏览器测试核对它（tests/book/test_poem_writer.py）。
"""

import hashlib
import json

import numpy as np
import pytest
import torch

from tests.kit import tiny_poet
from tinyformer.poetry.export import FILES, LastLogitsGraph, export_poet
from tinyformer.poetry.pretrained import load_model
from tinyformer.poetry.sampling import CLAUSE_ENDS, write

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

# logits 的大小约 10；两边都是 float32，只是求和顺序不同（实测约 4e-6）
LOGITS_TOL = 1e-4
PREFIXES = ["白日依山尽，", "春眠不觉晓，", "床前明月光，", "", "山"]


@pytest.fixture(scope="module")
def shipped():
    return load_model()


@pytest.fixture(scope="module")
def exported(shipped, tmp_path_factory):
    model, vocab = shipped
    return export_poet(model, vocab, tmp_path_factory.mktemp("poet"))


@pytest.fixture(scope="module")
def session(exported):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(str(exported["poet.onnx"]), options)


def written_prefixes(model, vocab):
    """write 送进模型的前缀（编号，以 <bos> 开头）：贪心、藏头、采样各几首，逐字。"""
    poems = [write(model, vocab, p, greedy=True) for p in PREFIXES]
    poems.append(write(model, vocab, acrostic="春夏秋冬", greedy=True))
    for seed in range(3):
        generator = torch.Generator().manual_seed(seed)
        poems.append(write(model, vocab, "月", temperature=1.2, top_p=0.95, generator=generator))
    prefixes = set()
    for poem in poems:
        ids = vocab.encode(poem.text, bos=True)
        prefixes |= {tuple(ids[:t]) for t in range(1, len(ids) + 1)}
    return sorted(prefixes)


def test_onnx_logits_equal_the_models_on_every_written_prefix(shipped, session):
    model, vocab = shipped
    prefixes = written_prefixes(model, vocab)
    assert len(prefixes) > 200
    banned = [vocab.pad_id, vocab.bos_id, vocab.unk_id]
    worst = 0.0
    with torch.no_grad():
        for prefix in prefixes:
            reference = model(torch.tensor([prefix]))[0, -1].numpy()  # (V,)
            (logits,) = session.run(None, {"ids": np.array([prefix], dtype=np.int64)})
            assert logits.shape == (1, len(vocab))
            worst = max(worst, float(np.abs(logits[0] - reference).max()))
            reference[banned] = -np.inf
            web = logits[0].copy()
            web[banned] = -np.inf
            assert web.argmax() == reference.argmax(), prefix
    assert worst <= LOGITS_TOL, f"max |onnx - torch| = {worst:.2e}"


def test_the_graph_takes_any_batch_and_length_up_to_max_len(shipped, session):
    model, vocab = shipped
    ids = torch.randint(
        4, len(vocab), (3, model.config.max_len), generator=torch.Generator().manual_seed(0)
    )
    ids[:, 0] = vocab.bos_id
    (logits,) = session.run(None, {"ids": ids.numpy()})
    with torch.no_grad():
        reference = LastLogitsGraph(model)(ids).numpy()
    assert logits.shape == (3, len(vocab))
    assert np.abs(logits - reference).max() <= LOGITS_TOL


def test_settings_carry_what_the_page_needs(shipped, exported):
    model, vocab = shipped
    settings = json.loads(exported["poet.json"].read_text(encoding="utf-8"))
    assert settings["itos"] == vocab.itos and len(settings["itos"]) == 5341
    assert (settings["bos_id"], settings["eos_id"], settings["pad_id"], settings["unk_id"]) == (
        vocab.bos_id,
        vocab.eos_id,
        vocab.pad_id,
        vocab.unk_id,
    )
    assert settings["max_len"] == model.config.max_len == 66
    assert [vocab.itos[i] for i in settings["clause_ends"]] == list(CLAUSE_ENDS)
    assert sorted(settings["never_sampled"]) == sorted([vocab.pad_id, vocab.bos_id, vocab.unk_id])


def test_the_tied_embedding_is_stored_once(exported, shipped):
    """输出层与词嵌入共用一张表（tie_output）：文件里只存一份，文件比权重只大一点。"""
    model, _ = shipped
    parameters = sum(p.numel() for p in model.parameters()) * 4  # float32 字节
    size = exported["poet.onnx"].stat().st_size
    assert parameters <= size <= parameters * 1.02, (size, parameters)


def test_export_is_deterministic_and_works_for_a_tiny_model(tmp_path):
    model, vocab = tiny_poet(seed=1)
    first = export_poet(model, vocab, tmp_path / "a")
    second = export_poet(model, vocab, tmp_path / "b")
    for name in FILES:
        assert (
            hashlib.sha256(first[name].read_bytes()).hexdigest()
            == hashlib.sha256(second[name].read_bytes()).hexdigest()
        ), name
    session = ort.InferenceSession(str(first["poet.onnx"]))
    ids = torch.tensor([vocab.encode("春风吹", bos=True)])
    (logits,) = session.run(None, {"ids": ids.numpy()})
    with torch.no_grad():
        assert np.abs(logits - model(ids)[:, -1].numpy()).max() <= LOGITS_TOL


def test_a_model_and_vocabulary_that_disagree_are_refused(tmp_path):
    model, _ = tiny_poet()
    _, other = load_model()
    with pytest.raises(ValueError, match="vocab_size=.* but vocab has 5341"):
        export_poet(model, other, tmp_path)
