"""画图：让 matplotlib 显示真正的中文字形，并提供全书共用的几种图（各章都会用到）。

导入本模块不改变任何全局设置（像 ``plt.style.use`` 一样，样式由调用的人决定）：各章在第一个代码单元格里
调用一次 :func:`setup_chinese_font`，它把包内自带的 Noto Sans SC 子集（SIL OFL 1.1，见 ``fonts/OFL.txt``）
注册给 matplotlib，并把它放进 ``font.family`` 的回退列表里。不下载、不写 matplotlib 的安装目录，
Colab 上也不用重启内核。
"""

from __future__ import annotations

from pathlib import Path

import matplotlib
import matplotlib.pyplot as plt
from matplotlib import font_manager

FONT_PATH = Path(__file__).with_name("fonts") / "NotoSansSC-Regular-GB2312.otf"
FONT_NAME = "Noto Sans SC"


def setup_chinese_font() -> str:
    """注册包内的中文字体，并设为 DejaVu Sans 之后的回退字体；返回字体名。

    它改的是 matplotlib 的全局设置（``font.family``、``axes.unicode_minus``、``svg.hashsalt``），在 Jupyter
    内核里还让每张图同时存成 SVG 和两倍分辨率的 PNG（见 :func:`_inline_figures`），所以由各章在导入单元格里显式调用一次，导入本模块时不调用。matplotlib 只会在 ``font.family`` 列出的字体之间逐字回退（在 ``font.sans-serif``
    里列字体不起作用），所以这里设置的是 ``font.family``。可以重复调用。

    例子::

        >>> setup_chinese_font()
        'Noto Sans SC'
    """
    if FONT_NAME not in {f.name for f in font_manager.fontManager.ttflist}:
        font_manager.fontManager.addfont(str(FONT_PATH))
    matplotlib.rcParams["font.family"] = ["DejaVu Sans", FONT_NAME]
    matplotlib.rcParams["axes.unicode_minus"] = False  # 负号用 ASCII，两种字体都有
    matplotlib.rcParams["svg.hashsalt"] = "tinyformer"  # SVG 输出可复现
    _inline_figures()
    return FONT_NAME


def _inline_figures() -> None:
    """在 Jupyter 里把每张图存两份：SVG 和两倍像素的 PNG（IPython 的 ``retina`` 格式）。

    - SVG 给网站：线条和文字是矢量（中文字形转成路径，不依赖读者的字体），任意缩放都清楚；热力图的像素按
      数据原样嵌入（每个格子一个像素，不插值）。网站（myst-nb）在两者之间优先选 SVG，页面不变重。
    - PNG 给笔记本：JupyterLab 与 Notebook 7 不显示未被信任的笔记本里的 SVG（读者从 Binder 或克隆的仓库
      打开的笔记本都未被信任），PNG 总是显示。像素是图的两倍，输出的元数据写明显示宽高（原来的尺寸），
      所以在高分屏上也清楚。

    ``metadata={"Date": None}`` 去掉 SVG 的时间戳，加上 ``svg.hashsalt``，重新执行时输出逐字节相同（PNG 本来
    就不带时间）。不在 IPython 内核里（脚本、测试）时什么也不做。"""
    try:
        from IPython import get_ipython
        from matplotlib_inline.backend_inline import set_matplotlib_formats
    except ImportError:  # 没装 IPython 的环境
        return
    if get_ipython() is not None:
        set_matplotlib_formats("svg", "retina", metadata={"Date": None})


def plot_heatmap(
    matrix,
    row_labels=None,
    col_labels=None,
    ax=None,
    title: str | None = None,
    xlabel: str | None = None,
    ylabel: str | None = None,
    cmap: str = "viridis",
    annotate: bool = False,
    fmt: str = "{:.2f}",
    colorbar: bool = True,
    vmin: float | None = None,
    vmax: float | None = None,
):
    """画一个带行列标签（可以是中文词元）的热力图，返回 ``AxesImage``。

    参数:
        matrix: 二维张量或数组 ``(行数, 列数)``。
        row_labels, col_labels: 行、列的标签（如查询词元、键词元）；``None`` 时不标。
        ax: 画在哪个子图上；``None`` 时新建一张图。
        annotate: 为 ``True`` 时在每格写上数值（按 ``fmt`` 格式化）。

    例子::

        >>> import torch
        >>> image = plot_heatmap(torch.eye(3), ["我", "爱", "你"], ["我", "爱", "你"], title="注意力")
        >>> image.get_array().shape
        (3, 3)
        >>> plt.close("all")
    """
    data = matrix.detach().cpu().float().numpy() if hasattr(matrix, "detach") else matrix
    if getattr(data, "ndim", None) != 2:
        raise ValueError(f"matrix must be 2-D, got shape {getattr(data, 'shape', None)}")
    if ax is None:
        _, ax = plt.subplots(figsize=(0.55 * data.shape[1] + 2, 0.5 * data.shape[0] + 1.2))
    image = ax.imshow(data, cmap=cmap, vmin=vmin, vmax=vmax, aspect="auto", interpolation="none")
    for labels, n, axis in ((row_labels, data.shape[0], "y"), (col_labels, data.shape[1], "x")):
        if labels is None:
            continue
        if len(labels) != n:
            raise ValueError(
                f"{axis} labels must have {n} entries to match matrix, got {len(labels)}"
            )
        if axis == "y":
            ax.set_yticks(range(n), labels)
        else:
            ax.set_xticks(
                range(n),
                labels,
                rotation=90 if max(map(len, map(str, labels)), default=0) > 3 else 0,
            )
    if annotate:
        for i in range(data.shape[0]):
            for j in range(data.shape[1]):
                # 按格子实际的颜色选字的颜色：亮底黑字、暗底白字（任何色图都适用）
                red, green, blue, _ = image.cmap(image.norm(data[i, j]))
                color = "black" if 0.299 * red + 0.587 * green + 0.114 * blue > 0.5 else "white"
                ax.text(
                    j, i, fmt.format(data[i, j]), ha="center", va="center", color=color, fontsize=8
                )
    if title:
        ax.set_title(title)
    if xlabel:
        ax.set_xlabel(xlabel)
    if ylabel:
        ax.set_ylabel(ylabel)
    if colorbar:
        ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    return image


# 架构图的方框：(x 中心, y 中心, 文字, 颜色)。编码器在左、解码器在右，从下往上数据流动。
_ARCH_COLORS = {
    "emb": "#fde2c8",
    "attn": "#fbd3d3",
    "norm": "#fff3b0",
    "ffn": "#cfe8fc",
    "out": "#dcd3f5",
}
_ENCODER = [
    (2.0, 0.6, "源语言词元 ids  (B, S)", None),
    (2.0, 1.6, "词嵌入 × √C  +  位置编码", "emb"),
    (2.0, 3.0, "多头自注意力\n（双向，只遮填充）", "attn"),
    (2.0, 4.0, "残差相加 & 层归一化", "norm"),
    (2.0, 5.0, "逐位置前馈网络 (C → d_ff → C)", "ffn"),
    (2.0, 6.0, "残差相加 & 层归一化", "norm"),
]
_DECODER = [
    (6.4, 0.6, "目标语言词元 ids  (B, T)", None),
    (6.4, 1.6, "词嵌入 × √C  +  位置编码", "emb"),
    (6.4, 3.0, "带因果掩码的多头自注意力", "attn"),
    (6.4, 4.0, "残差相加 & 层归一化", "norm"),
    (6.4, 5.0, "交叉注意力（查询来自解码器，\n键和值来自编码器输出）", "attn"),
    (6.4, 6.0, "残差相加 & 层归一化", "norm"),
    (6.4, 7.0, "逐位置前馈网络 (C → d_ff → C)", "ffn"),
    (6.4, 8.0, "残差相加 & 层归一化", "norm"),
    (6.4, 9.3, "线性层（与目标词嵌入共享权重）", "out"),
    (6.4, 10.2, "softmax → 下一个词的概率  (B, T, V)", "out"),
]


# 标签相对于点的候选位置（单位：磅）：先右上，再依次试其余方向、再远一些
_LABEL_OFFSETS = [
    (dx * r, dy * r)
    for r in (3, 8, 14, 20, 26)
    for dx, dy in ((1, 1), (1, -1), (-1, 1), (-1, -1), (1, 0), (-1, 0), (0, 1), (0, -1))
]


def label_points(ax, xy, labels, fontsize: float = 10) -> list:
    """给散点 ``xy``（(N, 2)）逐个写上 ``labels``：标签之间、标签与点之间不重叠，也不出坐标轴的框。

    按顺序放每个标签，在 :data:`_LABEL_OFFSETS` 的候选位置里挑"冲突"最少的第一个：冲突是与已放好
    的标签相交（最重）、伸出坐标轴、盖住某个点（最轻）；文字框用渲染器量出的真实大小。结果只取决于输入，重复执行
    相同。返回各个 ``Annotation``。在 ``tight_layout`` 等改变版面的调用 **之后** 再调用：位置按像素挑，
    版面一变，点之间的距离就变了。

    例子::

        >>> import matplotlib.pyplot as plt
        >>> fig, ax = plt.subplots()
        >>> xy = [[0.5, 0.5], [0.501, 0.5]]  # 两个几乎重合的点
        >>> _ = ax.scatter(*zip(*xy))
        >>> texts = label_points(ax, xy, ["上周", "商店"])
        >>> fig.canvas.draw()
        >>> a, b = (t.get_window_extent() for t in texts)
        >>> bool(a.overlaps(b))
        False
        >>> plt.close(fig)
    """
    points = [tuple(map(float, p)) for p in xy]
    if len(points) != len(labels):
        raise ValueError(
            f"xy and labels must have the same length, got {len(points)} and {len(labels)}"
        )
    ax.figure.canvas.draw()  # 坐标轴范围定下来，才能把数据坐标换成像素
    renderer = ax.figure.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)  # 坐标轴的框（像素）
    dots = [ax.transData.transform(p) for p in points]  # 每个点的像素坐标
    radius = fontsize * ax.figure.dpi / 72 / 3  # 点的半径约为字高的三分之一（像素）

    def conflicts(box, placed) -> int:
        inside = (
            frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
        )
        covered = sum(
            box.x0 - radius < x < box.x1 + radius and box.y0 - radius < y < box.y1 + radius
            for x, y in dots
        )
        # 两个词叠在一起最难读，其次是伸出框外（可能压到标题或另一张图），盖住一个点最轻
        return covered + 3 * sum(box.overlaps(other) for other in placed) + 2 * (not inside)

    placed, texts = [], []
    for point, label in zip(points, labels, strict=True):
        best = None  # (冲突数, 标签, 文字框)
        for dx, dy in _LABEL_OFFSETS:
            text = ax.annotate(
                label,
                point,
                xytext=(dx, dy),
                textcoords="offset points",
                fontsize=fontsize,
                ha="left" if dx > 0 else "right" if dx < 0 else "center",
                va="bottom" if dy > 0 else "top" if dy < 0 else "center",
            )
            box = text.get_window_extent(renderer).padded(1)
            cost = conflicts(box, placed)
            if best is None or cost < best[0]:
                if best is not None:
                    best[1].remove()
                best = (cost, text, box)
            else:
                text.remove()
            if cost == 0:
                break
        placed.append(best[2])
        texts.append(best[1])
    return texts


def draw_architecture(ax=None):
    """画出本书实现的编码器–解码器 Transformer（论文的 post-LN 版本），标注每一步的形状。

    例子::

        >>> ax = draw_architecture()
        >>> ax.get_title()
        'Transformer（编码器–解码器）'
        >>> plt.close("all")
    """
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    if ax is None:
        _, ax = plt.subplots(figsize=(8.6, 9.2))
    for column in (_ENCODER, _DECODER):
        for (x, y, text, color), (_, y_next, _, _) in zip(
            column, column[1:] + [column[-1]], strict=True
        ):
            width, height = 3.4, 0.7
            ax.add_patch(
                FancyBboxPatch(
                    (x - width / 2, y - height / 2),
                    width,
                    height,
                    boxstyle="round,pad=0.02,rounding_size=0.12",
                    facecolor=_ARCH_COLORS.get(color, "white"),
                    edgecolor="#444444",
                    linewidth=1,
                )
            )
            ax.text(x, y, text, ha="center", va="center", fontsize=9)
            if y_next > y:
                ax.add_patch(
                    FancyArrowPatch(
                        (x, y + height / 2),
                        (x, y_next - height / 2),
                        arrowstyle="-|>",
                        mutation_scale=12,
                        color="#444444",
                    )
                )
    # 两个 “× N 层” 的框
    for x, y0, y1, label in ((2.0, 2.45, 6.5, "编码器层 × N"), (6.4, 2.45, 8.5, "解码器层 × N")):
        ax.add_patch(
            FancyBboxPatch(
                (x - 2.0, y0),
                4.0,
                y1 - y0,
                boxstyle="round,pad=0.05",
                fill=False,
                linestyle="--",
                edgecolor="#888888",
            )
        )
        ax.text(x - 1.95, y1 + 0.05, label, ha="left", va="bottom", fontsize=9, color="#555555")
    # 编码器输出（memory, 形状 (B, S, C)）送进每个解码器层的交叉注意力
    ax.plot([2.0, 2.0, 4.3, 4.3], [6.35, 6.85, 6.85, 5.0], color="#c0392b", linewidth=1.2)
    ax.add_patch(
        FancyArrowPatch(
            (4.3, 5.0), (4.7, 5.0), arrowstyle="-|>", mutation_scale=12, color="#c0392b"
        )
    )
    ax.text(
        2.1,
        6.95,
        "编码器输出 memory (B, S, C)",
        ha="center",
        va="bottom",
        fontsize=9,
        color="#c0392b",
    )
    ax.text(8.35, 1.6, "(B, T, C)", ha="left", va="center", fontsize=8, color="#555555")
    ax.text(0.05, 1.6, "(B, S, C)", ha="right", va="center", fontsize=8, color="#555555")
    ax.set_xlim(-0.9, 9.3)
    ax.set_ylim(0, 10.8)
    ax.axis("off")
    ax.set_title("Transformer（编码器–解码器）")
    return ax
