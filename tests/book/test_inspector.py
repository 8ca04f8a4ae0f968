"""各章的“用训练好的模型看看”（_ext/inspector.py、_static_inspector/inspector/inspector.js）在无头 Chromium 里。

- 数与包的相同：``window.tinyformerInspect(句子)`` 的每一个中间结果与 Python 里
  ``tinyformer.translation.inspection.inspect``（真模型上的前向钩子）算的相同。网页的权重是半精度的，参照是
  把权重舍入到 float16 的包（tests.kit.rounded_to_half）；容差是 float32 的
  ``|网页 − Python| ≤ 1e-4 · max(1, max|Python|)``（每个中间结果各自的量级；网页的前向与 torch 只差求和顺序）；
  贪心译文逐字相同，每一步的 logits 就是 Python 那一行。
- 束搜索：``window.tinyformerBeam`` 每一步的每个假设，就是 ``beam_search(use_cache=False)`` 那一步送进解码器的前缀
  （挂在目标端嵌入上的钩子记下的），最后的译文与 ``beam_search`` 的相同；每个假设的对数概率与把它整段送回
  模型（teacher forcing）算出的相同。
- 打开之前不加载：每个有检查器的页面，打开前加载的字节里没有模型（第 8 章的页面 ≤ 4 MB）；打开之后才加载，
  加载的是网页翻译器的那一份模型；两个数写进 _build/screenshots/inspector_bytes.json。
- 每个控件（下拉框、滑块）换一个取值，视图就变，没有控制台错误；用键盘打开；390 px 不横向溢出；
  桌面、手机、深色的截图存到 _build/screenshots/。

需要构建好的网站与 Debian 的 chromium；缺少时跳过，CI=true 时失败（同 tests/book/test_browser.py）。
"""

import json
from urllib.parse import unquote

import numpy as np
import pytest
import torch

from tests.book.test_browser import Visit
from tests.kit import ROOT, rounded_to_half
from tinyformer.decoding import beam_search, length_penalty
from tinyformer.translation.inspection import inspect
from tinyformer.translation.pretrained import load_translator

pytestmark = pytest.mark.browser

SCREENSHOTS = ROOT / "_build" / "screenshots"
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
CH08_BEFORE_INTERACTION = 4_000_000  # 字节：第 8 章的页面打开时（翻译器、检查器都还没加载）
HEAVY = ("translator_model", "transformer.js")
SENTENCES = [
    "她明天在家写作业吗？",
    "老师明天看电影。",
    "学生们下周在图书馆看小说吗？",
    "她昨天没喝绿茶。",
]
TOLERANCE = 1e-4


class Page(Visit):
    """test_browser.Visit 在自己的上下文里（空缓存，量字节才准）：控制台错误、失败的请求、外部请求、加载的路径。"""

    def __init__(self, chromium, url, **context):
        self.context = chromium.new_context(**context)
        super().__init__(self.context, url)
        self.page.wait_for_load_state("networkidle")

    def loaded(self, site):
        """加载过的文件（在网站里的路径）。"""
        files = {site / unquote(p).lstrip("/") for p in self.paths}
        return {f for f in files if f.is_file()}

    def open_inspector(self):
        """用键盘打开检查器（焦点移到 summary、回车），等它算完。"""
        summary = self.page.locator(f"{INSPECTOR} > summary")
        summary.focus()
        self.page.keyboard.press("Enter")
        self.page.wait_for_function(
            f"() => ['done', 'error'].includes(document.querySelector('{INSPECTOR}').dataset.state)",
            timeout=60_000,
        )
        assert self.page.locator(INSPECTOR).get_attribute("data-state") == "done", (
            self.page.inner_text(f"{INSPECTOR} .tfi-view")
        )

    def close(self):
        self.context.close()


@pytest.fixture
def open_page(chromium, server):
    pages = []

    def open_(name, **context):
        pages.append(Page(chromium, f"{server}/{name}.html", **context))
        return pages[-1]

    yield open_
    for p in pages:
        p.close()


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
    page = open_page("chapters/ch05_attention").page
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


@torch.no_grad()
def teacher_forced_log_prob(translator, src, ids):
    """把假设整段送回模型：每个生成的词元（<eos> 之后的填充不算）的对数概率之和。"""
    model, eos = translator.model, translator.tgt_vocab.eos_id
    length = ids.index(eos) + 1 if eos in ids else len(ids)  # 含 <bos>
    tgt = torch.tensor([ids[:length]])
    log_probs = torch.log_softmax(model(src, tgt[:, :-1]).float(), dim=-1)[0]  # (T, V)
    return float(log_probs.gather(1, tgt[0, 1:, None]).sum()), length - 1


@pytest.mark.parametrize("beam_size", [2, 4])
def test_beam_hypotheses_equal_beam_search(open_page, translator, beam_size):
    page = open_page("chapters/ch08_translation").page
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
        for hypotheses in web["steps"]:
            for h in hypotheses:
                log_prob, length = teacher_forced_log_prob(translator, src, h["ids"])
                assert h["length"] == length
                close_enough("log P", h["logProb"], log_prob)
                score = log_prob / float(length_penalty(length, alpha=0.6))
                close_enough("score", h["score"], score)


@pytest.mark.parametrize("name", PAGES)
def test_nothing_heavy_loads_before_the_reader_opens_it(open_page, site, name):
    v = open_page(name)
    before = v.loaded(site)
    heavy = sorted(str(f) for f in before if any(h in str(f) for h in HEAVY))
    assert heavy == [], heavy
    bytes_before = sum(f.stat().st_size for f in before)
    if name.endswith("ch08_translation"):
        assert bytes_before <= CH08_BEFORE_INTERACTION, bytes_before
    v.page.locator(INSPECTOR).scroll_into_view_if_needed()
    v.open_inspector()
    v.page.wait_for_load_state("networkidle")
    after = v.loaded(site)
    assert {"translator.safetensors", "translator.json", "transformer.js"} <= {
        f.name for f in after
    }
    status = v.page.inner_text(f"{INSPECTOR} .tfi-status")
    assert "加载了" in status and "MB" in status  # 读者看到加载了多少、用了多久
    assert v.errors == [] and v.failed == [] and v.external == []
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    record = SCREENSHOTS / "inspector_bytes.json"
    table = json.loads(record.read_text()) if record.exists() else {}
    table[name] = {"before": bytes_before, "after": sum(f.stat().st_size for f in after)}
    record.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")


# 把第 i 个控件换成另一个取值：下拉框选下一个选项，滑块走一步（到头则退一步）
MOVE_JS = """([selector, i]) => {
    const input = document.querySelectorAll(selector)[i];
    if (input.tagName === 'SELECT') {
        input.selectedIndex = (input.selectedIndex + 1) % input.options.length;
    } else {
        const step = Number(input.step) || 1;
        const value = Number(input.value);
        input.value = value + step <= Number(input.max) ? value + step : value - step;
    }
    ['input', 'change'].forEach((t) => input.dispatchEvent(new Event(t, {bubbles: true})));
}"""
CONTROLS = f"{INSPECTOR} .tfi-view select, {INSPECTOR} .tfi-view input[type=range]"
VIEW_HTML = f"() => document.querySelector('{INSPECTOR} .tfi-view').innerHTML"


@pytest.mark.parametrize(
    "view",
    [
        {},
        {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "device_scale_factor": 2},
        {"color_scheme": "dark"},
    ],
    ids=["desktop", "phone", "dark"],
)
@pytest.mark.parametrize("name", PAGES)
def test_every_control_changes_the_view(open_page, name, view):
    v = open_page(name, **view)
    page = v.page
    page.locator(INSPECTOR).scroll_into_view_if_needed()
    v.open_inspector()
    assert page.locator(INSPECTOR).get_attribute("data-view") == PAGES[name]
    if PAGES[name] == "decoding":  # 束搜索的表是异步画的
        page.wait_for_selector(f"{INSPECTOR} .tfi-beam table")
    count = page.locator(CONTROLS).count()
    assert count >= 1
    for i in range(count):
        before = page.evaluate(VIEW_HTML)
        page.evaluate(MOVE_JS, [CONTROLS, i])
        page.wait_for_function(f"(before) => ({VIEW_HTML})() !== before", arg=before)
    width = page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= page.viewport_size["width"], "页面横向溢出"
    label = "desktop" if not view else ("phone" if "viewport" in view else "dark")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"inspector_{name.split('/')[-1]}_{label}.png"
    page.evaluate("() => document.fonts.ready")
    # 公式排版完之前，上方的段落还在变高，盒子一直在移动，元素截图等不到它"稳定"（冷启动时的第一页）
    page.evaluate("() => window.MathJax?.startup?.promise")
    page.locator(INSPECTOR).screenshot(path=path, timeout=60_000)
    assert v.errors == [] and v.failed == [] and v.external == []
