"""Sphinx 本地扩展：由术语表生成 jieba 用户词典，让网页搜索找得到“位置编码”这样的复合术语。

``language: zh_CN`` 时，Sphinx 用 jieba 的 ``cut_for_search`` 给搜索索引分词：词典里没有的
“位置编码”被切成“位置”“编码”，而浏览器里的搜索框不分词，整词“位置编码”就查不到。
``sphinx.search.zh`` 会读 ``html_search_options["dict"]`` 指向的 jieba 用户词典；本扩展在
构建开始时（``config-inited``）从术语表的 ``{glossary}`` 指令里取出含汉字的术语，写成这个词典。
术语表（``_config.yml`` 的 ``search_dict_glossary``）是唯一的出处：加一个术语，下次构建它就能被
搜索到；词典只在 ``_build/`` 里，不进仓库。

``sphinx.search.zh`` 按当前工作目录解析这个路径，而且文件不存在时不报错、悄悄不用；所以
这里把它换成绝对路径。词典内容变了（术语有增删）时，所有页面重新读入，索引才会用新词典重切。
``tests/book/test_search_index.py`` 检查构建出的 ``searchindex.js`` 里确实有这些整词。

查询一侧用同一个词典：浏览器里的搜索框只按空白和标点切词，“位置编码的公式”整串是一个词，什么也
找不到。本扩展把中文的搜索语言换成 ``SearchChineseWithDictionary``：索引照旧由 jieba 切，网页的
``language_data.js`` 里多一段 ``_ext/search_zh.js``（连同这个词典），在浏览器里按正向最大匹配切查询，
并让讲术语的章节排在附录前面、摘要里的公式显示成纯文本。
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from sphinx.search.zh import SearchChinese

CJK = re.compile(r"[\u4e00-\u9fd5]")
# jieba 只在这些字符组成的片段里查词典（jieba.re_han_default）；含别的字符（如“–”）的词永远匹配不上
JIEBA_WORD = re.compile(r"[\u4e00-\u9fd5a-zA-Z0-9+#&._%-]+")
FENCE = re.compile(r"^(?P<fence>:{3,}|`{3,})\s*\{glossary\}")


def glossary_terms(text: str) -> list[str]:
    """术语表源文件（MyST）里所有 ``{glossary}`` 指令的术语行，按出现顺序。

    与 Sphinx 的 glossary 指令同样的规则：指令体里不缩进的非空行是术语（一条定义前可以有
    几行同义的术语），缩进的行是定义，``:`` 开头的是选项。
    """
    terms: list[str] = []
    closing = None
    for line in text.splitlines():
        if closing is None:
            match = FENCE.match(line)
            if match:
                closing = match.group("fence")
            continue
        if line.strip() == closing:
            closing = None
        elif line.strip() and not line[0].isspace() and not line.startswith(":"):
            terms.append(line.strip())
    return terms


def dictionary_words(text: str) -> list[str]:
    """写进 jieba 词典的词：含汉字、jieba 能整体匹配的术语，去重、排序。

    单个字不写：Sphinx 的中文索引本来就丢掉单字（``SearchChinese.word_filter``）。
    """
    return sorted(
        {
            t
            for t in glossary_terms(text)
            if CJK.search(t) and len(t) > 1 and JIEBA_WORD.fullmatch(t)
        }
    )


def dictionary_text(text: str) -> str:
    # 不写词频：jieba 会给一个刚好能把整词切出来的词频
    return "".join(f"{word}\n" for word in dictionary_words(text))


def _write_dictionary(app, config) -> None:
    root = Path(app.srcdir)
    options = dict(config.html_search_options or {})
    if not config.search_dict_glossary or "dict" not in options:
        return
    source = (root / config.search_dict_glossary).read_text(encoding="utf-8")
    target = (root / options["dict"]).resolve()
    content = dictionary_text(source)
    previous = target.read_text(encoding="utf-8") if target.exists() else None
    app._search_dict_changed = previous != content  # 构建环境在此之后才建立
    if previous != content:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
    options["dict"] = str(target)
    config.html_search_options = options


def _outdated_when_dictionary_changed(app, env, added, changed, removed):
    # 词典变了：所有页面都要重新分词，否则没重读的页面在索引里还是旧的切法
    if getattr(app, "_search_dict_changed", False):
        return sorted(set(env.found_docs) - set(added) - set(changed))
    return []


SEARCH_SCRIPT = Path(__file__).with_name("search_zh.js")


class SearchChineseWithDictionary(SearchChinese):
    def init(self, options: dict[str, str]) -> None:
        super().init(options)
        path = Path(options.get("dict", ""))
        words = path.read_text(encoding="utf-8").split() if path.is_file() else []
        script = SEARCH_SCRIPT.read_text(encoding="utf-8")
        placeholder = "/*DICTIONARY*/ []"
        assert placeholder in script, f"{SEARCH_SCRIPT} lost its {placeholder!r}"
        self.js_splitter_code = script.replace(placeholder, json.dumps(words, ensure_ascii=False))


def setup(app):
    app.add_search_language(SearchChineseWithDictionary)
    app.add_config_value("search_dict_glossary", "", "html")
    app.connect("config-inited", _write_dictionary)
    app.connect("env-get-outdated", _outdated_when_dictionary_changed)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
