"""中文字形：用包内字体画带中文的图，任何“缺字形”警告都算失败。"""

import io
import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402

from tinyformer.book import plotting  # noqa: E402

CHINESE = "位置编码 注意力权重 层归一化：我爱北京天安门（缩放点积）"


def _render(fig) -> None:
    fig.savefig(io.BytesIO(), format="png")


def test_font_file_and_licence_ship_with_the_package():
    assert plotting.FONT_PATH.is_file()
    assert (
        (plotting.FONT_PATH.parent / "OFL.txt")
        .read_text()
        .startswith("This Font Software is licensed under the SIL Open Font License")
    )


def test_chinese_text_renders_without_missing_glyphs():
    plotting.setup_chinese_font()
    fig, ax = plt.subplots()
    ax.set_title(CHINESE)
    ax.set_xlabel("位置 pos −1.5")
    ax.plot([0, 1], [0, -1], label="维度 2i 与 2i+1")
    ax.legend()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # "Glyph ... missing from font(s)" 是 UserWarning
        _render(fig)
    plt.close(fig)


def test_without_the_font_the_same_figure_warns():
    """反面对照：只用 DejaVu Sans 时同一张图必然报缺字形，说明上一个测试能失败。"""
    with matplotlib.rc_context({"font.family": ["DejaVu Sans"]}):
        fig, ax = plt.subplots()
        ax.set_title(CHINESE)
        # matplotlib 3.8 起是 “missing from font(s)”，更早是 “missing from current font”
        with pytest.warns(UserWarning, match=r"missing from (current )?font"):
            _render(fig)
        plt.close(fig)


def test_heatmap_labels_and_bad_shapes():
    image = plotting.plot_heatmap(
        torch.rand(2, 3), ["查询一", "查询二"], list("键值对"), annotate=True
    )
    ax = image.axes
    assert [t.get_text() for t in ax.get_yticklabels()] == ["查询一", "查询二"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _render(ax.figure)
    with pytest.raises(ValueError, match="matrix must be 2-D"):
        plotting.plot_heatmap(torch.rand(2, 3, 4))
    with pytest.raises(ValueError, match="x labels must have 3 entries"):
        plotting.plot_heatmap(torch.rand(2, 3), col_labels=["a"])
    plt.close("all")


def test_annotations_are_readable_on_every_cell_colour():
    """字的颜色按格子的亮度选：发散色图中间接近白色的格子（接近 0 的值）写黑字，两端深色的格子写白字。"""
    image = plotting.plot_heatmap(
        torch.tensor([[-1.0, 0.0, 1.0]]), cmap="RdBu", annotate=True, vmin=-1, vmax=1
    )
    colors = [text.get_color() for text in image.axes.texts]
    assert colors == ["white", "black", "white"]
    plt.close("all")


def test_label_points_keeps_labels_apart_and_off_the_points():

    fig, ax = plt.subplots(figsize=(6, 4))
    generator = torch.Generator().manual_seed(0)
    xy = torch.rand(12, 2, generator=generator).tolist()
    xy[1] = [xy[0][0] + 1e-3, xy[0][1]]  # 两个几乎重合的点，原来的写法两个词叠在一起
    ax.scatter(*zip(*xy, strict=True))
    texts = plotting.label_points(ax, xy, [f"词{i}" for i in range(12)])
    fig.canvas.draw()
    boxes = [t.get_window_extent() for t in texts]
    overlapping = [(i, j) for i in range(12) for j in range(i) if boxes[i].overlaps(boxes[j])]
    assert overlapping == []
    assert [t.get_text() for t in texts] == [f"词{i}" for i in range(12)]
    _, ax2 = plt.subplots(figsize=(6, 4))
    ax2.scatter(*zip(*xy, strict=True))
    again = plotting.label_points(ax2, xy, [f"词{i}" for i in range(12)])
    assert [t.get_position() for t in again] == [t.get_position() for t in texts]  # 确定的
    plt.close("all")
    with pytest.raises(ValueError, match="same length"):
        plotting.label_points(ax, xy, ["一个"])
