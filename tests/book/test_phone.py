"""手机上读得了、键盘和读屏软件用得了（issue 38）：无头 Chromium 以 390 px 宽（栏宽 358 px）打开各章。

- axe-core（npm，版本固定在 ``tests/browser_tools/package-lock.json``，需要时由 ``npm ci`` 装好）在浅色和深色
  模式下都报 0 个 serious / critical；
- 每张探索器的图（``_ext/vega_charts.py``）和第 8 章翻译器的热力图都在栏里放得下，页面不横向滚动；
- 键盘：从页首按 Tab 到第一个探索器的控件不超过 ``TABS_TO_EXPLORER`` 下，一路不停在公式上；390 px 上收起的
  侧栏（抽屉）里的链接不拿焦点（每一个停靠点都看得见）；拿到焦点的元素有看得见的焦点框。

- 第一屏只等 HTML 和一个样式表（Lighthouse 手机分数的前提，不依赖机器快慢的几项）：每章阻塞渲染的只有
  ``_ext/first_screen.py`` 连成的样式表和 1 KB 的 documentation_options.js，不加载 MathJax（公式在构建时排好，
  ``_ext/static_math.py``），图片懒加载，远处的块先不排版（content-visibility），HTML 与样式表压缩后
  不超过 ``FIRST_SCREEN_BUDGET``；两章代表页由 Lighthouse（``tests/browser_tools`` 里固定版本的 npm 包）
  查字体、最大的元素、强制排版几项审计，并要 Accessibility 100、SEO ≥ 95。

Lighthouse 的 Performance 分数依赖 CPU（它按观测到的时间线模拟 4 倍减速，别的进程抢 CPU 时 TBT 虚高），
由 ``benchmarks/lighthouse_mobile.py`` 量，不进测试。
"""

import functools
import gzip
import os
import shutil
import subprocess
from urllib.parse import urlparse

import pytest

from tests.book.conftest import screenshot, scroll_to, wait_done
from tests.book.test_browser import EXPLORER_PAGES, PAGES
from tests.kit import ROOT, SITE, skip_or_fail

pytestmark = pytest.mark.browser

TOOLS = ROOT / "tests" / "browser_tools"
AXE = TOOLS / "node_modules" / "axe-core" / "axe.min.js"
PHONE = {"width": 390, "height": 844}
COLUMN = 358  # 390 px 的屏幕上正文栏的宽度
CHAPTERS = [p for p in PAGES if p.startswith("chapters/ch")]
TABS_TO_EXPLORER = 180  # 1280 px 上第 5 章：修好之前 316 下（其中 160 个是公式）


@functools.cache
def axe_source() -> str:
    """axe-core 的脚本；没装时按锁文件 npm ci（CI 里必须装得上）。"""
    if not AXE.exists():
        if shutil.which("npm") is None:
            skip_or_fail("没有 npm：装不了 axe-core")
        command = ["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund"]
        subprocess.run(command, cwd=TOOLS, check=True, env={**os.environ, "CI": "true"})
    return AXE.read_text(encoding="utf-8")


@pytest.fixture
def phone(open_page):
    """``phone(name, color_scheme)``：390 px 宽打开一章，等页面量完 Tab 键的停靠点。"""

    def open_(name, color_scheme="light"):
        v = open_page(f"{name}.html", viewport=PHONE, color_scheme=color_scheme)
        wait_for_tab_stops(v.page)
        return v

    return open_


def wait_for_tab_stops(page):
    """公式的字体到了，比框宽的公式、表格、代码块与输出都拿到了停靠点：页面打开时只量排好了的，读者按第一个键
    时量完其余的，做完时标 data-tab-stops（_ext/page_scripts.py 的 SCROLLABLE）。"""
    page.keyboard.press("Shift")
    page.wait_for_function("() => document.documentElement.dataset.tabStops === 'ready'")
    page.evaluate(
        "async () => { await document.fonts.ready; await new Promise(r => setTimeout(r, 50)); }"
    )


VIOLATIONS = """async (impacts) => {
  const result = await axe.run(document, {resultTypes: ["violations"]});
  return result.violations.filter((v) => !impacts || impacts.includes(v.impact))
    .map((v) => `${v.id}: ${v.nodes.length} × ${v.nodes[0].target.join(" ")}`);
}"""


@pytest.mark.parametrize("mode", ["light", "dark"])
@pytest.mark.parametrize("name", [*CHAPTERS, "chapters/appendix_references"])
def test_axe_finds_nothing_serious(phone, name, mode):
    """参考文献页的每条是列表项（_ext/bib_labels.py）：那里 axe 任何严重程度的都不报。"""
    v = phone(name, mode)
    v.page.add_script_tag(content=axe_source())
    impacts = None if name.endswith("references") else ["serious", "critical"]
    assert v.page.evaluate(VIOLATIONS, impacts) == []


FITS = """(el) => {
  const column = el.getBoundingClientRect();  // 图所在的栏
  return [...el.querySelectorAll("svg")].map((svg) => {
    const box = svg.getBoundingClientRect();
    return {left: box.left - column.left, right: column.right - box.right, width: box.width};
  });
}"""


# 第一屏之前要下载的：HTML 与阻塞渲染的样式表，gzip 之后（像开着压缩的托管）。最重的第 5 章 174 KB
# （HTML 97 KB，其中排好的公式约一半；样式表 77 KB）
FIRST_SCREEN_BUDGET = 180_000  # 字节
# 1 KB，<head> 里的内联脚本立刻要用（_ext/page_scripts.py）
IMMEDIATE = {"/_static/documentation_options.js"}

FIRST_SCREEN = """() => {
  const entries = performance.getEntriesByType("resource");
  // 各节里的块（不算小节、标题）：离视野远的先不排版（_theme/site.css）
  const sections = [...document.querySelectorAll(
    ".bd-article section section > :not(section, h2, h3, h4, h5, h6, span)")];
  return {
    blocking: entries.filter((e) => e.renderBlockingStatus === "blocking")
      .map((e) => new URL(e.name).pathname),
    requests: entries.map((e) => new URL(e.name).pathname),
    eager: [...document.images].filter((img) => img.loading !== "lazy").map((img) => img.src),
    sections: sections.length,
    deferred: sections.filter((s) => getComputedStyle(s).contentVisibility === "auto").length,
  };
}"""


@pytest.mark.parametrize("name", CHAPTERS)
def test_first_screen_and_explorers_fit_a_phone_column(phone, site, name):
    v = phone(name)
    page = v.page
    seen = page.evaluate(FIRST_SCREEN)
    stylesheets = [path for path in seen["blocking"] if path not in IMMEDIATE]
    assert len(stylesheets) == 1 and "/_static/bundle-" in stylesheets[0], seen["blocking"]
    assert [path for path in seen["requests"] if "/mathjax/" in path and path.endswith(".js")] == []
    assert seen["eager"] == [], "这些图片不是懒加载的"
    assert seen["deferred"] == seen["sections"]
    weight = sum(
        len(gzip.compress((site / path.lstrip("/")).read_bytes()))
        for path in [f"/{name}.html", *stylesheets]
    )
    assert weight <= FIRST_SCREEN_BUDGET, f"{name}: 第一屏之前要下载 {weight / 1000:.0f} KB"

    charts = page.locator("div.tinyformer-vega")
    assert charts.count() >= 1 or name not in [*EXPLORER_PAGES, "chapters/ch09_gpt_poetry"]
    for index in range(charts.count()):
        scroll_to(charts.nth(index))  # 图快进入视野时才画
        page.wait_for_function(
            "(i) => document.querySelectorAll('div.tinyformer-vega')[i].dataset.rendered",
            arg=index,
        )
        assert charts.nth(index).evaluate("(el) => el.clientWidth") <= COLUMN + 1
        for box in charts.nth(index).evaluate(FITS):
            assert box["left"] >= -1 and box["right"] >= -1, (index, box)
        # 读屏软件读到的是中文说明，不是默认的“Vega visualization”
        label = charts.nth(index).locator("[aria-label]").first.get_attribute("aria-label")
        assert label and label.startswith("交互图"), label
    assert page.evaluate("() => document.documentElement.scrollWidth") <= PHONE["width"]
    if name.endswith("ch05_attention"):
        screenshot(charts.first, "phone-ch05-explorer.png")
    v.assert_clean()


FOCUSED = """() => {
  const el = document.activeElement;
  const style = getComputedStyle(el);
  return {
    tag: el.tagName,
    visible: el.checkVisibility({visibilityProperty: true}),
    drawer: !!el.closest(".bd-sidebar-primary, .bd-sidebar-secondary"),
    formula: el.tagName === "MJX-CONTAINER",
    explorer: !!el.closest("div.tinyformer-vega"),
    ring: (style.outlineStyle !== "none" && parseFloat(style.outlineWidth) > 0)
          || style.boxShadow !== "none",
  };
}"""


def tab_through(page, limit, until_explorer=True):
    """从页首按 Tab，每一步记下拿到焦点的元素；到第一个探索器的控件（或 limit 下）为止。"""
    page.evaluate("() => { document.activeElement?.blur(); window.scrollTo(0, 0); }")
    stops = []
    for _ in range(limit):
        page.keyboard.press("Tab")
        stops.append(page.evaluate(FOCUSED))
        if until_explorer and stops[-1]["explorer"]:
            break
    return stops


def test_keyboard_reaches_the_first_explorer_without_stopping_at_formulas(open_page):
    page = open_page("chapters/ch05_attention.html").page  # 1280 px：公式都不用横向滚动
    wait_for_tab_stops(page)
    scroll_to(page.locator("div.tinyformer-vega").first)
    page.wait_for_function("() => document.querySelector('div.tinyformer-vega').dataset.rendered")
    stops = tab_through(page, TABS_TO_EXPLORER)
    assert stops[-1]["explorer"], f"按了 {len(stops)} 下 Tab 还没到探索器"
    assert [s for s in stops if s["formula"]] == []
    assert [s["tag"] for s in stops if not s["ring"]] == [], "这些元素拿到焦点时没有焦点框"


def test_closed_drawers_take_no_focus_on_a_phone(phone):
    stops = tab_through(phone("chapters/ch05_attention").page, 300, until_explorer=False)
    stops = [s for s in stops if s["tag"] != "BODY"]  # 走到页尾，焦点回到页面本身
    assert [s for s in stops if s["drawer"] or not s["visible"]] == []
    assert [s["tag"] for s in stops if not s["ring"]] == []


def test_translator_heatmap_fits_a_phone_column(phone):
    page = phone("chapters/ch08_translation").page
    root = page.locator(".live-translator")
    assert root.locator("input").is_enabled()  # 模型加载时文本框也能聚焦
    scroll_to(root)
    wait_done(page, ".live-translator", ".live-translator .lt-status")
    svg = root.locator("svg")
    assert svg.get_attribute("viewBox")
    box, column = svg.bounding_box(), root.bounding_box()
    assert box["x"] >= column["x"] - 1
    assert box["x"] + box["width"] <= column["x"] + column["width"] + 1
    assert root.locator(".lt-output").get_attribute("aria-live") == "polite"
    screenshot(root, "phone-ch08-translator.png")


@pytest.mark.parametrize("name", ["chapters/ch04_positional_proofs", "chapters/ch05_attention"])
def test_lighthouse_audits_that_do_not_depend_on_cpu_speed(site, name):
    """公式最多的两章，开着 gzip 的本机服务器后面，Lighthouse 的手机预设。"""
    from benchmarks import lighthouse_mobile as lighthouse

    axe_source()  # 同一个 npm ci 装好 lighthouse
    gzip_server, base = lighthouse.serve(SITE)
    try:
        result = lighthouse.report(base + f"{name}.html")
    finally:
        gzip_server.shutdown()
    audits = result["audits"]
    # 阻塞渲染的文件、不加载 MathJax：test_first_screen_and_explorers_fit_a_phone_column 在每章量
    assert audits["font-display"]["score"] == 1  # 公式的字体到之前先用本机字体画
    assert audits["lcp-lazy-loaded"]["score"] in (1, None)  # 最大的元素不是等懒加载的图
    # 页面自己的脚本打开时不逼浏览器排版远处的节（_ext/page_scripts.py 的 SCROLLABLE 只量排好了的元素）
    reflows = audits["forced-reflow-insight"]["details"]["items"]
    sources = [i["source"].get("url", "") for table in reflows for i in table["items"]]
    assert [s for s in sources if urlparse(s).path == f"/{name}.html"] == [], sources
    scores = {k: round(v["score"] * 100) for k, v in result["categories"].items()}
    assert scores["accessibility"] == 100 and scores["seo"] >= 95, scores
