"""masks.py：True = 可以关注；形状、偏移、组合，以及与 torch 的约定一致。"""

import torch
import torch.nn.functional as F

from tinyformer import causal_mask, padding_mask

T = 5


def test_causal_mask_matches_definition():
    mask = causal_mask(T)
    assert mask.dtype == torch.bool and mask.shape == (T, T)
    for t in range(T):
        for s in range(T):
            assert bool(mask[t, s]) == (s <= t)


def test_causal_mask_with_start_is_the_last_rows_of_the_full_mask():
    full = causal_mask(7)
    for start in range(7):
        T_new = 7 - start
        torch.testing.assert_close(causal_mask(T_new, start=start), full[start:])


def test_padding_mask_shape_and_values():
    ids = torch.tensor([[4, 5, 6], [4, 0, 0]])
    mask = padding_mask(ids, pad_id=0)
    assert mask.dtype == torch.bool and mask.shape == (2, 1, 1, 3)
    assert mask[:, 0, 0].tolist() == [[True, True, True], [True, False, False]]


def test_masks_combine_with_and():
    ids = torch.tensor([[4, 5, 6], [4, 0, 0]])
    combined = padding_mask(ids, 0) & causal_mask(3)
    assert combined.shape == (2, 1, 3, 3)
    for b in range(2):
        for t in range(3):
            for s in range(3):
                assert bool(combined[b, 0, t, s]) == (s <= t and ids[b, s] != 0)


def test_device_argument():
    assert causal_mask(3, device="cpu").device.type == "cpu"


def test_same_convention_as_torch_functional_sdpa():
    # F.scaled_dot_product_attention 也是 True = 可以关注：第 0 个查询只看第 0 个键
    torch.manual_seed(0)
    q, k, v = torch.randn(1, T, 4), torch.randn(1, T, 4), torch.randn(1, T, 4)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=causal_mask(T))
    torch.testing.assert_close(out[0, 0], v[0, 0])
