"""探索器共用的部分：数据舍入、控件参数、热力图、统一的字体与标题，以及把图输出到 Notebook 的 :func:`show`（见 :mod:`tinyformer.book.explorers`）。"""

from __future__ import annotations

import base64
import functools
import hashlib
import importlib.util
import io
import json
import operator
import subprocess
import sys
from html import escape
from pathlib import Path

import altair as alt
from torch import Tensor

from ..._checks import check_instance

DATA_BUDGET = 150_000  # 每张图内嵌数据（紧凑 JSON）的字节数上限
# Altair 6 自己用 application/vnd.vegalite.v6.json；nbformat 只允许以 +json 结尾的 MIME 类型存 JSON 对象
# （否则笔记本验证失败），所以这里沿用 v5 及以前的写法。
VEGALITE_MIME_TYPE = f"application/vnd.vegalite.v{alt.VEGALITE_VERSION.split('.')[0]}+json"
# 中文字形：网页与 Notebook 里都用读者系统上的中文字体
FONT = '"Noto Sans SC", "Noto Sans CJK SC", "Source Han Sans SC", "PingFang SC", "Microsoft YaHei", sans-serif'


def significant(value: float, digits: int = 4) -> float:
    """保留 ``digits`` 位有效数字。float64 的计算在不同 CPU 上只差最后几位，舍入后相同。"""
    return float(f"{value:.{digits}g}")


def chart_datasets(chart: alt.TopLevelMixin) -> list[list[dict]]:
    """图里内嵌的数据表（Altair 把它们放在规格的 ``datasets`` 里，按首次出现的顺序）。"""
    return list(chart.to_dict()["datasets"].values())


def chart_rows(chart: alt.TopLevelMixin) -> list[dict]:
    """只有一张数据表的图里的数据。测试用它核对图里的数据就是 ``xxx_data()`` 算的。"""
    (rows,) = chart_datasets(chart)
    return rows


def json_size(rows: list[dict]) -> int:
    """一张数据表写成紧凑 JSON 的字节数（UTF-8）。"""
    return len(json.dumps(rows, ensure_ascii=False, separators=(",", ":")).encode())


def finish(chart: alt.TopLevelMixin, title: str) -> alt.TopLevelMixin:
    """统一的字体与标题；检查数据不超预算。"""
    chart = chart.properties(title=title).configure(font=FONT).configure_view(stroke=None)
    size = sum(json_size(rows) for rows in chart_datasets(chart))
    assert size <= DATA_BUDGET, f"{title}: {size} bytes of data > DATA_BUDGET={DATA_BUDGET}"
    return chart


def filtered_by_controls(rows: list[dict], *controls: tuple) -> alt.Chart:
    """``rows`` 上的图，每个 ``(字段, 默认值, 标签, 控件)`` 一个绑定控件的参数，只留字段等于参数的行。

    控件的取值是数据里这个字段出现过的值（升序），见 :func:`control`。
    """
    params = [
        control(name, value, label, widget, sorted({r[name] for r in rows}))
        for name, value, label, widget in controls
    ]
    keep = functools.reduce(
        operator.and_,
        (
            getattr(alt.datum, name) == param
            for (name, *_), param in zip(controls, params, strict=True)
        ),
    )
    return alt.Chart(alt.InlineData(values=rows)).add_params(*params).transform_filter(keep)


def control(name: str, value, label: str, widget: str, options=(), labels=None) -> alt.Parameter:
    """绑定到一个控件的图参数。``widget``：radio、select、range（滑块）或 checkbox。

    ``options`` 是数据里出现的取值（升序）；滑块取它们的最小值、最大值和间隔。
    """
    options = list(options)
    if widget == "range":
        step = options[1] - options[0]
        bind = alt.binding_range(min=options[0], max=options[-1], step=step, name=f"{label} ")
    elif widget == "checkbox":
        bind = alt.binding_checkbox(name=f"{label} ")
    elif widget == "select" and labels is not None:
        bind = alt.binding_select(options=options, labels=list(labels), name=f"{label} ")
    elif widget == "select":
        bind = alt.binding_select(options=options, name=f"{label} ")
    else:
        bind = alt.binding_radio(options=options, name=f"{label} ")
    return alt.param(name=name, value=value, bind=bind)


def matrix_rows(weights: Tensor, queries, keys, allowed: Tensor | None = None, **common) -> list:
    """注意力权重矩阵 (Tq, Tk) 拆成一格一行：``common`` 的列 + 查询/键的序号与词元 + 权重（4 位小数）。"""
    rows = []
    for i, q_tok in enumerate(queries):
        for j, k_tok in enumerate(keys):
            row = {
                **common,
                "query": i,
                "key": j,
                "q_token": f"{i}:{q_tok}",
                "k_token": f"{j}:{k_tok}",
            }
            if allowed is not None:
                row["allowed"] = bool(allowed[i, j])
            rows.append({**row, "weight": round(weights[i, j].item(), 4)})
    return rows


def heatmap(base: alt.Chart, scheme: str, tooltip: list, text) -> alt.LayerChart:
    """热力图：每格一个色块，上面写着 ``text``（深色格用白字）。"""
    cells = base.mark_rect(stroke="white").encode(
        color=alt.Color("weight:Q", scale=alt.Scale(domain=[0, 1], scheme=scheme), title="权重"),
        tooltip=tooltip,
    )
    labels = base.mark_text(fontSize=11).encode(
        text=text,
        color=alt.condition(alt.datum.weight > 0.5, alt.value("white"), alt.value("black")),
    )
    return alt.layer(cells, labels)


# ---- 渲染：Vega-Lite 规格、Notebook 用的 HTML 与静态图


def render(spec: dict, **metadata) -> dict:
    """一张图的三种表示：Vega-Lite 规格 + 确定的 HTML（内含默认状态的静态图）+ 一行文字（见模块说明）。

    签名与 Altair 的渲染器相同，也可以 ``alt.renderers.register("tinyformer", render)`` 后启用。
    """
    from altair.utils.mimebundle import spec_to_mimebundle

    text = json.dumps(spec, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    div = f"tinyformer-chart-{digest}"
    # Altair 自己的 Notebook 模板（它的 default、colab 渲染器用的就是它）：脚本按需加载，第一次运行就画。
    # 完整网页的 "standard" 模板在 JupyterLab 4、Notebook 7 里是空白（模块说明）。
    html = spec_to_mimebundle(
        spec,
        format="html",
        mode="vega-lite",
        template="universal",
        vega_version=alt.VEGA_VERSION,
        vegaembed_version=alt.VEGAEMBED_VERSION,
        vegalite_version=alt.VEGALITE_VERSION,
        embed_options={"renderer": "svg", "actions": False},
        output_div=div,
        **metadata,
    )["text/html"]
    title = spec.get("title", "")
    picture = _picture(spec)
    if picture is not None:
        empty = f'<div id="{div}"></div>'
        assert html.count(empty) == 1, "Altair 的 universal 模板变了：找不到图的空 div"
        html = html.replace(empty, f'<div id="{div}">{_picture_html(picture, title)}</div>')
    datasets = spec.get("datasets", {}).values()
    rows = sum(len(rows) for rows in datasets)
    size = sum(json_size(rows) for rows in datasets)
    plain = f"<交互图「{title}」：{rows} 行数据，{size / 1000:.1f} KB，sha256 {digest}>"
    return {VEGALITE_MIME_TYPE: spec, "text/html": html, "text/plain": plain}


PICTURE_SCALE = 2  # 静态图按 2 倍像素画，显示成原尺寸：高分屏上也清楚
PICTURE_NOTE = (
    "静态图：控件的默认取值。在 JupyterLab、Colab 里运行这个单元格，或在本书网页上，可以拖动控件。"
)


def _picture(spec: dict) -> bytes | None:
    """图在默认控件取值下的 PNG（vl-convert，不用浏览器）；没装 ``vl-convert-python`` 时返回 None。

    vl-convert 在一个子进程里画：它带着一整个 JavaScript 引擎（V8），在内核里加载会让每一章的峰值
    内存多出约 180 MB 并一直占着（附录“执行统计”，本书要求每章 ≤ 800 MB）。中文用随包发布的
    Noto Sans SC 子集（``tinyformer/book/fonts/``，规格里的字体列表排在第一）。图存成 256 色的调色板 PNG：每张
    11–35 KB，而 vl-convert 直接给的真彩 PNG 是它的 7 倍。vl-convert 与 Pillow 都不用 torch，同一
    版本在任何 CPU、任何线程数上逐字节相同。
    """
    if importlib.util.find_spec("vl_convert") is None:
        return None
    from PIL import Image

    png = subprocess.run(
        [
            sys.executable,
            "-c",
            _DRAW,
            str(Path(__file__).parent.parent / "fonts"),
            ".".join(alt.VEGALITE_VERSION.split(".")[:2]),
            str(PICTURE_SCALE),
        ],
        input=json.dumps(spec).encode(),
        capture_output=True,
        check=True,
    ).stdout
    image = Image.open(io.BytesIO(png)).convert("RGB")
    image = image.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=True)
    return buffer.getvalue()


# 子进程里运行的程序：参数是字体目录、Vega-Lite 版本、放大倍数；规格从 stdin 读，PNG 写到 stdout
_DRAW = """
import json, sys
import vl_convert
fonts, version, scale = sys.argv[1:]
vl_convert.register_font_directory(fonts)
png = vl_convert.vegalite_to_png(
    json.load(sys.stdin), vl_version=version, scale=float(scale),
    config={"background": "white"},  # 透明底在深色主题里看不见黑字
)
sys.stdout.buffer.write(png)
"""


def _picture_html(png: bytes, title: str) -> str:
    """静态图的 HTML：vega-embed 画图时先清空这个 div，所以有 JavaScript 的地方只看到交互图。"""
    from PIL import Image

    width = Image.open(io.BytesIO(png)).width // PICTURE_SCALE
    data = base64.b64encode(png).decode()
    alt_text = escape(f"{title}（{PICTURE_NOTE}）", quote=True)
    return (
        f'<img src="data:image/png;base64,{data}" width="{width}" alt="{alt_text}">'
        f"<p><small>{PICTURE_NOTE}</small></p>"
    )


def show(chart: alt.TopLevelMixin) -> None:
    """在 Notebook 里显示 ``chart``：输出 :func:`render` 的三种表示，不改 Altair 当前的渲染器。

    与直接把图写在单元格最后一行（Altair 用当前渲染器显示）相比，图的 id 取规格的散列，重复执行
    逐字节相同（nbval 核对保存的输出）。
    """
    check_instance("chart", chart, alt.TopLevelMixin)
    from IPython.display import display

    # 与 Altair 的 _repr_mimebundle_ 相同：不在 Python 里预先做数据变换
    display(render(chart.to_dict(context={"pre_transform": False})), raw=True)
