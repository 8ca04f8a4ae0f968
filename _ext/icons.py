"""本书的一个小 Sphinx 扩展（_config.yml 里以 local_extensions 加载）：页面上的十来个图标不用整套 Font Awesome。

主题（pydata-sphinx-theme）在每页的 ``<head>`` 里加载 Font Awesome 的 ``all.min.css``（100 KB，挡住首屏）并预加载
三个图标字体（约 300 KB），为的是顶栏与侧栏的十几个图标。构建结束时（``build-finished``）这里：

1. 在写出的页面里找出真正用到的图标（``fa-github``、``fa-rocket``……，连同它们的样式 solid/regular/brands）；
2. 从主题自带的 Font Awesome（6.5.2，图标 CC BY 4.0，许可证随网站留在 ``_static/vendor/fontawesome/``）的 SVG
   数据里取出这些图标的路径，写成 ``_static/icons.css``：每个图标是一段内嵌的 SVG，作为 CSS 遮罩
   （``mask``）用文字颜色画出，深色模式下照样跟着变色；
3. 提示框（备注、警告、练习……）标题前的图标，主题用 Font Awesome 的字体画在 ``::after`` 里；字体删掉后它们会变成
   缺字方框，所以也按类型换成同样的 SVG 遮罩（``ADMONITION_ICONS``）；GitHub 链接前的小图标也一样；
4. 删掉 Font Awesome 的样式表和字体。

``_templates/static/webpack-macros.html`` 让每页只加载 ``icons.css``（几 KB，不预加载字体）。
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from urllib.parse import quote

from sphinx.util import logging

logger = logging.getLogger(__name__)

CSS = "icons.css"
FONTAWESOME = "vendor/fontawesome/6.5.2"  # 相对 _static，与主题的模板一致
# 只改变大小、不是图标本身的类
MODIFIERS = {"fa-fw", "fa-lg", "fa-xs", "fa-sm", "fa-1x", "fa-2x", "fa-3x", "fa-spin", "fa-pulse"}
STYLE_CLASSES = {
    "solid": ("fa-solid", "fas", "fa"),
    "regular": ("fa-regular", "far"),
    "brands": ("fa-brands", "fab"),
}
STYLE_OF = {cls: style for style, classes in STYLE_CLASSES.items() for cls in classes}
# 主题的脚本在运行时换上的图标（例如明暗主题切换按钮上的三个）也在页面的 HTML 里，所以扫描 HTML 就够了
CLASS_ATTRIBUTE = re.compile(r'class="([^"]*\bfa-[^"]*)"')
PACK = re.compile(r'var p=\{(.*?)\};.{0,400}?d\("(fab|far|fas)",p\)', re.S)
ICON = re.compile(r'(?:"([^"]+)"|([\w$]+)):\[(\d+),(\d+),\[[^\]]*\],"[^"]*","([^"]+)"\]')
SAFE = " '/:=,.-"  # 引号里的 data: 网址只需转义 < > # %
PACK_STYLE = {"fab": "brands", "far": "regular", "fas": "solid"}
# 提示框的类型 → Font Awesome 的实心图标，与主题（pydata-sphinx-theme 的 --pst-icon-admonition-*）和 sphinx-exercise 相同；
# 空字符串是其余类型（主题的默认图标）
ADMONITION_ICONS = {
    "": "bell",
    "note": "circle-info",
    "important": "circle-exclamation",
    "attention": "circle-exclamation",
    "warning": "triangle-exclamation",
    "caution": "triangle-exclamation",
    "danger": "triangle-exclamation",
    "error": "circle-xmark",
    "tip": "lightbulb",
    "hint": "lightbulb",
    "seealso": "share",
    "todo": "pencil",
    "exercise": "pencil",
}


def fontawesome_svgs(script: Path) -> dict[tuple[str, str], tuple[int, int, str]]:
    """{(样式, 图标名): (宽, 高, SVG 路径)}，取自 Font Awesome 的 all.min.js（它为每个图标带着 SVG 数据）。"""
    icons = {}
    for body, prefix in PACK.findall(script.read_text(encoding="utf-8")):
        for quoted, bare, width, height, path in ICON.findall(body):
            icons[(PACK_STYLE[prefix], quoted or bare)] = (int(width), int(height), path)
    return icons


def used_icons(pages: list[Path]) -> set[tuple[str, str]]:
    used = set()
    for page in pages:
        for value in CLASS_ATTRIBUTE.findall(page.read_text(encoding="utf-8")):
            classes = value.split()
            style = next((STYLE_OF[c] for c in classes if c in STYLE_OF), "solid")
            for cls in classes:
                if cls.startswith("fa-") and cls not in STYLE_OF and cls not in MODIFIERS:
                    used.add((style, cls[len("fa-") :]))
    return used


def mask_url(width: int, height: int, path: str) -> str:
    svg = f"<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 {width} {height}'><path d='{path}'/></svg>"
    return f'url("data:image/svg+xml,{quote(svg, safe=SAFE)}")'


def admonition_css(svgs: dict) -> list[str]:
    """提示框标题的图标：主题的 ``::after`` 不再用字体里的字，而是用 ``--admonition-icon`` 这张遮罩画。"""
    title = "div.admonition>.admonition-title::after,.admonition>.admonition-title::after"
    rules = [
        f'{title}{{content:""!important;font:inherit;top:50%;transform:translateY(-50%);'
        "background-color:currentColor;-webkit-mask:var(--admonition-icon) center/contain no-repeat;"
        "mask:var(--admonition-icon) center/contain no-repeat}",
        # 解答框本来就不带图标（sphinx-exercise 的 content:none）
        "div.solution.admonition>.admonition-title::after{content:none!important}",
    ]
    for kind, name in ADMONITION_ICONS.items():
        selector = f".admonition.{kind}" if kind else ".admonition"
        rules.append(f"{selector}{{--admonition-icon:{mask_url(*svgs[('solid', name)])}}}")
    # 主题把指向 GitHub 的链接缩写成“图标 + 用户/仓库”，图标同样来自字体（参考文献里 minGPT、nanoGPT 的链接）
    github = mask_url(*svgs[("brands", "github")])
    rules.append(
        'a.github::before{content:""!important;font:inherit;display:inline-block;width:1em;height:1em;'
        f"vertical-align:-.125em;background-color:currentColor;-webkit-mask:{github} center/contain no-repeat;"
        f"mask:{github} center/contain no-repeat}}"
    )
    return rules


def icons_css(used: set[tuple[str, str]], svgs: dict) -> str:
    bases = ",".join(f".{c}" for classes in STYLE_CLASSES.values() for c in classes)
    rules = [
        f"{bases}{{display:inline-block;width:1.25em;height:1em;line-height:1;vertical-align:-.125em}}",
        f"{','.join(f'{b}::before' for b in bases.split(','))}"
        '{content:"";display:block;width:100%;height:100%;background-color:currentColor;'
        "-webkit-mask:var(--icon) center/contain no-repeat;mask:var(--icon) center/contain no-repeat}",
        ".fa-lg{font-size:1.25em;vertical-align:-.2em}",
    ]
    for style, name in sorted(used):
        if (style, name) not in svgs:
            continue  # 不是图标的 fa- 类（例如字体文件名里的 fa-solid-900）
        selector = ",".join(f".{c}.fa-{name}" for c in STYLE_CLASSES[style])
        rules.append(f"{selector}{{--icon:{mask_url(*svgs[(style, name)])}}}")
    return "\n".join(rules + admonition_css(svgs)) + "\n"


def _write_icons(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    site = Path(app.outdir)
    pages = [p for p in site.rglob("*.html") if "_static" not in p.relative_to(site).parts]
    import pydata_sphinx_theme

    theme_static = Path(pydata_sphinx_theme.__file__).parent / "theme/pydata_sphinx_theme/static"
    svgs = fontawesome_svgs(theme_static / FONTAWESOME / "js" / "all.min.js")
    used = used_icons(pages)
    missing = sorted(f"{s} {n}" for s, n in used if (s, n) not in svgs and not n[0].isdigit())
    if missing:
        logger.info(f"icons: no SVG for {missing}")
    (site / "_static" / CSS).write_text(icons_css(used, svgs), encoding="utf-8")
    folder = site / "_static" / FONTAWESOME
    for sub in ("css", "js", "webfonts"):
        shutil.rmtree(folder / sub, ignore_errors=True)


def setup(app):
    app.connect("build-finished", _write_icons, priority=400)  # 在 light_pages 称重（500）之前
    return {"parallel_read_safe": True, "parallel_write_safe": True}
