"""本书的一个小 Sphinx 扩展（_config.yml 里以 local_extensions 加载）：启动按钮打开笔记本版。

sphinx-book-theme 的火箭菜单（Binder、Colab）由仓库地址 + 页面的源文件拼出链接，指向
``chapters/ch05_attention.ipynb``——网站的源文件，MyST 写的 Markdown 在 Colab、Binder 里原样显示成文字。
这里在主题建好菜单之后（``html-page-context``，主题是 501，这里 502）把链接换成同名的
``edition/ch05_attention.ipynb``（``python -m tools.edition`` 生成的笔记本版，见 README），并在同一菜单里加一项
“GitHub”，在 GitHub 上直接读本章的笔记本版。仓库地址、分支仍只取自 ``_config.yml`` 的 ``repository``
（主题从那里读）。tests/book/test_edition.py 检查构建出的每一页的链接。
"""

from __future__ import annotations

SOURCE_DIR = "chapters/"


def point_launch_buttons_at_edition(app, pagename, templatename, context, doctree) -> None:
    if not pagename.startswith(SOURCE_DIR):
        return
    source = f"{pagename}.ipynb"
    target = f"edition/{pagename.rsplit('/', 1)[-1]}.ipynb"
    for group in context.get("header_buttons", []):
        if group.get("label") != "launch-buttons":
            continue
        for button in group["buttons"]:
            if "url" in button:
                button["url"] = button["url"].replace(source, target)
        repository = app.config.html_theme_options.get("repository_url", "").rstrip("/")
        branch = app.config.html_theme_options.get("repository_branch", "main")
        if repository:
            group["buttons"].append(
                {
                    "type": "link",
                    "text": "GitHub",
                    "tooltip": "在 GitHub 上阅读本章的笔记本",
                    "icon": "fab fa-github",
                    "url": f"{repository}/blob/{branch}/{target}",
                    "label": "edition-github-button",
                }
            )


def setup(app):
    app.connect("html-page-context", point_launch_buttons_at_edition, priority=502)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
