"""poetry/tokenization.py 的测试：三种切法、每字比特数的分母、同样预算的 GPT、随包的实验结果。"""

import math
from itertools import pairwise

import pytest
import torch
import torch.nn.functional as F

from tests.kit import same_merges_up_to_ties
from tinyformer.bpe import ByteBPE
from tinyformer.poetry.corpus import load_split
from tinyformer.poetry.tokenization import (
    Tokenizer,
    bits_per_char,
    lab_results,
    make_tokenizer,
    shipped_bpe,
    train_gpt,
)
from tinyformer.poetry.training import evaluate

POEMS = load_split("valid")[:60]


def test_three_tokenizers_split_the_same_poem():
    poem = POEMS[0]
    char, jieba = make_tokenizer("char", POEMS), make_tokenizer("jieba", POEMS)
    bpe = make_tokenizer("bpe300", POEMS)
    assert char.split(poem) == list(poem)
    assert "".join(jieba.split(poem)) == poem
    assert b"".join(bpe.split(poem)).decode() == poem
    assert len(bpe.vocab) == 4 + 300 and bpe.name == "bpe300"
    # BPE 的词表含全部字节：任何文本都没有 <unk>
    assert bpe.vocab.unk_id not in bpe.vocab.encode(bpe.split("🙂 𠀀 unseen"))
    with pytest.raises(ValueError, match="name must be 'char', 'jieba' or 'bpe<vocab size>'"):
        make_tokenizer("words", POEMS)


def test_bits_per_char_is_total_bits_over_characters():
    tokenizer = Tokenizer.for_bpe(ByteBPE.train(POEMS, 300))
    model, _ = train_gpt(tokenizer, POEMS, steps=2, max_len=200, d_model=16, num_heads=2)
    poems = POEMS[:3]
    nats = 0.0
    with torch.no_grad():
        for poem in poems:
            ids = tokenizer.vocab.encode(tokenizer.split(poem), bos=True, eos=True)
            logits = model(torch.tensor([ids[:-1]]))[0]  # (T, V)
            nats += F.cross_entropy(logits, torch.tensor(ids[1:]), reduction="sum").item()
    expected = nats / math.log(2) / sum(len(p) + 1 for p in poems)
    assert bits_per_char(model, poems, tokenizer) == pytest.approx(expected, rel=1e-5)
    # 逐字切分时每个词元就是一个字：每字比特数 = 每个预测的比特数
    char = make_tokenizer("char", POEMS)
    char_model, _ = train_gpt(char, POEMS, steps=1, max_len=80, d_model=16, num_heads=2)
    assert bits_per_char(char_model, poems, char) == pytest.approx(
        evaluate(char_model, [char.split(p) for p in poems], char.vocab), rel=1e-6
    )


def test_shipped_lab_results_have_provenance_and_the_shipped_merges():
    lab = lab_results()
    assert lab["command"] == "python -m tools.bpe_lab" and len(lab["commit"]) == 40
    assert len(shipped_bpe()) == 1024
    rows = {row["vocab_size"]: row for row in lab["bpe"]}
    assert rows[256]["tokens_per_char"] == 3.0  # 诗里每个字符（汉字、全角标点）3 个字节
    sizes = sorted(rows)
    assert all(rows[a]["tokens_per_char"] > rows[b]["tokens_per_char"] for a, b in pairwise(sizes))
    for row in rows.values():
        assert row["agreement"]["set_overlap"] == row["agreement"]["merges"]
    assert lab["gpt"]["bpe512"]["unknown_rate"] == 0 < lab["gpt"]["char"]["unknown_rate"]


def test_shipped_tokenizers_merges_give_the_same_ids_as_ours_on_the_whole_test_split():
    """该章读随包的 tokenizers 合并表（不现场训练）：由它搭出的 tokenizers 分词器与我们的编码器逐个编号相同。"""
    pytest.importorskip("tokenizers")
    from tinyformer.book.reference_bpe import byte_ids, reference_tokenizer

    lab = lab_results()
    assert lab["reference_provenance"]["command"] == "python -m tools.bpe_lab --reference-merges"
    merges = lab["reference_merges"]["1024"]
    theirs, reference = ByteBPE.from_gpt2_merges(merges), reference_tokenizer(merges)
    to_hf = {b: i for i, b in enumerate(byte_ids())}
    test = load_split("test")
    for text, encoding in zip(test, reference.encode_batch(test), strict=True):
        assert [to_hf.get(i, i) for i in theirs.encode(text)] == encoding.ids
    # 两个训练器在整个训练集上学到的 V = 1024 合并表：同一批合并，只有三处平手让相邻两条对调
    assert same_merges_up_to_ties(shipped_bpe(), theirs) == [98, 99, 240, 241, 635, 636]


def test_real_tokenizer_table_is_pinned_and_its_book_rows_recount():
    """真实分词器的对照表（tools/real_tokenizers.py 写的）：每个包固定版本与 sha512；本书自己的两行现场重数相同。"""
    table = lab_results("real_tokenizers")
    assert table["provenance"]["command"] == "python -m tools.real_tokenizers"
    rows = {row["name"]: row for row in table["rows"]}
    real = [row for row in table["rows"] if "package" in row]
    assert len(real) >= 6
    assert all(row["integrity"].startswith("sha512-") and "@" in row["package"][1:] for row in real)
    test = load_split("test")
    assert table["texts"]["poems"]["characters"] == sum(map(len, test))
    assert rows["逐字"]["tokens"]["poems"] == sum(map(len, test))
    assert rows["本书的 BPE 1024"]["tokens"]["poems"] == sum(
        len(shipped_bpe().encode(p)) for p in test
    )
    # OpenAI 的三代词表一代比一代大，切中文一代比一代短；只有 Llama 2 有字节回退
    openai = [rows[name] for name in ("GPT-2", "GPT-4（cl100k）", "GPT-4o（o200k）")]
    for text in ("poems", "news"):
        assert [r["tokens"][text] for r in openai] == sorted(
            (r["tokens"][text] for r in openai), reverse=True
        )
    assert [row["name"] for row in real if row["byte_fallback"]] == ["Llama 2"]
    longest = table["o200k_longest_han_tokens"]
    assert len(longest) == 20 and all(
        len(a["token"]) >= len(b["token"]) for a, b in pairwise(longest)
    )


def test_news_paragraphs_lose_their_tags_and_brackets():
    # tools/ 用 requirements.txt 的环境（有 tokenizers）；按包的下限装的环境（test_floors.py）里没有它
    pytest.importorskip("tokenizers")
    from tools.real_tokenizers import untagged

    line = "[中国/ns  政府/n]nt  迈向/v  充满/v  希望/n  （/w  附/v  图片/n  １/m  张/q  ）/w"
    assert untagged(line) == "中国政府迈向充满希望（附图片１张）"
    assert untagged("   ") == ""


def test_lab_results_names_only_the_shipped_files():
    with pytest.raises(ValueError, match="bpe_lab"):
        lab_results("../provenance")
