"""gpt.py：因果性、带缓存的生成与整段重算一致、采样可复现、权重共享。"""

import pytest
import torch

from tests.kit import tiny_gpt
from tinyformer import GPTConfig, KVCache

B, T, C, H, V = 2, 5, 16, 4, 30  # C、H、V 是 tiny_gpt 的默认尺寸


def _ids():
    return torch.randint(0, V, (B, T), generator=torch.Generator().manual_seed(1))


def test_config_defaults():
    config = GPTConfig(vocab_size=V, d_model=32)
    assert config.d_ff == 4 * 32
    assert (config.activation, config.norm_first, config.tie_output) == ("gelu_tanh", True, True)


@pytest.mark.parametrize("norm_first", [True, False])
def test_shapes_and_tied_weights(norm_first):
    model = tiny_gpt(norm_first=norm_first)
    assert model(_ids()).shape == (B, T, V)
    assert model.output.weight is model.token_embedding.embedding.weight
    untied = tiny_gpt(tie_output=False)
    assert untied.output.weight is not untied.token_embedding.embedding.weight


@pytest.mark.parametrize("norm_first", [True, False])
def test_is_causal(norm_first):
    model = tiny_gpt(norm_first=norm_first)
    ids = _ids()
    changed = ids.clone()
    changed[:, 3:] = (ids[:, 3:] + 1) % V
    logits, logits_changed = model(ids), model(changed)
    torch.testing.assert_close(logits_changed[:, :3], logits[:, :3])
    assert not torch.allclose(logits_changed[:, 3:], logits[:, 3:])


@pytest.mark.parametrize("norm_first", [True, False])
def test_cached_steps_equal_full_recomputation(norm_first):
    model = tiny_gpt(norm_first=norm_first)
    ids = _ids()
    full = model(ids)
    cache = KVCache()
    prompt = model(ids[:, :2], cache=cache)  # 先送入 2 个词元
    steps = [model(ids[:, t : t + 1], cache=cache) for t in range(2, T)]
    torch.testing.assert_close(torch.cat([prompt, *steps], dim=1), full, atol=1e-5, rtol=1e-5)


def test_sampling_is_reproducible_with_a_generator_and_top_k_1_is_greedy():
    model = tiny_gpt()
    ids = _ids()

    def sample(seed, **kwargs):
        return model.generate(ids, 6, generator=torch.Generator().manual_seed(seed), **kwargs)

    assert (sample(0, temperature=2.0) == sample(0, temperature=2.0)).all()
    assert (sample(0, top_k=1) == model.generate(ids, 6, greedy=True)).all()
    assert not all(
        (sample(s, temperature=5.0) == sample(0, temperature=5.0)).all() for s in (1, 2, 3)
    )


def test_top_k_only_samples_from_the_k_most_likely():
    model = tiny_gpt()
    ids = _ids()
    top3 = model(ids)[:, -1].topk(3).indices  # (B, 3)
    for seed in range(10):
        out = model.generate(
            ids, 1, top_k=3, temperature=3.0, generator=torch.Generator().manual_seed(seed)
        )
        assert all(out[b, -1] in top3[b] for b in range(B))


def test_gpt_names_its_parts_like_the_transformer():
    """同一个部件在 GPT 与编码器–解码器里同名（issue 28）：配置的 ``tie_output``，模块的 ``output``、
    ``decoder_norm``。从前 GPT 叫 ``tie_weights``、``lm_head``、``final_norm``。"""
    from dataclasses import fields

    from tests.kit import tiny_transformer

    shared = {"output", "decoder_norm"}
    assert shared <= dict(tiny_gpt().named_children()).keys()
    assert shared <= dict(tiny_transformer().named_children()).keys()
    assert "tie_output" in {f.name for f in fields(GPTConfig)} & {
        f.name for f in fields(tiny_transformer().config)
    }


@pytest.mark.parametrize("norm_first", [True, False])
def test_block_without_mask_is_the_encoder_layer(norm_first):
    """GPT 的块与编码器层是同一个公式：同样的权重、不给掩码时输出逐位相同。"""
    from tinyformer import EncoderLayer, GPTBlock

    torch.manual_seed(0)
    block = GPTBlock(C, H, 4 * C, norm_first=norm_first, activation="gelu_tanh").eval()
    layer = EncoderLayer(C, H, 4 * C, norm_first=norm_first, activation="gelu_tanh").eval()
    layer.load_state_dict(block.state_dict())
    x = torch.randn(B, T, C)
    assert torch.equal(block(x), layer(x))
