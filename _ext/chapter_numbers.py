"""本书的一个小 Sphinx 扩展（_config.yml 里以 local_extensions 加载）：中文书的章节号。

章节号由 Sphinx 排（_toc.yml 里正文这一部分 ``numbered: 2``：章、节两级），标题里不手写号，
引用写成 {numref}`%s 节 <标签>`、{numref}`第 %s 章 <标签>`。这里做四件事：

1. **学习目标、小结、练习不编号**（``UNNUMBERED``）：它们是每章的固定框架，不是内容的一节；
   否则学习目标占了 x.1，后面每一节的号都差一。读入文档时（``doctree-read``）记下这几节；Sphinx
   排号时（``env-get-updated``）先把它们从本页目录里摘下、排完再放回，节号于是依次排给其余的节。
   （Sphinx 自己的记号 ``skip_section_number`` 不管用：sphinx-external-toc 总是加载的
   sphinx-multitoc-numbering 把排号函数换成了不认这个记号的旧版本。）
2. **号的写法**：章是“第 5 章　注意力机制”，节是“5.3 查询、键、值……”（不是 Sphinx 默认的
   “5. ”“5.3. ”）。标题、左侧的章节目录、本页目录、上一页/下一页、浏览器标签页的标题都由网页的
   写出器（translator）写号，这里在主题的写出器外面再套一层（``builder-inited``，排在
   pydata-sphinx-theme 之后），单页 HTML（全书 PDF）也一样。
3. **不编号的文档里的图、公式、练习按文档从 1 数起**：正文各章的号是“章号.序号”（4.1、4.2……，
   Sphinx 按 ``numfig_secnum_depth`` 的默认值 1 自己排）；前言、附录不在编号的目录里，Sphinx 给
   它们的是跨文档连续的号，这里改成每篇从 1 开始（``env-get-updated``，排在 Sphinx 之后）。
4. **指向别章笔记本的 Markdown 链接** ``[第 5 章](ch05_attention.ipynb)`` 留在笔记本里（Colab 里单独
   打开一章时能点）；网页上链接文字里的章号换成 Sphinx 排的号，手写的号不一致时警告（构建用 -W）。
"""

from __future__ import annotations

import re

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import logging

logger = logging.getLogger(__name__)

UNNUMBERED = {"学习目标", "小结", "练习"}  # 与 tests/book/test_numbering.py 的 FRAME 一致
CHAPTER_LINK = re.compile(r"第\s*(\d+)\s*章")


def number_text(numbers: tuple[int, ...]) -> str:
    """(5,) -> “第 5 章　”，(5, 3) -> “5.3 ”。"""
    if len(numbers) == 1:
        return f"第 {numbers[0]} 章\u3000"
    return ".".join(map(str, numbers)) + " "


# ---- 1. 学习目标、小结、练习不编号


def mark_frame_sections(app, doctree) -> None:
    toc = app.env.tocs.get(app.env.docname)  # Sphinx 刚为本页建好的目录（它的处理函数优先级是 500）
    if toc is None:
        return
    anchors = set()
    for section in doctree.findall(nodes.section):
        if section.parent is doctree or not section["ids"]:
            continue  # 文档的标题
        if section[0].astext().strip() in UNNUMBERED:
            section["unnumbered"] = True  # 写标题时不写号（ChineseNumberMixin.get_secnumber）
            anchors.add("#" + section["ids"][0])
    for reference in toc.findall(nodes.reference):
        if reference.get("anchorname") in anchors:
            reference.parent["skip_section_number"] = True
            reference.parent["frame_section"] = True


_detached: list[tuple[nodes.Element, int, nodes.Element]] = []


def detach_frame_sections(app, env) -> list[str]:
    _detached.clear()
    for toc in env.tocs.values():
        for para in list(toc.findall(addnodes.compact_paragraph)):
            if para.get("frame_section"):
                item = para.parent
                _detached.append((item.parent, item.parent.index(item), item))
                item.parent.remove(item)
    return []


def reattach_frame_sections(app, env) -> list[str]:
    """排号之后：放回原处（没有号）。按摘下的倒序放，下标才对。"""
    for parent, index, item in reversed(_detached):
        parent.insert(index, item)
    _detached.clear()
    return []


# ---- 2. 号的写法


class ChineseNumberMixin:
    def get_secnumber(self, node):
        parent = node.parent
        if isinstance(parent, nodes.section) and parent.get("unnumbered"):
            return None  # 否则 Sphinx 在号表里找不到这一节，退而用文档的号（章号）
        return super().get_secnumber(node)

    def add_secnumber(self, node) -> None:
        numbers = self.get_secnumber(node)
        if numbers:
            self.body.append(f'<span class="section-number">{number_text(numbers)}</span>')

    def visit_reference(self, node) -> None:
        # 目录里的链接带着 secnumber，Sphinx 在 <a> 之后直接写号：换成本书的写法
        numbers = node.attributes.pop("secnumber", None)
        super().visit_reference(node)
        if numbers:
            node["secnumber"] = numbers
            self.body.append(number_text(numbers))


def wrap_translator(app) -> None:
    if app.builder.format != "html":
        return
    base = app.registry.translators.get(app.builder.name, app.builder.default_translator_class)
    translator = type("ChineseNumberTranslator", (ChineseNumberMixin, base), {})
    app.set_translator(app.builder.name, translator, override=True)


# ---- 3. 不编号的文档里的图、公式、练习按文档从 1 数起


def number_unnumbered_docs(app, env) -> list[str]:
    changed = []
    for docname, figtypes in env.toc_fignumbers.items():
        if env.toc_secnumbers.get(docname):
            continue  # 正文各章：Sphinx 已按章排好（4.1、4.2……）
        for ids in figtypes.values():
            in_order = sorted(ids, key=ids.get)  # Sphinx 的号按文档里出现的先后递增
            for n, node_id in enumerate(in_order, 1):
                if ids[node_id] != (n,):
                    ids[node_id] = (n,)
                    changed.append(docname)
    return sorted(set(changed))  # 这些文档要重新写出（号变了）


# ---- 4. 指向别章笔记本的链接：章号用 Sphinx 排的


class ChapterLinkNumbers(SphinxPostTransform):
    default_priority = 5  # Sphinx 的 ReferencesResolver 是 10

    def run(self, **kwargs) -> None:
        for xref in self.document.findall(addnodes.pending_xref):
            if xref.get("refdomain") != "doc" or xref.get("reftype") != "myst":
                continue
            match = CHAPTER_LINK.fullmatch(xref.astext().strip())
            numbers = self.env.toc_secnumbers.get(xref["reftarget"], {}).get("")
            if not match or not numbers:
                continue
            if int(match.group(1)) != numbers[0]:
                logger.warning(
                    "链接文字“%s”与 %s 的章号 %d 不一致（改笔记本里的链接文字）",
                    match.group(0),
                    xref["reftarget"],
                    numbers[0],
                    location=xref,
                )
            for text in list(xref.findall(nodes.Text)):
                text.parent.replace(text, nodes.Text(f"第 {numbers[0]} 章"))


def setup(app):
    app.connect("doctree-read", mark_frame_sections, priority=900)
    app.connect("builder-inited", wrap_translator, priority=900)
    # Sphinx 排节号、图号的处理函数优先级是 500
    app.connect("env-get-updated", detach_frame_sections, priority=100)
    app.connect("env-get-updated", reattach_frame_sections, priority=900)
    app.connect("env-get-updated", number_unnumbered_docs, priority=900)
    app.add_post_transform(ChapterLinkNumbers)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
