"""书的帮手：只有笔记本（各章）用到的工具，模型与翻译应用都不导入它们。

===============  ============================================================
模块             做什么
===============  ============================================================
``compare``      :func:`agree` 与 :func:`magnitude`：把“两个结果是否一致”印成对照容差的结论
``plotting``     画图：中文字体（显式调用才生效）、SVG、热力图、互不重叠的散点标签
``memory``       :func:`~tinyformer.book.memory.return_freed_memory`：del 掉的大张量立刻还给操作系统
``widgets``      需要内核的 ipywidgets 控件（翻译一句话、看交叉注意力）
``explorers``    网页上不需要内核的交互图，每章一个模块
===============  ============================================================

这里只导入轻的 :mod:`~tinyformer.book.compare`；画图与控件要 matplotlib、Altair、ipywidgets，用到时再导入。
"""

from .compare import agree, magnitude

__all__ = ["agree", "magnitude"]
