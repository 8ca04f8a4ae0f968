"""本书的一个小 Sphinx 扩展（_config.yml 里以 local_extensions 加载）：网站只带页面真正加载的文件。

构建结束（``build-finished``）后删掉 ``_build/html/_static`` 里浏览器从不请求的文件：

1. MathJax。sphinx-mathjax-offline 把整个 MathJax 3.2.2（24 MB：各种组合包、SVG 输出、朗读引擎
   sre……）复制进网站。网页的公式在构建时排好（_ext/static_math.py），只加载 CHTML 字体，网站里只留字体；
   全书 PDF 的单页 HTML 在浏览器里排版，只加载 ``tex-chtml.js`` 和它的 CHTML 字体（在无头 Chromium 里逐页
   量过，tests/book/test_browser.py 每次都再量）。另外留下 TeX 的扩展包：公式里一旦用到
   ``\\boldsymbol`` 这类命令，MathJax 的 autoload 会按需加载它们。MathJax 右键菜单里的朗读与
   探索功能（a11y、sre）因此不可用。
2. 主题的翻译目录（``_static/locales``：sphinx-book-theme 把全部语言的 .po/.mo 当静态文件复制）。
3. source map（``*.map``）：只有打开开发者工具时才会请求。

另外：Sphinx 7.4 只在有页面要重写时才复制静态文件，只改了 ``_theme/site.css`` 或
``_ext/search_zh.js`` 的增量构建会留着旧的副本。``_rewrite_when_assets_change`` 在它们变了时让首页重读，
静态文件与 language_data.js 随之更新。

最后称重（:func:`site_weight`、:func:`page_weight`）：整个网站多重、每一页连同它加载的文件多重，
把结果填进附录“执行统计”页里的占位元素 ``<span class="site-weight">``（笔记本在构建之前执行，不知道网站
的大小，所以由构建的最后一步填写）。tests/book/test_site_size.py 用同样的函数核对上限，并核对页面上写的数。
"""

from __future__ import annotations

import hashlib
import shutil
from fnmatch import fnmatch
from pathlib import Path
from urllib.parse import unquote, urlparse

from bs4 import BeautifulSoup
from sphinx.util import logging

from tinyformer.atomic import atomic_write

logger = logging.getLogger(__name__)

# _static/mathjax 里要留下的文件（相对该目录的通配符）
MATHJAX_KEEP = [
    "tex-chtml.js",
    "ui/lazy.js",  # 只排版看得见的公式（_config.yml 的 mathjax3_config）
    "output/chtml/fonts/woff-v2/*.woff",
    "input/tex/extensions/*.js",
]
MATHJAX_FONTS = ["output/chtml/fonts/woff-v2/*.woff"]
MATHJAX_DROP = ["input/tex/extensions/all-packages.js"]  # 全部扩展的合集，autoload 不用它


def prune_mathjax(static: Path, keep: list[str] = MATHJAX_KEEP) -> int:
    """删掉 MathJax 里页面不加载的文件；返回删掉的字节数。"""
    root = static / "mathjax"
    if not root.is_dir():
        return 0
    removed = 0
    for path in sorted(root.rglob("*"), reverse=True):  # 先文件、后目录
        rel = path.relative_to(root).as_posix()
        if path.is_dir():
            if not any(path.iterdir()):
                path.rmdir()
            continue
        if not any(fnmatch(rel, p) for p in keep) or any(fnmatch(rel, p) for p in MATHJAX_DROP):
            removed += path.stat().st_size
            path.unlink()
    return removed


def prune_unrequested(static: Path) -> int:
    """删掉主题的翻译目录与 source map；返回删掉的字节数。"""
    removed = 0
    locales = static / "locales"
    if locales.is_dir():
        removed += sum(p.stat().st_size for p in locales.rglob("*") if p.is_file())
        shutil.rmtree(locales)
    for path in static.rglob("*.map"):
        removed += path.stat().st_size
        path.unlink()
    return removed


# 网站里不算作“网页”的下载：全书 PDF
DOWNLOADS = {"tinyformer.pdf"}
# 第 8 章网页翻译器的模型与脚本（只有那一页、滚进视野才加载；另有上限，见 tests/book/test_live_translator.py，
# 各章的检查器读同一份模型，读者打开时才加载），以及第 9 章写诗器（_ext/live_translator.py）的模型与
# 脚本（读者按下“写诗”才加载模型）
TRANSLATOR_DIRS = ("translator_model", "live_translator", "poem_model", "poem_writer")
REPORT_PAGE = "chapters/appendix_stats.html"


def html_pages(site: Path) -> list[Path]:
    return sorted(p for p in site.rglob("*.html") if "_static" not in p.relative_to(site).parts)


def _local_file(page: Path, url: str) -> Path | None:
    parsed = urlparse(url)
    if parsed.scheme or parsed.netloc or not parsed.path:
        return None
    path = (page.parent / unquote(parsed.path)).resolve()
    return path if path.is_file() else None


def page_weight(page: Path, site: Path) -> dict[str, int]:
    """一页的 HTML 与它加载的文件：{相对网站根的路径: 字节}。

    按 HTML 里的引用静态地估计（脚本、样式、图标、预加载、图片），再加上它运行时会加载的 MathJax
    字体（按用到的字形加载，这里全算上）与控件样式里的图标字体。tests/book/test_browser.py 在浏览器里按真实的
    请求再量一遍。
    """
    soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
    urls = [s["src"] for s in soup.select("script[src]")]
    urls += [link["href"] for link in soup.select('link[rel~="stylesheet"], link[rel~="icon"]')]
    urls += [link["href"] for link in soup.select('link[rel="preload"]')]
    urls += [img["src"] for img in soup.select("img[src]")]
    site, page = site.resolve(), page.resolve()
    files = {page}
    files |= {f for f in (_local_file(page, u) for u in urls) if f is not None}
    loaded = " ".join(urls)
    static = site / "_static"
    # 浏览器里排版的页面（全书 PDF 的单页 HTML）加载 MathJax，构建时排好的页面只加载字体（_ext/static_math.py）
    if "mathjax/" in loaded or soup.select_one("style#static-math"):
        files |= set((static / "mathjax" / "output").rglob("*.woff"))
    if soup.select_one('script[type="application/vnd.jupyter.widget-view+json"]'):
        # 控件快进入视野时才加载控件管理器（_ext/page_scripts.py），也算上它和它的图标字体
        files |= {static / "html-manager" / "embed.js", *(static / "html-manager").glob("*.woff2")}
    if soup.select_one("div.tinyformer-vega"):  # 图快进入视野时才加载（_ext/vega_charts.py）
        files |= set(static.glob("vega*/vega*.min.js"))
    return {f.relative_to(site).as_posix(): f.stat().st_size for f in files}


def site_weight(site: Path) -> tuple[int, int]:
    """(整个网站的字节数, 其中第 8 章翻译器的字节数)；全书 PDF 是下载，不算。"""
    files = [p for p in site.rglob("*") if p.is_file() and p.name not in DOWNLOADS]
    translator = [p for p in files if set(p.relative_to(site).parts) & set(TRANSLATOR_DIRS)]
    return sum(p.stat().st_size for p in files), sum(p.stat().st_size for p in translator)


def weight_report(site: Path) -> str:
    """“网站 X MB；最重的一页是……，连同它加载的文件 Y MB”。"""
    weights = {
        p.relative_to(site).as_posix(): sum(page_weight(p, site).values()) for p in html_pages(site)
    }
    heaviest = max(weights, key=weights.get)
    title = BeautifulSoup((site / heaviest).read_text(encoding="utf-8"), "html.parser").title
    name = title.get_text().split(" — ")[0].strip() if title else heaviest
    total, translator = site_weight(site)
    return (
        f"整个网站 {total / 1e6:.1f} MB（不算全书 PDF），其中网页上运行的模型与脚本（第 8 章的翻译器与检查器、第 9 章的写诗器） "
        f"{translator / 1e6:.1f} MB；最重的一页是“{name}”，连同它加载的文件 {weights[heaviest] / 1e6:.1f} MB"
    )


def fill_report(site: Path) -> None:
    page = site / REPORT_PAGE
    if not page.is_file():
        return
    html = page.read_text(encoding="utf-8")
    marker = '<span class="site-weight">'
    start = html.find(marker)
    if start < 0:
        logger.warning(f"light_pages: {REPORT_PAGE} has no {marker} placeholder")
        return
    end = html.index("</span>", start)
    html = html[: start + len(marker)] + weight_report(site) + html[end:]
    with atomic_write(page) as file:
        file.write(html.encode())


def _prune(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    site = Path(app.outdir)
    # 公式在构建时排好的网站（_ext/static_math.py）只用 MathJax 的字体
    in_browser = any(
        "_static/mathjax/tex-chtml.js" in p.read_text("utf-8") for p in html_pages(site)
    )
    keep = MATHJAX_KEEP if in_browser else MATHJAX_FONTS
    removed = prune_mathjax(site / "_static", keep) + prune_unrequested(site / "_static")
    logger.info(f"light_pages: removed {removed / 1e6:.1f} MB of unrequested files")
    fill_report(site)


def _assets_digest(app) -> str:
    """本书自己的静态文件（html_static_path 里不在 _vendor 的目录）与搜索脚本的散列。"""
    root = Path(app.confdir)
    folders = [root / p for p in app.config.html_static_path if not str(p).startswith("_vendor")]
    files = sorted(f for d in folders for f in d.rglob("*") if f.is_file())
    files.append(root / "_ext" / "search_zh.js")
    digest = hashlib.sha256()
    for path in files:
        if path.is_file():
            digest.update(path.as_posix().encode() + path.read_bytes())
    return digest.hexdigest()


def _rewrite_when_assets_change(app, env, added, changed, removed):
    digest = _assets_digest(app)
    if getattr(env, "tinyformer_assets_digest", None) == digest:
        return []
    env.tinyformer_assets_digest = digest
    return [app.config.root_doc]


def setup(app):
    # 最后称重：别的扩展在构建结束时写的文件都已写好
    app.connect("build-finished", _prune, priority=900)
    app.connect("env-get-outdated", _rewrite_when_assets_change)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
