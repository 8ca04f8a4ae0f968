"""本书的一个小 Sphinx 扩展（_config.yml 里以 local_extensions 加载），修整每页的 <script>。

1. 去掉重复的脚本。扩展在构建开始后用 app.add_js_file(None, body=...) 加的内联脚本，会以文件名
   None 和 '' 各进页面一次，Sphinx 7.4 判重时认为两者不同。sphinx-thebe 的内联脚本是 const 声明，
   第二次执行时浏览器报 SyntaxError（Identifier 'THEBE_JS_URL' has already been declared）。
2. 让控件能用 MathJax 3。ipywidgets 的控件用 MathJax 2 的 MathJax.Hub.Queue 排版标签里的公式，
   本站是 MathJax 3，没有 MathJax.Hub，每个带说明文字的控件都抛 TypeError（reading 'Queue'）。
   这里补一个 MathJax.Hub.Queue，交给 MathJax 3 的 typesetPromise。

tests/book/test_browser.py 检查每页没有控制台错误、没有失败的请求。
"""

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


def fix_scripts(app, pagename, templatename, context, doctree):
    scripts = context.get("script_files")
    if not scripts:
        return
    seen, unique = set(), []
    for js in scripts:
        key = (js.filename or "", js.priority, tuple(sorted(js.attributes.items())))
        if key not in seen:
            seen.add(key)
            unique.append(js)
    scripts[:] = unique  # 就地修改：Sphinx 渲染完这一页后会自己恢复这个列表

    manager = [js for js in scripts if js.filename == WIDGET_MANAGER]
    if manager:
        # embed.js 自己找样式里的图标字体（相对它自己的地址），只需补上 MathJax 2 的接口
        app.add_js_file(None, body=MATHJAX2_QUEUE)
        # 放在控件管理器之前（它们优先级相同，排序时保持这个顺序）
        scripts.insert(scripts.index(manager[0]), scripts.pop())


def setup(app):
    # 在其他扩展（myst-nb 的控件脚本）加完本页脚本之后
    app.connect("html-page-context", fix_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
