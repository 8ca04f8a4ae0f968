"""第 9 章网页上的写诗器（_ext/live_translator.py 导出模型、_static_ch09/poem_writer/poem_writer.js）在无头 Chromium 里。

- 贪心：``window.tinyformerPoem({prefix 或 acrostic, greedy: true})`` 写出的诗与 Python 的
  ``tinyformer.poetry.sampling.write(..., greedy=True)`` 逐字相同，每步的候选字相同，概率相差 ≤ PROB_TOL；
- 采样：网页用自己的种子（同一个种子写出同一首诗），每一步的候选与概率就是 Python 在同一个前缀上、同样的
  温度 / top-k / top-p 下 ``next_distribution`` 给出的；
- 格律（``form``）：四种体裁的贪心诗都与 Python 的 ``write(..., form=..., greedy=True)`` 逐字相同，每一步的分布
  就是 Python 用 ``MeterMask`` 去掉不合律的字之后的分布；选了体裁才下载平水韵（meter.json）；
- 每个控件都能用 Tab 走到、回车写诗；按下“写诗”之前（打字时也）不加载模型；各种宽度与配色下不横向溢出。
  下载大小与只有本章引用它：tests/book/test_live_translator.py。

网页的权重是半精度的：参照是把权重舍入到 float16 的包（tests.kit.rounded_to_half）。
PROB_TOL：网页的前向（transformer.js）与 torch 的 logits 只差 float32 的求和顺序，概率相差远小于 1e-4。
"""

import re

import pytest
import torch

from tests.book.conftest import Visit, screenshot, wait_done
from tests.book.test_inspector import assert_nothing_heavy
from tests.kit import rounded_to_half
from tinyformer.poetry.evaluation import FORMS, meter
from tinyformer.poetry.pretrained import load_model
from tinyformer.poetry.sampling import MeterMask, next_distribution, write

pytestmark = pytest.mark.browser

PAGE = "chapters/ch09_gpt_poetry"
WIDGET = ".poem-writer"
PROB_TOL = 1e-4
SHOW = 5  # 每步列出的候选数（poet.json 的 show）
ACROSTIC = "春夏秋冬"
CASES = [  # (开头或藏头, (温度, top-k, top-p) 或 None（贪心）, 种子)
    *[({"prefix": p}, None, None) for p in ["白日依山尽，", "春眠不觉晓，", "床前明月光，"]],
    ({"acrostic": ACROSTIC}, None, None),
    ({"prefix": "白日"}, (0.8, 20, 0.9), 0),
    ({"prefix": "白日"}, (1.3, None, 0.8), 1),
    ({"prefix": "白日"}, (0.6, 5, None), 2),
    ({"prefix": "白日"}, (1.0, None, None), 3),
    ({"acrostic": "风花雪月"}, (1.0, None, 0.9), 5),
]


@pytest.fixture(scope="module")
def shipped():
    model, vocab = load_model()
    return rounded_to_half(model), vocab


@pytest.fixture(scope="module")
def shared_page(chromium, server):
    """一页给只调用 ``window.tinyformerPoem`` 的测试共用（模型只加载一次）。"""
    context = chromium.new_context()
    yield Visit(context, f"{server}/{PAGE}.html").page
    context.close()


def reference_step(model, vocab, text_before, acrostic, settings, form=None, rhyme=None):
    """Python 在前缀 <bos> + text_before 上的采样分布（write 的规则：禁 <pad>/<bos>/<unk>，藏头时也禁 <eos>；
    有 form 时再去掉 MeterMask 不允许的字）。"""
    with torch.no_grad():
        logits = model(torch.tensor([vocab.encode(text_before, bos=True)]))[0, -1]
    logits = logits.index_fill(
        0, torch.tensor([vocab.pad_id, vocab.bos_id, vocab.unk_id]), -torch.inf
    )
    if form is not None:
        rules = MeterMask(vocab, form, rhyme)
        for ch in text_before:
            rules.step(vocab.stoi[ch])
        logits = logits.masked_fill(~rules.allowed(), -torch.inf)
    elif acrostic:
        logits[vocab.eos_id] = -torch.inf
    if settings is None:  # 贪心
        return torch.softmax(logits, -1)
    temperature, top_k, top_p = settings
    return next_distribution(logits, temperature, top_k, top_p)


def check_steps(web, model, vocab, prefix, acrostic, settings, form=None, rhyme=None):
    """每一步：候选字与 Python 的 topk 相同、概率相差 ≤ PROB_TOL、留下的字数相同、抽到的字概率 > 0。"""
    worst = 0.0
    text = web["text"]
    for i, step in enumerate(web["steps"]):
        before = text[: len(prefix) + i]
        if step["topk"] == [[step["char"], 1]] and (
            (acrostic and (i == 0 or before[-1] in "，。")) or (form and step["char"] in "，。")
        ):
            continue  # 强制的字：藏头的字，格律的标点
        probs = reference_step(model, vocab, before, acrostic, settings, form, rhyme)
        top = torch.topk(probs, min(SHOW, int((probs > 0).sum())))  # 网页不列出概率为 0 的候选
        assert [ch for ch, _ in step["topk"]] == [vocab.itos[j] for j in top.indices.tolist()], i
        for (_, p), q in zip(step["topk"], top.values.tolist(), strict=True):
            worst = max(worst, abs(p - q))
        assert step["support"] == int((probs > 0).sum()), i
        assert probs[vocab.stoi[step["char"]]] > 0, i
    assert worst <= PROB_TOL, worst
    return worst


@pytest.mark.parametrize("start, settings, seed", CASES)
def test_steps_follow_pythons_distribution(shared_page, shipped, start, settings, seed):
    """贪心的诗与 Python 的 write 逐字相同；采样的同一个种子写出同一首诗。"""
    model, vocab = shipped
    prefix, acrostic = start.get("prefix", ""), start.get("acrostic")
    if settings is None:
        options = {**start, "greedy": True}
    else:
        temperature, top_k, top_p = settings
        options = {**start, "temperature": temperature, "top_k": top_k, "top_p": top_p}
        options["seed"] = seed
    web = shared_page.evaluate("(o) => window.tinyformerPoem(o)", options)
    if acrostic:
        clauses = [c for c in re.split("[，。]", web["text"]) if c]
        assert [c[0] for c in clauses] == list(acrostic)
        assert web["text"][-1] in "，。"
    if settings is None:
        poem = write(model, vocab, greedy=True, **start)
        assert web["text"] == poem.text
        assert [s["char"] for s in web["steps"]] == list(poem.text[len(prefix) :])
        for step, choices in zip(web["steps"], poem.choices, strict=True):
            assert [ch for ch, _ in step["topk"]] == [ch for ch, _ in choices]
        if not acrostic:
            assert all(len(s["topk"]) == SHOW for s in web["steps"])
    else:
        again = shared_page.evaluate("(o) => window.tinyformerPoem(o)", options)
        assert again["text"] == web["text"]  # 同一个种子，同一首诗
        assert web["text"].startswith(prefix) and len(web["text"]) > len(prefix)
        if top_k is not None:
            assert all(s["support"] <= top_k for s in web["steps"])
    check_steps(web, model, vocab, prefix, acrostic, settings)


@pytest.mark.parametrize("form", FORMS)
def test_constrained_greedy_poems_are_pythons(shared_page, shipped, form):
    model, vocab = shipped
    web = shared_page.evaluate("(o) => window.tinyformerPoem(o)", {"form": form, "greedy": True})
    poem = write(model, vocab, form=form, greedy=True)
    assert web["text"] == poem.text and meter(poem.text).compliant
    assert all(0 < s["kept"] <= 1 + 1e-9 for s in web["steps"] if s["rule"])  # 每一步都说出了规则
    check_steps(web, model, vocab, "", None, None, form)


@pytest.mark.parametrize(
    "options",
    [
        {"form": "七绝", "rhyme": "尤", "acrostic": ACROSTIC, "temperature": 0.8, "top_p": 0.9},
        {"form": "五律", "prefix": "白日依山尽，", "temperature": 1.0, "top_k": 20},
    ],
    ids=["acrostic-rhyme", "prefix"],
)
def test_constrained_sampling_follows_the_masked_distribution(shared_page, shipped, options):
    model, vocab = shipped
    web = shared_page.evaluate("(o) => window.tinyformerPoem(o)", {**options, "seed": 4})
    result = meter(web["text"])
    assert result.form == options["form"] and result.compliant, web["text"]
    if "rhyme" in options:
        assert result.groups == ("下平声十一尤",)
        assert [c[0] for c in re.split("[，。]", web["text"]) if c] == list(ACROSTIC)
    settings = (options["temperature"], options.get("top_k"), options.get("top_p"))
    prefix, acrostic = options.get("prefix", ""), options.get("acrostic")
    check_steps(
        web, model, vocab, prefix, acrostic, settings, options["form"], options.get("rhyme")
    )


@pytest.mark.parametrize(
    "options, message",
    [
        ({"form": "五绝", "prefix": "白日依山尽，黄海"},
         "开头不合五绝的格律：第 2 句第 2 个字“海”是仄声，这里要平声"),
        ({"form": "五绝", "prefix": "白日依山尽，黄河入海流。欲穷千里目，更上一层流"},
         "开头不合五绝的格律：第 4 句第 5 个字“流”是平声，这里要平声、押下平声十一尤，"
         "且不重韵（“流”已经作过韵脚）"),
        ({"form": "七律", "acrostic": ACROSTIC}, "七律有 8 句，藏头应为 8 个字，得到 4 个"),
        ({"form": "五绝", "rhyme": "乎"}, "韵部应为一个平声韵部的名字，如 尤 或 下平声十一尤，得到“乎”"),
    ],
    ids=["prefix-tone", "repeated-rhyme", "acrostic-length", "rhyme-name"],
)  # fmt: skip
def test_the_page_names_what_breaks_the_form_as_the_cli_does(shared_page, options, message):
    got = shared_page.evaluate(
        "(o) => window.tinyformerPoem(o).then(() => 'no error', (e) => e.message)", options
    )
    assert got == message


def test_unknown_characters_are_named(shared_page):
    message = shared_page.evaluate(
        "() => window.tinyformerPoem({ prefix: 'Hello' }).then(() => 'no error', (e) => e.message)"
    )
    assert message.startswith("这些字不在模型的字表里：Hel")


@pytest.mark.parametrize(
    "width, scheme", [(1366, "light"), (1366, "dark"), (390, "light"), (390, "dark")]
)
def test_the_keyboard_writes_pythons_poems_and_they_fit(open_page, site, shipped, width, scheme):
    model, vocab = shipped
    visit = open_page(f"{PAGE}.html", viewport={"width": width, "height": 900}, color_scheme=scheme)
    page = visit.page
    page.wait_for_load_state("networkidle")
    page.focus(f"{WIDGET} .pw-mode-prefix")
    order = []
    for _ in range(9):
        order.append(page.evaluate("() => document.activeElement.className"))
        page.keyboard.press("Tab")
    assert order == [
        "pw-mode-prefix",
        "pw-input",
        "pw-form",  # 韵部的下拉框在选了体裁之前不可用，Tab 跳过它
        "pw-temperature",
        "pw-top_k",
        "pw-top_p",
        "pw-seed",
        "pw-greedy",
        "pw-run",
    ]
    page.focus(f"{WIDGET} .pw-input")
    page.keyboard.type("x")  # 打字不加载模型
    page.fill(f"{WIDGET} .pw-input", "白日依山尽，")
    page.focus(f"{WIDGET} .pw-greedy")
    page.keyboard.press("Space")  # 勾上“贪心”
    page.wait_for_timeout(500)
    assert_nothing_heavy(visit, site)
    page.focus(f"{WIDGET} .pw-run")
    page.keyboard.press("Enter")
    wait_done(page, WIDGET, f"{WIDGET} .pw-status")
    expected = write(model, vocab, "白日依山尽，", greedy=True)
    assert page.inner_text(f"{WIDGET} .pw-poem") == expected.text
    assert page.locator(f"{WIDGET} .pw-poem").get_attribute("aria-live") == "polite"
    assert page.locator(f"{WIDGET} .pw-step").count() == len(expected.choices)
    # 写的时候文本框可以聚焦
    assert page.locator(f"{WIDGET} .pw-input").is_enabled()
    page.wait_for_load_state("networkidle")
    needed = {"poet.safetensors", "poet.json", "live_translator.js", "transformer.js"}
    loaded = {f.name for f in visit.loaded(site)}
    assert needed <= loaded and "meter.json" not in loaded  # 没选体裁：不下载平水韵
    widths = page.evaluate(
        f"""() => {{ const w = document.querySelector('{WIDGET}');
          const inside = [...w.querySelectorAll('*')].map((e) => e.getBoundingClientRect().right);
          return {{ page: document.documentElement.scrollWidth, view: window.innerWidth,
                    box: w.getBoundingClientRect().right, inside: Math.max(...inside),
                    scroll: w.scrollWidth, client: w.clientWidth }}; }}"""
    )
    assert widths["page"] <= widths["view"], widths
    assert widths["inside"] <= widths["box"] + 1, widths
    assert widths["scroll"] <= widths["client"], widths
    screenshot(page.locator(WIDGET), f"poem_writer_{width}_{scheme}.png")
    # 藏头：选上，文本框换成四个字，写出来每句的头就是它们
    page.check(f"{WIDGET} .pw-mode-acrostic")
    assert page.input_value(f"{WIDGET} .pw-input") == ACROSTIC
    page.click(f"{WIDGET} .pw-run")
    wait_done(page, WIDGET, f"{WIDGET} .pw-status")
    acrostic = write(model, vocab, acrostic=ACROSTIC, greedy=True).text
    assert page.inner_text(f"{WIDGET} .pw-poem") == acrostic
    # 格律：选七绝、押尤；藏头照旧，写出的诗与 Python 的相同，每张卡片说出格律要什么
    page.select_option(f"{WIDGET} .pw-form", "七绝")
    page.wait_for_function(f"document.querySelector('{WIDGET} .pw-rhyme').options.length > 1")
    page.select_option(f"{WIDGET} .pw-rhyme", "下平声十一尤")
    page.click(f"{WIDGET} .pw-run")
    wait_done(page, WIDGET, f"{WIDGET} .pw-status")
    ruled = write(model, vocab, acrostic=ACROSTIC, form="七绝", rhyme="尤", greedy=True).text
    assert page.inner_text(f"{WIDGET} .pw-poem") == ruled and meter(ruled).compliant
    assert "meter.json" in {f.name for f in visit.loaded(site)}
    notes = page.locator(f"{WIDGET} .pw-rule").all_inner_texts()
    assert any("押下平声十一尤" in n for n in notes) and all(n.startswith("格律：") for n in notes)
    screenshot(page.locator(WIDGET), f"poem_writer_meter_{width}_{scheme}.png")
    visit.assert_clean()
