"""在真正的浏览器里读这本书：无头 Chromium 打开本机 http.server 上的 _build/html。

每一章：没有失败的请求、没有控制台错误，公式已由 MathJax 排好，保存的控件渲染出来，图片都加载了，
Binder 与 Colab 按钮指向本章的笔记本。除 127.0.0.1 以外的请求一律拦下并记为失败，所以这些测试
同时证明网页离线可用。搜索页能用书里的术语找到讲它的那几章。截图存到 _build/screenshots/。

需要 Debian 的 chromium（playwright 不下载浏览器）和 PyPI 的 playwright；先 python3 tasks.py book。
缺少时跳过，CI=true 时失败。
"""

import functools
import http.server
import json
import re
import shutil
import threading
from fnmatch import fnmatch
from pathlib import Path
from urllib.parse import quote, urlparse

import pytest
import yaml
from conftest import load_tool, skip_or_fail

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
TOC = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
PAGES = [TOC["root"]] + re.findall(
    r"file:\s*([^\s#]+)", (ROOT / "_toc.yml").read_text(encoding="utf-8")
)
SCREENSHOTS = ROOT / "_build" / "screenshots"
CHROMIUM_ARGS = load_tool("book_pdf").CHROMIUM_ARGS  # 与打印全书 PDF 用同一组参数

# 搜索词 -> 结果里必须有的页面（通配符；还没有这一页时不检查，例如尚未写成的第 8 章）
SEARCHES = {
    "位置编码": ["chapters/ch03_*", "chapters/ch04_*"],
    "多头注意力": ["chapters/ch05_*"],
    "层归一化": ["chapters/ch06_*"],
    "缩放点积注意力": ["chapters/ch05_*"],
    "掩码": ["chapters/ch05_*", "chapters/ch07_*"],
    "束搜索": ["chapters/ch08_*"],
}


def is_notebook(name):
    """目录里的页面是笔记本（.ipynb）还是纯文本的 MyST Markdown（.md，例如术语表）。"""
    return (ROOT / f"{name}.ipynb").exists()


def notebook(name):
    return json.loads((ROOT / f"{name}.ipynb").read_text(encoding="utf-8"))


def has_widgets(name):
    return is_notebook(name) and bool(notebook(name)["metadata"].get("widgets"))


def has_math(name):
    if not is_notebook(name):
        return "$" in (ROOT / f"{name}.md").read_text(encoding="utf-8")
    cells = notebook(name)["cells"]
    return any(c["cell_type"] == "markdown" and "$" in "".join(c["source"]) for c in cells)


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server(site):
    """本机随机空闲端口上的 http.server；模块结束时关掉。"""
    handler = functools.partial(QuietHandler, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_port}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """Debian 的无头 Chromium，空的用户目录。"""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        skip_or_fail("没有 playwright（pip install -r requirements.txt）")
    executable = shutil.which("chromium")
    if executable is None:
        skip_or_fail("没有 chromium（apt-get install chromium fonts-noto-cjk）")
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")),
            executable_path=executable,
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1280, "height": 900},
        )
        yield context
        context.close()


class Visit:
    """打开一页，记下控制台错误、页面异常、失败的请求，以及被拦下的外部请求。"""

    def __init__(self, browser, url):
        self.errors, self.failed, self.external = [], [], []
        self.page = browser.new_page()
        self.page.route("**/*", self._route)
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("requestfailed", lambda r: self.failed.append((r.url, r.failure)))
        self.page.on(
            "response", lambda r: r.status >= 400 and self.failed.append((r.url, r.status))
        )
        self.page.goto(url, wait_until="load")

    def _route(self, route):
        if urlparse(route.request.url).hostname == "127.0.0.1":
            route.continue_()
        else:
            self.external.append(route.request.url)
            route.abort()

    def close(self):
        self.page.close()


@pytest.fixture
def visit(browser, server):
    visits = []

    def open_page(path):
        visits.append(Visit(browser, f"{server}/{path}"))
        return visits[-1]

    yield open_page
    for v in visits:
        v.close()


def wait_for_mathjax(page):
    page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise")
    page.evaluate("() => MathJax.startup.promise")


def wait_for_widgets(page):
    """每个保存的控件视图都渲染成了控件 DOM。"""
    page.wait_for_function(
        """() => {
            const views = document.querySelectorAll(
                'script[type="application/vnd.jupyter.widget-view+json"]');
            return views.length > 0 && [...views].every(v => {
                const area = v.previousElementSibling;
                return area && area.querySelector('.jupyter-widgets, [class*="widget-"]');
            });
        }"""
    )


def launch_links(page):
    return page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)")


@pytest.mark.parametrize("name", PAGES)
def test_chapter_page(visit, name):
    v = visit(f"{name}.html")
    page = v.page

    if has_math(name):
        wait_for_mathjax(page)
        assert page.locator("mjx-container").count() > 0
        assert page.locator("mjx-merror").count() == 0  # 没有 TeX 错误
        # 每个公式都换成了 MathJax 的排版，正文（代码以外）里不剩原始的 \( 或 $$
        assert page.locator(".math:not(:has(mjx-container))").count() == 0
        text = page.evaluate(
            """() => {
                const main = document.querySelector('main').cloneNode(true);
                main.querySelectorAll('pre, code, script, style, mjx-container')
                    .forEach(e => e.remove());
                return main.textContent;
            }"""
        )
        for raw in ("\\(", "\\[", "$$"):
            assert raw not in text

    if has_widgets(name):
        wait_for_widgets(page)
        assert "Loading widget" not in page.inner_text("main")

    # 图片：先让懒加载的也加载，再看每张都有像素
    page.evaluate(
        """() => Promise.all([...document.images].map(img => {
            img.loading = 'eager';
            return img.decode().catch(() => {});
        }))"""
    )
    broken = page.eval_on_selector_all(
        "img", "imgs => imgs.filter(i => !(i.naturalWidth > 0)).map(i => i.src)"
    )
    assert broken == []

    # 启动按钮指向本章的笔记本，仓库与分支取自 _config.yml（纯 Markdown 的附录页没有可运行的代码，没有启动按钮）
    if is_notebook(name):
        repo = urlparse(CONFIG["repository"]["url"]).path.strip("/")
        branch = CONFIG["repository"]["branch"]
        buttons = CONFIG["launch_buttons"]
        links = launch_links(page)
        assert (
            f"{buttons['binderhub_url']}/v2/gh/{repo}/{branch}?urlpath=tree/{name}.ipynb" in links
        )
        assert f"{buttons['colab_url']}/github/{repo}/blob/{branch}/{name}.ipynb" in links

    page.wait_for_load_state("networkidle")
    assert v.external == []
    assert v.failed == []
    assert v.errors == []


@pytest.mark.parametrize("term", SEARCHES)
def test_search_finds_the_chapters_that_teach_a_term(visit, site, term):
    expected = [p for p in SEARCHES[term] if list(site.glob(f"{p}.html"))]
    if not expected:
        pytest.skip(f"还没有 {SEARCHES[term]} 这一页")
    v = visit(f"search.html?q={quote(term)}")
    v.page.wait_for_function(
        "() => document.querySelector('#search-results .search-summary')?.textContent"
    )
    found = {
        urlparse(href).path.lstrip("/").removesuffix(".html")
        for href in v.page.eval_on_selector_all(
            "#search-results ul.search li a", "els => els.map(e => e.href)"
        )
    }
    missing = [p for p in expected if not any(fnmatch(f, p) for f in found)]
    assert missing == [], f"{term}: 找到 {sorted(found)}"
    assert v.external == [] and v.errors == []


@pytest.mark.parametrize(
    "name, scroll_to",
    [
        ("chapters/ch00_preface", None),
        ("chapters/ch03_positional_encoding", "mjx-container[display=true] >> visible=true"),
        ("chapters/ch05_attention", ".widget-vbox >> visible=true"),
        ("chapters/ch08_translation", ".widget-interact >> visible=true"),
        ("chapters/appendix_glossary", None),
    ],
)
def test_screenshot(visit, name, scroll_to):
    """给人看的截图：中文是真字形、公式已排版、控件可见。"""
    page = visit(f"{name}.html").page
    if has_math(name):
        wait_for_mathjax(page)
    if has_widgets(name):
        wait_for_widgets(page)
    if scroll_to:
        page.locator(scroll_to).first.scroll_into_view_if_needed()
    page.evaluate("() => document.fonts.ready")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{Path(name).name}.png"
    page.screenshot(path=path)
    assert path.stat().st_size > 10_000
