"""全书 PDF 的两处接口（_config.yml 里以 local_extensions 加载）；PDF 本身由 tools/book_pdf.py 打印。

1. 单页 HTML（``--builder singlehtml``，PDF 的来源）带上每一章的控件。myst-nb 只把一个笔记本的
   控件状态和控件脚本加进 *这个笔记本自己的* 页面；单页 HTML 只有根文档（前言）一页，其余各章的
   控件就只剩一行文字。这里把所有文档的控件状态（各是一个
   ``<script type="application/vnd.jupyter.widget-state+json">``，model id 按笔记本名各不相同）
   和 require.js、控件管理器都加进那一页；HTML 管理器会逐个渲染这些状态。
2. 网页（``html``）每一页右上角的“下载”菜单里加一项“全书 PDF”，指向站点根目录的
   ``tinyformer.pdf``（``python3 tasks.py book`` 构建网页后把它打印到那里）。
"""

PDF_NAME = "tinyformer.pdf"


def all_widget_scripts(app, pagename, templatename, context, doctree):
    if app.builder.name != "singlehtml":
        return
    metadata = getattr(app.env, "nb_metadata", {})  # myst-nb 为每个文档记下的 js_files
    for docname in sorted(metadata):
        if docname == pagename:  # 根文档自己的由 myst-nb 加
            continue
        for path, kwargs in metadata[docname].get("js_files", {}).values():
            app.add_js_file(path, **kwargs)  # 同一个脚本加了多次由 page_scripts 去重


def add_pdf_button(app, pagename, templatename, context, doctree):
    if app.builder.name != "html":
        return
    for group in context.get("header_buttons", []):
        if group.get("label") == "download-buttons":
            group["buttons"].append(
                {
                    "type": "link",
                    "url": context["pathto"](PDF_NAME, 1),
                    "text": "全书 PDF",
                    "tooltip": "下载整本书的 PDF",
                    "icon": "fas fa-book",
                    "label": "download-book-pdf-button",
                }
            )


def inherit_html_handlers(app):
    """单页 HTML 用网页（html）的节点写法。

    Sphinx 先按构建器的名字找节点的写法，找不到才回退到格式（html）。sphinx-exercise 为 singlehtml
    单独登记了它的节点，于是 singlehtml 有了自己的一套，只登记给 html 的节点（myst-nb 折叠的代码单元格、
    sphinx-proof 的定理……）在单页 HTML 里就成了“未知节点”。这里把 html 的写法补进 singlehtml 缺的地方。
    """
    handlers = app.registry.translation_handlers
    single = handlers.setdefault("singlehtml", {})
    for node, visitors in handlers.get("html", {}).items():
        single.setdefault(node, visitors)


def setup(app):
    app.connect("builder-inited", inherit_html_handlers)
    # myst-nb 加本页脚本（默认优先级 500）之后、page_scripts 去重与排序（900）之前
    app.connect("html-page-context", all_widget_scripts, priority=600)
    # sphinx-book-theme 建好下载菜单（优先级 501）之后
    app.connect("html-page-context", add_pdf_button, priority=600)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
