"""书与网站的测试共用的 fixture 与零件：本机 http.server 上的网站、无头 Chromium 里的一页（``Visit``、
``open_page``）、node 里运行网页脚本。

浏览器测试需要 Debian 的 chromium（playwright 不下载浏览器）和 PyPI 的 playwright；缺少时跳过，CI=true 时失败。
"""

import json
import shutil
import subprocess
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from tests.kit import ROOT, playwright_chromium, skip_or_fail
from tools.book_pdf import serve

SCRIPTS = ROOT / "_static_ch08" / "live_translator"
# node 里：m 是 live_translator.js（解码、采样、分词……），tf 是 transformer.js（前向、读 safetensors），
# data 是 JSON；body 是一个 async 函数体，return 的值以 JSON 写到 stdout
PROGRAM = """
const fs = require("fs");
const m = require(%(live)s);
const tf = require(%(transformer)s);
const read = (path) => {
  const b = fs.readFileSync(path);
  const { metadata, tensors } = tf.readSafetensors(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));
  return { config: metadata.config, tensors };
};
const data = JSON.parse(fs.readFileSync(0, "utf-8"));
(async () => { %(body)s })().then((r) => process.stdout.write(JSON.stringify(r)), (e) => { console.error(e); process.exit(1); });
"""


@pytest.fixture(scope="session")
def node():
    """``node(body, data)``：在 node 里运行 body（见 PROGRAM），返回它 return 的值。没有 node 时跳过（CI 里失败）。"""
    executable = shutil.which("node")
    if executable is None:
        skip_or_fail("没有 node（Node.js，npm 自带）")

    def run(body: str, data=None):
        program = PROGRAM % {
            "live": json.dumps(str(SCRIPTS / "live_translator.js")),
            "transformer": json.dumps(str(SCRIPTS / "transformer.js")),
            "body": body,
        }
        result = subprocess.run(
            [executable, "-e", program], input=json.dumps(data), capture_output=True, text=True
        )
        assert result.returncode == 0, result.stderr[-3000:]
        return json.loads(result.stdout)

    return run


@pytest.fixture(scope="session")
def translator():
    """随包发布的翻译器（第 600 步）。"""
    from tinyformer.translation.pretrained import load_translator

    return load_translator(600)


@pytest.fixture(scope="module")
def server(site):
    """本机随机空闲端口上的 http.server（构建好的网站，同打印全书 PDF 的 serve）；模块结束时关掉。"""
    with serve(site) as url:
        yield url


@pytest.fixture(scope="module")
def chromium():
    """无头 Chromium；每页开自己的上下文（空缓存，量字节才准），见 ``open_page``。"""
    sync_playwright, executable = playwright_chromium()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True)
        yield browser
        browser.close()


class Visit:
    """打开一页，记下控制台错误、页面异常、失败的请求和被拦下的请求（``allow`` 之外的一律拦下，
    所以这些测试同时证明网页离线可用），以及每个成功请求的路径。"""

    def __init__(self, context, url, allow=lambda url: urlparse(url).hostname == "127.0.0.1"):
        self.errors, self.failed, self.external, self.paths = [], [], [], set()
        self.allow = allow
        self.page = context.new_page()
        self.page.route("**/*", self._route)
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("requestfailed", lambda r: self.failed.append((r.url, r.failure)))
        self.page.on(
            "response", lambda r: r.status >= 400 and self.failed.append((r.url, r.status))
        )
        self.page.on("requestfinished", lambda r: self.paths.add(urlparse(r.url).path))
        self.page.goto(url, wait_until="load")

    def _route(self, route):
        if self.allow(route.request.url):
            route.continue_()
        else:
            self.external.append(route.request.url)
            route.abort()

    def loaded(self, site):
        """加载过的文件（在网站里的路径）。"""
        files = {site / unquote(p).lstrip("/") for p in self.paths}
        return {f for f in files if f.is_file()}

    def assert_clean(self):
        assert (self.external, self.failed, self.errors) == ([], [], [])


@pytest.fixture
def open_page(chromium, server):
    """``open_page(path, **context)``：在新的浏览器上下文里打开本机网站上的 path（或一个 file:// 地址）；``context``
    是 playwright 的 ``new_context`` 参数（viewport、color_scheme、is_mobile……）。测试结束时关掉。"""
    contexts = []

    def open_(path, **context):
        contexts.append(
            chromium.new_context(**{"viewport": {"width": 1280, "height": 900}, **context})
        )
        if path.startswith("file://"):  # 读者下载网站后双击打开：只许读本地文件
            return Visit(contexts[-1], path, allow=lambda url: url.startswith("file://"))
        return Visit(contexts[-1], f"{server}/{path}")

    yield open_
    for context in contexts:
        context.close()


def wait_done(page, widget: str, status: str, timeout=120_000):
    """等网页上的模型（检查器、翻译器、写诗器 ``widget``）算完；出错时失败，报出 ``status`` 里的文字。"""
    page.wait_for_function(
        "(w) => ['done', 'error'].includes(document.querySelector(w).dataset.state)",
        arg=widget,
        timeout=timeout,
    )
    assert page.locator(widget).get_attribute("data-state") == "done", page.inner_text(status)


SCROLL = """async (e) => {
  const frames = () => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
  e.scrollIntoView({block: "center", behavior: "instant"});
  await frames();
  const first = e.getBoundingClientRect().top;
  await frames();
  const top = e.getBoundingClientRect().top;
  return Math.abs(top - first) < 1 && top >= 0 && top <= innerHeight;
}"""


def scroll_to(locator):
    """把元素滚进视野。离视野远的节先不排版（content-visibility，_theme/site.css）：按估计的高度滚过去后，
    沿途的节排好、高度变了，目标会移位，所以再滚，直到它停在视野里。"""
    for _ in range(20):
        if locator.evaluate(SCROLL):
            return
    raise AssertionError("滚了 20 次，元素还不停在视野里")


# 把一个控件换成另一个取值：下拉框与单选框选下一个选项，复选框翻转，滑块走一步（到头则退一步）
MOVE_JS = """(input) => {
    const fire = () => ['input', 'change'].forEach(
        (type) => input.dispatchEvent(new Event(type, {bubbles: true})));
    if (input.tagName === 'SELECT') {
        input.selectedIndex = (input.selectedIndex + 1) % input.options.length;
        return fire();
    }
    if (input.type === 'radio') {
        const group = [...input.closest('.vega-bind').querySelectorAll('input[type=radio]')];
        return group[(group.findIndex((r) => r.checked) + 1) % group.length].click();
    }
    if (input.type === 'checkbox') return input.click();
    const step = Number(input.step) || 1;
    const value = Number(input.value);
    input.value = value + step <= Number(input.max) ? value + step : value - step;
    fire();
}"""


def screenshot(target, name: str) -> Path:
    """页面或元素的截图，存进 _build/screenshots/（给人看）。"""
    path = ROOT / "_build" / "screenshots" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    target.screenshot(path=str(path), timeout=60_000)
    return path
