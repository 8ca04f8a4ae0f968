"""本书的一个小 Sphinx 扩展（_config.yml 里以 local_extensions 加载）：网页界面的文字都是简体中文。

界面文字来自几处，各用各的办法：

- Sphinx 与 pydata-sphinx-theme 的模板文字（domain ``sphinx``）：``locale/zh_CN/LC_MESSAGES/sphinx.po``。
  ``_config.yml`` 的 ``locale_dirs`` 指向 ``locale/``，Sphinx 自己把它编译成 .mo，并让它排在 Sphinx
  与主题自带的目录前面。
- sphinx-book-theme 的文字（domain ``booktheme``）：主题只从自己的目录里找，那里的 zh_CN 还是繁体
  用语（“列印成 PDF”）。这里在构建开始时把 ``locale/zh_CN/LC_MESSAGES/`` 里其余的 .po（即
  ``booktheme.po``）编译成 .mo，排到该 domain 的翻译链最前面；没收的条目仍由主题的目录翻译。
- myst-nb 折叠代码单元格的提示（“Show code cell source”）：myst-nb 在后变换里把 ``{type}`` 代入英文，
  这里紧接着用 domain ``sphinx`` 的目录翻译整句。
- 主题模板里写死的英文（“Toggle primary sidebar”）：``_templates/`` 里同名的模板覆盖它们；搜索框与
  折叠提示在 ``_config.yml`` 里配置。

tests/book/test_site_typography.py 扫描构建出的 HTML，检查界面上不剩一张英文清单里的任何一条。
"""

from __future__ import annotations

import gettext

from docutils import nodes
from sphinx import locale
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util.i18n import CatalogRepository

_ = locale.get_translation("sphinx")


def _put_catalogs_first(app) -> None:
    language = app.config.language
    repo = CatalogRepository(
        app.srcdir, app.config.locale_dirs, language, app.config.source_encoding
    )
    for catalog in repo.catalogs:
        if catalog.domain == "sphinx":
            continue  # Sphinx 自己编译并放在最前面
        if catalog.is_outdated():
            catalog.write_mo(language)
        with open(catalog.mo_path, "rb") as file:
            ours = gettext.GNUTranslations(file)
        key = ("general", catalog.domain)
        theirs = locale.translators.get(key)  # 主题 setup() 里 add_message_catalog 装上的目录
        if theirs is not None:
            ours.add_fallback(theirs)
        # 不用 app.add_message_catalog：它把后加的目录排在已有目录的后面，覆盖不了主题的条目
        locale.translators[key] = ours


class TranslateCellPrompts(SphinxPostTransform):
    """myst-nb 的 HideInputCells（优先级 199）代入 {type} 之后，把折叠提示翻译成中文。"""

    default_priority = 200
    formats = ("html",)

    def run(self, **kwargs) -> None:
        for node in self.document.findall(nodes.Element):
            if "prompt_show" not in node.attributes:
                continue
            node["prompt_show"] = _(node["prompt_show"])
            node["prompt_hide"] = _(node["prompt_hide"])


def setup(app):
    app.connect("builder-inited", _put_catalogs_first)
    app.add_post_transform(TranslateCellPrompts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
