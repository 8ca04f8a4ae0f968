"""网站是轻的（issue 12 第 6 条）：扫描 _build/html（不构建，也不开浏览器；没有构建结果时跳过，CI 里失败）。

页面的重量按 HTML 里的引用静态地估计（_ext/light_pages.py 的 page_weight）；tests/book/test_browser.py
在浏览器里按真实请求再量一遍。
"""

import re

import pytest
from bs4 import BeautifulSoup

from _ext.light_pages import REPORT_PAGE, html_pages, page_weight, site_weight, weight_report
from tests.kit import SITE

# 字节（第 10、11 章加入后 22.6 MB；公式在构建时排好后 23.4 MB：页面里排好的公式多 2.3 MB，MathJax 的脚本少 1.5 MB；
# 代码块里与代码同色的名字、标点不包 span 后 22.6 MB，_ext/first_screen.py）；
# 网页上运行的模型与脚本另有上限（tests/book/test_live_translator.py、test_poem_writer.py）
SITE_BUDGET = 23_000_000
# 字节；最重的第 1 章 4.39 MB（连同它快滚到时才加载的控件管理器与 vega；公式在构建时排好、不再加载 MathJax
# 之前 5.45 MB）
PAGE_BUDGET = 4_500_000
# 每页的元素数：浏览器打开一页要为每个元素算样式、排版（Lighthouse 的 dom-size，手机上的 TBT）。最多的第 5 章
# 13,401 个（代码块里与代码同色的名字、标点不包 span 之前 20,510 个，_ext/first_screen.py）
ELEMENT_BUDGET = 15_000


def pages() -> list[str]:
    return [p.relative_to(SITE).as_posix() for p in html_pages(SITE)] if SITE.exists() else []


def test_site_is_within_budget(site):
    total, translator = site_weight(site)
    assert total - translator <= SITE_BUDGET, (
        f"网站（不算翻译器）{(total - translator) / 1e6:.1f} MB"
    )
    mathjax = sum(p.stat().st_size for p in (site / "_static" / "mathjax").rglob("*"))
    assert mathjax < 3_000_000, f"MathJax 还有 {mathjax / 1e6:.1f} MB"


def test_the_estimate_counts_what_a_widget_page_loads(site):
    files = page_weight(site / "chapters" / "ch05_attention.html", site)
    # 公式在构建时排好（_ext/static_math.py）：页面不加载 MathJax，只加载它的字体
    assert "_static/mathjax/output/chtml/fonts/woff-v2/MathJax_Main-Regular.woff" in files
    assert not any(f.startswith("_static/mathjax/") and f.endswith(".js") for f in files)
    assert "_static/vega/vega.min.js" in files
    assert any(f.startswith("_images/") for f in files)
    # 有控件的页面算上控件管理器：test_page_is_light 逐页核对


def test_the_appendix_reports_the_measured_weight(site):
    """附录“执行统计”写的网站重量与最重的一页，就是此刻量出来的（由构建的最后一步填写）。"""
    html = (site / REPORT_PAGE).read_text(encoding="utf-8")
    written = re.search(r'<span class="site-weight">(.*?)</span>', html, re.S)
    assert written, "附录页里没有称重结果"
    assert written.group(1) == weight_report(site)
    assert "MB" in written.group(1) and "最重的一页" in written.group(1)


@pytest.mark.parametrize("name", pages())
def test_page_is_light(site, name):
    """控件管理器（embed.js，1.9 MB）只给网页上真有控件显示的页面加载：只在内核里有用的控件，
    单元格标为 remove-output，执行时不存控件状态（tools/execute_notebooks.py 的 shows_a_widget）。"""
    html = (site / name).read_text(encoding="utf-8")
    files = page_weight(site / name, site)
    total = sum(files.values())
    heaviest = sorted(files.items(), key=lambda kv: -kv[1])[:3]
    assert total <= PAGE_BUDGET, f"{name}: {total / 1e6:.2f} MB，最重的 {heaviest}"
    elements = len(BeautifulSoup(html, "html.parser").find_all(True))
    assert elements <= ELEMENT_BUDGET, f"{name}: {elements} 个元素"
    loads_manager = "_static/html-manager/embed.js" in files
    shows_widget = 'type="application/vnd.jupyter.widget-view+json"' in html
    assert loads_manager == shows_widget, (name, loads_manager, shows_widget)
