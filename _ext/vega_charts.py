"""本书的 Sphinx 扩展（_config.yml 里以 local_extensions 加载）：把笔记本里的 Vega-Lite 图画在网页上。

各章的探索器（``tinyformer.book.explorers``）输出 ``application/vnd.vegalite.v6+json``（规格）、``text/html``
（给 JupyterLab、Colab：从 jsDelivr 加载脚本）和 ``text/plain``。网页不能用那段 HTML（它连 CDN），
所以这里：

1. ``VegaLiteRenderer`` 是 myst-nb 的 MIME 渲染插件（``myst_nb.mime_renderers`` 入口点）。
   myst-nb 只从已安装的发行包里找入口点；构建时 local_extensions 把 ``_ext/`` 放进 ``sys.path``，
   旁边的 ``tinyformer_book-0.0.0.dist-info/entry_points.txt`` 于是被 ``importlib.metadata`` 找到，
   构建以外它不存在。插件把 Vega-Lite 排在 text/html 前面，输出成
   ``<div class="tinyformer-vega"><script type="application/json">规格</script></div>``。
2. 页面一打开时不加载 vega、vega-lite、vega-embed（约 830 KB，``tools/web_assets.py`` 从 npm 锁文件装的
   ``node_modules/`` 复制到 ``_vendor/``）：下面一小段内联脚本等图离视野还有约一屏（``IntersectionObserver``）
   时才按顺序加载这三个脚本、画图（SVG）。手机上第一屏的文字因此不等它们。全书 PDF 的单页 HTML 一打开就画全部图。
3. 窄屏（手机 358 px 的栏）：画之前按图所在栏的宽度改规格——单张图（含叠加）的宽度设成栏宽、
   ``autosize: fit-x`` 让坐标轴与图例也算在内；上下拼接的图每张不超过栏宽；图例放到图下面。
4. 读屏：每张图前有一段中文说明（``describe``：标题、横轴、纵轴、颜色和可以拨动的控件），同一段文字写进
   规格的 ``description``，Vega 把它作为 SVG 的 ``aria-label``（默认只读“Vega visualization”）。

tests/book/test_browser.py 在无头 Chromium 里拨动每个控件，核对图变了、没有控制台错误。
"""

import json
from html import escape

from docutils import nodes

# 与 tinyformer.book.explorers.VEGALITE_MIME_TYPE 相同
MIME_TYPE = "application/vnd.vegalite.v6+json"
SCRIPTS = ["vega/vega.min.js", "vega-lite/vega-lite.min.js", "vega-embed/vega-embed.min.js"]
MARKER = 'class="tinyformer-vega"'

# 图快进入视野时加载脚本、画图；el.vegaView 留给浏览器测试读数据。SCRIPTS 与 EAGER 由 add_scripts 填入。
EMBED = """
document.addEventListener("DOMContentLoaded", () => {
  const charts = [...document.querySelectorAll("div.tinyformer-vega")];
  let loading = null;
  const load = () => loading ??= Promise.all(SCRIPTS.map((url) => new Promise((ok, fail) => {
    const script = document.createElement("script");
    script.src = url;
    script.async = false;  // 按加入的顺序执行：vega-lite 要 vega，vega-embed 要前两个
    script.onload = ok;
    script.onerror = () => fail(new Error(url));
    document.head.append(script);
  })));
  const narrow = (spec, width) => {
    const widths = (spec.vconcat || [spec]).map((view) => view.width).filter(Number.isFinite);
    if (!widths.length || Math.max(...widths) + 140 <= width) return spec;
    spec = structuredClone(spec);
    spec.config = {...spec.config, legend: {...(spec.config || {}).legend, orient: "bottom"}};
    if (spec.vconcat) {
      spec.vconcat.forEach((view) => { if (view.width) view.width = Math.min(view.width, width - 90); });
    } else {
      spec.width = width;
      spec.autosize = {type: "fit-x", contains: "padding"};
    }
    return spec;
  };
  const draw = (el) => load().then(() => {
    const spec = narrow(JSON.parse(el.querySelector("script").textContent), el.clientWidth);
    const target = el.appendChild(document.createElement("div"));
    return vegaEmbed(target, spec, {renderer: "svg", actions: false});
  }).then((result) => { el.vegaView = result.view; el.dataset.rendered = "true"; })
    .catch((error) => console.error(error));
  if (EAGER || !("IntersectionObserver" in window)) return charts.forEach(draw);
  const near = new IntersectionObserver((entries) => entries.forEach((entry) => {
    if (entry.isIntersecting) { near.unobserve(entry.target); draw(entry.target); }
  }), {rootMargin: "100% 0px"});
  charts.forEach((el) => near.observe(el));
});"""


def _title(spec: dict) -> str:
    title = spec.get("title")
    return (title.get("text", "") if isinstance(title, dict) else title or "").strip()


def describe(spec: dict) -> str:
    parts = [f"交互图“{_title(spec)}”。" if _title(spec) else "交互图。"]
    for view in spec.get("vconcat") or spec.get("hconcat") or [spec]:
        encoding = {}
        for layer in view.get("layer") or [view]:
            for channel, value in (layer.get("encoding") or {}).items():
                if isinstance(value, dict) and value.get("title"):
                    encoding.setdefault(channel, value["title"])
        said = [
            f"{name}是{encoding[channel]}"
            for channel, name in (("x", "横轴"), ("y", "纵轴"), ("color", "颜色"))
            if channel in encoding
        ]
        if said:
            subtitle = _title(view) if view is not spec else ""
            parts.append((f"“{subtitle}”：" if subtitle else "") + "，".join(said) + "。")
    controls = []
    for param in spec.get("params", []):
        bind = param.get("bind") or {}
        if bind.get("name"):
            options = bind.get("labels") or bind.get("options")
            if options and len(options) <= 6:
                choices = "、".join(map(str, options))
                controls.append(f"{bind['name'].strip()}（{choices}）")
            elif "min" in bind and "max" in bind:
                controls.append(f"{bind['name'].strip()}（{bind['min']} 到 {bind['max']}）")
            else:
                controls.append(bind["name"].strip())
    if controls:
        parts.append("图下的控件可以改变：" + "；".join(controls) + "。")
    return "".join(parts)


class VegaLiteRenderer:
    # 网页（html 构建器）与全书 PDF 的单页 HTML（singlehtml）上 Vega-Lite 优先于 text/html（myst-nb
    # 默认给 text/html 的优先级是 30）：text/html 从 jsDelivr 加载脚本，打印 PDF 时不联网，只会画出
    # “Error loading script”
    mime_priority_overrides = [("html", MIME_TYPE, 5), ("singlehtml", MIME_TYPE, 5)]

    @staticmethod
    def handle_mime(renderer, data, inline):
        if data.mime_type != MIME_TYPE or inline:
            return None
        spec = data.content if isinstance(data.content, dict) else json.loads(data.string)
        description = describe(spec)
        spec = {**spec, "description": description}
        # 规格放进 <script> 里：把 "</" 写成 "<\\/"（JSON 里等价），页面上就不会提前结束这个标签
        text = json.dumps(spec, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/")
        html = (
            f'<p class="visually-hidden">{escape(description)}</p>'
            f'<div {MARKER}><script type="application/json">{text}</script></div>'
        )
        return [nodes.raw(text=html, format="html", classes=["output", "vega-lite"])]


def add_scripts(app, pagename, templatename, context, doctree):
    if MARKER not in context.get("body", ""):
        return
    urls = [context["pathto"](f"_static/{path}", 1) for path in SCRIPTS]
    eager = "true" if app.builder.name == "singlehtml" else "false"  # 打印 PDF 时不滚动
    body = EMBED.replace("SCRIPTS.map", f"{json.dumps(urls)}.map").replace("EAGER", eager)
    app.add_js_file(None, body=body, priority=210)


def setup(app):
    app.connect("html-page-context", add_scripts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
