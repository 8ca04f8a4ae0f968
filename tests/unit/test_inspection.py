"""tinyformer.translation.inspection.inspect：真模型上的钩子记下的中间结果就是它们的名字说的量
（网页上的检查器与它核对：tests/book/test_inspector.py）。"""

import dataclasses

import pytest
import torch

from tinyformer.decoding import greedy_decode
from tinyformer.model import Transformer
from tinyformer.translation.inspection import inspect
from tinyformer.translation.pretrained import load_translator
from tinyformer.translation.translator import Translator

from ..kit import tiny_translator

SENTENCES = [
    "我明天在学校看小说。",
    "她明天在家写作业吗？",
    "学生们下周在图书馆看小说吗？",
    "她昨天没喝绿茶。",
]


@pytest.fixture(scope="module")
def translator():
    return load_translator(600)


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


def test_pre_ln_model_is_refused_with_the_rule():
    small = tiny_translator()
    config = dataclasses.replace(small.model.config, norm_first=True)
    pre_ln = Translator(Transformer(config), small.src_vocab, small.tgt_vocab)
    with pytest.raises(ValueError, match=r"post-LN .* got a model with norm_first=True"):
        inspect(pre_ln, small.src_vocab.itos[-1])


def test_bad_arguments_name_the_argument(translator):
    with pytest.raises(TypeError, match="translator"):
        inspect(translator.model, "我")
    with pytest.raises(ValueError, match="not in the source vocabulary"):
        inspect(translator, "我明天在广州看小说。")
