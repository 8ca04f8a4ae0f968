"""第 8 章网页翻译器的浏览器端脚本（_static_ch08/live_translator/live_translator.js）与它在网站里的文件。

- 分词：用 node 运行网页上的 segment，在全部语料（训练 + 验证 + 测试）上与语料的 jieba 分词器（corpus.corpus_tokenizer）逐句相同；
- 报错：不认识的词，消息与 Translator.tokenize（命令行打印的）一字不差；
- 拼句：网页上的 detokenize 与 detokenize_en 相同；热力图的色标与 matplotlib 的 viridis 相同；
- 解码：网页上唯一的一份贪心解码与束搜索（greedyDecode、beamSearch，网页翻译器与各章的检查器共用）
  在 Python 记下的每个前缀的 logits 上，与 greedy_decode、beam_search 选出同样的词元、同样的对数概率和得分；
- 网站：模型（半精度的权重、词表、语法）与脚本不超过 BUDGET，只有第 8 章的页面引用它们，网站上的模型等于随包权重的新导出。

前向（transformer.js）与包的核对见 tests/book/test_page_forward.py。

浏览器里真的翻译，见 tests/book/test_browser.py 末尾的一节。没有 node 时跳过（CI 里失败）。
"""

import hashlib
import json
import re

import matplotlib
import pytest

from tests.kit import ROOT
from tinyformer.text import (
    ATTACH_LEFT,
    SENTENCE_END,
    SPECIAL_TOKENS,
    capitalization,
    detokenize_en,
    tokenize_en,
)
from tinyformer.translation import cli
from tinyformer.translation.corpus import PROPER_NOUNS, corpus_tokenizer, generate_corpus
from tinyformer.translation.pretrained import load_translator

BUDGET = 1_700_000  # 字节：模型（权重、词表、语法）与网页翻译器的脚本
# 这些路径只许出现在第 8 章的页面里
ASSET_DIRS = ("translator_model", "live_translator")


@pytest.fixture(scope="module")
def translator():
    return load_translator(600)


@pytest.fixture(scope="module")
def words(translator):
    return [w for w in translator.src_vocab.itos if w not in SPECIAL_TOKENS]


def test_browser_segmentation_equals_jieba_on_the_whole_corpus(node, words):
    corpus = generate_corpus(seed=0)
    sentences = [p.zh for p in corpus.train + corpus.valid + corpus.test]
    assert len(sentences) == 12480
    segmented = node(
        "return data.sentences.map(s => m.segment(s, new Set(data.words)));",
        {"sentences": sentences, "words": words},
    )
    different = [
        s for s, tokens in zip(sentences, segmented, strict=True) if tokens != corpus_tokenizer(s)
    ]
    assert different == []


@pytest.mark.parametrize(
    "sentence",
    [
        "我明天在广州看小说。",
        "我爱北京天安门。",
        "我们明天在学校吃汉堡。",
        "",
        "   ",
        "我明天去北京。" * 20,  # 140 个词，超过 max_len
        "我明天去北京。" * 700,  # 4900 个字：曾让 onnxruntime-web 出错、页面留着上一句的译文
        "-我明天去北京。",
    ],
    ids=[
        "unknown-place",
        "unknown-verb",
        "unknown-food",
        "empty",
        "blank",
        "too-long",
        "5000",
        "dash",
    ],
)
def test_unknown_words_get_the_clis_message(node, translator, words, sentence):
    with pytest.raises(ValueError) as info:
        translator.tokenize(sentence)
    message = node(
        "return m.unknownMessage(data.s, m.segment(data.s, new Set(data.words)), new Set(data.words),"
        " data.n);",
        {"s": sentence, "words": words, "n": translator.model.config.max_len},
    )
    assert message == cli.cannot_translate(sentence, info.value)  # 中文，与命令行逐字相同


def test_known_sentences_get_no_message(node, words):
    message = node(
        "return m.unknownMessage(data.s, m.segment(data.s, new Set(data.words)), new Set(data.words));",
        {"s": "我的朋友明天在图书馆看小说吗？", "words": words},
    )
    assert message is None


def test_python_repr_of_strings(node):
    texts = ["我", "it's", 'say "hi"', "a'b\"c", "x\\y", "tab\tnew\n"]
    assert node("return data.map(m.pyRepr);", texts) == [repr(t) for t in texts]


def test_browser_detokenize_equals_detokenize_en(node):
    corpus = generate_corpus(seed=0)
    token_lists = [tokenize_en(p.en) for p in corpus.test]
    settings = {
        "capitalized": capitalization(PROPER_NOUNS),
        "attach_left": sorted(ATTACH_LEFT),
        "sentence_end": sorted(SENTENCE_END),
    }
    joined = node(
        "return data.lists.map(t => m.detokenize(t, data.settings));",
        {"lists": token_lists, "settings": settings},
    )
    assert joined == [detokenize_en(tokens, PROPER_NOUNS) for tokens in token_lists]


def test_heatmap_colours_are_matplotlibs_viridis(node):
    """网页的热力图与 show_translation 的 matplotlib 图用同一色图：网页的 viridis(w) 与 matplotlib 的相差不到 6/255。"""
    values = [i / 200 for i in range(201)]
    colours = node("return data.map(m.viridis);", values)
    cmap = matplotlib.colormaps["viridis"]
    for value, colour in zip(values, colours, strict=True):
        rgb = [int(c) for c in re.fullmatch(r"rgb\((\d+),(\d+),(\d+)\)", colour).groups()]
        expected = [255 * c for c in cmap(value)[:3]]
        assert max(abs(a - b) for a, b in zip(rgb, expected, strict=True)) < 6, (
            value,
            rgb,
            expected,
        )


def test_model_and_scripts_fit_the_budget_and_load_only_on_chapter_8(site):
    files = [p for d in ASSET_DIRS for p in (site / "_static" / d).iterdir()]
    names = {p.name for p in files}
    assert names == {
        "translator.safetensors",
        "translator.json",
        "grammar.json",
        "live_translator.js",
        "transformer.js",
    }
    assert not (site / "_static" / "onnxruntime-web").exists()  # 网站不再带 WebAssembly 运行时
    total = sum(p.stat().st_size for p in files)
    assert total <= BUDGET, f"{total / 2**20:.2f} MiB"
    # 第 8 章的页面引用它们；有检查器（_ext/inspector.py）的页面只在 data- 属性里写它们的地址，
    # 读者打开检查器时才加载（tests/book/test_inspector.py 量打开前后加载的字节）；第 9 章的写诗器同样
    # 只在 data- 属性里写共用脚本的地址，读者按下“写诗”才加载（tests/book/test_poem_writer.py）
    inspector = re.compile(r'<details class="tf-inspector"[^>]*>|<div class="poem-writer"[^>]*>')
    pages = {p: inspector.sub("", p.read_text(encoding="utf-8")) for p in site.rglob("*.html")}
    referencing = sorted(
        str(page.relative_to(site))
        for page, text in pages.items()
        if any(f"_static/{d}/" in text for d in ASSET_DIRS)
    )
    assert referencing == ["chapters/ch08_translation.html"]


def test_the_stated_download_size_is_the_sites(site):
    """页面在加载之前写着要下载多少：就是网站里模型文件（权重、词表、语法）的大小。"""
    html = (site / "chapters" / "ch08_translation.html").read_text(encoding="utf-8")
    stated = float(re.search(r"下载模型（约 ([\d.]+) MB", html).group(1))
    model = sum(p.stat().st_size for p in (site / "_static" / "translator_model").iterdir())
    assert stated == round(model / 1e6, 1)


def test_the_sites_model_is_a_fresh_export_of_the_shipped_weights(site, translator, tmp_path):
    from tinyformer.translation.export import PAGE_FILES, export_for_page

    fresh = export_for_page(translator, tmp_path)
    for name in PAGE_FILES:
        # 比较摘要而不是几 MB 的字节串：不相等时 pytest 会去算字节串的差异，几十分钟也算不完
        on_site = hashlib.sha256((site / "_static" / "translator_model" / name).read_bytes())
        exported = hashlib.sha256(fresh[name].read_bytes())
        assert on_site.hexdigest() == exported.hexdigest(), f"{name} on the site is stale"


def test_browser_grammar_check_equals_in_grammar(node, translator, words, tmp_path):
    # issue 26：网页翻译器也要说出"这句话的句型不在训练语料里"，判断与 tinyformer.translation.corpus.in_grammar 相同
    import importlib.util

    from tinyformer.translation.corpus import OUT_OF_GRAMMAR, in_grammar

    spec = importlib.util.spec_from_file_location(
        "live_translator", ROOT / "_ext" / "live_translator.py"
    )
    extension = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(extension)
    extension.write_grammar(translator, tmp_path / "grammar.json")
    grammar = json.loads((tmp_path / "grammar.json").read_text())
    assert grammar["notice"] == OUT_OF_GRAMMAR
    assert (tmp_path / "grammar.json").stat().st_size < 200_000
    corpus = generate_corpus()
    sentences = [p.zh for p in (*corpus.train[:100], *corpus.test[:100])] + [
        "他昨天没在商店买衣服吗？",
        "他们上周没去公园吗？",
        "我每天不喝绿茶。",
        "我明天去北京吗？",
        "我明天去北京",
        "明天我去北京。",
    ]
    found = node(
        "return data.ss.map((s) => m.inGrammar(m.segment(s, new Set(data.words)),"
        " new Map(data.itos.map((w, i) => [w, i])),"
        " { ...data.g, set: new Set(data.g.sentences.split('\\n')) }));",
        {"ss": sentences, "words": words, "itos": translator.src_vocab.itos, "g": grammar},
    )
    assert found == [in_grammar(s) for s in sentences]
    assert found[-6:] == [False] * 6 and all(found[:200])


# ---- 解码：网页上唯一的一份贪心解码与束搜索（greedyDecode、beamSearch）与 tinyformer.decoding 相同 ----


def recorded_logits(monkeypatch, decode, *args, **kwargs):
    """运行 decode(*args, **kwargs)（不用缓存的 greedy_decode / beam_search），记下每个送进解码器的前缀和它下一个词元的 logits。"""
    import tinyformer.decoding

    table = {}
    real = tinyformer.decoding._next_logits

    def recording(model, ys, memory, is_pad, cache):
        logits = real(model, ys, memory, is_pad, cache)  # (N, V)
        for prefix, row in zip(ys.tolist(), logits.tolist(), strict=True):
            table.setdefault(json.dumps(prefix, separators=(",", ":")), row)
        return logits

    monkeypatch.setattr(tinyformer.decoding, "_next_logits", recording)
    try:
        result = decode(*args, use_cache=False, **kwargs)
    finally:
        monkeypatch.undo()
    return result, table


# node 里的"模型"：查 Python 记下的表；网页要的前缀 Python 没有送进过解码器时出错（说明两边走的路不同）
STEP_FROM_TABLE = (
    "async (prefixes) => ({ logits: prefixes.map((p) => {"
    " const row = data.table[JSON.stringify(p)];"
    " if (!row) throw new Error('prefix not seen by Python: ' + p); return row; }) })"
)


def run_decoder_js(node, expression, data):
    """在 node 里对 data 求 expression（一个 Promise）的值；step 是 STEP_FROM_TABLE。"""
    return node(f"const step = {STEP_FROM_TABLE};\nreturn await ({expression});", data)


def decoding_cases():
    """(名字, 模型, 源句 (1, S), bos, eos, max_len)：随包的翻译器与真句子，以及几个未训练的极小模型。"""
    import torch

    from tests.kit import tiny_transformer

    translator = load_translator(600)
    vocab = translator.tgt_vocab
    for sentence in ["她明天在家写作业吗？", "学生们下周在图书馆看小说吗？", "她昨天没喝绿茶。"]:
        src = translator.encode([sentence])
        yield sentence, translator.model, src, vocab.bos_id, vocab.eos_id, 32
    for seed in range(3):
        yield f"tiny-{seed}", tiny_transformer(seed), torch.tensor([[5, 6, 7, 8]]), 1, 2, 8


def test_browser_greedy_decode_equals_greedy_decode(node, monkeypatch):
    from tinyformer.decoding import greedy_decode

    for name, model, src, bos, eos, max_len in decoding_cases():
        expected, table = recorded_logits(monkeypatch, greedy_decode, model, src, bos, eos, max_len)
        web = run_decoder_js(
            node,
            "m.greedyDecode({ step, bos: data.bos, eos: data.eos, maxLen: data.maxLen })"
            ".then((r) => ({ ids: r.ids, steps: r.steps.length }))",
            {"table": table, "bos": bos, "eos": eos, "maxLen": max_len},
        )
        assert web["ids"] == expected[0].tolist(), name
        assert web["steps"] == len(table), name  # 每步一个新前缀


@pytest.mark.parametrize("beam_size, alpha", [(1, 0.6), (2, 0.6), (4, 0.6), (3, 0.0), (5, 1.5)])
def test_browser_beam_search_equals_beam_search(node, monkeypatch, beam_size, alpha):
    import torch

    from tinyformer.decoding import beam_search, greedy_decode, length_penalty

    for name, model, src, bos, eos, max_len in decoding_cases():
        pad = model.config.pad_id
        expected, table = recorded_logits(
            monkeypatch, beam_search, model, src, bos, eos, beam_size, max_len, alpha
        )
        web = run_decoder_js(
            node,
            "m.beamSearch({ step, bos: data.bos, eos: data.eos, pad: data.pad, maxLen: data.maxLen,"
            " beamSize: data.k, alpha: data.alpha })",
            {
                "table": table,
                "bos": bos,
                "eos": eos,
                "pad": pad,
                "maxLen": max_len,
                "k": beam_size,
                "alpha": alpha,
            },
        )
        # beam_search 返回的已补齐到所有假设的长度；网页的最佳假设同样补了填充
        assert web["best"]["ids"] == expected[0].tolist(), (name, beam_size, alpha)
        assert all(len(h) == beam_size for h in web["steps"])
        # 每一步的每个假设：对数概率 = 它的每个生成词元在 Python 记下的 logits 上的 log_softmax 之和，
        # 得分 = 对数概率 / length_penalty（Python 的），长度不含 <bos>、含 <eos>
        for hypotheses in web["steps"]:
            for h in hypotheses:
                ids = h["ids"]
                length = ids.index(eos) if eos in ids else len(ids) - 1
                log_prob = sum(
                    float(
                        torch.log_softmax(
                            torch.tensor(table[json.dumps(ids[:t], separators=(",", ":"))]), -1
                        )[ids[t]]
                    )
                    for t in range(1, length + 1)
                )
                assert (h["length"], h["finished"]) == (length, eos in ids)
                assert h["logProb"] == pytest.approx(log_prob, rel=1e-5, abs=1e-5)
                score = log_prob / float(length_penalty(length, alpha))
                assert h["score"] == pytest.approx(score, rel=1e-5, abs=1e-5)
        if beam_size == 1:  # 束宽 1 与贪心相同（同 beam_search 的文档）
            assert web["best"]["ids"] == greedy_decode(model, src, bos, eos, max_len)[0].tolist()


def test_browser_decoders_name_a_bad_argument(node):
    messages = node(
        "const step = async () => ({ logits: [[0, 1]] });"
        "const tries = ["
        " () => m.greedyDecode({ step, bos: 0, eos: 1, maxLen: 0 }),"
        " () => m.greedyDecode({ step: null, bos: 0, eos: 1 }),"
        " () => m.beamSearch({ step, bos: 0, eos: 1, pad: 0, beamSize: 0 }),"
        " () => m.beamSearch({ step, bos: 0, eos: 1, pad: 0, alpha: -1 }),"
        "];"
        "return Promise.all(tries.map((f) => f().then(() => 'no error', (e) => e.message)));"
    )
    assert messages == [
        "maxLen must be a positive integer, got maxLen=0",
        "step must be a function, got object",
        "beamSize must be a positive integer, got 0",
        "alpha must be >= 0 and keep the length penalty finite, got alpha=-1",
    ]
