"""参数只在入口查一次（issue 48）：入口里面的层、注意力、嵌入不再逐层、逐步重查，也不把张量读回主机。

数的是确定的次数（不是用时）：读回主机（``.item()``、``bool(张量)``……，GPU 上每次都是一次停顿）与进入
``_checks.py`` 的函数。直接调用一个模块时它自己就是入口，照样检查（“词嵌入”一章的 TokenEmbedding）。
用时与这些次数的基准见 ``benchmarks/bench_translation.py``、``benchmarks/bench_gpt.py``。
"""

import pytest
import torch

from benchmarks._bench import calls_into, host_syncs
from tests.kit import tiny_gpt, tiny_transformer
from tinyformer import TokenEmbedding, _checks
from tinyformer.poetry.sampling import write

SRC = torch.tensor([[5, 6, 7, 0], [8, 9, 0, 0]])  # 0 是填充
TGT = torch.tensor([[2, 5, 6], [2, 7, 0]])


def test_a_training_forward_reads_back_to_the_host_at_most_three_times():
    model = tiny_transformer(num_encoder_layers=2, num_decoder_layers=2).train()
    assert (
        host_syncs(lambda: model(SRC, TGT)) <= 3
    )  # src、tgt 的编号范围，有没有空句（旧代码 14 次）
    assert calls_into(_checks, lambda: model(SRC, TGT)) <= 25  # 旧代码：109 次


def test_generation_checks_once_not_at_every_step():
    model, prompt = tiny_gpt(), torch.tensor([[1, 2]])
    short = calls_into(_checks, lambda: model.generate(prompt, 2))
    long = calls_into(_checks, lambda: model.generate(prompt, 12))
    assert (long - short) / 10 <= 3  # 每多写一个词元：进入检查函数 ≤ 3 次（旧代码约 60 次）
    assert host_syncs(lambda: model.generate(prompt, 12)) <= 2  # 只有入口查编号的那一次


def test_writing_a_poem_checks_at_most_five_times_per_character():
    from tests.kit import tiny_poet

    model, vocab = tiny_poet()
    poem = write(model, vocab, generator=torch.Generator().manual_seed(0))
    calls = calls_into(
        _checks, lambda: write(model, vocab, generator=torch.Generator().manual_seed(0))
    )
    assert len(poem.text) >= 5 and calls / len(poem.text) <= 5


def test_a_module_called_directly_is_its_own_door():
    with pytest.raises(ValueError, match=r"ids must be in \[0, vocab_size\) = \[0, 5\), got 5"):
        TokenEmbedding(5, 3)(torch.tensor([[1, 5]]))
    model = tiny_transformer()
    with pytest.raises(ValueError, match=r"ids must be in \[0, vocab_size\) = \[0, 12\), got 12"):
        model(SRC, torch.tensor([[2, 12, 0], [2, 1, 0]]))  # 同一条规则，在模型的入口查


def test_the_door_still_sees_what_the_inner_checks_used_to():
    model = tiny_transformer()
    with pytest.raises(
        ValueError, match=r"^src and tgt must have the same batch size B, got 2, 1$"
    ):
        model(SRC, TGT[:1])
    memory = model.encode(SRC)
    with pytest.raises(
        ValueError, match=r"^tgt and memory must have the same batch size B, got 1, 2$"
    ):
        model.decode(TGT[:1], memory)
    with pytest.raises(ValueError, match=r"last dimension of memory must equal d_model=16"):
        model.decode(TGT, memory[..., :8])
    with pytest.raises(
        ValueError, match=r"tgt_key_padding_mask must have shape \(B, S\) = \(2, 3\)"
    ):
        model.decode(TGT, memory, tgt_key_padding_mask=torch.zeros(2, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match=r"^src sentence\(s\) \[1\] are all padding \(pad_id=0\)"):
        model(torch.tensor([[5, 6], [0, 0]]), TGT)  # 旧代码在每层的注意力里各查一遍
    # 入口之后，模块照样检查（没有留在"已查过"的状态里）
    with pytest.raises(ValueError, match=r"ids must be in"):
        TokenEmbedding(5, 3)(torch.tensor([[1, 5]]))
