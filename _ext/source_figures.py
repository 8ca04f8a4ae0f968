"""网站的“下载 .ipynb”（``_sources/`` 里各章的副本）里每张图只留 SVG。

各章的笔记本给每张图存两份：SVG（网站显示它）和两倍像素的 PNG（JupyterLab、Notebook 7 打开未被信任的
笔记本时只显示 PNG，见 ``tinyformer.book.plotting``）。网站的页面只用 SVG，PNG 只会让 ``_sources/`` 里的
副本变重（全书约多 8 MB）。构建结束时，在 ``light_pages`` 称重之前（本扩展在 ``_config.yml`` 里排在它前面），
去掉这些副本里与 SVG 并存的 PNG；读者在笔记本里打开的是笔记本版 ``edition/``，那里两份都在。
"""

from __future__ import annotations

import json
from pathlib import Path

SVG, PNG = "image/svg+xml", "image/png"


def drop_png_beside_svg(notebook: dict) -> int:
    """去掉 ``notebook`` 里与 SVG 并存的 PNG 输出（连同它的显示尺寸）；返回去掉了几份。"""
    dropped = 0
    for cell in notebook.get("cells", []):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if SVG in data and PNG in data:
                del data[PNG]
                output.get("metadata", {}).pop(PNG, None)
                dropped += 1
    return dropped


def _slim_sources(app, exception) -> None:
    if exception is not None or app.builder.format != "html":
        return
    for path in sorted(Path(app.outdir, "_sources").rglob("*.ipynb")):
        notebook = json.loads(path.read_text(encoding="utf-8"))
        if drop_png_beside_svg(notebook):
            text = json.dumps(notebook, indent=1, ensure_ascii=False) + "\n"
            path.write_text(text, encoding="utf-8")


def setup(app):
    app.connect("build-finished", _slim_sources)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
