"""第 8 章网页上的翻译器与第 9 章的写诗器（Sphinx 扩展，_config.yml 里以 local_extensions 加载）。

构建开始时（builder-inited）把随包发布的第 8 章检查点与写诗模型写成网页用的半精度权重
（``tinyformer.translation.export.export_for_page``、``tinyformer.poetry.export.export_poet``），写到
``_build/live_translator/translator_model/``、``_build/poem_writer/poem_model/``，连同浏览器端脚本
``_static_ch08/``、``_static_ch09/`` 加进 ``html_static_path``。各章的检查器（``_ext/inspector.py``）读翻译器的
那一份权重；写诗器的前向与采样也用翻译器的脚本（transformer.js、live_translator.js），不另放一份。
只有第 8、9 章那一格的 ``{raw} html`` 引用这些文件，别的页面不加载它们。

为什么构建时写、而不是把半精度的文件提交进仓库：权重已经随包发布一份，再提交一份转换过的
二进制文件，两者就可能不一致；构建时写保证网站上的模型就是包里的那个。写出的字节是确定的，
不到 1 秒；检查点、包的源代码和 torch 版本都没变时跳过。
"""

import hashlib
import json
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "_static_ch08"  # live_translator/live_translator.js → _static/live_translator/
POEM_SCRIPTS = ROOT / "_static_ch09"  # poem_writer/poem_writer.js → _static/poem_writer/
STEP = 600  # 第 8 章的分析用的检查点


def export_when_stale(out: Path, export, weights: Path | None = None) -> None:
    """``export()`` 只在随包发布的检查点（``weights``，默认第 8 章的）、包的源代码或 torch 的版本变了之后才运行。

    导出的图由整个包的代码决定，不只是导出它的那个模块，所以散列包括 ``src/tinyformer/`` 的全部源文件。
    散列记在 ``out/.stamp``（以点开头：Sphinx 不会把它复制进网站）。
    """
    import torch

    import tinyformer
    from tinyformer.translation.pretrained import checkpoint_path

    digest = hashlib.sha256()
    digest.update((weights or checkpoint_path(STEP)).read_bytes())
    for source in sorted(Path(tinyformer.__file__).parent.rglob("*.py")):
        digest.update(source.read_bytes())
    digest.update(torch.__version__.encode())
    stamp = out / ".stamp"
    if not (stamp.exists() and stamp.read_text() == digest.hexdigest()):
        shutil.rmtree(out, ignore_errors=True)  # 以前的导出（例如不再用的 .onnx）不留在网站里
        out.mkdir(parents=True)
        export()
        stamp.write_text(digest.hexdigest())


def export_model(app) -> None:
    import tinyformer.translation.export
    from tinyformer.translation.pretrained import load_translator

    out = Path(app.outdir).parent / "live_translator"  # _build/live_translator
    model_dir = out / "translator_model"

    def export() -> None:
        translator = load_translator(STEP)
        tinyformer.translation.export.export_for_page(translator, model_dir)
        write_grammar(translator, model_dir / "grammar.json")

    export_when_stale(out, export)
    app.config.html_static_path.extend([str(out), str(SCRIPTS)])


def export_poem_model(app) -> None:
    import tinyformer.poetry.export
    from tinyformer.poetry.pretrained import load_model, weights_path

    out = Path(app.outdir).parent / "poem_writer"  # _build/poem_writer

    def export() -> None:
        model, vocab = load_model()
        tinyformer.poetry.export.export_poet(model, vocab, out / "poem_model")

    export_when_stale(out, export, weights=weights_path())
    app.config.html_static_path.extend([str(out), str(POEM_SCRIPTS)])


GRAMMAR_OFFSET = 0x41  # 词元编号 i 写成字符 chr(0x41 + i)：一句话是一个短字符串


def write_grammar(translator, path: Path) -> None:
    """语法能生成的全部句子（tinyformer.translation.corpus.grammar_sentences），供网页判断句型在不在训练语料里。

    每句是它的源词元编号，编号 i 写成一个字符 chr(0x41 + i)，句与句之间用换行分开：
    12480 句约 110 KB（JSON 文本），浏览器把它放进一个 Set，与 tinyformer.translation.corpus.in_grammar 精确相同。
    """
    from tinyformer.atomic import atomic_write
    from tinyformer.translation.corpus import OUT_OF_GRAMMAR, grammar_sentences

    stoi = translator.src_vocab.stoi
    lines = sorted("".join(chr(GRAMMAR_OFFSET + stoi[w]) for w in s) for s in grammar_sentences())
    data = {"offset": GRAMMAR_OFFSET, "sentences": "\n".join(lines), "notice": OUT_OF_GRAMMAR}
    with atomic_write(path) as file:
        file.write(json.dumps(data, ensure_ascii=True).encode())


def setup(app):
    app.connect("builder-inited", export_model)
    app.connect("builder-inited", export_poem_model)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
