"""在真正的浏览器里读这本书：无头 Chromium 打开本机 http.server 上的 _build/html（conftest.py 的 ``open_page``）。

每一页在桌面、手机、深色三种看法下：没有失败的请求、控制台错误和外部请求（网页离线可用），公式已在构建时排好
（_ext/static_math.py），保存的控件渲染出来，图片都加载了，不超重、不横向溢出；搜索能用短语找到讲它的章；
第 8 章的翻译器与命令行译得一样；每个探索器的控件在网页上（http 与 file://）都能改图。截图存到 _build/screenshots/。
"""

import json
import re
from fnmatch import fnmatch
from urllib.parse import quote

import pytest
import yaml

from _ext.light_pages import TRANSLATOR_DIRS
from tests.book import test_search_index
from tests.book.conftest import MOVE_JS, screenshot, scroll_to
from tests.kit import ROOT

pytestmark = pytest.mark.browser

TOC = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
PAGES = [TOC["root"]] + re.findall(
    r"file:\s*([^\s#]+)", (ROOT / "_toc.yml").read_text(encoding="utf-8")
)


def has_math(name):
    path = ROOT / f"{name}.ipynb"
    if not path.exists():  # 纯文本的 MyST Markdown 页面（例如术语表）
        return "$" in (ROOT / f"{name}.md").read_text(encoding="utf-8")
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return any(c["cell_type"] == "markdown" and "$" in "".join(c["source"]) for c in cells)


def wait_for_widgets(page):
    """每个保存的控件视图都渲染成了控件 DOM（控件快进入视野时才加载控件管理器：先滚到它们那里）。"""
    views = page.locator('script[type="application/vnd.jupyter.widget-view+json"]')
    for index in range(views.count()):
        scroll_to(views.nth(index).locator("xpath=.."))
    page.wait_for_function(
        """() => {
            const views = document.querySelectorAll(
                'script[type="application/vnd.jupyter.widget-view+json"]');
            return [...views].every(v => {
                const area = v.previousElementSibling;
                return area && area.querySelector('.jupyter-widgets, [class*="widget-"]');
            });
        }"""
    )


PAGE_BUDGET = 4_500_000  # 一页连同它加载的全部文件，字节（与 tests/book/test_site_size.py 的静态估计同一上限）
VIEWS = {
    "desktop": {"viewport": {"width": 1366, "height": 900}},
    "phone": {"viewport": {"width": 390, "height": 844}},
    "dark": {"viewport": {"width": 1366, "height": 900}, "color_scheme": "dark"},
}

# 查询（术语或不带空格的短语）-> 结果里必须有的页面；浏览器里按术语词典与索引分词（_ext/search_zh.js）
PHRASES = {
    **{
        term: [f"chapters/{doc}" for doc in docs]
        for term, docs in test_search_index.EXPECTED.items()
    },
    "位置编码的公式": ["chapters/ch03_*"],
    "多头注意力怎么算": ["chapters/ch05_*"],
    "层归一化和批归一化的区别": ["chapters/ch06_*"],
    "缩放点积注意力为什么要除以根号": ["chapters/ch05_*"],
    "束搜索和贪心解码": ["chapters/ch08_*"],
    "因果掩码的形状": ["chapters/ch05_*", "chapters/ch07_*"],
    "残差连接的梯度": ["chapters/ch06_*"],
}

# 术语 -> 必须排在术语表前面的章节
RANKED = {
    "位置编码": "chapters/ch03_positional_encoding",
    "多头注意力": "chapters/ch05_attention",
    "层归一化": "chapters/ch06_norm_residual_ffn",
    "束搜索": "chapters/ch08_translation",
}


def settle(page, name):
    """等公式的字体、控件画好、图片加载完（公式在构建时排好：网页不加载 MathJax）。"""
    assert page.evaluate("() => window.MathJax === undefined"), "网页不该再加载 MathJax"
    wait_for_widgets(page)
    page.evaluate(
        """() => Promise.all([...document.images].map(img => {
            img.loading = 'eager';
            return img.decode().catch(() => {});
        }))"""
    )
    page.evaluate("() => document.fonts.ready")
    page.wait_for_load_state("networkidle")


def shown(page, selector):
    """元素在屏幕里看得见：可见、有宽度、左右都在窗口之内。"""
    return page.evaluate(
        """(selector) => {
            const e = document.querySelector(selector);
            if (!e) return false;
            const r = e.getBoundingClientRect(), s = getComputedStyle(e);
            return s.visibility !== 'hidden' && s.display !== 'none' && r.width > 0
                && r.right > 1 && r.left < window.innerWidth - 1;
        }""",
        selector,
    )


def visible_button(page, selector):
    buttons = [b for b in page.locator(selector).all() if b.is_visible()]
    assert len(buttons) == 1, f"{selector}: {len(buttons)} 个可见的按钮"
    return buttons[0]


# 侧栏 -> 它的开关按钮：章节目录（☰）与本页目录
PANELS = {".bd-sidebar-primary": ".primary-toggle", ".bd-sidebar-secondary": ".secondary-toggle"}


@pytest.mark.parametrize("view", ["phone", "desktop"])
@pytest.mark.parametrize("panel", PANELS)
def test_panels_open_close_and_their_links_work(open_page, panel, view):
    """窄屏上两个侧栏都藏着，由按钮打开、Esc 关上；宽屏上一开始就在（章节目录的按钮关上它，本页目录没有按钮）。
    从章节目录点到另一章，从本页目录点到一节。"""
    page = open_page("chapters/ch03_positional_encoding.html", **VIEWS[view]).page

    def press(key=None):  # 按 key（没给时点开关按钮），等动画完，返回侧栏看不看得见
        if key:
            page.keyboard.press(key)
        else:
            visible_button(page, PANELS[panel]).click()
        page.wait_for_timeout(400)
        return shown(page, panel)

    if view == "phone":
        assert not shown(page, panel)
        assert press() and not press("Escape") and press()
    elif panel == ".bd-sidebar-primary":
        assert shown(page, panel) and not press() and press()
    else:
        assert shown(page, panel)
        assert not [b for b in page.locator(PANELS[panel]).all() if b.is_visible()]
    if panel == ".bd-sidebar-primary":
        page.locator(f"{panel} a[href$='ch05_attention.html']").first.click()
        page.wait_for_url("**/chapters/ch05_attention.html")
        return
    link = page.locator(f"{panel} a.nav-link").nth(1)
    target = link.get_attribute("href")
    assert target.startswith("#")
    link.click()
    page.wait_for_function("(hash) => location.hash === hash", arg=target)
    # 滚到了那一节（主题用平滑滚动，等它停下）
    page.wait_for_function(
        """(id) => {
            const top = document.getElementById(id).getBoundingClientRect().top;
            return top >= 0 && top < 300;
        }""",
        arg=target[1:],
        timeout=5000,
    )


def search_results(page):
    page.wait_for_function(
        "() => document.querySelector('#search-results .search-summary')?.textContent"
    )
    page.wait_for_function(  # 摘要是异步取来的：等每条结果都有了摘要
        """() => [...document.querySelectorAll('#search-results ul.search li')]
            .every(li => li.querySelector('p.context'))"""
    )
    return page.eval_on_selector_all(
        "#search-results ul.search li",
        """els => els.map(e => [
            new URL(e.querySelector('a').href).pathname.replace(/^\\//, '').replace(/\\.html$/, ''),
            e.querySelector('p.context').textContent])""",
    )


@pytest.mark.parametrize("phrase", PHRASES)
def test_search_finds_the_chapters_with_plain_excerpts(open_page, phrase):
    """术语和不带空格的一句话都能搜：浏览器按同一部词典切分查询（_ext/search_zh.js）。"""
    v = open_page(f"search.html?q={quote(phrase)}")
    results = search_results(v.page)
    found = [name for name, _ in results]
    missing = [p for p in PHRASES[phrase] if not any(fnmatch(f, p) for f in found)]
    assert missing == [], f"{phrase}: 切成 {v.page.evaluate('splitQuery', phrase)}，找到 {found}"
    if phrase in RANKED:  # 讲它的那一章排第一，在术语表前面
        assert found[0] == RANKED[phrase], found
        assert found.index(RANKED[phrase]) < found.index("chapters/appendix_glossary")
    for name, excerpt in results:
        # 摘要是正文：没有 TeX 源码，没有页面按钮
        assert not re.search(r"\\[A-Za-z(\[]|\$", excerpt), (name, excerpt)
        assert ".ipynb" not in excerpt and ".pdf" not in excerpt, (name, excerpt)
    v.assert_clean()


@pytest.mark.parametrize("view", list(VIEWS))
@pytest.mark.parametrize("name", PAGES)
def test_page_reads_well(open_page, site, name, view):
    """每页三种看法：公式排好、控件画好、图片都在、不超重、窄屏不横向溢出、深色模式里图与控件有意装框。"""
    v = open_page(f"{name}.html", **VIEWS[view])
    page = v.page
    settle(page, name)
    # 每个公式都换成了排好的 mjx-container，正文（代码以外）里不剩原始的 \( 或 $$
    assert page.locator(".math:not(:has(mjx-container))").count() == 0
    if has_math(name):
        assert page.locator("mjx-container").count() > 0
        assert page.locator("mjx-merror").count() == 0  # 没有 TeX 错误
        text = page.evaluate(
            """() => {
                const main = document.querySelector('main').cloneNode(true);
                main.querySelectorAll('pre, code, script, style, mjx-container')
                    .forEach(e => e.remove());
                return main.textContent;
            }"""
        )
        assert [raw for raw in ("\\(", "\\[", "$$") if raw in text] == []
    assert "Loading widget" not in page.inner_text("main")
    broken = page.eval_on_selector_all(
        "img", "imgs => imgs.filter(i => !(i.naturalWidth > 0)).map(i => i.src)"
    )
    assert broken == []
    # 第 8 章网页翻译器的模型和脚本另有上限（tests/book/test_live_translator.py）
    files = [f for f in v.loaded(site) if not set(f.relative_to(site).parts) & set(TRANSLATOR_DIRS)]
    weight = sum(f.stat().st_size for f in files)
    assert weight <= PAGE_BUDGET, f"{name}: {weight / 1e6:.2f} MB"
    width = page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= VIEWS[view]["viewport"]["width"], f"{name} 在 {view} 上宽 {width}px"

    # 行间公式：宽屏上不超出栏宽（长公式用 aligned 折行）；手机上比栏宽的公式在自己的框里横向滚动
    formulas = page.eval_on_selector_all(
        "article mjx-container[display='true']",
        """els => els.map(m => ({
            text: m.textContent.slice(0, 40),
            wider: m.scrollWidth > m.clientWidth + 1,
            scrolls: ['auto', 'scroll'].includes(getComputedStyle(m).overflowX),
        }))""",
    )
    # 公式编号与公式各占各的地方（Sphinx 默认让编号浮在公式上面，手机上编号压住公式）
    covered = page.eval_on_selector_all(
        "article div.math > span.eqno",
        """els => els.filter(e => {
            const m = e.parentElement.querySelector('mjx-container');
            if (!m) return false;
            const a = e.getBoundingClientRect(), b = m.getBoundingClientRect();
            return a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;
        }).map(e => e.textContent.trim())""",
    )
    assert covered == [], f"{name} 在 {view} 上公式编号压在公式上：{covered}"
    if view == "phone":
        assert [f["text"] for f in formulas if f["wider"] and not f["scrolls"]] == []
    else:
        assert [f["text"] for f in formulas if f["wider"]] == [], f"{name}: 公式超出栏宽"
        # 代码在 1366 px 的代码框里不用横向滚动（tools/format_notebooks.py 按这个宽度排版）
        wide_code = page.eval_on_selector_all(
            ".cell_input pre",
            "els => els.filter(e => e.scrollWidth > e.clientWidth + 1)"
            ".map(e => e.textContent.slice(0, 60))",
        )
        assert wide_code == [], f"{name}: 代码超出代码框"

    if view == "dark":
        assert page.get_attribute("html", "data-theme") == "dark"
        # 输出区不是浅灰色的面板；图片放在白色卡片里（matplotlib 的图是白底）
        backgrounds = page.eval_on_selector_all(
            ".cell_output, .cell_output .widget-subarea, .cell_output .text_html",
            "els => els.map(e => getComputedStyle(e).backgroundColor)",
        )
        assert all(bg in ("rgba(0, 0, 0, 0)", "transparent") for bg in backgrounds), backgrounds
        framed = page.eval_on_selector_all(
            ".cell_output img",
            """els => els.map(e => {
                const s = getComputedStyle(e);
                return s.backgroundColor === 'rgb(255, 255, 255)' && parseFloat(s.paddingTop) > 0;
            })""",
        )
        assert all(framed), f"{name}: 深色模式里有图片没装进白色卡片"

    assert screenshot(page, f"{name.split('/')[-1]}-{view}.png").stat().st_size > 10_000
    v.assert_clean()


# ---- 第 8 章的翻译器：译文与命令行的相同（期望值用随包的检查点的 Python API 算），不认识的词报同样的错，
# 画出热力图。另见 tests/book/test_live_translator.py（分词、大小、只在本章加载）。

CH08 = "chapters/ch08_translation"
LIVE = ".live-translator"


def live_translate(page, sentence, click=False):
    """在页面的翻译器里输入一句、回车（``click``：点按钮），等它算完；返回 (输出行, 译文或 None, 热力图的格子数)。"""
    page.locator(f"{LIVE} input").fill(sentence)
    if click:
        page.locator(f"{LIVE} button").click()
    else:
        page.locator(f"{LIVE} input").press("Enter")
    page.wait_for_function(
        """([selector, sentence]) => {
            const root = document.querySelector(selector);
            return root.dataset.sentence === sentence && root.dataset.state !== "busy";
        }""",
        arg=[LIVE, sentence],
    )
    root = page.locator(LIVE)
    translation = (
        root.get_attribute("data-translation")
        if root.get_attribute("data-state") == "done"
        else None
    )
    return (
        page.inner_text(f"{LIVE} .lt-output"),
        translation,
        page.locator(f"{LIVE} svg rect[fill^='rgb']").count(),
    )


def test_live_translator_translates_like_the_cli(open_page, translator):
    from tinyformer.translation.corpus import generate_corpus

    v = open_page(f"{CH08}.html")
    page = v.page
    scroll_to(page.locator(LIVE))  # 翻译器滚进视野时才加载模型
    page.wait_for_function(
        f"() => !document.querySelector('{LIVE} button').disabled "
        f"|| document.querySelector('{LIVE} .lt-status').textContent.includes('没能加载')",
        timeout=60_000,
    )
    assert "没能加载" not in page.inner_text(f"{LIVE} .lt-status")
    test = generate_corpus(seed=0).test
    sentences = [p.zh for p in test[:: len(test) // 12][:12]]  # 均匀取 12 个测试句
    for sentence in sentences:
        expected = translator.translate(sentence)
        src_tokens, tgt_tokens, _ = translator.cross_attention(sentence)
        line, translation, cells = live_translate(page, sentence)
        assert translation == expected, sentence
        assert line == f"{sentence}  →  {expected}"
        assert cells == len(src_tokens) * len(tgt_tokens)  # 热力图：T × S 个格子

    # 不认识的词：与命令行逐字相同的中文消息（命令行在前面加“错误：”），不画图
    from tinyformer.translation import cli
    from tinyformer.translation.corpus import OUT_OF_GRAMMAR

    sentence = "我明天在广州看小说。"
    with pytest.raises(ValueError) as info:
        translator.translate(sentence)
    line, translation, cells = live_translate(page, sentence)
    assert (line, translation, cells) == (cli.cannot_translate(sentence, info.value), None, 0)

    # issue 26：句型不在训练语料里时照样给出译文，下面一行说明它不可信
    sentence = "他昨天没在商店买衣服吗？"
    line, translation, cells = live_translate(page, sentence)
    assert translation == translator.translate(sentence)
    assert line == f"{sentence}  →  {translation}\n{OUT_OF_GRAMMAR}"
    assert page.locator(LIVE).get_attribute("data-in-grammar") == "false"

    # issue 26：超过模型位置数的输入给出中文消息，页面上不留上一句的译文和热力图
    assert live_translate(page, "我明天去北京。")[1] == "I will go to Beijing tomorrow."
    sentence = "我明天去北京。" * 20  # 100 个词 > max_len
    with pytest.raises(ValueError) as info:
        translator.translate(sentence)
    line, translation, cells = live_translate(page, sentence)
    assert (line, translation, cells) == (cli.cannot_translate(sentence, info.value), None, 0)
    assert "I will go" not in page.inner_text(LIVE)

    sentence = "她明天在家写作业吗？"
    assert live_translate(page, sentence, click=True)[1] == translator.translate(sentence)
    scroll_to(page.locator(LIVE))
    page.evaluate("() => document.fonts.ready")
    assert screenshot(page.locator(LIVE), "ch08_live_translator.png").stat().st_size > 10_000
    page.wait_for_load_state("networkidle")
    v.assert_clean()


def test_live_translator_from_file_url_says_it_needs_http(open_page, site):
    """file:// 下浏览器不许 fetch 模型：页面说明要用 http（第 8 章的导出一节写明）。"""
    page = open_page((site / f"{CH08}.html").as_uri()).page
    scroll_to(page.locator(LIVE))
    page.wait_for_function(
        f"() => document.querySelector('{LIVE} .lt-status').textContent.includes('没能加载')",
        timeout=60_000,
    )
    assert "http" in page.inner_text(f"{LIVE} .lt-status")
    assert page.locator(f"{LIVE} button").is_disabled()
    assert page.locator(
        f"{LIVE} input"
    ).is_enabled()  # 文本框不论模型加载与否都能聚焦（键盘、读屏）


# ---- 各章的探索器（tinyformer.book.explorers，_ext/vega_charts.py）：不需要内核，浏览器里拨动每个控件图就变
#
# 同一页面既经 http 打开，也直接以 file:// 打开（读者下载网站后双击 index.html）。每个控件换一个取值，
# 核对图的 SVG 变了；变了又没报错，才算这个控件在网页上能用。有的控件在某些状态下不改图（第 4 章：成对编码时
# 点积与起点 p 无关——这正是那张图要讲的；第 7 章：解码器自注意力与源句的填充掩码无关），所以一轮下来
# 没变的控件，在其他控件换过取值之后再试。

EXPLORER_PAGES = [
    f"chapters/{p.stem}"
    for p in sorted((ROOT / "chapters").glob("ch*_*.ipynb"))
    if "01" <= p.stem[2:4] <= "08" or p.stem[2:4] >= "10"
]

# 控件：每个 .vega-bind 里的 input/select；返回 (描述, 控件种类) 列表
CONTROLS_JS = """(el) => [...el.querySelectorAll('.vega-bind')].map((bind, i) => {
    const input = bind.querySelector('select, input');
    return [bind.querySelector('.vega-bind-name')?.textContent.trim() || String(i),
            input.tagName === 'SELECT' ? 'select' : input.type];
})"""


def chart_svg(element):
    return element.evaluate("(el) => el.querySelector('svg')?.outerHTML || ''")


def wait_for_change(page, element, before, timeout=5000):
    """等图重画（Vega 异步更新 SVG）；超时就说明没变。"""
    try:
        page.wait_for_function(
            "([el, before]) => (el.querySelector('svg')?.outerHTML || '') !== before",
            arg=[element, before],
            timeout=timeout,
        )
        return True
    except Exception:  # playwright 的 TimeoutError
        return False


def control(element, i):
    return element.query_selector_all(".vega-bind")[i].query_selector("select, input")


def move(page, element, i):
    """拨动第 i 个控件（conftest.py 的 MOVE_JS）；图的 SVG 变了返回 True。"""
    before = chart_svg(element)
    control(element, i).evaluate(MOVE_JS)
    return wait_for_change(page, element, before)


@pytest.mark.parametrize("how", ["http", "file"])
@pytest.mark.parametrize("name", EXPLORER_PAGES)
def test_explorer_controls_redraw_the_chart(open_page, site, name, how):
    v = open_page(f"{name}.html" if how == "http" else (site / f"{name}.html").as_uri())
    page = v.page
    charts = page.locator("div.tinyformer-vega")
    assert charts.count() >= 1, "这一章没有网页上的探索器"
    for index in range(charts.count()):  # 图快进入视野时才加载 vega、画图（_ext/vega_charts.py）
        scroll_to(charts.nth(index))
    page.wait_for_function(
        "() => [...document.querySelectorAll('div.tinyformer-vega')]"
        ".every((el) => el.dataset.rendered === 'true')"
    )
    for index in range(charts.count()):
        element = charts.nth(index).element_handle()
        controls = element.evaluate(CONTROLS_JS)
        assert controls, f"第 {index} 张图没有控件"
        scroll_to(charts.nth(index))
        stem = f"explorer-{name.split('/')[-1][:4]}-{how}"
        if how == "http":
            screenshot(charts.nth(index), f"{stem}-before.png")
        unchanged = [i for i in range(len(controls)) if not move(page, element, i)]
        for i in list(unchanged):
            # 换过别的控件之后再试：依次（两轮）动一下其他控件，每动一次就再拨它一次
            others = [j for j in range(len(controls)) if j != i] * 2
            for j in [None, *others]:
                if j is not None:
                    move(page, element, j)
                if move(page, element, i):
                    unchanged.remove(i)
                    break
        assert [controls[i] for i in unchanged] == [], "这些控件拨动后图没有变"
        if how == "http":
            screenshot(charts.nth(index), f"{stem}-after.png")
    if how == "file":
        # file:// 是不透明的源，Chromium 不许 CSS 从 file:// 加载字体（跨源规则）：图标字体在 file://
        # 下总是失败，与探索器无关；http 下同一个测试不放过任何失败的请求和控制台错误
        # 第 8 章的网页翻译器在 file:// 下取不到它的模型文件（页面上写明要用 http，另有测试）
        noise = ("/webfonts/", "/translator_model/", "Failed to load resource: net::ERR_FAILED")
        v.failed = [f for f in v.failed if not any(n in f[0] for n in noise)]
        v.errors = [e for e in v.errors if not any(n in e for n in noise)]
    v.assert_clean()


def first_chart(page):
    """第一张交互图（快进入视野时才加载 vega：先滚过去），等它画好。"""
    scroll_to(page.locator("div.tinyformer-vega").first)
    page.wait_for_function("() => document.querySelector('div.tinyformer-vega')?.vegaView")
    return page.locator("div.tinyformer-vega").first.element_handle()


def test_chapter_10_explorer_ends_at_the_package_encoding(open_page):
    """BPE 的探索器：每句话拖到最后一步，上方写的词元数就是包里 ``shipped_bpe().encode`` 的长度。"""
    from tinyformer.book.explorers.bpe_merges import SENTENCES
    from tinyformer.poetry.tokenization import shipped_bpe

    bpe = shipped_bpe()
    page = open_page("chapters/ch10_bpe_chinese.html").page
    element = first_chart(page)
    for s, sentence in enumerate(SENTENCES):
        element.evaluate(
            "(el, s) => { el.vegaView.signal('s', s); el.vegaView.signal('k', 1000);"
            " return el.vegaView.runAsync().then(() => true); }",
            s,
        )
        page.wait_for_function(
            "([el, n]) => el.querySelector('svg').textContent.includes(`剩 ${n} 个词元`)"
            " || el.querySelector('svg').textContent.includes(`字节：${n} 个`)",
            arg=[element, len(bpe.encode(sentence))],
            timeout=5000,
        )


def test_chapter_4_explorer_shows_the_dot_product_ignores_the_start(open_page):
    """第 4 章的图要讲的性质在网页上成立：成对编码时拖动起点 p 曲线不变，只用 sin 时跟着变。"""
    page = open_page("chapters/ch04_positional_proofs.html").page
    element = first_chart(page)
    names = [name for name, _ in element.evaluate(CONTROLS_JS)]
    p, encoding = names.index("起点 p"), names.index("编码方式")
    assert element.evaluate("(el) => el.vegaView.signal('encoding')").startswith("sin/cos")
    before = chart_svg(element)
    control(element, p).evaluate(MOVE_JS)
    assert element.evaluate("(el) => el.vegaView.signal('p')") != 0  # 滑块确实动了
    assert not wait_for_change(page, element, before, timeout=1500)
    assert move(page, element, encoding)  # 换成只用 sin
    assert move(page, element, p)
