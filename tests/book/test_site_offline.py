"""构建好的网站不依赖 CDN：_build/html 里每个 html/js/css 文件都不引用第三方 CDN。

允许的只有启动链接（Binder、Colab、GitHub 仓库按钮，它们不是 CDN）和下面 ALLOWED 里逐条说明的
几处：第三方库代码里从不被请求的默认值。是否真的什么都不从外部取，由 test_browser.py 在浏览器里核对。
"""

import json
import re
from fnmatch import fnmatch

import altair as alt

from tests.kit import ROOT
from tinyformer.book import explorers
from tools import web_assets

# CDN 的主机名：常见的公共 CDN，以及任何 cdn.* 子域名（cdn.jsdelivr.net、cdn.mathjax.org、cdn.plot.ly……）
CDN_URL = re.compile(
    r"(?:https?:)?//(?:[\w-]+\.)*(?:"
    r"cdn\.[\w.-]+|[\w-]*cdn[\w-]*\.(?:com|net|org|io|xyz)|jsdelivr\.net|unpkg\.com"
    r"|cdnjs\.cloudflare\.com|ajax\.googleapis\.com|fonts\.googleapis\.com|fonts\.gstatic\.com"
    r"|code\.jquery\.com|use\.fontawesome\.com|kit\.fontawesome\.com|githack\.com|statically\.io"
    r"|polyfill\.io|esm\.sh|skypack\.dev"
    r")[^\s\"'`<>)]*"
)

# (相对 _build/html 的文件通配符, 允许的网址前缀, 为什么)
ALLOWED = [
    (
        "*.html",
        "https://unpkg.com/thebe@",
        "sphinx-thebe 写死的 thebe 地址，只在读者点 Live Code 时加载；thebe 随后要连 mybinder.org "
        "启动内核，和 Binder 按钮一样是启动链接，离线时本来就用不了",
    ),
    *(
        (
            "_static/mathjax/*",
            f"https://cdn.jsdelivr.net/npm/{package}@",
            "speech-rule-engine 内置的默认地址；MathJax 把它改成本站的 _static/mathjax/sre/"
            "（window.SREfeature.json），而且只在读者从 MathJax 菜单打开朗读/探索时才加载",
        )
        for package in ("speech-rule-engine", "sre-mathmaps-ie", "wicked-good-xpath")
    ),
    (
        "_static/mathjax/latest.js",
        "",
        "MathJax 自带的“从 CDN 取最新版”加载器；本站页面加载的是 _static/mathjax/tex-chtml.js",
    ),
    (
        "_static/html-manager/embed.js",
        "https://cdn.jsdelivr.net/npm/",
        "只用于包里没有的第三方控件模块；本书只用 ipywidgets 自带的控件，它们都打包在 embed.js 里",
    ),
    (
        "_static/html-manager/embed.js",
        "https://fonts.googleapis.com/css?family=Roboto+Mono",
        "CSS 里被注释掉的 @import",
    ),
]


def allowed(path: str, url: str) -> bool:
    return any(fnmatch(path, pattern) and url.startswith(prefix) for pattern, prefix, _ in ALLOWED)


def test_the_pattern_recognises_cdn_urls():
    for url in [
        "https://cdn.jsdelivr.net/npm/@jupyter-widgets/html-manager@1.0.6/dist/embed-amd.js",
        "https://cdnjs.cloudflare.com/ajax/libs/require.js/2.3.4/require.min.js",
        "//unpkg.com/thebe@0.8.2/lib/index.js",
        "https://fonts.googleapis.com/css?family=Roboto",
    ]:
        assert CDN_URL.fullmatch(url), url
    for url in [
        "https://mybinder.org/v2/gh/o/r/main",
        "https://colab.research.google.com/github/o/r/blob/main/x.ipynb",
        "https://github.com/o/r",
        "https://www.mathjax.org",
    ]:
        assert not CDN_URL.search(url), url


def test_no_page_script_style_or_font_comes_from_a_cdn(site):
    files = [p for ext in ("html", "js", "css") for p in site.rglob(f"*.{ext}")]
    assert len(files) > 50  # 确实扫描了整个网站
    found = []
    for path in files:
        rel = path.relative_to(site).as_posix()
        text = path.read_text(encoding="utf-8", errors="replace")
        found += [(rel, url) for url in CDN_URL.findall(text) if not allowed(rel, url)]
    assert found == []


def test_widget_pages_load_the_local_widget_manager(site):
    # 第 1 章的分词控件是网页上唯一显示的控件（其余只在内核里有用的控件网页上只显示代码）
    page = (site / "chapters" / "ch01_overview.html").read_text(encoding="utf-8")
    # embed.js 自带 ipywidgets 8 的控件、不需要 require.js（tools/web_assets.py）；控件快进入视野时
    # 才由一段内联脚本加载它（_ext/page_scripts.py），页面打开时不加载
    assert '"../_static/html-manager/embed.js"' in page
    assert 'src="../_static/html-manager/embed.js' not in page
    assert "require.js" not in page and "embed-amd.js" not in page
    assert (site / "_static" / "html-manager" / "embed.js").stat().st_size > 1_000_000


def test_pinned_web_assets_are_the_versions_myst_nb_would_load_from_a_cdn():
    """控件管理器是 myst-nb 默认版本同一大版本里更新、更小的一版；锁文件为每个网页包记着 sha512。"""
    from myst_nb.core.config import ipywidgets_js_factory

    defaults = " ".join(ipywidgets_js_factory())
    lock = json.loads((ROOT / "package-lock.json").read_text("utf-8"))["packages"]
    packages = {**web_assets.PACKAGES, **web_assets.VEGA_PACKAGES}
    for name in packages:
        assert lock[f"node_modules/{name}"]["integrity"].startswith("sha512-"), name
    name = "@jupyter-widgets/html-manager"
    match = re.search(rf"{re.escape(name)}@([\d.]+)/", defaults)
    assert match, defaults
    ours, theirs = (
        tuple(map(int, v.split("."))) for v in (web_assets.locked_version(name), match.group(1))
    )
    assert ours[0] == theirs[0] and ours >= theirs, (ours, theirs)


def test_site_ships_the_vega_versions_altair_targets():
    """网站随书带的 vega 脚本就是 requirements.txt 固定的 altair 所针对的版本（这是书的环境的事实，
    不是包的：按 pyproject.toml 的下限装的旧 altair 针对更早的 vega-lite，所以它不在单元测试里）。"""
    versions = {name: web_assets.locked_version(name) for name in web_assets.VEGA_PACKAGES}
    assert versions["vega-lite"] == alt.VEGALITE_VERSION
    assert versions["vega"].split(".")[0] == alt.VEGA_VERSION
    assert versions["vega-embed"].split(".")[0] == alt.VEGAEMBED_VERSION
    assert explorers.VEGALITE_MIME_TYPE == "application/vnd.vegalite.v6+json"  # _ext/vega_charts.py
