"""本书的一个小 Sphinx 扩展（_config.yml 里以 local_extensions 加载）：编号按章重新开始。

_toc.yml 没有 ``numbered: true``（各章的标题和“x.y 节”是手写的），这时 Sphinx 给可编号对象
（sphinx-exercise 的练习、sphinx-proof 的定理/命题/推论、带编号的图表）排的是全书连续的号：
第 4 章的第一道练习成了“练习 12”。这里在 Sphinx 排好号之后（``env-get-updated``，排在 Sphinx 自己的处理函数后面）把每篇文档里的号
改成“章号.序号”：文件名 ``chNN_...`` 的第 4 章依次是 4.1、4.2……，没有章号的文档（前言、附录）是 1、2……
引用（``{prf:ref}``、解答里指回练习的链接）读的是同一张表，所以一起变。公式（displaymath）也在这张表里，同样变成 (4.1)、(4.2)……
"""

import re


def number_per_chapter(app, env) -> list[str]:
    changed = []
    for docname, figtypes in env.toc_fignumbers.items():
        chapter = re.search(r"(?:^|/)ch(\d+)_", docname)
        for ids in figtypes.values():
            in_order = sorted(ids, key=ids.get)  # Sphinx 的号按文档里出现的先后递增
            for n, node_id in enumerate(in_order, 1):
                number = (int(chapter.group(1)), n) if chapter else (n,)
                if ids[node_id] != number:
                    ids[node_id] = number
                    changed.append(docname)
    return sorted(set(changed))  # 这些文档要重新写出（号变了）


def setup(app):
    app.connect("env-get-updated", number_per_chapter, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
