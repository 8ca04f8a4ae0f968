"""到第一个结果为止下载了多少字节：第 8 章的网页翻译器、第 5 章的检查器、第 9 章的写诗器。

在无头 Chromium 里（空缓存）打开页面，触发（翻译器滚进视野、打开检查器、按下“写诗”），等它算完；把页面
加载过的每个文件加起来：原样的字节数，以及开着 gzip 的静态托管发出的字节数（文本类文件按 gzip -6 压缩，
权重等二进制文件原样：lighthouse_mobile 的 COMPRESSIBLE）。比较两次构建时各量一次，例如

    python -m benchmarks.page_model_bytes _build/html
    python -m benchmarks.page_model_bytes /tmp/old_build/html

``--slow``：改量用时，按 Lighthouse 手机预设的条件——网络 1.6 Mbps 下行、150 ms 往返（Chromium DevTools 协议的
网络节流），CPU 减速 4 倍；网站放在开着 gzip 的静态服务器后面（benchmarks/lighthouse_mobile.py 的 serve），
读者一打开页面就翻到组件那里，计时从开始导航到第一个结果。
"""

import gzip
import shutil
import sys
import time
from pathlib import Path
from urllib.parse import unquote, urlparse

from benchmarks.lighthouse_mobile import COMPRESSIBLE, serve

# (名字, 页面, 组件, 怎样触发)
WIDGETS = [
    ("翻译器", "chapters/ch08_translation.html", ".live-translator", "scroll"),
    ("检查器", "chapters/ch05_attention.html", ".tf-inspector", "summary"),
    ("写诗器", "chapters/ch09_gpt_poetry.html", ".poem-writer", ".pw-run"),
]


def sent(site: Path, paths: set[str]) -> tuple[int, int]:
    """(原样的字节数, gzip 托管发出的字节数)。"""
    raw = compressed = 0
    for path in paths:
        file = site / unquote(path).lstrip("/")
        if file.is_file():
            data = file.read_bytes()
            raw += len(data)
            compressed += (
                len(gzip.compress(data, 6, mtime=0)) if file.suffix in COMPRESSIBLE else len(data)
            )
    return raw, compressed


THROTTLE = {"offline": False, "latency": 150, "downloadThroughput": 1.6e6 / 8,
            "uploadThroughput": 750e3 / 8}  # fmt: skip  # Lighthouse 手机预设的网络


def main(site: Path, slow: bool = False) -> None:
    server, base = serve(site)
    from playwright.sync_api import sync_playwright  # requirements.txt；浏览器用 Debian 的 chromium

    executable = shutil.which("chromium") or sys.exit(
        "没有 chromium（apt-get install chromium fonts-noto-cjk）"
    )
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True)
        for name, page_path, widget, trigger in WIDGETS:
            context = browser.new_context()
            page = context.new_page()
            paths = set()
            page.on("requestfinished", lambda r, paths=paths: paths.add(urlparse(r.url).path))
            if slow:
                cdp = context.new_cdp_session(page)
                cdp.send("Network.enable")
                cdp.send("Network.emulateNetworkConditions", THROTTLE)
                cdp.send("Emulation.setCPUThrottlingRate", {"rate": 4})
            start = time.perf_counter()
            page.goto(base + page_path, wait_until="commit" if slow else "load")
            if not slow:  # 量字节时分开“打开页面”与“触发之后”
                page.wait_for_load_state("networkidle")
            before = set(paths)
            page.locator(widget).scroll_into_view_if_needed(timeout=120_000)
            if trigger != "scroll":
                page.click(f"{widget} > summary" if trigger == "summary" else f"{widget} {trigger}")
            page.wait_for_function(
                f"() => ['done', 'error'].includes(document.querySelector('{widget}').dataset.state)",
                timeout=300_000,
            )
            seconds = time.perf_counter() - start
            state = page.locator(widget).get_attribute("data-state")
            total, after = sent(site, paths), sent(site, paths - before)
            if slow:
                print(
                    f"{name}（{state}）：1.6 Mbps、CPU 慢 4 倍，打开页面到第一个结果 {seconds:.1f} 秒"
                )
            else:
                print(
                    f"{name}（{state}）：打开页面到第一个结果 {total[1] / 1e6:.2f} MB（gzip 托管；原样 "
                    f"{total[0] / 1e6:.2f} MB），其中触发之后 {after[1] / 1e6:.2f} MB"
                )
            context.close()
        browser.close()
    server.shutdown()


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--slow"]
    main(Path(args[0] if args else "_build/html").resolve(), slow="--slow" in sys.argv)
