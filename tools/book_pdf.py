"""把整本书打印成一个 PDF：``python3 tasks.py pdf``（``python3 tasks.py book`` 构建网页后也运行它）。

1. ``jupyter-book build --builder singlehtml``：全书合成一页 HTML（``_build/singlehtml``），
   各章的控件状态由 ``_ext/whole_book_pdf.py`` 一并放进这一页；
2. 本机的 http.server 提供这个目录，playwright 驱动 Debian 的 chromium（不下载浏览器）打开它：
   等 MathJax 排完全部公式、HTML 管理器渲染完保存的控件、图片都解码，展开折叠的习题答案，
   再用 ``page.pdf()`` 按 A4 打印，页脚印页码；
3. 写到 ``_build/pdf/tinyformer.pdf``，再复制到 ``_build/html/tinyformer.pdf``（网页的下载菜单链接它）。

没有 chromium 时（``apt-get install chromium fonts-noto-cjk``）说明原因并以状态 2 退出。
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "_build"
SINGLE_HTML = BUILD / "singlehtml"
# 单页构建把整本书写成根文档的名字 chapters/ch00_preface.html，页面里的 _static/、_images/ 却是
# 相对于构建的根目录写的：打印前把它复制到根目录
SINGLE_PAGE = SINGLE_HTML / "chapters" / "ch00_preface.html"
PDF = BUILD / "pdf" / "tinyformer.pdf"
SITE_COPY = BUILD / "html" / "tinyformer.pdf"  # 名字与 _ext/whole_book_pdf.py 的 PDF_NAME 一致
# 与浏览器测试相同的参数：无头、不连外网、不做后台联网（本机只能连包索引）
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
FOOTER = (
    '<div style="width:100%; font-size:8px; color:#666; text-align:center;">'
    '<span class="pageNumber"></span> / <span class="totalPages"></span></div>'
)
# 打印前在页面里运行：公式、控件、图片都就绪，展开折叠的答案
READY = """async () => {
    if (window.MathJax && MathJax.startup) {
        await MathJax.startup.promise;
        await MathJax.typesetPromise();
    }
    document.querySelectorAll('details').forEach(d => { d.open = true; });
    document.querySelectorAll('.toggle-hidden').forEach(e => e.classList.remove('toggle-hidden'));
    await Promise.all([...document.images].map(img => {
        img.loading = 'eager';
        return img.decode().catch(() => {});
    }));
    await document.fonts.ready;
}"""
# 打印用的样式：每章从新的一页开始；长代码行折行而不是被页边切掉；代码单元格整块换页，
# 不在页底留下一个空的单元格边框（单元格里的 <pre> 默认不许跨页，边框却留在上一页）
# （分页只在块级排版里生效：主题的弹性布局容器改成普通的块）
PRINT_CSS = """
.bd-page-width, .bd-container, .bd-container__inner, .bd-main, .bd-content,
.bd-article-container, .bd-article { display: block !important; }
span[id^="document-"] + section { break-before: page; }  /* 单页 HTML 里每章以这样的锚点开头 */
div.cell { break-inside: avoid; }
div.cell pre { break-inside: auto !important; white-space: pre-wrap !important; word-break: break-all; }
"""
WIDGETS_RENDERED = """() => [...document.querySelectorAll(
        'script[type="application/vnd.jupyter.widget-view+json"]')].every(v => {
    const area = v.previousElementSibling;
    return area && area.querySelector('.jupyter-widgets, [class*="widget-"]');
})"""


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@contextlib.contextmanager
def serve(folder: Path) -> Iterator[str]:
    """在 127.0.0.1 的空闲端口上提供 ``folder``，返回根地址。"""
    handler = functools.partial(QuietHandler, directory=str(folder))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{httpd.server_port}"
    finally:
        httpd.shutdown()
        httpd.server_close()


def build_single_page() -> None:
    command = ["build", ".", "--builder", "singlehtml", "-W", "-n", "--keep-going"]
    print("+", " ".join(command), flush=True)
    subprocess.run([Path(sys.executable).parent / "jupyter-book", *command], cwd=ROOT, check=True)


def print_pdf(site: Path, page: str, out: Path) -> None:
    """用无头 chromium 把网站 ``site`` 里的一页 ``page`` 打印成 ``out``。"""
    from playwright.sync_api import sync_playwright

    out.parent.mkdir(parents=True, exist_ok=True)
    with (
        serve(site) as url,
        sync_playwright() as playwright,
        tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile,
    ):
        context = playwright.chromium.launch_persistent_context(
            profile, executable_path=shutil.which("chromium"), headless=True, args=CHROMIUM_ARGS
        )
        try:
            tab = context.new_page()
            tab.set_default_timeout(300_000)  # 整本书一页约 1.3 MB：在忙碌的 2 核机器上加载要几十秒
            # 只许本机：万一有外部请求，立刻失败而不是等到超时
            tab.route(
                "**/*",
                lambda route: (
                    route.continue_() if route.request.url.startswith(url) else route.abort()
                ),
            )
            tab.goto(f"{url}/{page}", wait_until="load")
            tab.wait_for_function(WIDGETS_RENDERED)
            tab.evaluate(READY)
            tab.add_style_tag(content=PRINT_CSS)
            tab.emulate_media(media="print")
            tab.pdf(
                path=str(out),
                format="A4",
                print_background=True,
                margin={"top": "15mm", "bottom": "15mm", "left": "12mm", "right": "12mm"},
                display_header_footer=True,
                header_template="<div></div>",
                footer_template=FOOTER,
                outline=True,  # PDF 书签（各章标题）
                tagged=True,
            )
        finally:
            context.close()


def missing_glyphs(pdf: Path) -> list[int]:
    """PDF 里画成“缺字”方框的字符个数，逐页列出。

    chromium（Skia）把文字写成 Identity-H 编码的 Type0 字体，每个字符是十六进制串里的两个字节，
    即字形编号；找不到任何字体有的字画成 0 号字形 ``.notdef``（空方框）。这里在每页解压后的
    内容流里跟着 ``Tf``（换字体）走，数 Type0 字体的十六进制串里的 ``0000``。（逐个解析内容流的
    操作符要慢几十倍，所以用正则。）
    """
    from pypdf import PdfReader

    token = re.compile(rb"/([^\s/<>\[\]()]+)\s+[\d.]+\s+Tf|<([0-9A-Fa-f\s]*)>")
    counts = []
    for page in PdfReader(pdf).pages:
        fonts = page["/Resources"].get_object().get("/Font", {})
        two_byte = {name[1:] for name, f in fonts.items() if f.get_object()["/Subtype"] == "/Type0"}
        font, missing = None, 0
        for match in token.finditer(page.get_contents().get_data()):
            if match.group(1) is not None:
                font = match.group(1).decode()
            elif font in two_byte:
                digits = re.sub(rb"\s", b"", match.group(2))
                missing += [digits[k : k + 4] for k in range(0, len(digits), 4)].count(b"0000")
        counts.append(missing)
    return counts


def main() -> int:
    if shutil.which("chromium") is None:
        print("没有 chromium，跳过全书 PDF（apt-get install chromium fonts-noto-cjk）", flush=True)
        return 2
    build_single_page()
    shutil.copyfile(SINGLE_PAGE, SINGLE_HTML / "book.html")
    print_pdf(SINGLE_HTML, "book.html", PDF)
    if SITE_COPY.parent.exists():
        shutil.copyfile(PDF, SITE_COPY)
    print(f"全书 PDF：{PDF}（{PDF.stat().st_size / 1e6:.1f} MB）", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
