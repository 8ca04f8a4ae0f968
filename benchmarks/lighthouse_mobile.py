"""各章页面在手机上的 Lighthouse 分数：网站放在一个开着 gzip 的静态服务器后面（像一般的托管那样）。

运行（先 ``python3 tasks.py book``，再在 ``tests/browser_tools/`` 里 ``npm ci``）：

    .venv/bin/python benchmarks/lighthouse_mobile.py [--runs 3] [--site _build/html] [页面 ...]

Lighthouse 12 的 mobile 预设（模拟的 4 倍 CPU 减速与 1.6 Mbps 网络），用 Debian 的 chromium；每页跑
``--runs`` 次，报告 Performance、Accessibility、Best Practices、SEO 的中位数和 LCP、TBT 的中位数。
最后一行是 JSON。页面默认是各章与前言（_toc.yml 里的 chapters/ch*.html）。
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
COMPRESSIBLE = (".html", ".js", ".mjs", ".css", ".json", ".svg", ".txt", ".woff", ".onnx", ".wasm")


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


def lighthouse(url: str) -> dict:
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
        report = json.loads(out.read_text("utf-8"))
    scores = {k: round(v["score"] * 100) for k, v in report["categories"].items()}
    audits = report["audits"]
    scores["lcp_s"] = audits["largest-contentful-paint"]["numericValue"] / 1000
    scores["tbt_ms"] = audits["total-blocking-time"]["numericValue"]
    return scores


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("pages", nargs="*")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--site", type=Path, default=ROOT / "_build" / "html")
    args = parser.parse_args()
    pages = args.pages or sorted(
        p.relative_to(args.site).as_posix() for p in (args.site / "chapters").glob("ch*.html")
    )
    server, base = serve(args.site)
    results = {}
    try:
        for page in pages:
            runs = [lighthouse(base + page) for _ in range(args.runs)]
            results[page] = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
            row = results[page]
            print(
                f"{page:40s} perf {row['performance']:3.0f}  a11y {row['accessibility']:3.0f}  "
                f"bp {row['best-practices']:3.0f}  seo {row['seo']:3.0f}  "
                f"LCP {row['lcp_s']:5.1f} s  TBT {row['tbt_ms']:5.0f} ms",
                flush=True,
            )
    finally:
        server.shutdown()
    print(json.dumps(results, ensure_ascii=False))


if __name__ == "__main__":
    main()
