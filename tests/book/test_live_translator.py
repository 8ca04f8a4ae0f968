"""第 8 章网页翻译器的浏览器端脚本（_static_ch08/live_translator/live_translator.js）与它在网站里的文件。

- 分词：用 node 运行网页上的 segment，在全部语料（训练 + 验证 + 测试）上与语料的 jieba 分词器（corpus.corpus_tokenizer）逐句相同；
- 报错：不认识的词，消息与 Translator.tokenize（命令行打印的）一字不差；
- 拼句：网页上的 detokenize 与 detokenize_en 相同；热力图的色标与 matplotlib 的 viridis 相同；
- 束搜索：网页上唯一的一份 beamSearch（网页翻译器与各章的检查器共用）在 Python 记下的每个前缀的 logits 上，
  与 beam_search 选出同样的词元、同样的对数概率和得分（贪心解码在真的前向上核对：test_page_forward.py）；
- 网站：模型与脚本不超过 BUDGET，网站上的模型等于随包权重的新导出；翻译器与写诗器的模型只有自己那一章引用，
  页面上写的下载大小就是网站里模型文件的大小。

前向（transformer.js）与包的核对见 tests/book/test_page_forward.py；浏览器里真的翻译见 tests/book/test_browser.py。
"""

import hashlib
import json
import re

import matplotlib
import pytest
import torch

from _ext.live_translator import write_grammar
from tests.kit import tiny_transformer
from tinyformer.decoding import beam_search, greedy_decode, length_penalty
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
from tinyformer.translation.export import PAGE_FILES, export_for_page
from tinyformer.translation.pretrained import load_translator

BUDGET = 1_700_000  # 字节：模型（权重、词表、语法）与网页翻译器的脚本


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


def test_the_page_says_what_the_cli_says_about_a_sentence(node, translator, words):
    """不认识的词、太长、空的句子：网页的消息与命令行的中文消息逐字相同；认识的句子两边都没有消息。"""
    sentences = [
        "我明天在广州看小说。",
        "我爱北京天安门。",
        "我们明天在学校吃汉堡。",
        "",
        "   ",
        "我明天去北京。" * 20,  # 140 个词，超过 max_len
        "我明天去北京。" * 700,  # 4900 个字：曾让 onnxruntime-web 出错、页面留着上一句的译文
        "-我明天去北京。",
        "我的朋友明天在图书馆看小说吗？",  # 认识的
    ]
    messages = node(
        "const known = new Set(data.words);"
        "return data.ss.map((s) => m.unknownMessage(s, m.segment(s, known), known, data.n));",
        {"ss": sentences, "words": words, "n": translator.model.config.max_len},
    )
    for sentence, message in zip(sentences, messages, strict=True):
        try:
            translator.tokenize(sentence)
            expected = None
        except ValueError as error:
            expected = cli.cannot_translate(sentence, error)
        assert message == expected, sentence[:40]
    assert messages[-1] is None and None not in messages[:-1]


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


def test_model_and_scripts_fit_the_budget(site):
    files = [
        p for d in ("translator_model", "live_translator") for p in (site / "_static" / d).iterdir()
    ]
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


# 网页上运行的模型：页面 -> (只许它引用的文件夹, 页面上写的下载大小, 模型的文件夹)
MODELS = {
    "chapters/ch08_translation": (
        ("translator_model", "live_translator"),
        r"下载模型（约 ([\d.]+) MB",
        "translator_model",
    ),
    "chapters/ch09_gpt_poetry": (
        ("poem_model", "poem_writer"),
        r"模型约 ([\d.]+) MB",
        "poem_model",
    ),
}


@pytest.mark.parametrize("page", MODELS)
def test_only_its_chapter_references_a_model_and_states_its_size(site, page):
    folders, stated, model = MODELS[page]
    # 有检查器（_ext/inspector.py）的页面与第 9 章的写诗器只在 data- 属性里写模型与共用脚本的地址，读者
    # 打开检查器、按下“写诗”时才加载（tests/book/test_inspector.py 量加载前后的文件）
    lazy = re.compile(r'<details class="tf-inspector"[^>]*>|<div class="poem-writer"[^>]*>')
    texts = {p: lazy.sub("", p.read_text(encoding="utf-8")) for p in site.rglob("*.html")}
    referencing = sorted(
        str(p.relative_to(site))
        for p, text in texts.items()
        if any(f"_static/{d}/" in text for d in folders)
    )
    assert referencing == [f"{page}.html"]
    html = (site / f"{page}.html").read_text(encoding="utf-8")
    size = sum(p.stat().st_size for p in (site / "_static" / model).iterdir())
    assert float(re.search(stated, html).group(1)) == round(size / 1e6, 1)


def test_the_sites_model_is_a_fresh_export_of_the_shipped_weights(site, translator, tmp_path):
    fresh = export_for_page(translator, tmp_path)
    for name in PAGE_FILES:
        # 比较摘要而不是几 MB 的字节串：不相等时 pytest 会去算字节串的差异，几十分钟也算不完
        on_site = hashlib.sha256((site / "_static" / "translator_model" / name).read_bytes())
        exported = hashlib.sha256(fresh[name].read_bytes())
        assert on_site.hexdigest() == exported.hexdigest(), f"{name} on the site is stale"


def test_browser_grammar_check_equals_in_grammar(node, translator, words, tmp_path):
    # issue 26：网页翻译器也要说出"这句话的句型不在训练语料里"，判断与 tinyformer.translation.corpus.in_grammar 相同
    from tinyformer.translation.corpus import OUT_OF_GRAMMAR, in_grammar

    write_grammar(translator, tmp_path / "grammar.json")
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


def decoding_cases():
    """(名字, 模型, 源句 (1, S), bos, eos, max_len)：随包的翻译器与真句子，以及几个未训练的极小模型。"""
    translator = load_translator(600)
    vocab = translator.tgt_vocab
    for sentence in ["她明天在家写作业吗？", "学生们下周在图书馆看小说吗？", "她昨天没喝绿茶。"]:
        src = translator.encode([sentence])
        yield sentence, translator.model, src, vocab.bos_id, vocab.eos_id, 32
    for seed in range(3):
        yield f"tiny-{seed}", tiny_transformer(seed), torch.tensor([[5, 6, 7, 8]]), 1, 2, 8


@pytest.mark.parametrize("beam_size, alpha", [(1, 0.6), (2, 0.6), (4, 0.6), (3, 0.0), (5, 1.5)])
def test_browser_beam_search_equals_beam_search(node, monkeypatch, beam_size, alpha):
    for name, model, src, bos, eos, max_len in decoding_cases():
        pad = model.config.pad_id
        expected, table = recorded_logits(
            monkeypatch, beam_search, model, src, bos, eos, beam_size, max_len, alpha
        )
        web = node(
            f"const step = {STEP_FROM_TABLE};"
            "return await Promise.all([m.beamSearch({ step, bos: data.bos, eos: data.eos, pad: data.pad,"
            " maxLen: data.maxLen, beamSize: data.k, alpha: data.alpha }), data.k === 1"
            " ? m.greedyDecode({ step, bos: data.bos, eos: data.eos, maxLen: data.maxLen }) : null])"
            ".then(([beam, greedy]) => ({ ...beam, greedy: greedy && greedy.ids }))",
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
        if beam_size == 1:  # 束宽 1 与贪心相同（同 beam_search 的文档），网页的 greedyDecode 也一样
            greedy = greedy_decode(model, src, bos, eos, max_len)[0].tolist()
            assert web["best"]["ids"] == web["greedy"] == greedy, name


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
