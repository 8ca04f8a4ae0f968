"""本书的一个小 Sphinx 扩展（_config.yml 里以 local_extensions 加载）：中文排版的两处修整。

1. 删掉中文之间的空白。Markdown 里一段话写成几行时，行尾的换行进了 HTML，浏览器把它显示成一个
   空格：“某个\\n代码单元格”读成“某个 代码单元格”。为了让强调、链接在 Markdown 里被认出来，
   作者也常在它们两侧留空格（“不 **完全** 相等”）。这里把两边都是中文（汉字、全角标点、中文引号）
   的这两种空白删掉：含换行的空白，以及紧挨着行内元素（强调、链接、引用）边界的空白。
   同一段文字中间有意写的空格（“我 爱 学习”表示分好的词）不动；中文与英文、数字之间的空白也不动
   （“第 5 章”）。
2. 公式后面的标点不另起一行。行内公式（MathJax 排成行内块）和紧跟的“。”“，”“）”之间浏览器可以
   断行，标点就落到下一行行首。这里把公式和紧跟的中文标点包进一个 ``<span class="cjk-nobreak">``，
   样式表（_theme/site.css）让它不断行。

两件事都只改文档树里的文字节点，不碰源文件（笔记本和 Markdown），也不碰代码、公式和原始 HTML；
搜索索引用的是修整后的文档树，所以“某个代码单元格”也能整词搜到。
tests/book/test_site_typography.py 扫描构建出的 HTML，检查正文里没有“汉字 空白 汉字”。
"""

from __future__ import annotations

import re

from docutils import nodes
from sphinx.transforms import SphinxTransform

# 汉字、全角与中文标点、中文引号与省略号破折号：它们之间的换行不该变成空格
CJK = (
    "\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uff00-\uffef\u2018\u2019\u201c\u201d\u2014\u2026\u00b7"
)
SPACE = re.compile(rf"(?<=[{CJK}])[ \t\n]+(?=[{CJK}])")
# 紧跟在行内公式后面、不该出现在行首的中文标点（含全角右括号与右引号）
CLOSING = re.compile(r"^[，。、；：？！）》」』】”’…]+")
# 不进去改的节点：代码、公式、原始 HTML 都原样保留；它们也把两侧的文字隔开
OPAQUE = (nodes.FixedTextElement, nodes.literal, nodes.math, nodes.raw, nodes.image)
BARRIER = "\x00"


def _index(parent: nodes.Element, child: nodes.Node) -> int:
    """child 在 parent 里的位置，按对象本身找：Text 是 str，list.index 会找到内容相同的另一个。"""
    return next(i for i, c in enumerate(parent.children) if c is child)


def _replace_text(old: nodes.Text, text: str) -> None:
    parent = old.parent
    new = nodes.Text(text)
    new.parent = parent
    parent.children[_index(parent, old)] = new


def _numref_text(node: nodes.Node) -> bool:
    """{numref}`第 %s 章 <标签>` 的文字（“第 %s 章”“%s 节”）：是正文，不是代码。

    Sphinx 把交叉引用的文字放进 literal 节点（解析时再换成“第 5 章”），它两侧的空白也要按中文删：
    “见 {numref}`第 %s 章 <…>`”读作“见第 5 章”。"""
    return isinstance(node, nodes.literal) and "std-numref" in node["classes"]


def _texts(node: nodes.Node, out: list) -> None:
    """按文档顺序列出段落里的文字节点；遇到不透明的节点记一个隔断（None）。"""
    for child in node.children:
        if isinstance(child, nodes.Text):
            out.append(child)
        elif isinstance(child, OPAQUE) and not _numref_text(child):
            out.append(None)
        else:
            _texts(child, out)


def join_soft_breaks(block: nodes.TextElement) -> int:
    """删掉一个段落（或标题、术语……）里两侧都是中文的换行与行内元素边界上的空白；返回删掉的处数。"""
    pieces: list = []
    _texts(block, pieces)
    texts = [BARRIER if p is None else str(p) for p in pieces]
    joined = "".join(texts)
    # 每个字符属于第几段文字；相邻两段的父节点不同（例如正文与强调）的位置是行内元素的边界
    owner = [i for i, text in enumerate(texts) for _ in text]

    def at_boundary(position: int) -> bool:
        if position <= 0 or position >= len(joined):
            return False
        before, after = pieces[owner[position - 1]], pieces[owner[position]]
        return before is not None and after is not None and before.parent is not after.parent

    drop = [False] * len(joined)
    count = 0
    for match in SPACE.finditer(joined):
        if "\n" in match.group() or at_boundary(match.start()) or at_boundary(match.end()):
            count += 1
            drop[match.start() : match.end()] = [True] * (match.end() - match.start())
    if not count:
        return 0
    offset = 0
    for piece, text in zip(pieces, texts, strict=True):
        if piece is not None:
            keep = "".join(
                c for c, d in zip(text, drop[offset : offset + len(text)], strict=True) if not d
            )
            if keep != text:
                _replace_text(piece, keep)
        offset += len(text)
    return count


def keep_punctuation_with_math(math: nodes.math) -> bool:
    """行内公式后面紧跟中文标点时，把两者包进一个不断行的 inline；返回是否包了。"""
    parent = math.parent
    siblings = parent.children[_index(parent, math) + 1 :]
    # 跳过合并换行后留下的空文字节点
    following = next((s for s in siblings if not isinstance(s, nodes.Text) or str(s)), None)
    if not isinstance(following, nodes.Text):
        return False
    match = CLOSING.match(str(following))
    if not match:
        return False
    wrapper = nodes.inline(classes=["cjk-nobreak"])
    _replace_text(following, str(following)[match.end() :])  # 可能成了空字符串，无妨
    parent.replace(math, wrapper)  # math 是 Element，按对象比较
    wrapper += math
    wrapper += nodes.Text(match.group())
    return True


class CJKTypography(SphinxTransform):
    default_priority = 700  # 在 Sphinx 与 MyST 的大多数变换之后，交叉引用解析之前

    def apply(self, **kwargs) -> None:
        for block in list(self.document.findall(nodes.TextElement)):
            if not isinstance(block, OPAQUE) and not isinstance(block.parent, nodes.TextElement):
                join_soft_breaks(block)
        for math in list(self.document.findall(nodes.math)):
            keep_punctuation_with_math(math)


def setup(app):
    app.add_transform(CJKTypography)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
