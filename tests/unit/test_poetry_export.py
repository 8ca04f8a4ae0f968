"""tinyformer.poetry.export：网页用的写诗模型是半精度的 safetensors，读回来就是把权重舍入到 float16 的模型。

参照物是随包发布的写诗模型（第 9 章的、网页上运行的那一个）。网页的前向（transformer.js）与这个舍入过的
模型写出同样的诗：tests/book/test_poem_writer.py 在浏览器里核对。
"""

import json

import pytest
import torch
from safetensors.torch import load_file

from tests.kit import rounded_to_half, tiny_poet
from tinyformer.gpt import GPT, GPTConfig
from tinyformer.poetry.export import FILES, export_poet
from tinyformer.poetry.pretrained import load_model
from tinyformer.poetry.sampling import CLAUSE_ENDS
from tinyformer.weights import read_metadata


@pytest.fixture(scope="module")
def shipped():
    return load_model()


@pytest.fixture(scope="module")
def exported(shipped, tmp_path_factory):
    model, vocab = shipped
    return export_poet(model, vocab, tmp_path_factory.mktemp("poet"))


def test_the_file_is_the_model_rounded_to_half(shipped, exported):
    model, _ = shipped
    path = exported["poet.safetensors"]
    tensors = load_file(path)
    assert {t.dtype for t in tensors.values()} == {torch.float16}
    config = GPTConfig(**read_metadata(path)["config"])  # 网页从头里读配置建模型
    assert config == model.config
    rebuilt = GPT(config)
    rebuilt.load_state_dict({k: v.float() for k, v in tensors.items()}, strict=False)
    rounded = GPT(config)
    rounded.load_state_dict(model.state_dict())
    rounded_to_half(rounded)
    for (name, a), b in zip(
        rebuilt.state_dict().items(), rounded.state_dict().values(), strict=True
    ):
        assert torch.equal(a, b), name


def test_settings_carry_what_the_page_needs(shipped, exported):
    model, vocab = shipped
    settings = json.loads(exported["poet.json"].read_text(encoding="utf-8"))
    assert settings["itos"] == vocab.itos and len(settings["itos"]) == len(vocab) > 5000
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
    """输出层与词嵌入共用一张表（tie_output）：文件里只存一份，每个数 2 个字节，文件比权重只大一点。"""
    model, _ = shipped
    parameters = sum(p.numel() for p in model.parameters()) * 2  # float16 字节
    size = exported["poet.safetensors"].stat().st_size
    assert parameters <= size <= parameters * 1.02, (size, parameters)


def test_export_is_deterministic_for_a_tiny_model(tmp_path):
    model, vocab = tiny_poet(seed=1)
    first = export_poet(model, vocab, tmp_path / "a")
    second = export_poet(model, vocab, tmp_path / "b")
    for name in FILES:
        assert first[name].read_bytes() == second[name].read_bytes(), name


def test_a_model_and_vocabulary_that_disagree_are_refused(tmp_path):
    model, _ = tiny_poet()
    _, other = load_model()
    with pytest.raises(ValueError, match=f"vocab_size=24 but vocab has {len(other)} entries"):
        export_poet(model, other, tmp_path)


@pytest.mark.parametrize(
    "options", [{"qk_norm": True}, {"activation": "relu2"}, {"activation": "gelu"}]
)
def test_export_refuses_what_the_page_cannot_compute(tmp_path, options):
    _, vocab = tiny_poet(seed=0)
    model = GPT(GPTConfig(vocab_size=len(vocab), d_model=8, num_heads=2, num_layers=1, **options))
    with pytest.raises(
        ValueError,
        match=r"^the page's forward pass has no QK-norm and knows only the activations 'relu', 'gelu_tanh', got ",
    ):
        export_poet(model, vocab, tmp_path)
    assert list(tmp_path.iterdir()) == []  # 什么也没写
