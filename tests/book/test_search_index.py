"""网页搜索能找到本书的复合术语：检查构建出的 ``_build/html/searchindex.js``（不构建；没有构建结果时跳过，CI 里失败）。

浏览器里的搜索框不分词，整词“位置编码”必须是索引里的一个键，Sphinx 才找得到它（为什么、怎么做见
``_ext/search_dict.py``；在浏览器里真的搜到这些章：tests/book/test_browser.py）。
"""

import json

import pytest

from _ext import search_dict
from tests.kit import ROOT

GLOSSARY = ROOT / "chapters" / "appendix_glossary.md"

# 术语 -> 讲解它的章节（必须都在这个词的索引条目里）
EXPECTED = {
    "位置编码": ["ch03_positional_encoding", "ch04_positional_proofs"],
    "正弦位置编码": ["ch03_positional_encoding"],
    "多头注意力": ["ch05_attention"],
    "缩放点积注意力": ["ch05_attention"],
    "掩码": ["ch05_attention", "ch07_encoder_decoder"],
    "因果掩码": ["ch05_attention", "ch07_encoder_decoder"],
    "填充掩码": ["ch05_attention"],
    "层归一化": ["ch06_norm_residual_ffn"],
    "残差连接": ["ch06_norm_residual_ffn"],
    "交叉注意力": ["ch07_encoder_decoder"],
    "束搜索": ["ch08_translation"],
}


@pytest.fixture(scope="module")
def index(site):
    """构建出的搜索索引；没有构建结果时跳过，CI 里失败（conftest.py 的 site）。"""
    text = (site / "searchindex.js").read_text(encoding="utf-8")
    assert text.startswith("Search.setIndex("), text[:40]
    return json.loads(text[len("Search.setIndex(") : text.rindex(")")])


def _docs_for(index, word):
    """这个词在哪些页面里：正文（terms）或标题（titleterms）。

    Sphinx 把出现在标题里的词只记进 titleterms，不再重复记进 terms；``searchtools.js`` 两处都查。
    """
    found = set()
    for key in ("terms", "titleterms"):
        files = index[key].get(word, [])
        found.update([files] if isinstance(files, int) else files)
    return {index["docnames"][i].rsplit("/", 1)[-1] for i in found}


def test_glossary_terms_are_in_the_search_dictionary():
    words = search_dict.dictionary_words(GLOSSARY.read_text(encoding="utf-8"))
    assert set(EXPECTED) <= set(words)
    assert all(" " not in w and len(w) > 1 for w in words)


def test_glossary_parser():
    text = (
        "# 标题\n\n:::{glossary}\n:sorted:\n位置编码\npositional encoding\n  定义，含 位置 二字。\n\n"
        "掩码\n  定义\n:::\n\n不是术语\n\n```{glossary}\n束搜索\n  定义\n```\n"
    )
    assert search_dict.glossary_terms(text) == ["位置编码", "positional encoding", "掩码", "束搜索"]
    assert search_dict.dictionary_text(text) == "位置编码\n掩码\n束搜索\n"


@pytest.mark.parametrize("word", list(EXPECTED))
def test_term_is_an_index_key_for_the_chapters_that_teach_it(index, word):
    docs = _docs_for(index, word)
    assert "appendix_glossary" in docs, f"{word}：术语表页面不在索引条目里"
    missing = set(EXPECTED[word]) - docs
    assert not missing, f"{word}：索引条目 {sorted(docs)} 缺少 {sorted(missing)}"
