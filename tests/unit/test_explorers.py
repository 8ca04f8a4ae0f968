"""tinyformer.book.explorers：各章探索器的数据是对的、控件的每个取值都有数据、图里嵌的就是这份数据。"""

import base64
import io
import json
import math
import re
import sys

import altair as alt
import pytest
from PIL import Image

from tests.kit import ROOT
from tinyformer import sinusoidal_encoding
from tinyformer.book import explorers


def bound_params(spec: dict) -> dict:
    """规格（连同子图）里绑定到控件的参数：名字 -> (初始值, 控件的取值列表；滑块给出 (min, max, step))。"""
    found = {}
    for sub in spec.get("layer", []) + spec.get("vconcat", []):
        found |= bound_params(sub)
    for p in spec.get("params", []):
        if "bind" not in p:
            continue
        bind = p["bind"]
        if bind["input"] == "range":
            values = (bind["min"], bind["max"], bind["step"])
        elif bind["input"] == "checkbox":
            values = [True, False]
        else:
            values = bind["options"]
        found[p["name"]] = (p["value"], values)
    return found


def assert_controls_cover_data(chart, rows):
    """每个控件的每个取值在数据里都有行（数据列与参数同名）；初始值也是其中之一。"""
    for name, (value, values) in bound_params(chart.to_dict()).items():
        column = {row[name] for row in rows}
        if isinstance(values, tuple):  # 滑块
            low, high, step = values
            values = list(range(low, high + 1, step))
        assert set(values) == column, name
        assert value in column, name


def test_embedding_scale_data_measures_what_the_chapter_says():
    rows = explorers.embedding_scale_data(d_models=(16, 64), vocab_size=500)
    assert len(rows) == 2 * 2 * 2 * 2  # d_model × 初始化 × 是否缩放 × (词向量, 位置编码)
    for row in rows:
        if row["what"] == "位置编码":  # sin² + cos² = 1：每对维度贡献 1
            assert row["norm"] == pytest.approx(math.sqrt(row["d_model"] / 2), rel=1e-3)
    shared = [
        r
        for r in rows
        if r["init"].startswith("N(0, 1/d_model)") and r["scaled"] and r["what"] == "词向量"
    ]
    for row in shared:  # N(0, 1/d) × √d 的范数约 √d，与位置编码 √(d/2) 之比约 √2
        assert row["ratio"] == pytest.approx(math.sqrt(2), rel=0.05)


def test_positional_curves_are_the_package_encoding():
    rows = explorers.positional_curves_data(d_model=8, bases=(100.0, 10000.0), max_len=6)
    assert len(rows) == 2 * 4 * 6
    for base in (100, 10000):
        pe = sinusoidal_encoding(6, 8, float(base))
        for row in (r for r in rows if r["base"] == base):
            assert row["sin"] == pytest.approx(pe[row["pos"], 2 * row["i"]].item(), abs=1e-4)
            assert row["cos"] == pytest.approx(pe[row["pos"], 2 * row["i"] + 1].item(), abs=1e-4)


def test_relative_position_dot_product_depends_only_on_k_when_paired():
    rows = explorers.relative_position_data(d_models=(16,), starts=(0, 7), k_max=5)
    paired = [r for r in rows if r["encoding"].startswith("sin/cos")]
    sin_only = [r for r in rows if r["encoding"] == "只用 sin"]
    omega = [10000 ** (-2 * i / 16) for i in range(8)]
    for row in paired:  # 与起点 p 无关：Σ cos(kω_i)，独立地用 math 算
        assert row["dot"] == pytest.approx(sum(math.cos(row["k"] * w) for w in omega), abs=1e-3)
    by_p = {p: [r["dot"] for r in sin_only if r["p"] == p] for p in (0, 7)}
    assert by_p[0] != by_p[7]  # 只用 sin：点积随起点变


def test_attention_weights_respect_masks_and_sum_to_one():
    rows = explorers.attention_data(head_dims=(4, 64))
    assert len(rows) == 2 * 2 * 4 * 6 * 6  # d_k × 是否缩放 × 掩码 × 查询 × 键
    groups = {}
    for r in rows:
        groups.setdefault((r["mask"], r["scaled"], r["d_k"], r["query"]), []).append(r)
    for (mask, _, _, query), row in groups.items():
        assert sum(r["weight"] for r in row) == pytest.approx(1.0, abs=1e-3)
        for r in row:
            if "填充" in mask and r["k_token"].endswith("<pad>"):
                assert r["weight"] == 0
            if "因果" in mask and r["key"] > query:
                assert r["weight"] == 0

    def peak(scaled):  # 不遮挡时每行最大权重的平均
        peaks = [
            max(r["weight"] for r in row)
            for (mask, s, d_k, _), row in groups.items()
            if mask == "不遮挡" and s == scaled and d_k == 64
        ]
        return sum(peaks) / len(peaks)

    assert peak(scaled=False) > peak(scaled=True)  # 不除以 √d_k：softmax 更接近 one-hot


def test_encoder_decoder_masks():
    rows = explorers.encoder_decoder_data()
    for r in rows:
        if not r["allowed"]:
            assert r["weight"] == 0
        if r["kind"] == "解码器掩码自注意力":
            assert r["allowed"] == (r["key"] <= r["query"])
        elif r["pad_mask"]:  # 编码器自注意力与交叉注意力：只遮住源句的填充
            assert r["allowed"] == (not r["k_token"].endswith("<pad>"))


@pytest.mark.parametrize(
    "name",
    ["embedding_scale", "positional_curves", "relative_position", "attention", "encoder_decoder"],
)
def test_explorer_embeds_its_data_within_budget_and_every_control_value_has_data(name):
    chart = getattr(explorers, f"{name}_explorer")()
    rows = explorers.chart_rows(chart)
    assert rows == getattr(explorers, f"{name}_data")()
    assert_controls_cover_data(chart, rows)
    size = sum(
        len(json.dumps(table, ensure_ascii=False, separators=(",", ":")).encode())
        for table in explorers.chart_datasets(chart)
    )
    assert 0 < size <= explorers.DATA_BUDGET


def test_dependency_rnn_gradient_decays_with_distance_and_attention_does_not():
    rows = explorers.dependency_data(lengths=(24,), scales=(0.5,))
    rnn = [r["grad"] for r in rows if r["model"] == "RNN"]
    attention = [r["grad"] for r in rows if r["model"] == "自注意力"]
    assert len(rnn) == len(attention) == 24
    assert rnn[0] < 1e-6 * rnn[-1]  # 最远的输入几乎影响不到输出
    assert max(attention) < 10 * min(attention)  # 自注意力：与距离无关，同一量级


def test_layer_norm_gradient_data_has_one_row_per_layer():
    rows = explorers.layer_norm_gradient_data(depths=(2, 3), d_model=8)
    for placement in ("post-LN", "pre-LN"):
        for depth in (2, 3):
            layers = [
                r["layer"] for r in rows if r["placement"] == placement and r["depth"] == depth
            ]
            assert layers == list(range(1, depth + 1))
    assert all(r["grad"] > 0 for r in rows)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: explorers.embedding_scale_data(vocab_size=0), "vocab_size"),
        (lambda: explorers.layer_norm_gradient_data(d_model=-1), "d_model"),
        (lambda: explorers.encoder_decoder_data(d_model=0), "d_model"),
        (lambda: explorers.checkpoint_data(num_sentences=0), "num_sentences"),
        (lambda: explorers.checkpoint_data(beam_size=0), "beam_size"),
        (lambda: explorers.sampling_data(shown=0), "shown"),
    ],
)
def test_bad_arguments_are_named(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_show_is_deterministic_and_offline_for_the_site(monkeypatch):
    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj, raw: shown.append((obj, raw)))
    chart = explorers.encoder_decoder_explorer()
    explorers.show(chart)
    explorers.show(chart)
    (first, raw), (second, _) = shown
    assert raw and first == second  # 没有随机 id：重复执行逐字节相同，nbval 可以比较
    assert set(first) == {explorers.VEGALITE_MIME_TYPE, "text/html", "text/plain"}
    assert first[explorers.VEGALITE_MIME_TYPE] == chart.to_dict()
    digest = first["text/plain"].rsplit("sha256 ", 1)[1].rstrip(">")
    assert f'id="tinyformer-chart-{digest}"' in first["text/html"]
    with pytest.raises(TypeError, match="chart"):
        explorers.show(chart.to_dict())


def stored_picture(html: str) -> tuple[bytes, int]:
    """探索器 HTML 里静态图的 PNG 字节与 <img> 的显示宽度。"""
    match = re.search(r'<img src="data:image/png;base64,([A-Za-z0-9+/=]+)" width="(\d+)"', html)
    assert match, "HTML 里没有静态图"
    return base64.b64decode(match[1]), int(match[2])


def test_html_is_the_notebook_template_that_draws_on_first_run():
    """JupyterLab 4 / Notebook 7 / Colab 的输出是 Altair 的 universal 模板，不是完整网页。

    完整网页模板（旧的输出）用 <script src=...> 从 CDN 加载 vega：在 JupyterLab 里这些标签不按顺序执行，
    打开时空白，运行时 ``vegaEmbed is not defined``。universal 模板在脚本里按顺序加载、再画到它前面的 div。
    """
    spec = explorers.encoder_decoder_explorer().to_dict(context={"pre_transform": False})
    html = explorers.render(spec)["text/html"]
    assert "<html" not in html and "<!DOCTYPE" not in html
    assert "<script src=" not in html
    assert "maybeLoadScript" in html and "document.currentScript" in html
    # 加载的正是 Altair 这一版要求的脚本（浏览器测试把这些地址导向 _vendor/ 里的同一构建）
    for name, version in (
        ("vega", alt.VEGA_VERSION),
        ("vega-lite", alt.VEGALITE_VERSION),
        ("vega-embed", alt.VEGAEMBED_VERSION),
    ):
        assert f"https://cdn.jsdelivr.net/npm/{name}@{version}?noext" in html
    # 画图的 div 在脚本前面（脚本用 document.currentScript.previousElementSibling 找它）
    assert html.index('<div id="tinyformer-chart-') < html.index("<script")


def test_static_picture_is_a_small_deterministic_png_of_the_chart():
    pytest.importorskip("vl_convert")
    spec = explorers.encoder_decoder_explorer().to_dict(context={"pre_transform": False})
    first = explorers.render(spec)["text/html"]
    png, width = stored_picture(first)
    assert explorers.render(spec)["text/html"] == first  # 同一规格两次画出同一张 PNG
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) <= PICTURE_BUDGET
    image = Image.open(io.BytesIO(png))
    assert image.width == width * explorers.PICTURE_SCALE  # 2 倍像素，按原尺寸显示
    # 画出了东西：白底上有许多种颜色（热力图的蓝色、文字），不是一张空白图
    colors = image.convert("RGB").getcolors(maxcolors=1024)
    assert colors is not None and len(colors) > 20
    assert max(colors)[1] == (255, 255, 255)  # 不透明的白底（深色主题里也看得见）
    # 静态图在图的 div 里，vega-embed 画图时先清空它
    div = re.search(r'<div id="tinyformer-chart-[0-9a-f]{16}">(.*?)</div>', first, re.S)
    assert div and "<img " in div[1] and explorers.PICTURE_NOTE in div[1]


def test_without_vl_convert_the_html_has_no_picture(monkeypatch):
    """没装 vl-convert-python（Colab、Binder）时 show 照常工作，只是没有静态图。"""
    monkeypatch.setitem(sys.modules, "vl_convert", None)  # import vl_convert 抛 ImportError
    spec = explorers.encoder_decoder_explorer().to_dict(context={"pre_transform": False})
    html = explorers.render(spec)["text/html"]
    assert re.search(r'<div id="tinyformer-chart-[0-9a-f]{16}"></div>', html)
    assert "data:image/png" not in html


def test_bpe_merges_data_replays_the_encoder_and_every_control_value_has_data():
    from tinyformer.bpe import ByteBPE
    from tinyformer.poetry.corpus import load_split

    bpe = ByteBPE.train(load_split("valid"), 400)
    sentences = ("床前明月光，", "Hi 🙂 诗")
    data = explorers.bpe_merges_data(bpe, sentences)
    for s, sentence in enumerate(sentences):
        rows = [r for r in data["tokens"] if r["s"] == s]
        last = rows[0]["n"]
        for k in range(last + 1):
            step = [r for r in rows if r["k"] == k]
            # 每一步的词元首尾相接，恰好铺满这句话的字节；每步（第 0 步除外）恰有一种新词元
            assert [r["x"] for r in step] == [
                sum(r["w"] for r in step[:i]) for i in range(len(step))
            ]
            assert sum(r["w"] for r in step) == len(sentence.encode())
            assert (k == 0) == (not any(r["new"] for r in step))
        assert len([r for r in rows if r["k"] == last]) == len(bpe.encode(sentence))
    chart = explorers.bpe_merges_explorer(bpe, sentences)
    assert sorted(map(str, explorers.chart_datasets(chart))) == sorted(map(str, data.values()))
    assert_controls_cover_data(chart, data["tokens"])
    assert explorers.bpe_merges.token_label("春".encode()[:2]) == "e698"


def test_checkpoint_data_on_the_shipped_weights():
    data = explorers.checkpoint_data(num_sentences=1, beam_size=2)
    (sentence,) = data["sentences"]
    labels = {row["key"]: row["label"] for row in data["tokens"]}
    for step in (100, 150, 600):
        cells = [c for c in data["cells"] if c["step"] == step]
        rows = {c["r"] for c in cells}
        for r in rows:  # 交叉注意力每行（各头平均）加起来是 1，只差两位小数的舍入
            row = [c["w"] for c in cells if c["r"] == r]
            assert sum(row) == pytest.approx(1.0, abs=0.005 * len(row) + 1e-9)
            assert f"{sentence['s']}-{step}-{r}" in labels
        assert len(cells) == len(rows) * len({c["c"] for c in cells})
    final = [t for t in data["translations"] if t["step"] == 600]
    assert [t["correct"] for t in final] == [t["text"] == sentence["en"] for t in final]


def test_sampling_data_is_the_package_distribution_and_every_control_value_has_data():
    data = explorers.sampling_data()
    chart = explorers.sampling_explorer()
    assert explorers.chart_datasets(chart) == [data["summary"], data["bars"]]
    assert_controls_cover_data(chart, data["bars"])
    for row in data["summary"]:
        bars = [
            b for b in data["bars"] if (b["t"], b["k"], b["p"]) == (row["t"], row["k"], row["p"])
        ]
        if row["k"]:  # top-k 最多留 k 个字
            assert row["kept"] <= row["k"]
            assert sum(b["prob"] > 0 for b in bars) <= row["k"]
        # 原始分布里最大的字总被留下；温度越低、截得越狠，它的概率越大
        assert bars[0]["prob"] == row["top"] > 0
    by = {(r["t"], r["k"], r["p"]): r["top"] for r in data["summary"]}
    assert by[0.5, 0, 1.0] > by[0.7, 0, 1.0] > by[1.0, 0, 1.0] > by[1.5, 0, 1.0]
    assert by[1.0, 3, 1.0] > by[1.0, 10, 1.0] > by[1.0, 50, 1.0] > by[1.0, 0, 1.0]


CHAPTERS = sorted(
    p for p in (ROOT / "chapters").glob("ch[0-9][0-9]_*.ipynb") if not p.stem.startswith("ch00")
)
PICTURE_BUDGET = 40_000  # 每张静态图的字节数上限（base64 之前）；现在 11–35 KB


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_every_chapter_has_an_explorer_that_works_without_a_kernel(path):
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    bundles = [
        output["data"]
        for cell in cells
        if cell["cell_type"] == "code"
        for output in cell.get("outputs", [])
        if explorers.VEGALITE_MIME_TYPE in output.get("data", {})
    ]
    assert bundles, f"{path.name} 没有保存 Vega-Lite 图的输出"
    for bundle in bundles:
        spec, html = bundle[explorers.VEGALITE_MIME_TYPE], "".join(bundle["text/html"])
        assert bound_params(spec), "图没有绑定到控件的参数"
        for rows in spec["datasets"].values():
            size = len(json.dumps(rows, ensure_ascii=False, separators=(",", ":")).encode())
            assert size <= explorers.DATA_BUDGET
        # JupyterLab、Colab 用 universal 模板；GitHub 上显示默认状态的静态图，大小在预算之内
        assert "maybeLoadScript" in html
        png, width = stored_picture(html)
        assert len(png) <= PICTURE_BUDGET
        assert Image.open(io.BytesIO(png)).width == width * explorers.PICTURE_SCALE


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_widgets_that_need_a_kernel_say_so_on_the_page(path):
    """ipywidgets 的交互控件（interact、翻译控件）上方有说明：需要内核，附本章的 Colab 与 Binder 链接。"""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    for index, cell in enumerate(cells):
        source = "".join(cell["source"])
        if cell["cell_type"] == "code" and (
            "interact(" in source or "translation_explorer(translator" in source
        ):
            note = "".join(cells[index - 1]["source"])
            assert note.startswith(":::{admonition}") and ":class: note" in note, source[:60]
            assert "需要运行中的 Python 内核" in note
            # 链接打开笔记本版（edition/，tools/edition.py），不是网站的源文件
            assert "colab.research.google.com/github/" in note and f"edition/{path.name}" in note
            assert "mybinder.org/v2/gh/" in note


def test_scaling_explorer_refits_without_each_size_and_embeds_its_data():
    from tinyformer.poetry import scale

    data = explorers.scaling_data(samples=5)
    sizes = list(scale.ISOFLOP_SIZES)
    assert [f["out"] for f in data["fits"]] == list(range(len(sizes) + 1))
    rows = scale.load_results()["runs"]
    for fit in data["fits"]:  # 去掉第 out 个尺寸之后的拟合（out = 0：全部）
        dropped = sizes[fit["out"] - 1] if fit["out"] else None
        kept = [r for r in rows if f"d{r['d_model']}L{r['num_layers']}" != dropped]
        points = {c: p for c, p in scale.isoflop_points(kept).items() if c in scale.BUDGETS}
        try:
            expected = scale.fit_isoflop(points, predict_at=3 * scale.BUDGETS[-1], resamples=0)
        except ValueError:  # 去掉它之后有一条抛物线开口向下：图上说出来，不画曲线
            assert fit["a"] is None and "开口向下" in fit["line"]
            assert not [r for r in data["curves"] if r["out"] == fit["out"]]
            continue
        assert fit["a"] == pytest.approx(expected["a"], abs=1e-2)
        assert f"{expected['loss_pred']:.2f} 比特/字" in fit["line"]
    every = [(p["budget"], p["n"], p["bpc"]) for p in data["points"]]
    best = scale.isoflop_points(rows)
    assert every == [(scale.budget_label(c), n, pytest.approx(v, abs=1e-3))
                     for c in scale.BUDGETS for n, v in best[c]]  # fmt: skip
    fitted = [f for f in data["fits"] if f["a"] is not None]
    assert len(data["curves"]) == 5 * len(scale.BUDGETS) * len(fitted) and len(fitted) >= 5
    chart = explorers.scaling_explorer()
    tables = explorers.chart_datasets(chart)
    assert sorted(map(len, tables)) == sorted(len(v) for v in explorers.scaling_data().values())
    assert_controls_cover_data(chart, data["fits"])


def test_ablation_explorer_has_both_seeds_of_every_row():
    from tinyformer.poetry.scale import ABLATIONS, SEEDS

    rows = explorers.ablation_data()
    assert {(r["row"], r["seed"]) for r in rows} == {(a, s) for a in ABLATIONS for s in SEEDS}
    chart = explorers.ablation_explorer()
    assert explorers.chart_rows(chart) == rows
    (value, options) = bound_params(chart.to_dict())["row"]
    assert value in options and set(options) == set(ABLATIONS) - {"gpt2"}
