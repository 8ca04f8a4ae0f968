"""交互控件：输入一句中文，看译文和交叉注意力（“完整模型”一章讲解）。

控件需要内核才能响应输入：在 Jupyter、Colab、Binder 里运行本章即可。网页上显示的是
执行笔记本时保存下来的控件状态（默认句子的结果）。
"""

from __future__ import annotations

import matplotlib.pyplot as plt

from .._checks import check_instance
from ..text import EOS, detokenize_en
from ..translation.cli import cannot_translate
from ..translation.translator import Translator, UntranslatableError
from .plotting import plot_heatmap


def show_translation(
    translator: Translator, sentence: str, beam_size: int = 1, layer: int = -1, ax=None
) -> str | None:
    """打印 ``sentence`` 的译文，并画出第 ``layer`` 个解码器层的交叉注意力（各头平均）。

    行是生成的英文词元，列是 jieba 切出的中文词元。句子有模型没学过的词时只打印一条
    说明（哪些词不认识），不抛异常，返回 ``None``；否则返回译文。
    """
    check_instance("translator", translator, Translator)
    try:
        src_tokens, tgt_tokens, weights = translator.cross_attention(sentence, layer, beam_size)
    except UntranslatableError as err:  # 与命令行、网页翻译器同一句中文（cli.cannot_translate）
        # 原句之后折行：整句有 90 多列（一个汉字占两列），笔记本的输出框放不下
        print(cannot_translate(sentence, err).replace("：", "：\n", 1))
        return None
    translation = detokenize_en([tok for tok in tgt_tokens if tok != EOS], translator.proper_nouns)
    print(f"{sentence}  →  {translation}")
    if ax is None:
        _, ax = plt.subplots(figsize=(0.6 * len(src_tokens) + 2.4, 0.42 * len(tgt_tokens) + 1.4))
    plot_heatmap(
        weights.mean(dim=0),  # (H, T, S) -> (T, S)：各头平均
        tgt_tokens,
        src_tokens,
        ax=ax,
        vmin=0.0,
        vmax=1.0,
        xlabel="中文词元（键）",
        ylabel="生成的英文词元（查询）",
        title=f"第 {layer % len(translator.model.decoder_layers) + 1} 个解码器层的交叉注意力（各头平均）",
    )
    ax.figure.tight_layout()
    plt.show()
    return translation


def translation_explorer(translator: Translator, sentence: str = "她明天在家写作业吗？"):
    """一个文本框 + 束宽选择：输入中文句子，显示译文和交叉注意力热力图。

    返回 ``ipywidgets.interactive`` 对象（在笔记本里作为单元格的最后一个表达式即可显示）。
    """
    import ipywidgets as widgets

    check_instance("translator", translator, Translator)
    return widgets.interactive(
        lambda sentence, beam_size: show_translation(translator, sentence, beam_size) and None,
        sentence=widgets.Text(value=sentence, description="中文句子", continuous_update=False),
        beam_size=widgets.Dropdown(options=[1, 2, 4], value=1, description="束宽"),
    )
