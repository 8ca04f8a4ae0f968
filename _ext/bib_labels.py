"""本书的一个小 Sphinx 扩展（_config.yml 里以 local_extensions 加载）：参考文献的标签与正文引用一致。

正文用 ``bibtex_reference_style: author_year`` 引用，读作“[Vaswani et al., 2017]”；sphinxcontrib-bibtex
默认的参考文献样式（pybtex 的 alpha 标签）却把条目标成“[VSP+17]”，读者对不上号。这里注册一个 pybtex
样式 ``author_year``：标签与正文引用同一写法（一位作者“Ba, 2016”，两位“Ioffe and Szegedy, 2015”，
三位及以上“Vaswani et al., 2017”；同名同年的加 a、b 区分），条目按作者、年份排序。
``_config.yml`` 的 ``bibtex_default_style: author_year`` 选用它；tests/book/test_site_typography.py 检查
参考文献页的每个标签都在正文的引用里出现过。

docutils 把参考文献列成 ``<div role="list">``，每条却标 ``role="doc-biblioentry"``：ARIA 1.3 已弃用这个角色，
它也不能放在 div 上，列表于是“没有列表项”（axe 的 aria-allowed-role、aria-deprecated-role、
aria-required-children；Lighthouse 的无障碍分因此是 92）。这里把每条改成 ``role="listitem"``，
tests/book/test_phone.py 用 axe 的全部规则检查参考文献页。
"""

from __future__ import annotations

from collections import Counter

from pybtex.plugin import register_plugin
from pybtex.style.formatting.unsrt import Style as UnsrtStyle
from pybtex.style.labels import BaseLabelStyle


def _last_name(person) -> str:
    return " ".join(person.last_names).replace("{", "").replace("}", "")


def author_year(entry) -> str:
    """正文引用的写法：``Vaswani et al., 2017``。"""
    people = entry.persons.get("author") or entry.persons.get("editor") or []
    names = [_last_name(p) for p in people]
    if len(names) >= 3:
        who = f"{names[0]} et al."
    elif len(names) == 2:
        who = f"{names[0]} and {names[1]}"
    elif names:
        who = names[0]
    else:
        who = entry.fields.get("title", entry.key)
    return f"{who}, {entry.fields.get('year', 'n.d.')}"


class AuthorYearLabelStyle(BaseLabelStyle):
    def format_labels(self, sorted_entries):
        entries = list(sorted_entries)
        labels = [author_year(e) for e in entries]
        counts, seen = Counter(labels), Counter()
        for label in labels:
            if counts[label] > 1:  # 同一作者同一年的几篇：2017a、2017b
                seen[label] += 1
                label += "abcdefghijklmnopqrstuvwxyz"[seen[label] - 1]
            yield label


class AuthorYearStyle(UnsrtStyle):
    default_label_style = "author_year"
    default_sorting_style = "author_year_title"


register_plugin("pybtex.style.labels", "author_year", AuthorYearLabelStyle)
register_plugin("pybtex.style.formatting", "author_year", AuthorYearStyle)


def biblio_entries_as_list_items(app, pagename, templatename, context, doctree) -> None:
    if "body" in context:
        context["body"] = context["body"].replace('role="doc-biblioentry"', 'role="listitem"')


def setup(app):
    app.connect("html-page-context", biblio_entries_as_list_items)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
