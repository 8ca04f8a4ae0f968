"""书与网站的测试共用的 fixture：本机 http.server 上的网站、无头 Chromium、node 里运行网页脚本。

浏览器测试需要 Debian 的 chromium（playwright 不下载浏览器）和 PyPI 的 playwright；缺少时跳过，CI=true 时失败。
"""

import json
import shutil
import subprocess

import pytest

from tests.kit import ROOT, playwright_chromium, skip_or_fail
from tools.book_pdf import CHROMIUM_ARGS, serve

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


@pytest.fixture(scope="module")
def server(site):
    """本机随机空闲端口上的 http.server（构建好的网站，同打印全书 PDF 的 serve）；模块结束时关掉。"""
    with serve(site) as url:
        yield url


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    """Debian 的无头 Chromium，空的用户目录，与打印全书 PDF 用同一组参数；页面共用它的缓存。"""
    sync_playwright, executable = playwright_chromium()
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


@pytest.fixture(scope="module")
def chromium():
    """无头 Chromium；每个测试开自己的上下文（空缓存，量字节才准）。"""
    sync_playwright, executable = playwright_chromium()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True)
        yield browser
        browser.close()
