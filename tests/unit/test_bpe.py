"""bpe.py 的测试：合并循环对照每步重数的朴素实现、编码对照按排名依次合并、往返，
以及与 Hugging Face ``tokenizers`` 的训练器（同样的文本 → 同样的合并表）的核对。坏输入的消息钉在
``test_bad_inputs.py`` 的表里（``bpe-*``）。"""

from itertools import pairwise

import pytest

from tests.kit import same_merges_up_to_ties
from tinyformer.book.reference_bpe import naive_train
from tinyformer.bpe import ByteBPE, gpt2_byte_to_unicode, merge_pair
from tinyformer.poetry.corpus import load_split

POEMS = [
    "春眠不觉晓，处处闻啼鸟。",
    "夜来风雨声，花落知多少。",
    "春风不度玉门关。",
    "哈哈哈哈",
    "aaaa",
]


def test_incremental_counts_equal_recounting_every_step():
    texts = POEMS + load_split("valid")[:40]
    assert ByteBPE.train(texts, 400).merges == naive_train(texts, 400)


def test_tie_break_takes_the_smallest_pair():
    # "ab" 与 "cd" 各出现 2 次：先合并编号更小的 (97, 98)
    assert ByteBPE.train(["abcd", "cdab"], 257).merges == [(97, 98)]
    assert ByteBPE.train(["cdab", "abcd"], 257).merges == [(97, 98)]


def test_overlapping_pairs_merge_left_to_right():
    bpe = ByteBPE.train(["aaaa", "aaa"], 257)  # (a, a) 出现 3 + 2 次
    assert bpe.merges == [(97, 97)]
    assert bpe.encode("aaaaa") == [256, 256, 97]


def test_stops_when_no_pair_repeats():
    assert len(ByteBPE.train(["春"], 300)) == 256 + 0  # 每个对只出现一次
    assert len(ByteBPE.train(["春春"], 300)) == 256 + 2  # 230 152、152 165 各两次；之后都只一次


def test_encode_equals_applying_every_merge_in_rank_order():
    bpe = ByteBPE.train(load_split("valid")[:200], 600)
    for text in load_split("test")[:20]:
        ids = list(text.encode("utf-8"))
        for k, pair in enumerate(bpe.merges):
            ids = merge_pair(ids, pair, 256 + k)
        assert bpe.encode(text) == ids


@pytest.mark.parametrize(
    "text",
    [
        "",
        "春",
        "床前明月光，疑是地上霜。",
        "🙂👨‍👩‍👧 emoji",
        "𠀀𪚥 生僻字",
        "tab\tand\nnewline",
        "\x00",
    ],
)
def test_round_trip_any_string(text):
    bpe = ByteBPE.train(POEMS, 300)
    assert bpe.decode(bpe.encode(text)) == text


def test_a_han_character_is_three_bytes_then_one_token():
    bpe = ByteBPE.train(["春天春天春"], 258)
    # 春 = e6 98 a5：(230, 152) 与 (152, 165) 都出现 3 次，平手取编号对小的 (152, 165)
    assert bpe.merges == [(152, 165), (230, 256)]
    assert bpe.encode("春") == [257]
    assert bpe.vocab[257] == "春".encode()


def test_steps_end_at_the_encoding():
    bpe = ByteBPE.train(POEMS, 320)
    history = bpe.steps("春风不度")
    assert history[0] == list("春风不度".encode())
    assert history[-1] == bpe.encode("春风不度")
    assert all(len(b) < len(a) for a, b in pairwise(history))


def test_gpt2_byte_table_is_a_bijection_onto_printable_characters():
    table = gpt2_byte_to_unicode()
    assert sorted(table) == list(range(256))
    assert len(set(table.values())) == 256
    assert all(ch.isprintable() and not ch.isspace() for ch in table.values())
    assert table[ord("A")] == "A" and table[0] == "Ā"


def test_same_merges_as_hugging_face_tokenizers_trainer():
    # 同一张合并表下两边的编号逐个相同：test_tokenization.py 在整个测试集上用随包的合并表核对
    pytest.importorskip("tokenizers")
    from tinyformer.book.reference_bpe import train_reference

    train = load_split("train")[:3000]
    _, merges = train_reference(train, 600)
    # 两个训练器在同一份文本上学到的合并（换成字节串比较）：同一批，平手处相邻两条对调
    theirs, ours = ByteBPE.from_gpt2_merges(merges), ByteBPE.train(train, 600)
    assert len(same_merges_up_to_ties(ours, theirs)) <= 4
