"""tinyformer.translation.inspect_export：导出用的包装与真模型上的钩子算出同样的中间结果，ONNX 图也一样。"""

import dataclasses
import json

import numpy as np
import pytest
import torch

from tinyformer.decoding import greedy_decode
from tinyformer.model import Transformer
from tinyformer.text import Vocab
from tinyformer.translation.export import export_translator
from tinyformer.translation.inspect_export import (
    DecoderInspection,
    EncoderInspection,
    decoder_stage_names,
    encoder_stage_names,
    export_inspector,
    inspect,
)
from tinyformer.translation.pretrained import load_translator
from tinyformer.translation.translator import Translator, new_translator

from ..kit import TINY_SRC_VOCAB, tiny_translator

SENTENCES = [
    "我明天在学校看小说。",
    "她明天在家写作业吗？",
    "学生们下周在图书馆看小说吗？",
    "她昨天没喝绿茶。",
]


@pytest.fixture(scope="module")
def translator():
    return load_translator(600)


def wrapper_stages(translator, sentence, tgt):
    model = translator.model
    src = translator.encode([sentence])
    encoder = EncoderInspection(model)(src)
    names = encoder_stage_names(len(model.encoder_layers))
    stages = dict(zip(names, encoder, strict=True))
    decoder = DecoderInspection(model)(tgt, stages["memory"], src)
    stages.update(zip(decoder_stage_names(len(model.decoder_layers)), decoder, strict=True))
    return {name: value[0] for name, value in stages.items()}


@pytest.mark.parametrize("sentence", SENTENCES)
def test_wrapper_equals_hooks_on_the_real_model(translator, sentence):
    reference = inspect(translator, sentence)
    with torch.no_grad():
        stages = wrapper_stages(translator, sentence, reference["tgt_ids"][None])
    assert set(stages) == set(reference) - {"src_ids", "tgt_ids"}
    for name, value in stages.items():
        assert value.shape == reference[name].shape, name
        torch.testing.assert_close(value, reference[name], rtol=0, atol=1e-6, msg=name)


def test_reference_stages_mean_what_their_names_say(translator):
    sentence = SENTENCES[0]
    stages = inspect(translator, sentence)
    model = translator.model
    C = model.config.d_model
    src = translator.encode([sentence])[0]
    assert torch.equal(stages["src_ids"], src)
    E = model.src_embed.embedding.weight
    assert torch.equal(stages["encoder.embedding"], E[src])
    torch.testing.assert_close(stages["encoder.embedding_scaled"], E[src] * C**0.5)
    torch.testing.assert_close(
        stages["encoder.input"], stages["encoder.embedding_scaled"] + stages["encoder.positional"]
    )
    weights = stages["encoder.layers.0.self_attn.weights"]  # (H, S, S)
    assert weights.shape == (model.config.num_heads, len(src), len(src))
    torch.testing.assert_close(weights.sum(-1), torch.ones(weights.shape[:-1]))
    # 解码器的掩码自注意力看不到后面的位置
    causal = stages["decoder.layers.0.self_attn.weights"]
    assert torch.all(causal.triu(diagonal=1) == 0)
    # LayerNorm 的输入是残差和；输出每个词元的均值约 0（γ、β 学过，不严格是 0）
    torch.testing.assert_close(
        stages["encoder.layers.0.norm1.input_mean"], stages["encoder.layers.0.residual1"].mean(-1)
    )
    # 第 t 行的 logits 就是贪心解码第 t 步选的词
    greedy = greedy_decode(
        model, src[None], translator.tgt_vocab.bos_id, translator.tgt_vocab.eos_id
    )
    produced = greedy[0, 1:]
    T = stages["decoder.logits"].shape[0]
    assert torch.equal(stages["decoder.logits"].argmax(-1), produced[:T])
    torch.testing.assert_close(stages["decoder.probs"].sum(-1), torch.ones(T))


def test_onnx_graphs_equal_the_package(translator, tmp_path):
    _assert_onnx_equals_package(translator, export_inspector(translator, tmp_path), SENTENCES)


def test_heads_as_many_as_the_head_size_and_a_vocabulary_without_i(tmp_path):
    """C = 16、4 个头（H == D == 4，测试工具自己的尺寸），目标词表里没有 “i”：两份导出都能做，且与包相同。"""
    pytest.importorskip("onnx")
    no_i = Vocab([["we", "go", "to", "beijing", "."]])
    small = new_translator(
        TINY_SRC_VOCAB, no_i, seed=0, d_model=16, num_heads=4, num_layers=1, d_ff=32
    )
    export_translator(small, tmp_path / "translator")
    paths = export_inspector(small, tmp_path / "inspector")
    _assert_onnx_equals_package(small, paths, ["我明天去北京。", "他喝绿茶吗？"])


def _assert_onnx_equals_package(translator, paths, sentences):
    ort = pytest.importorskip("onnxruntime")
    settings = json.loads(paths["inspector.json"].read_text(encoding="utf-8"))
    encoder = ort.InferenceSession(str(paths["inspect_encoder.onnx"]))
    decoder = ort.InferenceSession(str(paths["inspect_decoder.onnx"]))
    assert [o.name for o in encoder.get_outputs()] == settings["encoder_outputs"]
    assert [o.name for o in decoder.get_outputs()] == settings["decoder_outputs"]
    for sentence in sentences:
        reference = inspect(translator, sentence)
        src = reference["src_ids"][None].numpy()
        tgt = reference["tgt_ids"][None].numpy()
        outputs = dict(
            zip(settings["encoder_outputs"], encoder.run(None, {"src": src}), strict=True)
        )
        feeds = {"tgt": tgt, "memory": outputs["memory"], "src": src}
        outputs.update(zip(settings["decoder_outputs"], decoder.run(None, feeds), strict=True))
        for name, value in outputs.items():
            np.testing.assert_allclose(
                value[0], reference[name].numpy(), rtol=1e-4, atol=1e-4, err_msg=name
            )


def test_export_is_deterministic(translator, tmp_path):
    first = export_inspector(translator, tmp_path / "a")
    second = export_inspector(translator, tmp_path / "b")
    for name, path in first.items():
        assert path.read_bytes() == second[name].read_bytes(), name


def test_pre_ln_model_is_refused_with_the_rule():
    small = tiny_translator()
    config = dataclasses.replace(small.model.config, norm_first=True)
    pre_ln = Translator(Transformer(config), small.src_vocab, small.tgt_vocab)
    with pytest.raises(ValueError, match=r"post-LN .* got a model with norm_first=True"):
        EncoderInspection(pre_ln.model)
    with pytest.raises(ValueError, match=r"got a model with norm_first=True"):
        DecoderInspection(pre_ln.model)
    with pytest.raises(ValueError, match=r"got a model with norm_first=True"):
        inspect(pre_ln, small.src_vocab.itos[-1])


def test_bad_arguments_name_the_argument(translator):
    with pytest.raises(TypeError, match="model"):
        EncoderInspection("not a model")
    with pytest.raises(TypeError, match="translator"):
        inspect(translator.model, "我")
    with pytest.raises(ValueError, match="not in the source vocabulary"):
        inspect(translator, "我明天在广州看小说。")
