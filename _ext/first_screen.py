"""本书的一个小 Sphinx 扩展（_config.yml 里以 local_extensions 加载）：第一屏只等它需要的文件。

1. 每页只有一个样式表。
主题、各扩展和本书各有自己的样式表，每页 ``<head>`` 里有 15 个，其中 ``styles/theme.css`` 还要再
``@import`` 一个 ``basic.css``：浏览器要把它们全部取到才开始画第一屏（Lighthouse 的 render-blocking
resources）。手机网络上每个请求都要排队、多一次往返，第一屏因此晚一秒左右。

构建结束时（``build-finished``）把每页的样式表按原来的顺序连成一个文件 ``_static/bundle-<散列>.css``
（``@import`` 就地展开，相对地址改成相对新文件；样式的层叠顺序不变），页面只链接它；再去掉主题对两个
页尾脚本的 ``<link rel="preload">``：它们在页尾就会加载，预加载只是在第一屏之前和样式表抢带宽；没有标签页的
页面（本书全部）不加载 sphinx-design 的 design-tabs.js；页尾的脚本也 ``defer``（除了搜索页）。

2. 主题（pydata-sphinx-theme.js）在页面加载时给每个代码块、输出量一次是否比框宽，好让要滚动的拿到 Tab 停靠点；
   一口气量几百个元素逼浏览器把整页排版一遍（第 4 章手机上主线程因此卡一秒多，Lighthouse 的 TBT）。这里把
   量元素的函数换成空的，改由 _ext/page_scripts.py 的 SCROLLABLE 做（为什么那样做见那里）。主题更新、认不出
   这段代码时构建失败。

3. 图片快进入视野时才下载（``<img loading="lazy">``）：第 4 章一张 270 KB 的 SVG 图原来和样式表一起下载，
   手机网络上第一段文字（Lighthouse 的 LCP）因此晚一秒多。

4. 代码块里的元素减半：Pygments 给每个词、每个标点包一个 ``<span class="…">``，第 5 章 21,000 个元素里约 7,000 个
   是名字（``n``）与标点（``p``）的 span，而本书的两个配色（主题的 a11y-high-contrast 浅色与深色）给它们的颜色
   就是代码块本身的颜色。这里换一个不给这两类（和空白 ``w``）包 span 的 HtmlFormatter，文字与颜色不变、浏览器
   要算样式和排版的元素少了。配色换了、给它们另配颜色时构建失败。

同一组样式表连成同一个文件，散列取自文件名的列表，链接上的 ``?v=`` 是内容的散列。
tests/book/test_phone.py 检查每页只有一个阻塞渲染的样式表、图片都是懒加载的。
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
from pathlib import Path

from pygments.formatters import HtmlFormatter
from pygments.styles import get_style_by_name
from pygments.token import Token
from sphinx.errors import ExtensionError
from sphinx.util import logging

from tinyformer.atomic import atomic_write

logger = logging.getLogger(__name__)

LINK = re.compile(r'[ \t]*<link\b[^>]*\brel="stylesheet"[^>]*>\n?')
HREF = re.compile(r'\bhref="([^"]+)"')
PRELOAD = re.compile(r'[ \t]*<link rel="preload" as="script" href="[^"]+" />\n?')
IMPORT = re.compile(r'@import\s+(?:url\()?"([^"]+)"\)?\s*;')
URL = re.compile(r'url\(\s*(["\']?)([^"\')]+)\1\s*\)')
BUNDLE = "_static/bundle-{}.css"
THEME_JS = "_static/scripts/pydata-sphinx-theme.js"
SCROLLABLES = '"pre, .nboutput > .output_area, .cell_output > .output, .jp-RenderedHTMLCommon"'
# pydata-sphinx-theme 0.16 的 addTabStopsToScrollableElements 里量元素的函数（压缩过的原文）
THEME_LOOP = (
    "const e=()=>{document.querySelectorAll(" + SCROLLABLES + ").forEach((e=>{e.tabIndex="
    "e.scrollWidth>e.clientWidth||e.scrollHeight>e.clientHeight?0:-1}))}"
)
# 换成的空函数：主题在窗口大小变了、正文变了时还会调用它
NO_LOOP = "const e=()=>{}"
# sphinx-design 给每页加的标签页脚本；本书没有标签页（.sd-tab-set），它只在页面加载时多占一段主线程
DESIGN_TABS = re.compile(r'[ \t]*<script [^>]*src="[^"]*_static/design-tabs\.js[^"]*"></script>\n?')
# 页尾照常执行的脚本（主题的 bootstrap.js、pydata-sphinx-theme.js，检查器、翻译器、写诗器的脚本）：
# 浏览器读到它们就停下来下载、执行，第一屏的绘制也要等（Lighthouse 把它们算作 render-blocking）。
# 它们都等 DOMContentLoaded 或看 document.readyState 再动手，改成 defer 照样工作，顺序不变
BLOCKING_SCRIPT = re.compile(r'<script src="(?![^"]*documentation_options\.js)([^"]+)"></script>')
IMG = re.compile(r"<img (?![^>]*\bloading=)")


def _is_local(url: str) -> bool:
    return not re.match(r"^(?:[a-z]+:|/|#)", url)


def css_text(site: Path, path: str) -> str:
    """一个样式表的内容（相对网站根的路径）：``@import`` 展开，url() 改成相对网站根的 _static/。"""
    text = (site / path).read_text(encoding="utf-8")
    folder = posixpath.dirname(path)

    def rebase(match):
        quote, url = match.groups()
        if not _is_local(url):
            return match.group(0)
        target = posixpath.normpath(posixpath.join(folder, url))
        return f"url({quote}{posixpath.relpath(target, '_static')}{quote})"

    # IMPORT.split 交替给出样式与 @import 的地址：样式里的 url() 改地址，@import 换成它的内容（已改好地址）
    pieces = IMPORT.split(text)
    return "".join(
        URL.sub(rebase, piece)
        if i % 2 == 0
        else css_text(site, posixpath.normpath(posixpath.join(folder, piece)))
        for i, piece in enumerate(pieces)
    )


def write_bundle(site: Path, name: str, sources: list[str]) -> str:
    """写 _static/bundle-<name>.css；返回内容的短散列（做链接的 ?v=）。"""
    text = "\n".join(f"/* {source} */\n{css_text(site, source)}" for source in sources)
    with atomic_write(site / BUNDLE.format(name)) as file:
        file.write(text.encode())
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def page_stylesheets(page_html: str, page: Path, site: Path) -> tuple[list[str], list[str]]:
    """(这一页的样式表链接, 它们相对网站根的路径)；有不认得的（外部的、带 media 的）时都是空的。"""
    links = LINK.findall(page_html)
    folder = page.parent.relative_to(site).as_posix()
    sources = []
    for link in links:
        href = HREF.search(link).group(1)
        if not _is_local(href) or "media=" in link:
            return [], []
        sources.append(posixpath.normpath(posixpath.join(folder, href.split("?")[0])))
    return links, sources


def bundle_page(
    page_html: str, page: Path, site: Path, links: list[str], name: str, version: str
) -> str:
    href = posixpath.relpath(BUNDLE.format(name), page.parent.relative_to(site).as_posix())
    first = page_html.index(links[0])
    for link in links:
        page_html = page_html.replace(link, "", 1)
    bundled = f'    <link rel="stylesheet" href="{href}?v={version}" />\n'
    page_html = PRELOAD.sub("", page_html[:first] + bundled + page_html[first:])
    # 搜索页的脚本按原样执行（见 _ext/page_scripts.py 第 3 条）
    if "searchtools.js" not in page_html:
        page_html = BLOCKING_SCRIPT.sub(r'<script defer="defer" src="\1"></script>', page_html)
    if "sd-tab-set" not in page_html:
        page_html = DESIGN_TABS.sub("", page_html)
    return IMG.sub('<img loading="lazy" ', page_html)


def drop_theme_loop(site: Path) -> None:
    path = site / THEME_JS
    text = path.read_text(encoding="utf-8")
    if NO_LOOP in text:
        return
    if text.count(THEME_LOOP) != 1:
        raise ExtensionError(
            f"first_screen：{THEME_JS} 里认不出给代码块加 Tab 停靠点的循环（主题更新了？）"
        )
    with atomic_write(path) as file:
        file.write(text.replace(THEME_LOOP, NO_LOOP).encode())


def _bundle_site(app, exception) -> None:
    if exception is not None or app.builder.name != "html":
        return
    site = Path(app.outdir)
    drop_theme_loop(site)
    # 哪些样式表连成了哪个文件：增量构建时没重写的页面只剩 bundle 的链接，靠这份记录重写它的内容
    # （照样用上改过的 _theme/site.css）
    manifest = Path(app.doctreedir) / "css_bundles.json"
    bundles = json.loads(manifest.read_text("utf-8")) if manifest.is_file() else {}
    pages = []
    for page in sorted(site.rglob("*.html")):
        if "_static" in page.relative_to(site).parts:
            continue
        page_html = page.read_text(encoding="utf-8")
        links, sources = page_stylesheets(page_html, page, site)
        if len(sources) > 1:
            name = hashlib.sha256("\n".join(sources).encode()).hexdigest()[:12]
            bundles[name] = sources
            pages.append((page, page_html, links, name))
    bundles = {  # 样式表已不在网站里的旧记录不要了
        name: sources
        for name, sources in bundles.items()
        if all((site / source).is_file() for source in sources)
    }
    versions = {name: write_bundle(site, name, sources) for name, sources in bundles.items()}
    manifest.write_text(json.dumps(bundles, indent=1), encoding="utf-8")
    for page, page_html, links, name in pages:
        with atomic_write(page) as file:
            file.write(bundle_page(page_html, page, site, links, name, versions[name]).encode())
    logger.info(
        f"first_screen: {len(pages)} pages now load one stylesheet ({len(bundles)} bundles)"
    )


# 与代码块同色的词：不包 span（见模块说明第 4 条）
PLAIN_TOKENS = (Token.Name, Token.Punctuation, Token.Text.Whitespace)


class PlainTokensFormatter(HtmlFormatter):
    def _get_css_class(self, ttype):
        return "" if ttype in PLAIN_TOKENS else super()._get_css_class(ttype)


def _plain_tokens(app) -> None:
    highlighter = getattr(app.builder, "highlighter", None)
    if highlighter is None or highlighter.formatter is not HtmlFormatter:
        return
    options = app.builder.theme.get_options(app.config.html_theme_options)
    for key in ("pygments_light_style", "pygments_dark_style"):
        style = get_style_by_name(options[key])
        different = [
            t for t in PLAIN_TOKENS if style.style_for_token(t) != style.style_for_token(Token.Text)
        ]
        if different:
            raise ExtensionError(
                f"first_screen：代码配色 {options[key]} 给 {different} 另配了样式，它们要包 span"
            )
    highlighter.formatter = PlainTokensFormatter


def setup(app):
    app.connect("builder-inited", _plain_tokens)
    # 在别的扩展把样式表写进 _static 之后（icons 400；myst-nb、sphinx-proof 等默认的 500）、
    # light_pages 称重（900）之前
    app.connect("build-finished", _bundle_site, priority=800)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
