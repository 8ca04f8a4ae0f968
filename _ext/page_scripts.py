"""本书的一个小 Sphinx 扩展（_config.yml 里以 local_extensions 加载），修整每页的 <script>。

1. 去掉重复的脚本。扩展在构建开始后用 app.add_js_file(None, body=...) 加的内联脚本，会以文件名
   None 和 '' 各进页面一次，Sphinx 7.4 判重时认为两者不同。sphinx-thebe 的内联脚本是 const 声明，
   第二次执行时浏览器报 SyntaxError（Identifier 'THEBE_JS_URL' has already been declared）。
2. 让控件能用 MathJax 3。ipywidgets 的控件用 MathJax 2 的 MathJax.Hub.Queue 排版标签里的公式，
   本站是 MathJax 3，没有 MathJax.Hub，每个带说明文字的控件都抛 TypeError（reading 'Queue'）。
   这里补一个 MathJax.Hub.Queue，交给 MathJax 3 的 typesetPromise。
3. 页面自己的脚本都 ``defer``：下载不挡住首屏的文字，按原来的顺序在文档解析完后执行（在 DOMContentLoaded
   之前，所以等这个事件的代码照常工作）。只有 documentation_options.js（1 KB）照常执行：``<head>`` 末尾的
   内联脚本立刻用到它定义的 DOCUMENTATION_OPTIONS。搜索页除外：它的模板在页尾直接加载 searchtools.js，
   那个脚本一执行就要用 doctools.js 定义的 ``_ready``，所以搜索页的脚本照常执行。
4. 公式不在 Tab 键的顺序里（_config.yml 的 MathJax 设置）；只有比框宽、要滚动的行间公式、表格（手机上）、
   代码块和输出拿一个停靠点（tabindex=0），键盘用户才能滚动它（axe 的 scrollable-region-focusable）。
   页面打开时不全部量：一个元素排好时（ResizeObserver）才量它，读者按第一个键时再量完其余的（SCROLLABLE）。
   全书 PDF 的单页 HTML 在浏览器里排版公式，关掉 MathJax 的 ui/lazy，打印前全部排好（NOT_LAZY）。
5. 跳到页内某一节之后，等沿途先不排版的块（content-visibility，_theme/site.css）排好，把目标放回视野（SETTLE_ANCHOR）。
6. 控件管理器（embed.js，1.9 MB）不在页面打开时加载：等第一个控件离视野还有约一屏时才加载（全书 PDF 的单页
   HTML 除外）。embed.js 只在 window 的 load 事件里渲染控件；load 早已发生，所以它执行的那一刻把它登记的
   load 回调改成立刻执行。

tests/book/test_browser.py 检查每页没有控制台错误、没有失败的请求。
"""

import json

from sphinx.builders.html._assets import _JavaScript

IMMEDIATE = "documentation_options.js"  # 见模块说明第 3 条
WIDGET_MANAGER = "_static/html-manager/embed.js"  # 由 _config.yml 的 nb_ipywidgets_js 加入

# 延迟加载的 MathJax 3 在 DOMContentLoaded 之前已执行，控件在那之后才渲染
MATHJAX2_QUEUE = """
window.addEventListener("DOMContentLoaded", () => {
  if (window.MathJax && MathJax.startup && !MathJax.Hub) {
    MathJax.Hub = {Queue: (job) => {
      MathJax.startup.promise = MathJax.startup.promise.then(() => MathJax.typesetPromise([job[2]]));
    }};
  }
});"""


SCROLLABLE = """
window.addEventListener("DOMContentLoaded", () => {
  const root = document.documentElement;
  // 元素 → 它什么时候算“要滚动”：行间公式和表格看横向（公式的字形常比框高一点点，不算）；代码块、输出
  // 看两个方向（输出有最大高度）——后者原是主题脚本（pydata-sphinx-theme.js）做的，_ext/first_screen.py 关掉了它
  const wide = (el) => el.scrollWidth > el.clientWidth + 1;
  const either = (el) => el.scrollWidth > el.clientWidth || el.scrollHeight > el.clientHeight;
  const kinds = [
    ['.bd-article table, mjx-container[display="true"]', wide],
    ["pre, .nboutput > .output_area, .cell_output > .output, .jp-RenderedHTMLCommon", either],
  ];
  const scrolls = new Map();
  const mark = (els) => {
    // 先全部量，再改：改了 tabindex，下一次量就要重新算样式
    const scrolling = els.map((el) => scrolls.get(el)(el));
    els.forEach((el, i) => (scrolling[i] ? (el.tabIndex = 0) : el.removeAttribute("tabindex")));
  };
  // 量一个元素的 scrollWidth 会逼浏览器排版它，连离视野远、本来先不排版的块（content-visibility，
  // _theme/site.css）也排：页面打开时全部量一遍，第 4 章手机上主线程因此卡一秒多（Lighthouse 的 TBT）。
  // 所以只量浏览器已经排好的：ResizeObserver 在一个元素排好（它滚近视野）、大小变了（窗口变宽变窄、字体到了）
  // 时报告它，这时量不用再排版
  const sizes = new ResizeObserver((entries) => mark(entries.map((entry) => entry.target)));
  const watch = () => kinds.forEach(([selector, test]) => document.querySelectorAll(selector).forEach((el) => {
    if (!scrolls.has(el)) { scrolls.set(el, test); sizes.observe(el); }
  }));
  watch();
  // 用键盘的读者按第一个键时，远处的也全部量好（排版一次整页），Tab 键才停得到远处要滚动的框。
  // 做完时 <html> 上标 data-tab-stops（浏览器测试按一下 Shift 后等它）
  window.addEventListener("keydown", () => {
    mark([...scrolls.keys()]);
    root.dataset.tabStops = "ready";
  }, {once: true, capture: true});
  // 全书 PDF 的单页 HTML 里公式在浏览器里排版：排好后再找一遍
  if (window.MathJax && MathJax.startup) MathJax.startup.promise.then(watch);
});"""
# 见模块说明第 5 条：跳转后跟几帧，把目标放回视野里，直到它不再移动（最多约一秒，读者自己滚动就停）
SETTLE_ANCHOR = """
(() => {
  const settle = () => {
    const id = decodeURIComponent(location.hash.slice(1));
    const target = id && document.getElementById(id);
    if (!target) return;
    let last = NaN, still = 0, frames = 0;
    const stop = () => { frames = Infinity; };
    window.addEventListener("wheel", stop, {once: true});
    window.addEventListener("touchstart", stop, {once: true});
    const step = () => {
      const top = target.getBoundingClientRect().top;
      still = Math.abs(top - last) < 1 ? still + 1 : 0;
      if (still > 10 || ++frames > 90) return;
      // instant：主题（bootstrap）让页面平滑滚动，滚动的动画里每一帧的位置都在变
      if (Math.abs(top) > 1 && still === 0) target.scrollIntoView({behavior: "instant"});
      last = target.getBoundingClientRect().top;
      requestAnimationFrame(step);
    };
    requestAnimationFrame(step);
  };
  window.addEventListener("hashchange", settle);
  window.addEventListener("load", settle);
})();"""
# 排好之前不显示 TeX 源码（_theme/site.css）；不运行脚本的浏览器照样显示源码
PENDING = 'document.documentElement.classList.add("mathjax-pending");'
# 全书 PDF 的单页 HTML：打印时不滚动，公式要全部排好（MathJax 的设置在这之前的内联脚本里，tex-chtml.js 是 defer 的）
NOT_LAZY = """
if (window.MathJax && MathJax.loader) MathJax.loader.load = MathJax.loader.load.filter((c) => c !== "ui/lazy");"""

# 控件快进入视野时加载 embed.js（URL 由 fix_scripts 填入）
LAZY_MANAGER = """
window.addEventListener("DOMContentLoaded", () => {
  const views = document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]');
  if (!views.length) return;
  const load = () => {
    near.disconnect();
    const add = window.addEventListener;
    window.addEventListener = function (type, listener, ...rest) {
      if (type === "load" && document.readyState === "complete") return setTimeout(listener);
      return add.call(this, type, listener, ...rest);
    };
    const script = document.createElement("script");
    script.src = URL;
    script.onload = script.onerror = () => { window.addEventListener = add; };
    document.head.append(script);
  };
  const near = new IntersectionObserver((entries) => entries.some((e) => e.isIntersecting) && load(),
                                        {rootMargin: "100% 0px"});
  views.forEach((view) => near.observe(view.parentElement));
});"""


def fix_scripts(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if not scripts:
        return
    unique = {}  # 见模块说明第 1 条
    for js in scripts:
        key = (js.filename or "", js.priority, tuple(sorted(js.attributes.items())))
        unique.setdefault(key, js)
    # 就地修改列表：Sphinx 渲染完这一页后会自己恢复它。要 defer 的脚本换成新的对象，不改原来的：
    # 同一个对象是各页共用的，改了它，搜索页也会跟着 defer
    scripts[:] = [
        _JavaScript(js.filename, priority=js.priority, **{**js.attributes, "defer": "defer"})
        if pagename != "search"
        and js.filename
        and not js.filename.endswith(IMMEDIATE)
        and "async" not in js.attributes
        else js
        for js in unique.values()
    ]

    app.add_js_file(None, body=SCROLLABLE)
    if app.builder.name == "html":
        app.add_js_file(None, body=SETTLE_ANCHOR)
    if any("mathjax/" in (js.filename or "") for js in scripts):
        app.add_js_file(None, body=PENDING)
        if app.builder.name == "singlehtml":
            app.add_js_file(None, body=NOT_LAZY)
    manager = [js for js in scripts if js.filename == WIDGET_MANAGER]
    if manager:
        # embed.js 自己找样式里的图标字体（相对它自己的地址），只需补上 MathJax 2 的接口
        app.add_js_file(None, body=MATHJAX2_QUEUE)
        # 放在控件管理器之前（它们优先级相同，排序时保持这个顺序）
        scripts.insert(scripts.index(manager[0]), scripts.pop())
        if app.builder.name == "html":  # 全书 PDF 的单页 HTML 照常加载：打印时不滚动
            url = context["pathto"](WIDGET_MANAGER, 1)
            app.add_js_file(None, body=LAZY_MANAGER.replace("URL", json.dumps(url)))
            scripts[scripts.index(manager[0])] = scripts.pop()


def setup(app):
    # 在其他扩展（myst-nb 的控件脚本）加完本页脚本之后
    app.connect("html-page-context", fix_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
