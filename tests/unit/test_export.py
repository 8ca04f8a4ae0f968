"""tinyformer.translation.export：导出的 ONNX 图在 onnxruntime 里与 PyTorch 模型给出相同的译文。

参照物是随包发布的第 600 步的翻译器（第 8 章用的、网页上运行的那一个）和它的 PyTorch 贪心解码。
解码循环只有网页上的一份（live_translator.js 的 greedyDecode，tests/book/test_live_translator.py 与
tests/book/test_browser.py 核对它的译文，tests/book/test_page_forward.py 在 node 里核对它的译文与
Python 的贪心解码相同）；这里把 PyTorch 贪心解码的每个前缀送进 decoder.onnx：
每一步 logits 的最大者都是 PyTorch 选的下一个词元，所以任何照搬 greedy_decode 的循环在 onnxruntime 上
都生成同样的词元。
"""

import hashlib
import json
import subprocess
import sys

import numpy as np
import pytest
import torch

from tinyformer.text import ATTACH_LEFT, SENTENCE_END, capitalization
from tinyformer.translation.corpus import PROPER_NOUNS, generate_corpus
from tinyformer.translation.export import (
    FILES,
    DecoderStepGraph,
    EncoderGraph,
    export_translator,
)
from tinyformer.translation.pretrained import load_translator

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

LOGITS_TOL = 1e-3  # logits 的大小约 10；两边都是 float32，只是求和顺序不同
ATTENTION_TOL = 1e-4  # 注意力权重在 [0, 1] 内


@pytest.fixture(scope="module")
def translator():
    return load_translator(600)


@pytest.fixture(scope="module")
def corpus():
    return generate_corpus(seed=0)


@pytest.fixture(scope="module")
def exported(translator, tmp_path_factory):
    return export_translator(translator, tmp_path_factory.mktemp("onnx"))


@pytest.fixture(scope="module")
def sessions(exported):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return tuple(
        ort.InferenceSession(str(exported[name]), options)
        for name in ("encoder.onnx", "decoder.onnx")
    )


def onnx_step(sessions, prefix, src):
    """decoder.onnx 一步：前缀 (B, T)、源句 (B, S) → (logits (B, V), 交叉注意力 (B, T, S))。"""
    encoder, decoder = sessions
    (memory,) = encoder.run(None, {"src": src})  # (B, S) -> (B, S, C)
    return decoder.run(None, {"tgt": prefix, "memory": memory, "src": src})


def test_same_tokens_as_pytorch_on_every_test_sentence(translator, corpus, sessions):
    """PyTorch 贪心解码的每个前缀上，onnxruntime 的 logits 的最大者就是 PyTorch 选的下一个词元。"""
    src = translator.encode([p.zh for p in corpus.test])  # (1031, S)，补齐
    expected = translator.translate_ids(src).numpy()  # (1031, 1 + L)
    eos = translator.tgt_vocab.eos_id
    assert len(corpus.test) == 1031
    different = []
    for T in range(1, expected.shape[1]):
        running = ~(expected[:, 1:T] == eos).any(axis=1)  # 到第 T 步还没生成 <eos> 的句子
        logits, _ = onnx_step(sessions, expected[running, :T], src.numpy()[running])
        chosen = logits.argmax(axis=-1)  # (B, V) -> (B,)
        different += [(T, i) for i in np.flatnonzero(chosen != expected[running, T])]
    assert different == []


def test_logits_and_attention_within_tolerance_at_every_step(translator, corpus, sessions):
    _, decoder = sessions
    src = translator.encode([p.zh for p in corpus.test[:128]])  # 有填充的一批
    expected = translator.translate_ids(src)
    step = DecoderStepGraph(translator.model)
    with torch.no_grad():
        memory = translator.model.encode(src)
        (onnx_memory,) = sessions[0].run(None, {"src": src.numpy()})
        assert np.abs(onnx_memory - memory.numpy()).max() <= LOGITS_TOL
        for T in range(1, expected.shape[1]):
            prefix = expected[:, :T]
            logits, attention = step(prefix, memory, src)
            feeds = {"tgt": prefix.numpy(), "memory": memory.numpy(), "src": src.numpy()}
            onnx_logits, onnx_attention = decoder.run(None, feeds)
            assert onnx_logits.shape == tuple(logits.shape)
            assert np.abs(onnx_logits - logits.numpy()).max() <= LOGITS_TOL
            assert np.abs(onnx_attention - attention.numpy()).max() <= ATTENTION_TOL
            # 每一行是源句上的分布，填充位置的权重是 0
            np.testing.assert_allclose(onnx_attention.sum(axis=-1), 1.0, atol=1e-5)
            assert np.all(onnx_attention[(src == 0).numpy()[:, None, :].repeat(T, 1)] == 0)


@pytest.mark.parametrize("sentence", ["我的朋友明天在图书馆看小说吗？", "老师昨天没在商店买水果。"])
def test_last_step_attention_is_the_translators_cross_attention(translator, sessions, sentence):
    """网页画的图（最后一步的输出）与 Translator.cross_attention（整句再前向一次）相同。"""
    src_tokens, tgt_tokens, weights = translator.cross_attention(sentence)  # (H, T, S)
    src = translator.encode([sentence])
    ids = translator.translate_ids(src).numpy()  # (1, 1 + L)，以 <eos> 结尾
    assert translator.tgt_vocab.decode(ids[0, 1:]) == tgt_tokens
    # 网页的最后一步送入 <bos> + 除 <eos> 外的全部译文，选出 <eos>
    logits, attention = onnx_step(sessions, ids[:, :-1], src.numpy())
    assert logits.argmax(axis=-1).tolist() == [translator.tgt_vocab.eos_id]
    assert attention.shape == (1, len(tgt_tokens), len(src_tokens))
    assert np.abs(attention[0] - weights.mean(dim=0).numpy()).max() <= ATTENTION_TOL


def test_graphs_have_variable_lengths_and_a_supported_opset(exported):
    for name, inputs in (("encoder.onnx", ["src"]), ("decoder.onnx", ["tgt", "memory", "src"])):
        model = onnx.load(exported[name])
        onnx.checker.check_model(model)
        assert [v.name for v in model.graph.input] == inputs
        assert model.opset_import[0].version == 17
        for value in model.graph.input:
            dims = value.type.tensor_type.shape.dim
            assert dims[0].dim_param == "B" and dims[1].dim_param in ("S", "T")
    outputs = onnx.load(exported["decoder.onnx"]).graph.output
    assert [v.name for v in outputs] == ["logits", "cross_attention"]


def test_settings_json_holds_the_vocabularies_and_detokenizer(translator, exported):
    settings = json.loads(exported["translator.json"].read_text(encoding="utf-8"))
    assert settings["format"] == "tinyformer-onnx-translator-1"
    assert settings["src_itos"] == translator.src_vocab.itos
    assert settings["tgt_itos"] == translator.tgt_vocab.itos
    vocab = translator.tgt_vocab
    ids = (vocab.bos_id, vocab.eos_id, translator.model.config.pad_id)
    assert (settings["bos_id"], settings["eos_id"], settings["pad_id"]) == ids
    assert settings["num_decoder_layers"] == len(translator.model.decoder_layers)
    # 拼句的规则就是包里的那几张表：网页的 detokenize 用它们时等于 detokenize_en
    # （tests/book/test_live_translator.py::test_browser_detokenize_equals_detokenize_en）
    assert settings["capitalized"] == capitalization(PROPER_NOUNS)
    assert (settings["attach_left"], settings["sentence_end"]) == (
        sorted(ATTACH_LEFT),
        sorted(SENTENCE_END),
    )


def test_export_is_deterministic(translator, exported, tmp_path):
    again = export_translator(translator, tmp_path)
    for name, path in exported.items():
        # 比较摘要：不相等时 pytest 不必去算几 MB 字节串的差异
        digests = [hashlib.sha256(p.read_bytes()).hexdigest() for p in (again[name], path)]
        assert digests[0] == digests[1], name


def test_an_interrupted_export_keeps_the_files_already_there(translator, monkeypatch, tmp_path):
    old = {name: f"old {name}".encode() for name in FILES}
    for name, content in old.items():
        (tmp_path / name).write_bytes(content)
    real_export = torch.onnx.export

    def export_then_interrupt(module, args, f, **kwargs):
        real_export(module, args, f, **kwargs)  # 写进了半个（这里是整个）新文件……
        raise KeyboardInterrupt  # ……然后被 Ctrl-C 打断

    monkeypatch.setattr(torch.onnx, "export", export_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        export_translator(translator, tmp_path)
    assert {name: (tmp_path / name).read_bytes() for name in FILES} == old
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(FILES)  # 没有留下临时文件


def test_bad_arguments_name_the_argument(translator, tmp_path):
    with pytest.raises(TypeError, match="translator must be a Translator, got str"):
        export_translator("zh_en.pt", tmp_path)
    with pytest.raises(
        ValueError, match="opset_version must be a positive integer, got opset_version=0"
    ):
        export_translator(translator, tmp_path, opset_version=0)
    with pytest.raises(TypeError, match="model must be a Transformer, got Translator"):
        EncoderGraph(translator)


def test_the_package_does_not_need_onnx_at_import_time():
    code = (
        "import sys\n"
        "sys.modules['onnx'] = sys.modules['onnxruntime'] = None  # 让 import onnx 失败\n"
        "import tinyformer, tinyformer.translation.export, tinyformer.translation.pretrained, tinyformer.book.widgets\n"
        "print('ok')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip() == "ok", result.stderr
