"""embedding.py：嵌入 = one-hot @ E（×√d_model）；权重可以手动设置。"""

import math

import torch
import torch.nn.functional as F

from tinyformer import TokenEmbedding

V, C = 10, 16


def test_embedding_equals_one_hot_times_weight():
    torch.manual_seed(0)
    emb = TokenEmbedding(V, C)
    ids = torch.tensor([[1, 2, 3, 4, 5], [9, 0, 0, 3, 3]])
    one_hot = F.one_hot(ids, V).float()  # (B, T, V)
    expected = one_hot @ emb.embedding.weight * math.sqrt(C)  # (B, T, V) @ (V, C) -> (B, T, C)
    torch.testing.assert_close(emb(ids), expected)


def test_weights_can_be_set_by_hand():
    # 第 2 章的手算例子：把 E 设成给定的 5×3 矩阵，查表得到对应的行
    E = torch.arange(15, dtype=torch.float32).reshape(5, 3)
    emb = TokenEmbedding(5, 3, scale=False)
    with torch.no_grad():
        emb.embedding.weight.copy_(E)
    torch.testing.assert_close(emb(torch.tensor([[4, 0]]))[0], E[[4, 0]])


def test_padding_idx_row_is_zero_and_gets_no_gradient():
    torch.manual_seed(0)
    emb = TokenEmbedding(V, C, padding_idx=0)
    assert (emb.embedding.weight[0] == 0).all()
    emb(torch.tensor([[0, 1, 0]])).sum().backward()
    assert (emb.embedding.weight.grad[0] == 0).all()
    assert (emb.embedding.weight.grad[1] != 0).any()
