"""本书的 Sphinx 扩展（_config.yml 里以 local_extensions 加载）：把笔记本里的 Vega-Lite 图画在网页上。

各章的探索器（``tinyformer.book.explorers``）输出 ``application/vnd.vegalite.v6+json``（规格）、``text/html``
（给 JupyterLab、Colab：从 jsDelivr 加载脚本）和 ``text/plain``。网页不能用那段 HTML（它连 CDN），
所以这里：

1. ``VegaLiteRenderer`` 是 myst-nb 的 MIME 渲染插件（``myst_nb.mime_renderers`` 入口点）。
   myst-nb 只从已安装的发行包里找入口点；构建时 local_extensions 把 ``_ext/`` 放进 ``sys.path``，
   旁边的 ``tinyformer_book-0.0.0.dist-info/entry_points.txt`` 于是被 ``importlib.metadata`` 找到，
   构建以外它不存在。插件把 Vega-Lite 排在 text/html 前面，输出成
   ``<div class="tinyformer-vega"><script type="application/json">规格</script></div>``。
2. 有这种图的页面加载随书发布的 vega、vega-lite、vega-embed（``tools/web_assets.py`` 取到
   ``_vendor/``，固定版本、核对 sha512），以及下面的一小段脚本：逐个画图（SVG）。这三个脚本是 UMD
   格式，必须在 require.js 之前执行，否则它们注册成匿名 AMD 模块、不设全局变量（priority 小于
   require.js 的 500）。

tests/book/test_browser.py 在无头 Chromium 里拨动每个控件，核对图变了、没有控制台错误。
"""

import json

from docutils import nodes

MIME_TYPE = (
    "application/vnd.vegalite.v6+json"  # 与 tinyformer.book.explorers.VEGALITE_MIME_TYPE 相同
)
SCRIPTS = ["vega/vega.min.js", "vega-lite/vega-lite.min.js", "vega-embed/vega-embed.min.js"]
MARKER = 'class="tinyformer-vega"'

# 画出页面上的每张图；el.vegaView 留给浏览器测试读数据
EMBED = """
document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("div.tinyformer-vega").forEach((el) => {
    const spec = JSON.parse(el.querySelector("script").textContent);
    const target = el.appendChild(document.createElement("div"));
    vegaEmbed(target, spec, {renderer: "svg", actions: false})
      .then((result) => { el.vegaView = result.view; el.dataset.rendered = "true"; })
      .catch((error) => console.error(error));
  });
});"""


class VegaLiteRenderer:
    """myst-nb 的 MIME 渲染插件：Vega-Lite 规格 → 一个待画的 div（见模块说明）。"""

    # 网页（html 构建器）与全书 PDF 的单页 HTML（singlehtml）上 Vega-Lite 优先于 text/html（myst-nb
    # 默认给 text/html 的优先级是 30）：text/html 从 jsDelivr 加载脚本，打印 PDF 时不联网，只会画出
    # “Error loading script”
    mime_priority_overrides = [("html", MIME_TYPE, 5), ("singlehtml", MIME_TYPE, 5)]

    @staticmethod
    def handle_mime(renderer, data, inline):
        if data.mime_type != MIME_TYPE or inline:
            return None
        spec = data.content if isinstance(data.content, dict) else json.loads(data.string)
        # 规格放进 <script> 里：把 "</" 写成 "<\\/"（JSON 里等价），页面上就不会提前结束这个标签
        text = json.dumps(spec, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")
        html = f'<div {MARKER}><script type="application/json">{text}</script></div>'
        return [nodes.raw(text=html, format="html", classes=["output", "vega-lite"])]


def add_scripts(app, pagename, templatename, context, doctree):
    if MARKER not in context.get("body", ""):
        return
    for i, path in enumerate(SCRIPTS):
        app.add_js_file(path, priority=200 + i)
    app.add_js_file(None, body=EMBED, priority=210)


def setup(app):
    app.connect("html-page-context", add_scripts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
