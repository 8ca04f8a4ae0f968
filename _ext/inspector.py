"""各章网页上的“用训练好的模型看看”（Sphinx 扩展，_config.yml 里以 local_extensions 加载）。

1. 模型是网页翻译器的那一份（``_ext/live_translator.py`` 写的 ``_static/translator_model/``），前向是它旁边的
   ``_static/live_translator/transformer.js``，它按名字记下每一个中间结果；所有页面、翻译器和检查器共用一份模型，
   浏览器缓存它。这里只把浏览器端脚本 ``_static_inspector/`` 加进 ``html_static_path``。
2. 指令 ``inspector``：章节里写一个 markdown 单元格::

       ```{inspector} attention
       :sentence: 她明天在家写作业吗？

       这里是 {numref}`%s 节 <ch05-mask>` 算的注意力权重……（可选的说明，照常按 MyST 解析）
       ```

   参数是视图的名字（:data:`VIEWS`）。网页上它是一个折叠的 ``<details>``，读者打开它时 ``inspector.js`` 才加载
   分词与前向的脚本和模型——页面打开时只多一个约 20 KB 的脚本。笔记本版（tools/edition.py）可以把整个指令换成
   一行指向网站的链接。

页面级的 JavaScript 接口见 inspector.js 开头；tests/book/test_inspector.py 用它们核对网页上的数与 Python 包的相同。
"""

import html
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "_static_inspector"  # inspector/inspector.js → _static/inspector/
VIEWS = ("embedding", "positional", "attention", "norm_ffn", "stack", "decoding")
DEFAULT_SENTENCE = "她明天在家写作业吗？"


def add_scripts(app) -> None:
    app.config.html_static_path.append(str(SCRIPTS))


def model_megabytes(app) -> str:
    """读者打开检查器时下载的模型（权重与词表）有多少 MB。"""
    model = Path(app.outdir).parent / "live_translator" / "translator_model"
    size = sum(
        (model / name).stat().st_size for name in ("translator.safetensors", "translator.json")
    )
    return f"{size / 1e6:.1f}"


class InspectorDirective(SphinxDirective):
    required_arguments = 1
    has_content = True
    option_spec = {"sentence": directives.unchanged}

    def run(self):
        view = self.arguments[0]
        if view not in VIEWS:
            raise self.error(f"inspector view must be one of {VIEWS}, got {view!r}")
        sentence = self.options.get("sentence", DEFAULT_SENTENCE)
        static = "../" * self.env.docname.count("/") + "_static/"
        attributes = {
            "class": "tf-inspector",
            "data-view": view,
            "data-sentence": sentence,
            "data-model": static + "translator_model/",
            "data-text": static + "live_translator/live_translator.js",
        }
        opening = "".join(f' {k}="{html.escape(v)}"' for k, v in attributes.items())
        head = f'<details{opening}><summary>用训练好的模型看看</summary><div class="tfi-body">'
        controls = (
            # 标签、文本框、按钮之间不留空白字符（间距由样式给出）：汉字之间的空格在网页上是多余的空隙
            '<div class="tfi-controls"><label>中文句子'
            f'<input type="text" class="tfi-sentence" value="{html.escape(sentence)}"></label>'
            '<button type="button" class="tfi-run">看看</button></div>'
            f'<div class="tfi-status" role="status">打开时下载模型（{model_megabytes(self.env.app)} MB，'
            "各章共用，只下载一次）。</div>"
            '<div class="tfi-view" aria-live="polite"></div></div></details>'
            f'<script src="{static}inspector/inspector.js"></script>'
        )
        body = nodes.container(classes=["tfi-intro"])
        self.state.nested_parse(self.content, self.content_offset, body)
        result = [nodes.raw("", head, format="html")]
        if self.content:
            result.append(body)
        result.append(nodes.raw("", controls, format="html"))
        return result


def setup(app):
    app.connect("builder-inited", add_scripts)
    app.add_directive("inspector", InspectorDirective)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
