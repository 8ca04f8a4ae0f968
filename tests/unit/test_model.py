"""model.py：形状、掩码、权重共享、因果性、带缓存的增量解码，以及在复制任务上过拟合。"""

import math

import pytest
import torch
import torch.nn.functional as F

from tests.kit import padded_ids, tiny_transformer
from tinyformer import KVCache, TransformerConfig, causal_mask, greedy_decode

B, T, S, C, H = 2, 5, 7, 16, 4
PAD, BOS, EOS = 0, 1, 2
V_SRC, V_TGT = 20, 24


def _model(norm_first=False, **overrides):
    return tiny_transformer(
        src_vocab_size=V_SRC, tgt_vocab_size=V_TGT, num_encoder_layers=2, num_decoder_layers=2,
        max_len=16, norm_first=norm_first, **overrides,
    )  # fmt: skip


def _batch():
    src = padded_ids((S, S - 3), V_SRC, PAD, seed=1)  # (B, S)，第二句末尾 3 个填充
    tgt = padded_ids((T, T - 2), V_TGT, PAD, seed=2)  # (B, T)，第二句末尾 2 个填充
    tgt[:, 0] = BOS
    return src, tgt


def test_config_defaults_are_the_paper_base_model():
    config = TransformerConfig(src_vocab_size=100, tgt_vocab_size=100)
    assert (config.d_model, config.num_heads, config.d_ff, config.dropout) == (512, 8, 2048, 0.1)
    assert (config.num_encoder_layers, config.num_decoder_layers) == (6, 6)
    with pytest.raises(AttributeError):
        config.d_model = 8  # frozen


@pytest.mark.parametrize("norm_first", [False, True])
def test_shapes_and_final_norms(norm_first):
    model = _model(norm_first)
    src, tgt = _batch()
    assert model(src, tgt).shape == (B, T, V_TGT)
    assert model.encode(src).shape == (B, S, C)
    assert isinstance(model.encoder_norm, torch.nn.Identity) != norm_first


def test_output_weight_is_tied_to_target_embedding():
    model = _model()
    assert model.output.weight is model.tgt_embed.embedding.weight
    untied = _model(tie_output=False)
    assert untied.output.weight is not untied.tgt_embed.embedding.weight
    n_tied = sum(p.numel() for p in model.parameters())
    n_untied = sum(p.numel() for p in untied.parameters())
    assert n_untied - n_tied == V_TGT * C


def test_xavier_uniform_initialisation():
    model = _model()
    for name, p in model.named_parameters():
        if p.dim() > 1:  # Xavier 均匀分布的边界 sqrt(6 / (fan_in + fan_out))
            bound = math.sqrt(6 / (p.shape[0] + p.shape[1]))
            assert p.abs().max() <= bound, name
            assert p.abs().max() > 0.8 * bound, name


def test_forward_builds_padding_and_causal_masks():
    model = _model()
    src, tgt = _batch()
    memory = model.encode(src, src_key_padding_mask=src == PAD)
    expected = model.decode(
        tgt,
        memory,
        memory_key_padding_mask=src == PAD,
        tgt_key_padding_mask=tgt == PAD,
        tgt_mask=causal_mask(T),
    )
    torch.testing.assert_close(model(src, tgt), expected)


def test_extra_source_padding_changes_nothing():
    model = _model()
    src, tgt = _batch()
    longer = torch.cat([src, torch.full((B, 4), PAD)], dim=1)
    torch.testing.assert_close(model(longer, tgt), model(src, tgt), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_is_causal(norm_first):
    model = _model(norm_first)
    src, tgt = _batch()
    changed = tgt.clone()
    changed[:, 3:] = torch.randint(3, V_TGT, (B, T - 3), generator=torch.Generator().manual_seed(5))
    logits, logits_changed = model(src, tgt), model(src, changed)
    torch.testing.assert_close(logits_changed[:, :3], logits[:, :3])
    assert not torch.allclose(logits_changed[:, 3:], logits[:, 3:])


@pytest.mark.parametrize("norm_first", [False, True])
def test_cached_decoding_equals_full_decoding(norm_first):
    model = _model(norm_first)
    src, tgt = _batch()
    tgt[1, -2:] = 7  # 右侧不放填充，整段与逐步的掩码才完全一样
    memory, is_pad = model.encode(src), src == PAD
    full = model.decode(tgt, memory, memory_key_padding_mask=is_pad)
    cache = KVCache()
    steps = [
        model.decode(tgt[:, t : t + 1], memory, memory_key_padding_mask=is_pad, cache=cache)
        for t in range(T)
    ]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, atol=1e-5, rtol=1e-5)
    # 先送入前 3 个，再逐个送入，结果也一样
    cache = KVCache()
    first = model.decode(tgt[:, :3], memory, memory_key_padding_mask=is_pad, cache=cache)
    rest = [
        model.decode(tgt[:, t : t + 1], memory, memory_key_padding_mask=is_pad, cache=cache)
        for t in (3, 4)
    ]
    torch.testing.assert_close(torch.cat([first, *rest], dim=1), full, atol=1e-5, rtol=1e-5)


def test_overfits_a_copy_task_and_greedy_decoding_reproduces_the_input():
    V, L, steps = 13, 6, 300
    model = tiny_transformer(
        src_vocab_size=V, tgt_vocab_size=V, d_model=64, d_ff=128, max_len=16
    ).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3, betas=(0.9, 0.98))
    # 预热 20 步再线性降到 0：末尾学习率小，训练不会在最后一步突然跳开
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min((step + 1) / 20, (steps - step) / (steps - 20))
    )
    g = torch.Generator().manual_seed(0)

    def batch(n):
        src = torch.randint(3, V, (n, L), generator=g)
        tgt = torch.cat([torch.full((n, 1), BOS), src, torch.full((n, 1), EOS)], dim=1)
        return src, tgt

    losses = []  # 单线程（tests/conftest.py）：小模型更快，机器忙时也不会因线程争抢而慢十倍
    for _ in range(steps):
        src, tgt = batch(64)
        logits = model(src, tgt[:, :-1])  # 输入 <bos> x1..xL，预测 x1..xL <eos>
        loss = F.cross_entropy(logits.reshape(-1, V), tgt[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        losses.append(loss.item())
    assert losses[0] > math.log(V) - 1.0  # 一开始接近随机猜
    assert sum(losses[-10:]) / 10 < 0.05  # 最后几乎不再出错

    model.eval()
    src, tgt = batch(32)  # 新的随机序列，训练时没见过这一批
    assert torch.equal(greedy_decode(model, src, BOS, EOS, max_len=L + 1), tgt)
