"""本书的一个小 Sphinx 扩展（_config.yml 里以 local_extensions 加载）：网站只带页面真正加载的文件。

构建结束（``build-finished``）后删掉 ``_build/html/_static`` 里浏览器从不请求的文件：

1. MathJax。sphinx-mathjax-offline 把整个 MathJax 3.2.2（24 MB：各种组合包、SVG 输出、朗读引擎
   sre……）复制进网站，页面只加载 ``tex-chtml.js`` 和它的 CHTML 字体（在无头 Chromium 里逐页
   量过，tests/book/test_browser.py 每次都再量）。另外留下 TeX 的扩展包：公式里一旦用到
   ``\\boldsymbol`` 这类命令，MathJax 的 autoload 会按需加载它们。MathJax 右键菜单里的朗读与
   探索功能（a11y、sre）因此不可用。
2. 主题的翻译目录（``_static/locales``：sphinx-book-theme 把全部语言的 .po/.mo 当静态文件复制）。
3. source map（``*.map``）：只有打开开发者工具时才会请求。
4. FontAwesome 的 ``js/all.min.js``（1.5 MB）：``_templates/static/webpack-macros.html`` 不再加载它，
   图标由 ``css/all.min.css`` 与 woff2 字体画出；没用的 ttf 字体也删掉。

另外：Sphinx 7.4 只在有页面要重写时才复制静态文件，只改了 ``_theme/site.css`` 或
``_ext/search_zh.js`` 的增量构建会留着旧的副本。``_rewrite_when_assets_change`` 在它们变了时让首页重读，
静态文件与 language_data.js 随之更新。

结果：网站从 43 MB 降到约 13 MB（tests/book/test_site_size.py 守着 20 MB 的上限与每页 6 MB 的上限）。
"""

from __future__ import annotations

import hashlib
import shutil
from fnmatch import fnmatch
from pathlib import Path

from sphinx.util import logging

logger = logging.getLogger(__name__)

# _static/mathjax 里要留下的文件（相对该目录的通配符）
MATHJAX_KEEP = [
    "tex-chtml.js",
    "output/chtml/fonts/woff-v2/*.woff",
    "input/tex/extensions/*.js",
]
MATHJAX_DROP = ["input/tex/extensions/all-packages.js"]  # 全部扩展的合集，autoload 不用它


def prune_mathjax(static: Path) -> int:
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
        keep = any(fnmatch(rel, p) for p in MATHJAX_KEEP)
        if not keep or any(fnmatch(rel, p) for p in MATHJAX_DROP):
            removed += path.stat().st_size
            path.unlink()
    return removed


def prune_unrequested(static: Path) -> int:
    """删掉主题的翻译目录、source map 与不用的 FontAwesome 文件；返回删掉的字节数。"""
    removed = 0
    locales = static / "locales"
    if locales.is_dir():
        removed += sum(p.stat().st_size for p in locales.rglob("*") if p.is_file())
        shutil.rmtree(locales)
    fontawesome = static / "vendor" / "fontawesome"
    unused = [*fontawesome.glob("*/js/*"), *fontawesome.glob("*/webfonts/*.ttf")]
    for path in [*unused, *static.rglob("*.map")]:
        removed += path.stat().st_size
        path.unlink()
    return removed


def _prune(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    static = Path(app.outdir) / "_static"
    removed = prune_mathjax(static) + prune_unrequested(static)
    logger.info(f"light_pages: removed {removed / 1e6:.1f} MB of unrequested files")


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
    app.connect("build-finished", _prune)
    app.connect("env-get-outdated", _rewrite_when_assets_change)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
