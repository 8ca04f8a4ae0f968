"""第 8 章网页翻译器的浏览器端脚本（_static_ch08/live_translator/live_translator.js）与它在网站里的文件。

- 分词：用 node 运行网页上的 segment，在全部语料（训练 + 验证 + 测试）上与语料的 jieba 分词器（corpus.corpus_tokenizer）逐句相同；
- 报错：不认识的词，消息与 Translator.tokenize（命令行打印的）一字不差；
- 拼句：网页上的 detokenize 与 detokenize_en 相同；热力图的色标与 matplotlib 的 viridis 相同；
- 网站：模型 + 运行时不超过 8 MB，只有第 8 章的页面引用它们，网站上的模型等于随包权重的新导出。

浏览器里真的翻译，见 tests/book/test_browser.py 末尾的一节。没有 node 时跳过（CI 里失败）。
"""

import hashlib
import json
import re
import shutil
import subprocess

import matplotlib
import pytest

from tests.kit import ROOT, skip_or_fail
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

SCRIPT = ROOT / "_static_ch08" / "live_translator" / "live_translator.js"
BUDGET = 8 * 1024 * 1024  # 模型 + 运行时，字节
# 这些路径只许出现在第 8 章的页面里
ASSET_DIRS = ("onnxruntime-web", "translator_model", "live_translator")


@pytest.fixture(scope="module")
def node():
    executable = shutil.which("node")
    if executable is None:
        skip_or_fail("没有 node（Node.js，npm 自带）")
    return executable


def run_js(node, expression: str, data) -> object:
    """在 node 里载入 live_translator.js（得到 m），对 JSON 数据 data 求 expression 的值。"""
    program = (
        f"const m = require({json.dumps(str(SCRIPT))});\n"
        "const data = JSON.parse(require('fs').readFileSync(0, 'utf8'));\n"
        f"process.stdout.write(JSON.stringify({expression}));\n"
    )
    result = subprocess.run(
        [node, "-e", program], input=json.dumps(data), capture_output=True, text=True, check=True
    )
    return json.loads(result.stdout)


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
    segmented = run_js(
        node,
        "data.sentences.map(s => m.segment(s, new Set(data.words)))",
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
    message = run_js(
        node,
        "m.unknownMessage(data.s, m.segment(data.s, new Set(data.words)), new Set(data.words), data.n)",
        {"s": sentence, "words": words, "n": translator.model.config.max_len},
    )
    assert message == cli.cannot_translate(sentence, info.value)  # 中文，与命令行逐字相同


def test_known_sentences_get_no_message(node, words):
    message = run_js(
        node,
        "m.unknownMessage(data.s, m.segment(data.s, new Set(data.words)), new Set(data.words))",
        {"s": "我的朋友明天在图书馆看小说吗？", "words": words},
    )
    assert message is None


def test_python_repr_of_strings(node):
    texts = ["我", "it's", 'say "hi"', "a'b\"c", "x\\y", "tab\tnew\n"]
    assert run_js(node, "data.map(m.pyRepr)", texts) == [repr(t) for t in texts]


def test_browser_detokenize_equals_detokenize_en(node):
    corpus = generate_corpus(seed=0)
    token_lists = [tokenize_en(p.en) for p in corpus.test]
    settings = {
        "capitalized": capitalization(PROPER_NOUNS),
        "attach_left": sorted(ATTACH_LEFT),
        "sentence_end": sorted(SENTENCE_END),
    }
    joined = run_js(
        node,
        "data.lists.map(t => m.detokenize(t, data.settings))",
        {"lists": token_lists, "settings": settings},
    )
    assert joined == [detokenize_en(tokens, PROPER_NOUNS) for tokens in token_lists]


def test_heatmap_colours_are_matplotlibs_viridis(node):
    """网页的热力图与 show_translation 的 matplotlib 图用同一色图：网页的 viridis(w) 与 matplotlib 的相差不到 6/255。"""
    values = [i / 200 for i in range(201)]
    colours = run_js(node, "data.map(m.viridis)", values)
    cmap = matplotlib.colormaps["viridis"]
    for value, colour in zip(values, colours, strict=True):
        rgb = [int(c) for c in re.fullmatch(r"rgb\((\d+),(\d+),(\d+)\)", colour).groups()]
        expected = [255 * c for c in cmap(value)[:3]]
        assert max(abs(a - b) for a, b in zip(rgb, expected, strict=True)) < 6, (
            value,
            rgb,
            expected,
        )


def test_model_and_runtime_fit_the_budget_and_load_only_on_chapter_8(site):
    files = [
        p for d in ("onnxruntime-web", "translator_model") for p in (site / "_static" / d).iterdir()
    ]
    names = {p.name for p in files}
    assert {
        "ort.wasm.min.js",
        "ort-wasm-simd-threaded.mjs",
        "ort-wasm-simd-threaded.wasm.gz",
    } <= names
    assert {"encoder.onnx", "decoder.onnx", "translator.json"} <= names
    assert not any(n.endswith(".wasm") for n in names)  # 只发布压缩后的 .wasm
    total = sum(p.stat().st_size for p in files)
    assert total <= BUDGET, f"{total / 2**20:.2f} MiB"
    # 第 8 章的页面引用它们；有检查器（_ext/inspector.py）的页面只在 data- 属性里写它们的地址，
    # 读者打开检查器时才加载（tests/book/test_inspector.py 量打开前后加载的字节）
    inspector = re.compile(r'<details class="tf-inspector"[^>]*>')
    pages = {p: inspector.sub("", p.read_text(encoding="utf-8")) for p in site.rglob("*.html")}
    referencing = sorted(
        str(page.relative_to(site))
        for page, text in pages.items()
        if any(f"_static/{d}/" in text for d in ASSET_DIRS)
    )
    assert referencing == ["chapters/ch08_translation.html"]


def test_the_sites_model_is_a_fresh_export_of_the_shipped_weights(site, translator, tmp_path):
    pytest.importorskip("onnx")
    from tinyformer.translation.export import FILES, export_translator

    fresh = export_translator(translator, tmp_path)
    for name in FILES:
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
    found = run_js(
        node,
        "data.ss.map((s) => m.inGrammar(m.segment(s, new Set(data.words)),"
        " new Map(data.itos.map((w, i) => [w, i])),"
        " { ...data.g, set: new Set(data.g.sentences.split('\\n')) }))",
        {"ss": sentences, "words": words, "itos": translator.src_vocab.itos, "g": grammar},
    )
    assert found == [in_grammar(s) for s in sentences]
    assert found[-6:] == [False] * 6 and all(found[:200])
