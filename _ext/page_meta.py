"""本书的一个小 Sphinx 扩展（_config.yml 里以 local_extensions 加载）：页面给搜索引擎和读屏软件的文字。

1. 每页一句 ``<meta name="description">``：搜索引擎在结果里显示它（Lighthouse 的 SEO 审核缺了它就扣分）。
   取这一页正文的第一段文字（去掉标签，最多 ``LENGTH`` 个字），前面是这一页的标题；没有正文段落的页面
   （索引、搜索）只写书名与标题。
2. 折叠的代码单元格：myst-nb 给它的 ``<summary>`` 写死了英文的 ``aria-label="Toggle hidden content"``，
   读屏软件读不到看得见的“显示代码”（axe 的 label-content-name-mismatch）。去掉它，名字就是看得见的文字。
"""

from __future__ import annotations

import html
import re

from cjk_typography import SPACE  # 汉字之间不留空格（tests/book/test_site_typography.py）

BOOK = "动手学 Transformer"
LENGTH = 120
PARAGRAPH = re.compile(r"<p\b[^>]*>(.*?)</p>", re.S)
TAG = re.compile(r"<[^>]+>")


def description(title: str, body: str) -> str:
    for paragraph in PARAGRAPH.findall(body):
        text = SPACE.sub("", " ".join(html.unescape(TAG.sub("", paragraph)).split()))
        if len(text) >= 20:
            text = text if len(text) <= LENGTH else text[: LENGTH - 1] + "…"
            return f"{title}：{text}"
    return f"{BOOK}：{title}"


TOGGLE = '<summary aria-label="Toggle hidden content">'


def add_description(app, pagename, templatename, context, doctree):
    title = TAG.sub("", context.get("title") or BOOK)
    text = description(html.unescape(title), context.get("body", ""))
    context["metatags"] = (
        context.get("metatags", "")
        + f'\n<meta name="description" content="{html.escape(text, quote=True)}" />'
    )
    if "body" in context:
        context["body"] = context["body"].replace(TOGGLE, "<summary>")


def setup(app):
    app.connect("html-page-context", add_description)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
