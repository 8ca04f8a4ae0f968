"""第 9 章网页上的写诗器（Sphinx 扩展，_config.yml 里以 local_extensions 加载）。

构建开始时（builder-inited）把随包发布的写诗模型 ``tinyformer.poetry.pretrained.load_model()`` 写成网页用的
半精度权重（``tinyformer.poetry.export.export_poet``）到 ``_build/poem_writer/poem_model/``，再把它和仓库里的
浏览器端脚本 ``_static_ch09/`` 加进 ``html_static_path``：网站里是 ``_static/poem_model/``（poet.safetensors、
poet.json）和 ``_static/poem_writer/poem_writer.js``。前向（``_static/live_translator/transformer.js`` 的
``gptLogits``）与共用的解码/采样脚本（``_static/live_translator/live_translator.js``）是第 8 章网页翻译器的
那一份，不另放一份。

与网页翻译器同一条规则（``live_translator.export_when_stale``）：随包的权重、包的源代码和 torch 版本都没变时
跳过（``.stamp``）。只有“只有解码器”一章的页面（chapters/ch09_gpt_poetry.ipynb 里那一格的 ``{raw} html``）引用
这些文件，而且读者按下“写诗”之前浏览器不请求它们。
"""

from pathlib import Path

# _ext/ 在 sys.path 上
from live_translator import export_when_stale

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "_static_ch09"  # poem_writer/poem_writer.js → _static/poem_writer/


def export_model(app) -> None:
    import tinyformer.poetry.export
    from tinyformer.poetry.pretrained import load_model, weights_path

    out = Path(app.outdir).parent / "poem_writer"  # _build/poem_writer
    model_dir = out / "poem_model"

    def export() -> None:
        model, vocab = load_model()
        tinyformer.poetry.export.export_poet(model, vocab, model_dir)

    out.mkdir(parents=True, exist_ok=True)
    export_when_stale(out, export, weights=weights_path())
    app.config.html_static_path.extend([str(out), str(SCRIPTS)])


def setup(app):
    app.connect("builder-inited", export_model)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
