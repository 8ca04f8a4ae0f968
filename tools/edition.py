"""笔记本版（``edition/``）：在 Colab、Binder、JupyterLab 和 GitHub 上读、跑都对的各章笔记本。

``chapters/`` 里的笔记本是网站的源文件，Markdown 是 MyST（``{numref}``、``{term}``、``:::{note}``……），
只有 Sphinx 懂；在 Colab、GitHub、不带 jupyterlab-myst 的 JupyterLab 里它们原样显示成文字。这里从
``chapters/`` 生成一份只用 CommonMark + ``$…$`` 公式（外加 ``<details>``、``<div>`` 这样的 HTML）
的笔记本版，文件名与 ``chapters/`` 相同，提交在仓库里，网站的启动按钮（Colab、Binder、GitHub）打开它。

    python -m tools.edition           写 edition/（构建网站之后运行：号和锚点取自构建）

**怎样转换。** 每个 Markdown 单元格用 myst-parser 自己的 markdown-it 解析器（同样的插件和
``_config.yml`` 里同样的扩展）切成块；块的源文字原样保留，只有解析器认出的 MyST 结构被换掉：

- 章节号、图号、公式号、练习号、定理号取自网站的构建（``_build/.doctrees`` 里 Sphinx 的环境与
  各页的文档树），所以与网站上显示的完全一致：标题写成“第 5 章　注意力机制”“5.3 查询、键、值……”，
  每个标题带一个与网站同名的锚点 ``<a id="…"></a>``（JupyterLab、Colab、GitHub 自己给标题生成的锚点
  各不相同，显式的 ``id`` 三处都认）；引用一节的 ``{numref}``、``{ref}`` 链到笔记本里的那个标题（同一章
  ``#锚点``，别的章 ``ch04_….ipynb#锚点``），读者不离开笔记本；“第 4 章”链到那一章的笔记本；“练习 5.1”
  等链到网站；``{eq}`` 写成“(4.1)”，带标签的公式里加 ``\\tag{4.1}``；``{prf:ref}`` 写成“定理 4.1”；``(标签)=`` 行删掉。
- ``{term}`` 链到网站术语表里的那一条，``{cite:p}`` 写成链到参考文献页的“(Vaswani et al., 2017)”
  （标签与网站同一写法，``_ext/bib_labels.py``）。
- 提示框、定理、证明、练习写成带粗体标题的 Markdown（提示框包在 ``<div>`` 里），可折叠的“包里的实现”
  写成 ``<details>``，里面是网站上 ``literalinclude`` 显示的同一段源码（Sphinx 自己的读取器取出）。
- 解答：每个解答（文字的 ``{solution}``，或 ``solution-start`` 与 ``solution-end`` 之间的单元格）整个折进
  一个 Markdown 单元格的 ``<details>``，摘要只写“练习 5.1 的解答（点击展开）”（见 :meth:`Converter.solution_cell`）。
- 图的说明（网站上由单元格元数据 ``mystnb.figure.caption`` 排在图下）成为图下的一行“图 5.1　……”；
  网站上 ``<img>`` 的替代文字（``mystnb.image.alt``）折在它下面的“图 5.1 的文字描述”里（笔记本的图输出
  没有放替代文字的地方）。
- 只属于网站的东西换成一行说明和网站那一节的链接：``remove-output`` 单元格保存的输出（控件的
  ``interactive(...)`` 文字、停在 0 步的进度条；单元格本身留着，运行它就出现）、``{raw}`` 嵌入的网页
  部件（第 8 章的浏览器内翻译器；它所在的整个单元格）、``<span class="site-weight">``（构建网站时才填写的称重）、
  只对网页读者说的提示框（``SITE_ONLY_ADMONITIONS``）。

代码单元格与它们的输出原样复制（nbval 核对过的输出就是笔记本版的输出），Colab 安装单元格仍是第一个。
附录里的术语表、符号表、参考文献是 Markdown 页面，不复制：笔记本版链到网站上的它们。
"""

from __future__ import annotations

import copy
import pickle
import re
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import nbformat
import yaml
from docutils import nodes
from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from myst_parser.config.main import MdParserConfig
from myst_parser.parsers.mdit import create_md_parser
from pybtex.database import parse_file
from sphinx.directives.code import LiteralIncludeReader

from _ext.bib_labels import author_year
from _ext.chapter_numbers import number_text
from _ext.cjk_typography import CJK
from tools.colab_setup import repository
from tools.execute_notebooks import WIDGET_VIEW, toc_notebooks
from tools.records import write_text

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = ROOT / "chapters"
EDITION = ROOT / "edition"
DOCTREES = ROOT / "_build" / ".doctrees"

# 网站上提示框的标题（sphinx 的 zh_CN 译文）
ADMONITION_TITLES = {
    "note": "备注",
    "warning": "警告",
    "tip": "小技巧",
    "hint": "提示",
    "important": "重要",
    "caution": "小心",
    "attention": "注意",
    "danger": "危险",
    "error": "错误",
    "seealso": "参见",
}
# sphinx-proof 的块在网站上的名字（它的 zh_CN 译文），与 sphinx-exercise 的练习
PROOF_NAMES = {
    "exercise": "练习",
    "theorem": "定理",
    "proposition": "命题",
    "corollary": "推论",
    "lemma": "引理",
    "definition": "定义",
}
# 只对网页读者说的话：笔记本里本来就有内核，这些提示框不复制
SITE_ONLY_ADMONITIONS = {"这个控件需要运行中的 Python 内核"}


def site_url() -> str:
    """网站地址：由 ``_config.yml`` 的仓库地址得出 GitHub Pages 的地址（仓库地址只写在那里）。"""
    url, _ = repository()
    owner, name = url.removeprefix("https://github.com/").split("/")[:2]
    return f"https://{owner.lower()}.github.io/{name}/"


def edition_notebooks() -> list[str]:
    """笔记本版包含的文件名：目录里的每个 .ipynb（.md 的附录链到网站）。"""
    return [path.name for path in toc_notebooks()]


COMMONMARK = MarkdownIt("commonmark")
# 段落里两个汉字（或中文标点）之间的换行（连同列表续行的缩进）：JupyterLab、Colab、GitHub 把它显示成一个空格，网站上
# _ext/cjk_typography.py 删掉它；笔记本版在转换时就删掉
# 下一行以链接开头、紧接着是汉字（“[第 4 章](…)”）也算；以 * 开头的不动：汉字后紧跟 *[ 时
# CommonMark 不认它是强调的开头（左侧定界规则），星号会原样显示
CJK_NEWLINE = re.compile(rf"(?<=[{CJK}])\n[ \t]*(?=\[?[{CJK}])")
# 只在这些块里删：代码块、公式块里的换行是内容
PROSE_BLOCKS = ("paragraph_open", "bullet_list_open", "ordered_list_open")


class Site:
    """网站构建留下的号与锚点：Sphinx 的环境（``environment.pickle``）与各页的文档树。"""

    def __init__(self, doctrees: Path = DOCTREES):
        pickled = doctrees / "environment.pickle"
        if not pickled.exists():
            raise FileNotFoundError(
                f"没有网站的构建（{pickled} 不存在）：笔记本版的章节号取自构建，"
                "先运行 python3 tasks.py book"
            )
        with pickled.open("rb") as file:
            env = pickle.load(file)
        self.url = site_url()
        self.labels = env.domaindata["std"]["labels"]  # 标签 -> (文档, 锚点, 标题)
        # 标签给出的锚点（(文档, 锚点)）：引用只会指向它们，笔记本版的标题只带这些锚点
        self.label_anchors = {(docname, anchor) for docname, anchor, _ in self.labels.values()}
        self.terms = {
            term: target
            for (kind, term), target in env.domaindata["std"]["objects"].items()
            if kind == "term"
        }
        self.secnumbers = env.toc_secnumbers
        self.fignumbers = env.toc_fignumbers
        self.doctrees = doctrees
        self._sections: dict[str, list] = {}
        bib = parse_file(str(ROOT / "references.bib")).entries
        self.citations = {key: author_year(entry) for key, entry in bib.items()}

    def page(self, docname: str, anchor: str = "") -> str:
        return f"{self.url}{docname}.html" + (f"#{anchor}" if anchor else "")

    def sections(self, docname: str) -> list[tuple[tuple[int, ...] | None, list[str]]]:
        """本页的每一节（文档顺序）：(网站上的号或 None, 它的全部锚点)。"""
        if docname not in self._sections:
            with (self.doctrees / f"{docname}.doctree").open("rb") as file:
                doctree = pickle.load(file)
            numbers = self.secnumbers.get(docname, {})
            self._sections[docname] = [
                (
                    numbers.get("" if section.parent is doctree else f"#{section['ids'][0]}"),
                    section["ids"],
                )
                for section in doctree.findall(nodes.section)
                # sphinx-exercise 的练习、解答内部的节没有标题，不是 Markdown 的标题
                if section.children and isinstance(section[0], nodes.title)
            ]
        return self._sections[docname]

    def number(self, docname: str, anchor: str) -> tuple[int, ...] | None:
        """图、公式、练习、定理或节的号（网站上显示的那个）。"""
        for ids in self.fignumbers.get(docname, {}).values():
            if anchor in ids:
                return ids[anchor]
        for number, anchors in self.sections(docname):
            if anchor in anchors:
                return number
        return None

    def numbered(self, anchor: str) -> tuple[str, str, tuple[int, ...]]:
        """按锚点找图、公式、定理……：(文档, 种类, 号)。"""
        for docname, figtypes in self.fignumbers.items():
            for kind, ids in figtypes.items():
                if anchor in ids:
                    return docname, kind, ids[anchor]
        raise ValueError(f"anchor must be numbered on the site, got anchor={anchor!r}")

    def label(self, label: str) -> tuple[str, str, str]:
        if label not in self.labels:
            raise ValueError(f"label must be defined on the site, got label={label!r}")
        return self.labels[label]


WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def widget_text(view: dict, state: dict) -> str:
    """控件输出的文字版：各控件的名字与取值、``Output`` 控件里打印的文字，加一句怎样操作。

    控件在笔记本里显示要有运行中的内核（或信任的笔记本里的控件状态）；没有时 JupyterLab、Notebook 7
    显示输出的 ``text/plain``，原来是 ``interactive(children=(Text(value=…`` 这样的 repr。这里换成
    保存的控件状态里读者在网站上看到的同样内容。
    """
    controls, printed = [], []

    def walk(model_id: str) -> None:
        model = state.get(model_id, {})
        values = model.get("state", {})
        if model.get("model_name") == "OutputModel":
            for output in values.get("outputs", []):
                text = output.get("text") or output.get("data", {}).get("text/plain", "")
                printed.append("".join(text).rstrip("\n"))
        elif values.get("description"):
            value = values.get("value")
            if "index" in values and values.get("_options_labels"):
                value = values["_options_labels"][values["index"]]
            controls.append(f"{values['description']}：{value}")
        for child in values.get("children", []):
            walk(child.removeprefix("IPY_MODEL_"))

    walk(view["model_id"])
    lines = ["　".join(controls)] if controls else []
    return "\n".join([*lines, *printed, "（运行这个单元格，就可以在这里操作控件）"])


def fenced(text: str, language: str) -> str:
    """把 ``text`` 写成代码块；围栏比其中最长的一串反引号多一个，里面的 ``` 不会提前结束它。"""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text.rstrip()}\n{fence}"


def dotted(numbers: tuple[int, ...]) -> str:
    return ".".join(map(str, numbers))


def details(summary: str, inner: str) -> str:
    return f"<details>\n<summary>{summary}</summary>\n\n{inner}\n\n</details>"


def split_role_target(text: str) -> tuple[str, str]:
    """MyST 角色的“显示文字 <目标>”写法：返回 (文字, 目标)；没有 <目标> 时两者相同。"""
    text = text.strip()
    if text.endswith(">") and "<" in text:
        title, target = text[:-1].rsplit("<", 1)
        return title.strip(), target.strip()
    return text, text


def split_options(body: str) -> tuple[dict[str, str], str]:
    """指令正文开头的 ``:键: 值`` 行（MyST 的选项写法）与其余的正文。"""
    options: dict[str, str] = {}
    lines = body.splitlines(keepends=True)
    while lines and lines[0].startswith(":") and lines[0].count(":") >= 2:
        key, _, value = lines.pop(0)[1:].partition(":")
        options[key.strip()] = value.strip()
    return options, "".join(lines).strip("\n")


@dataclass
class Chapter:
    """转换一章时的上下文：它在网站上的号、锚点，以及读到哪一节了。"""

    site: Site
    docname: str
    sections: list[tuple[tuple[int, ...] | None, list[str]]]
    anchor: str = ""  # 当前所在的节在网站上的锚点
    headings_seen: int = 0
    solutions: list[str] = field(default_factory=list)  # 读到的 solution-start 的练习标签

    def heading(self) -> tuple[tuple[int, ...] | None, list[str]]:
        """下一节在网站上的号，与它的锚点里由标签给出的那些（``(ch02-vocab)=``）。"""
        if self.headings_seen >= len(self.sections):
            raise ValueError(
                f"{self.docname}: 笔记本里的标题比网站上的节多，网站的构建过期了？"
                "（先运行 python3 tasks.py book）"
            )
        number, anchors = self.sections[self.headings_seen]
        self.anchor = anchors[0]
        self.headings_seen += 1
        return number, [a for a in anchors if (self.docname, a) in self.site.label_anchors]

    def section_link(self) -> str:
        number = self.site.number(self.docname, self.anchor) if self.anchor else None
        where = f"网站上的 {dotted(number)} 节" if number and len(number) > 1 else "网站上的这一页"
        return f"[{where}]({self.site.page(self.docname, self.anchor)})"


class Converter:
    def __init__(self, site: Site):
        self.site = site
        # 网站用的同一个 MyST 解析器：_config.yml 里的扩展与设置
        config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
        extensions = set(config["parse"]["myst_enable_extensions"])
        double_inline = config["sphinx"]["config"].get("myst_dmath_double_inline", False)
        settings = MdParserConfig(enable_extensions=extensions, dmath_double_inline=double_inline)
        self.md = create_md_parser(settings, RendererHTML)

    # ---- 块

    def markdown(self, text: str, chapter: Chapter) -> str:
        tokens = self.md.parse(text)
        lines = text.splitlines(keepends=True)
        out, pos, i = [], 0, 0
        while i < len(tokens):
            token = tokens[i]
            j = i
            if token.nesting == 1:  # 找到与它配对的结束记号
                depth = 0
                for j in range(i, len(tokens)):
                    depth += tokens[j].nesting
                    if depth == 0:
                        break
            start, end = token.map
            out.append("".join(lines[pos:start]))
            source = "".join(lines[start:end])
            out.append(self.block(token, tokens[i : j + 1], source, chapter))
            pos, i = end, j + 1
        out.append("".join(lines[pos:]))
        return "".join(out)

    def block(self, token, group, source: str, chapter: Chapter) -> str:
        if token.type == "myst_target":
            return ""  # (标签)= 行：网站上的锚点，笔记本里用不上
        if token.type == "math_block_label":
            number = self.site.number(chapter.docname, f"equation-{token.info}")
            if number is None:
                raise ValueError(
                    f"equation label must be numbered on the site, got label={token.info!r} "
                    f"in {chapter.docname}"
                )
            return f"$$\n{token.content.strip()}\n\\tag{{{dotted(number)}}}\n$$\n"
        if token.type in ("colon_fence", "fence") and token.info.startswith("{"):
            name, _, argument = token.info[1:].partition("}")
            return self.directive(name, argument.strip(), token.content, chapter)
        text = self.inline(group, source, chapter)
        if token.type in PROSE_BLOCKS and not any(t.type in ("fence", "code_block") for t in group):
            text = CJK_NEWLINE.sub("", text)
        if token.type == "heading_open":
            number, labelled = chapter.heading()
            title = text[len(token.markup) :].strip()
            # 与网站同名的锚点（节的标签）：引用这一节的链接（#锚点、ch04_….ipynb#锚点）跳到这里
            anchors = "".join(f'<a id="{a}"></a>' for a in labelled)
            return f"{token.markup} {number_text(number) if number else ''}{title}{anchors}\n"
        return text

    def lead(self, title: str, inner: str) -> str:
        """粗体的块标题接在第一段前面；块以公式、列表等开头时标题自成一段。"""
        first = self.md.parse(inner)[:1]
        joiner = "　" if first and first[0].type == "paragraph_open" else "\n\n"
        return f"{title}{joiner}{inner}\n"

    def directive(self, name: str, argument: str, body: str, chapter: Chapter) -> str:
        options, content = split_options(body)
        if name in ADMONITION_TITLES or name == "admonition":
            title = argument if name == "admonition" else ADMONITION_TITLES[name]
            if title in SITE_ONLY_ADMONITIONS:
                return ""
            inner = self.markdown(content, chapter).strip("\n")
            title_html = COMMONMARK.renderInline(self.inline(None, title, chapter))
            if "dropdown" in options.get("class", ""):
                return details(title_html, inner) + "\n"
            kind = "warning" if name in ("warning", "caution", "danger", "error") else "info"
            return (
                f'<div class="alert alert-block alert-{kind}">\n\n'
                f"**{title_html}**\n\n{inner}\n\n</div>\n"
            )
        if name.startswith("prf:") or name == "exercise":
            kind = name.removeprefix("prf:")
            inner = self.markdown(content, chapter).strip("\n")
            if kind == "proof":
                return self.lead("**证明**", f"{inner}　∎")
            number = self.site.number(chapter.docname, options["label"])
            title = f"（{self.inline(None, argument, chapter)}）" if argument else ""
            return self.lead(f"**{PROOF_NAMES[kind]} {dotted(number)}**{title}", inner)
        if name == "solution":
            inner = self.markdown(content, chapter).strip("\n")
            return self.folded_solution(argument, inner, chapter)
        if name == "solution-start":
            chapter.solutions.append(argument)  # 到 solution-end 为止的单元格折进一个 <details>
            return ""
        if name == "solution-end":
            return ""
        if name == "literalinclude":
            return self.literalinclude(argument, options)
        if name == "raw":
            return (
                "> 网页上这里嵌着一个只能在网站上运行的部件（HTML 与 JavaScript）："
                f"{chapter.section_link()}。\n"
            )
        if name == "inspector":
            # 网页上的“用训练好的模型看看”（_ext/inspector.py）：在浏览器里跑第 8 章的模型，笔记本里没有它
            inner = self.markdown(content, chapter).strip("\n")
            lead = f"{inner}\n\n" if inner else ""
            return (
                f"{lead}> **用训练好的模型看看**：网页上这里可以输入一句话，在浏览器里用"
                f"第 8 章训练好的模型看它的这一步（{chapter.section_link()}）。\n"
            )
        raise ValueError(
            f"MyST directive must be one the edition converts (tools/edition.py), "
            f"got directive={name!r} in {chapter.docname}"
        )

    def folded_solution(self, label: str, inner: str, chapter: Chapter) -> str:
        """练习 ``label`` 的解答折进 ``<details>``：摘要里只有练习的号，答案要点开才看得到。"""
        number = self.site.number(chapter.docname, label)
        return details(f"练习 {dotted(number)} 的解答（点击展开）", inner) + "\n"

    def literalinclude(self, argument: str, options: dict[str, str]) -> str:
        """网站上 ``literalinclude`` 显示的那段源码（用 Sphinx 自己的读取器取出）。"""
        path = (CHAPTERS / argument).resolve()
        config = SimpleNamespace(source_encoding="utf-8-sig")
        code, _ = LiteralIncludeReader(str(path), options, config).read()
        language = options.get("language", "python")
        return f"```{language}\n{code.rstrip()}\n```\n"

    # ---- 行内

    def inline(self, group, source: str, chapter: Chapter) -> str:
        """把块里解析器认出的 MyST 角色换成 CommonMark（按出现的顺序在源文字里逐个替换）。"""
        if group is None:
            group = self.md.parse(source)
        out, cursor = [], 0
        for child in (c for t in group if t.children for c in t.children):
            if child.type == "myst_role":
                original = f"{{{child.meta['name']}}}`{child.content}`"
                replacement = self.role(child.meta["name"], child.content, chapter)
            elif child.type == "html_inline" and 'class="site-weight"' in child.content:
                end = source.index("</span>", cursor) + len("</span>")
                start = source.index(child.content, cursor)
                original = source[start:end]
                replacement = f"（构建网站时称出，见{chapter.section_link()}）"
            else:
                continue
            start = source.index(original, cursor)
            out += [source[cursor:start], replacement]
            cursor = start + len(original)
        out.append(source[cursor:])
        return "".join(out)

    def role(self, name: str, content: str, chapter: Chapter) -> str:
        site = self.site
        if name == "numref":
            title, label = split_role_target(content)
            docname, anchor, _ = site.label(label)
            number = site.number(docname, anchor)
            if number is None:
                raise ValueError(
                    f"numref label must have a number on the site, got label={label!r} "
                    f"in {chapter.docname}"
                )
            text = title.replace("%s", dotted(number)) if title != label else dotted(number)
            notebook = Path(docname).name + ".ipynb"
            if len(number) == 1 and notebook in edition_notebooks():
                # “第 5 章”：链到笔记本版里同一目录的那一章，Colab、GitHub、JupyterLab 都在原地打开它
                return f"[{text}]({notebook})"
            return f"[{text}]({self.section_href(docname, anchor, chapter)})"
        if name == "eq":
            docname, _, number = site.numbered(f"equation-{content}")
            return f"[({dotted(number)})]({site.page(docname, 'equation-' + content)})"
        if name == "prf:ref":
            docname, kind, number = site.numbered(content)
            text = f"{PROOF_NAMES[kind]} {dotted(number)}"
            return f"[{text}]({site.page(docname, content)})"
        if name == "term":
            title, term = split_role_target(content)
            docname, anchor = site.terms[term]
            return f"[{title}]({site.page(docname, anchor)})"
        if name in ("cite:p", "cite"):
            page = site.page("chapters/appendix_references")
            cited = [f"[{site.citations[key.strip()]}]({page})" for key in content.split(",")]
            return f"({'; '.join(cited)})"
        if name == "ref":
            title, label = split_role_target(content)
            docname, anchor, section_title = site.label(label)
            text = section_title if title == label else title
            return f"[{text}]({self.section_href(docname, anchor, chapter)})"
        if name == "doc":
            title, target = split_role_target(content)
            return f"[{title}]({site.page('chapters/' + target)})"
        raise ValueError(
            f"MyST role must be one the edition converts (tools/edition.py), "
            f"got role={name!r} in {chapter.docname}"
        )

    def section_href(self, docname: str, anchor: str, chapter: Chapter) -> str:
        """链到一节：在笔记本版里的那一节是它的标题（同一章 ``#锚点``，别的章 ``ch04_….ipynb#锚点``，
        锚点是标题里的 ``<a id>``）；不是笔记本版里的一节（图、练习、Markdown 附录）时链到网站。"""
        notebook = Path(docname).name + ".ipynb"
        if notebook in edition_notebooks():
            if any(anchor in anchors for _, anchors in self.site.sections(docname)):
                return f"{'' if docname == chapter.docname else notebook}#{anchor}"
        return self.site.page(docname, anchor)

    # ---- 笔记本

    def notebook(self, path: Path):
        nb = nbformat.read(path, as_version=4)
        docname = f"chapters/{path.stem}"
        chapter = Chapter(self.site, docname, self.site.sections(docname))
        figures = iter(sorted(self.site.fignumbers.get(docname, {}).get("figure", {}).values()))
        cells: list = []
        solution: list | None = None  # 正在读的解答：它的单元格（到 solution-end 为止）
        for cell in nb.cells:
            if cell.cell_type == "markdown":
                before = len(chapter.solutions)
                text = self.markdown(cell.source, chapter).strip("\n")
                fences = [t.info for t in self.md.parse(cell.source) if t.info]
                if any(info.startswith("{raw}") for info in fences):
                    # 嵌入网页部件的单元格（第 8 章的浏览器内翻译器和它上面写给网页读者的说明）：
                    # 整格只属于网站，换成一行说明与链接
                    text = self.directive("raw", "", "", chapter).strip("\n")
                if len(chapter.solutions) > before:
                    solution = []
                if text:
                    new = nbformat.v4.new_markdown_cell(text, id=cell.get("id"))
                    (solution if solution is not None else cells).append(new)
                if any(info.startswith("{solution-end}") for info in fences):
                    if solution is None:
                        raise ValueError(f"{docname}: solution-end 前面没有 solution-start")
                    cells.append(self.solution_cell(solution, chapter))
                    solution = None
                continue
            cell = copy.deepcopy(cell)
            tags = cell.metadata.get("tags", [])
            site_only = None
            if "remove-output" in tags and cell.outputs:
                cell.outputs = []
                cell.execution_count = None
                site_only = nbformat.v4.new_markdown_cell(
                    id=f"{cell.id}-site",
                    source="> 运行上面的单元格，它的控件或进度条显示在这里（需要运行中的 Python 内核）；"
                    f"网页上这一格只列出代码，见{chapter.section_link()}。",
                )
            widgets = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
            for output in cell.get("outputs", []):
                if WIDGET_VIEW in output.get("data", {}) and widgets:
                    output.data["text/plain"] = widget_text(output.data[WIDGET_VIEW], widgets)
            mystnb = cell.metadata.get("mystnb", {})
            caption = None
            if mystnb.get("figure", {}).get("caption"):
                number = dotted(next(figures))
                text = f"**图 {number}**　{self.inline(None, mystnb['figure']['caption'], chapter)}"
                if alt := mystnb.get("image", {}).get("alt"):
                    # 网站上图的替代文字：笔记本的图输出没有放它的地方，折在图的说明下面
                    text += "\n\n" + details(
                        f"图 {number} 的文字描述", self.inline(None, alt, chapter)
                    )
                caption = nbformat.v4.new_markdown_cell(text, id=f"{cell.id}-caption")
            new = [c for c in (cell, site_only, caption) if c is not None]
            (solution if solution is not None else cells).extend(new)
        if solution is not None:
            raise ValueError(f"{docname}: solution-start 没有对应的 solution-end")
        if chapter.headings_seen != len(chapter.sections):
            raise ValueError(
                f"{docname}: 笔记本里有 {chapter.headings_seen} 个标题，网站上有 "
                f"{len(chapter.sections)} 节：网站的构建过期了？（先运行 python3 tasks.py book）"
            )
        nb.cells = cells
        return nb

    def solution_cell(self, solution: list, chapter: Chapter):
        """``solution-start`` 与 ``solution-end`` 之间的单元格合成一个折叠的 Markdown 单元格：文字照写，
        代码写成代码块，存着的输出跟在后面（文字写成代码块，PNG 图作为这个单元格的附件）。

        代码单元格不留：JupyterLab、Notebook 7 把折叠的代码单元格的第一行照样显示出来，GitHub 不认
        折叠的元数据、整格显示；``<details>`` 在这些地方和 Colab 都折叠。想运行它，复制到新的单元格里。
        """
        parts, attachments = [], {}
        for cell in solution:
            if cell.cell_type == "markdown":
                parts.append(cell.source)
                continue
            parts.append(fenced(cell.source, "python"))
            for output in cell.get("outputs", []):
                if output.output_type == "stream":
                    parts.append(fenced(output.text, "text"))
                elif output.output_type in ("execute_result", "display_data"):
                    data = output.data
                    if "image/png" in data:
                        name = f"{cell.id}-{len(attachments)}.png"
                        attachments[name] = {"image/png": data["image/png"]}
                        parts.append(f"![图](attachment:{name})")
                    elif "text/markdown" in data:
                        parts.append(data["text/markdown"])
                    elif "text/plain" in data:
                        parts.append(fenced(data["text/plain"], "text"))
        label = chapter.solutions[-1]
        folded = self.folded_solution(label, "\n\n".join(p.strip("\n") for p in parts), chapter)
        new = nbformat.v4.new_markdown_cell(
            folded.strip("\n"),
            id=f"{solution[0].id}-solution" if solution else None,
        )
        if attachments:
            new.attachments = attachments
        return new


def build(site: Site | None = None) -> dict[str, str]:
    """笔记本版的全部文件：{文件名: 内容}。"""
    converter = Converter(site or Site())
    return {
        name: nbformat.writes(converter.notebook(CHAPTERS / name)) + "\n"
        for name in edition_notebooks()
    }


def stale(files: dict[str, str]) -> list[str]:
    """与 ``files`` 不一致的 edition/ 文件（缺的、内容不同的、多余的）。"""
    on_disk = {p.name: p.read_text("utf-8") for p in EDITION.glob("*.ipynb")}
    return sorted(name for name in on_disk | files if on_disk.get(name) != files.get(name))


def write(files: dict[str, str]) -> None:
    EDITION.mkdir(exist_ok=True)
    for name, text in files.items():
        write_text(EDITION / name, text)
    for extra in {p.name for p in EDITION.glob("*.ipynb")} - set(files):
        (EDITION / extra).unlink()


if __name__ == "__main__":
    files = build()
    write(files)
    print(f"已写 {len(files)} 个笔记本到 {EDITION.relative_to(ROOT)}/")
