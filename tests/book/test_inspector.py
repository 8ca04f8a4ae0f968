"""各章的“用训练好的模型看看”（_ext/inspector.py、_static_inspector/inspector/inspector.js）与第 9 章的写诗器在无头 Chromium 里。

- 数与包的相同：``window.tinyformerInspect(句子)`` 的每一个中间结果与 Python 里
  ``tinyformer.translation.inspection.inspect``（真模型上的前向钩子）算的相同。网页的权重是半精度的，参照是
  把权重舍入到 float16 的包（tests.kit.rounded_to_half）；容差是 float32 的
  ``|网页 − Python| ≤ 1e-4 · max(1, max|Python|)``（每个中间结果各自的量级；网页的前向与 torch 只差求和顺序）。
- 束搜索：``window.tinyformerBeam`` 每一步的假设就是 ``beam_search(use_cache=False)`` 那一步送进解码器的前缀，
  译文相同（每个假设的对数概率与得分由 tests/book/test_live_translator.py 在同一份 beamSearch 上核对）。
- 读者要之前不加载模型：检查器打开之前（写诗器按下“写诗”之前：test_poem_writer.py），页面加载的字节里
  没有模型与共用脚本。每个控件换一个取值视图就变，用键盘打开；桌面、手机、深色下不横向溢出。
"""

import numpy as np
import pytest

from tests.book.conftest import MOVE_JS, screenshot, wait_done
from tests.kit import rounded_to_half
from tinyformer.decoding import beam_search
from tinyformer.translation.inspection import inspect
from tinyformer.translation.pretrained import load_translator

pytestmark = pytest.mark.browser

INSPECTOR = ".tf-inspector"
# 有检查器的页面与它的视图
PAGES = {
    "chapters/ch02_embedding": "embedding",
    "chapters/ch03_positional_encoding": "positional",
    "chapters/ch05_attention": "attention",
    "chapters/ch06_norm_residual_ffn": "norm_ffn",
    "chapters/ch07_encoder_decoder": "stack",
    "chapters/ch08_translation": "decoding",
}
BEFORE_INTERACTION = 4_000_000  # 字节：页面打开时（翻译器、检查器、写诗器都还没加载）
# 模型与共用的脚本
HEAVY = ("translator_model", "poem_model", "transformer.js", "live_translator.js")
SENTENCES = [
    "她明天在家写作业吗？",
    "老师明天看电影。",
    "学生们下周在图书馆看小说吗？",
    "她昨天没喝绿茶。",
]
TOLERANCE = 1e-4


def open_inspector(page):
    """用键盘打开检查器（焦点移到 summary、回车），等它算完。"""
    page.locator(f"{INSPECTOR} > summary").focus()
    page.keyboard.press("Enter")
    wait_done(page, INSPECTOR, f"{INSPECTOR} .tfi-view")


@pytest.fixture(scope="module")
def translator():
    translator = load_translator(600)
    rounded_to_half(translator.model)  # 网页读的权重是半精度的
    return translator


def close_enough(name, web, reference):
    reference = np.asarray(reference, dtype=np.float64)
    web = np.asarray(web, dtype=np.float64).reshape(reference.shape)
    limit = TOLERANCE * max(1.0, float(np.abs(reference).max()))
    worst = float(np.abs(web - reference).max())
    assert worst <= limit, f"{name}: max |web - python| = {worst:.2e} > {limit:.2e}"


def test_every_stage_equals_the_package(open_page, translator):
    page = open_page("chapters/ch05_attention.html").page
    for sentence in SENTENCES:
        web = page.evaluate("(s) => window.tinyformerInspect(s)", sentence)
        reference = inspect(translator, sentence)
        assert web["translation"] == translator.translate(sentence)
        assert web["srcIds"] == reference["src_ids"].tolist()
        assert web["tgtIds"] == reference["tgt_ids"].tolist()
        names = set(reference) - {"src_ids", "tgt_ids"}
        assert set(web["stages"]) == names
        for name in sorted(names):
            stage = web["stages"][name]
            assert tuple(stage["dims"]) == tuple(reference[name].shape), name
            close_enough(name, stage["data"], reference[name].numpy())
        # 贪心解码第 t 步最后一个位置的 logits = 整段送入时第 t 行的 logits
        assert len(web["steps"]) == reference["decoder.logits"].shape[0]
        for t, step in enumerate(web["steps"]):
            close_enough(f"step {t}", step["logits"], reference["decoder.logits"][t].numpy())


def beam_prefixes(translator, src, beam_size):
    """beam_search（不用缓存）每一步送进解码器的前缀；以及它的结果。"""
    prefixes = []
    hook = translator.model.tgt_embed.register_forward_hook(
        lambda module, args, output: prefixes.append(args[0].tolist())
    )
    try:
        vocab = translator.tgt_vocab
        best = beam_search(
            translator.model, src, vocab.bos_id, vocab.eos_id, beam_size=beam_size, use_cache=False
        )
    finally:
        hook.remove()
    return prefixes, best[0].tolist()


@pytest.mark.parametrize("beam_size", [2, 4])
def test_beam_hypotheses_equal_beam_search(open_page, translator, beam_size):
    page = open_page("chapters/ch08_translation.html").page
    for sentence in SENTENCES[:3]:
        web = page.evaluate(
            "([s, k]) => window.tinyformerBeam(s, {beamSize: k})", [sentence, beam_size]
        )
        src = translator.encode([sentence])
        prefixes, best = beam_prefixes(translator, src, beam_size)
        steps = [[h["ids"] for h in hypotheses] for hypotheses in web["steps"]]
        # 第 t 步扩展之后的假设 = beam_search 第 t + 1 步送进解码器的前缀（最后一步之后没有再送入）
        assert steps[:-1] == prefixes[1:], sentence
        assert web["best"]["ids"] == best, sentence
        assert web["best"]["translation"] == translator.translate(sentence, beam_size=beam_size)


def assert_nothing_heavy(v, site, allowed=()):
    """读者要之前：页面加载了的文件里没有模型与共用脚本（``allowed`` 除外），总共不超过 BEFORE_INTERACTION。"""
    loaded = v.loaded(site)
    forbidden = set(HEAVY) - set(allowed)
    assert sorted(str(f) for f in loaded if set(f.relative_to(site).parts) & forbidden) == []
    weight = sum(f.stat().st_size for f in loaded)
    assert weight <= BEFORE_INTERACTION, f"{weight / 1e6:.2f} MB before interaction"


CONTROLS = f"{INSPECTOR} .tfi-view select, {INSPECTOR} .tfi-view input[type=range]"
VIEW_HTML = f"() => document.querySelector('{INSPECTOR} .tfi-view').innerHTML"


VIEWS = {
    "desktop": {},
    "phone": {
        "viewport": {"width": 390, "height": 844},
        "is_mobile": True,
        "device_scale_factor": 2,
    },
    "dark": {"color_scheme": "dark"},
}


@pytest.mark.parametrize("view", VIEWS)
@pytest.mark.parametrize("name", PAGES)
def test_loads_when_opened_and_every_control_changes_the_view(open_page, site, name, view):
    """滚进视野时不加载模型，用键盘打开检查器之后才加载（读者看到加载了多少、用了多久）。"""
    v = open_page(f"{name}.html", **VIEWS[view])
    page = v.page
    page.wait_for_load_state("networkidle")
    page.locator(INSPECTOR).scroll_into_view_if_needed()
    # 第 8 章的页面本来就加载翻译器的 live_translator.js
    assert_nothing_heavy(v, site, {"live_translator.js"} if PAGES[name] == "decoding" else ())
    open_inspector(page)
    status = page.inner_text(f"{INSPECTOR} .tfi-status")
    assert "加载了" in status and "MB" in status
    assert page.locator(INSPECTOR).get_attribute("data-view") == PAGES[name]
    if PAGES[name] == "decoding":  # 束搜索的表是异步画的
        page.wait_for_selector(f"{INSPECTOR} .tfi-beam table")
    count = page.locator(CONTROLS).count()
    assert count >= 1
    for i in range(count):
        before = page.evaluate(VIEW_HTML)
        page.locator(CONTROLS).nth(i).evaluate(MOVE_JS)
        page.wait_for_function(f"(before) => ({VIEW_HTML})() !== before", arg=before)
    width = page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= page.viewport_size["width"], "页面横向溢出"
    page.evaluate("() => document.fonts.ready")
    screenshot(page.locator(INSPECTOR), f"inspector_{name.split('/')[-1]}_{view}.png")
    page.wait_for_load_state("networkidle")
    assert {"translator.safetensors", "translator.json", "transformer.js"} <= {
        f.name for f in v.loaded(site)
    }
    v.assert_clean()
