"""各章页面在手机上的 Lighthouse 分数：网站放在一个开着 gzip 的静态服务器后面（像一般的托管那样）。

运行（先 ``python3 tasks.py book``，再在 ``tests/browser_tools/`` 里 ``npm ci``）：

    .venv/bin/python -m benchmarks.lighthouse_mobile [--runs 3] [--site _build/html] [页面 ...]

Lighthouse 12 的 mobile 预设（模拟的 4 倍 CPU 减速与 1.6 Mbps 网络），用 Debian 的 chromium；每页跑
``--runs`` 次，报告 Performance、Accessibility、Best Practices、SEO 的中位数和 FCP、LCP、TBT、SI、CLS、
DOM 元素数的中位数。Lighthouse 默认的节流是按观测到的时间线*模拟*的：同一台机器上别的进程抢 CPU 时 TBT
会虚高，所以比较改动前后要在同一时段量，并看 ``--breakdown``：每页最后一次运行的主线程时间按类别
（mainthread-work-breakdown）和按脚本（bootup-time）列出。最后一行是 JSON。页面默认是各章与前言
（chapters/ch*.html）。
"""

from __future__ import annotations

import argparse
import gzip
import http.server
import io
import json
import os
import statistics
import subprocess
import tempfile
import threading
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LIGHTHOUSE = ROOT / "tests" / "browser_tools" / "node_modules" / ".bin" / "lighthouse"
# 托管压缩的类型：README 建议的 nginx gzip_types（字体、权重等二进制文件原样发出）
COMPRESSIBLE = (".html", ".js", ".mjs", ".css", ".json", ".svg", ".txt")


class GzipHandler(http.server.SimpleHTTPRequestHandler):
    """静态文件；浏览器接受 gzip 时把文本类文件压缩后发出（像 nginx 的 gzip on）。"""

    def log_message(self, *args):
        pass

    def send_head(self):
        path = Path(self.translate_path(self.path))
        if path.is_dir():
            path = path / "index.html"
        accepts = "gzip" in self.headers.get("Accept-Encoding", "")
        if not (accepts and path.is_file() and path.suffix in COMPRESSIBLE):
            return super().send_head()
        body = gzip.compress(path.read_bytes(), compresslevel=6, mtime=0)
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(str(path)))
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        return io.BytesIO(body)


def serve(site: Path) -> tuple[http.server.ThreadingHTTPServer, str]:
    handler = partial(GzipHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/"


def report(url: str) -> dict:
    """Lighthouse 对一页的完整报告（JSON）。tests/book/test_phone.py 也用它检查不依赖 CPU 快慢的几项。"""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "report.json"
        flags = "--headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage"
        subprocess.run(
            [
                str(LIGHTHOUSE),
                url,
                "--quiet",
                "--output=json",
                f"--output-path={out}",
                f"--chrome-flags={flags}",
                "--only-categories=performance,accessibility,best-practices,seo",
            ],
            check=True,
            env={**os.environ, "CHROME_PATH": os.environ.get("CHROME_PATH", "/usr/bin/chromium")},
        )
        return json.loads(out.read_text("utf-8"))


def lighthouse(url: str) -> dict:
    result = report(url)
    scores = {k: round(v["score"] * 100) for k, v in result["categories"].items()}
    audits = result["audits"]
    scores["fcp_s"] = audits["first-contentful-paint"]["numericValue"] / 1000
    scores["lcp_s"] = audits["largest-contentful-paint"]["numericValue"] / 1000
    scores["tbt_ms"] = audits["total-blocking-time"]["numericValue"]
    scores["si_s"] = audits["speed-index"]["numericValue"] / 1000
    scores["cls"] = audits["cumulative-layout-shift"]["numericValue"]
    scores["dom"] = audits["dom-size"]["numericValue"]
    scores["breakdown"] = {
        "main thread (ms)": {
            i["groupLabel"]: round(i["duration"])
            for i in audits["mainthread-work-breakdown"]["details"]["items"]
        },
        "scripts (ms)": {
            i["url"].rsplit("/", 1)[-1] or i["url"]: round(i["total"])
            for i in audits["bootup-time"]["details"]["items"]
        },
        "render-blocking": [
            i["url"] for i in audits["render-blocking-resources"]["details"].get("items", [])
        ],
    }
    return scores


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("pages", nargs="*")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--site", type=Path, default=ROOT / "_build" / "html")
    parser.add_argument("--breakdown", action="store_true", help="列出主线程时间的分项")
    args = parser.parse_args()
    pages = args.pages or sorted(
        p.relative_to(args.site).as_posix() for p in (args.site / "chapters").glob("ch*.html")
    )
    server, base = serve(args.site)
    results = {}
    try:
        for page in pages:
            runs = [lighthouse(base + page) for _ in range(args.runs)]
            breakdown = [r.pop("breakdown") for r in runs][-1]
            results[page] = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            row = results[page]
            print(
                f"{page:40s} perf {row['performance']:3.0f}  a11y {row['accessibility']:3.0f}  "
                f"bp {row['best-practices']:3.0f}  seo {row['seo']:3.0f}  "
                f"FCP {row['fcp_s']:4.1f} s  LCP {row['lcp_s']:4.1f} s  TBT {row['tbt_ms']:5.0f} ms  "
                f"SI {row['si_s']:4.1f} s  CLS {row['cls']:.3f}  DOM {row['dom']:.0f}",
                flush=True,
            )
            if args.breakdown:
                print(json.dumps(breakdown, ensure_ascii=False, indent=1), flush=True)
    finally:
        server.shutdown()
    print(json.dumps(results, ensure_ascii=False))


if __name__ == "__main__":
    main()
