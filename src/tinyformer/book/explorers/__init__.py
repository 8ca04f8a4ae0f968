"""在网页里自己重算的交互图：每章一个"探索器"，一个模块一个。

=========================  ==========================================
模块                       讲解它的一章
=========================  ==========================================
``dependency``             Transformer 总览
``embedding_scale``        词嵌入
``positional_curves``      位置编码
``relative_position``      位置编码问答与证明
``attention_weights``      注意力机制
``layer_norm_gradient``    层归一化、残差与前馈网络
``encoder_decoder``        编码器与解码器
``trained_model``          完整模型：训练一个中译英 Transformer
``poetry``                 只有解码器：在全唐诗上预训练一个 GPT
``bpe_merges``             中文的字节级 BPE
``scaling``                规模与 2017 年之后的改进
``charts``                 共用：舍入、控件、热力图、:func:`show`
=========================  ==========================================

``ipywidgets`` 的控件要有 Python 内核才会响应：静态网页上拖动滑块什么也不会重算。这里的探索器
换一种做法：包在 Python 里 **把每个控件取值的数据都先算好**，画成 Vega-Altair 图，控件是图的参数
（``alt.param(bind=...)``），浏览器里的 Vega 按参数筛选、重画。于是离线网页、JupyterLab、Colab
里拖动都有反应，不需要内核。

每个探索器两个函数：``xxx_data()`` 返回数据（一行一个 dict，浮点数已舍入，见 :func:`~tinyformer.book.explorers.charts.significant`），
``xxx_explorer()`` 用这份数据画图。数据用 float64 计算再舍入，任何 CPU、任何线程数得到同样的
JSON（nbval 核对保存的输出）。每张图内嵌的 JSON 不超过 :data:`DATA_BUDGET` 字节。

``xxx_explorer()`` 返回普通的 Altair 图；在 Notebook 里用 :func:`show` 显示它。导入本模块不改
Altair 的全局设置（不注册、不启用渲染器），``show`` 只对这一张图用 :func:`render` 输出同一张图的
三种表示：

- ``application/vnd.vegalite.v6+json``：Vega-Lite 规格。本书网页由 ``_ext/vega_charts.py`` 渲染它，
  用随书发布的 vega、vega-lite、vega-embed（``tools/web_assets.py``），不连外网。
- ``text/html``：Altair 给 Notebook 用的 "universal" 模板（它的 default、colab 渲染器用的也是它），
  在 JupyterLab 4、Notebook 7、Colab 里第一次运行就画出图（这些环境本来就联网，脚本从 jsDelivr
  加载；JupyterLab 自带的 Vega 渲染器只认 Vega-Lite 5，不认上面的 v6 规格）。完整网页的 "standard"
  模板在那里是空白：打开时什么也没有，第一次运行 ``vegaEmbed is not defined``，第二次
  ``gn.compile is not a function``。图的 id 取规格的散列而不是随机数，所以重复执行逐字节相同。
  装了 ``vl-convert-python`` 时（``requirements.txt`` 固定了它，保存的输出都带图），图的 div 里先放
  一张默认控件取值的静态 PNG（:func:`_picture`）：不运行 JavaScript 的地方（GitHub 的笔记本预览、
  JupyterLab 里还没信任的笔记本、nbconvert 导出的 HTML）显示它，vega-embed 画图时清空 div 换成
  交互图。静态图放在 HTML 里面而不单独存成 ``image/png``：这些地方都优先选 ``text/html``，单独的
  PNG 永远不会被显示。
- ``text/plain``：一行说明（图名、数据行数与字节数）。
"""

from .attention_weights import attention_data, attention_explorer
from .bpe_merges import bpe_merges_data, bpe_merges_explorer
from .charts import (
    DATA_BUDGET,
    PICTURE_NOTE,
    PICTURE_SCALE,
    VEGALITE_MIME_TYPE,
    chart_datasets,
    chart_rows,
    render,
    show,
)
from .dependency import dependency_data, dependency_explorer
from .embedding_scale import embedding_scale_data, embedding_scale_explorer
from .encoder_decoder import encoder_decoder_data, encoder_decoder_explorer
from .layer_norm_gradient import layer_norm_gradient_data, layer_norm_gradient_explorer
from .poetry import sampling_data, sampling_explorer
from .positional_curves import positional_curves_data, positional_curves_explorer
from .relative_position import relative_position_data, relative_position_explorer
from .scaling import ablation_data, ablation_explorer, scaling_data, scaling_explorer
from .trained_model import checkpoint_data, checkpoint_explorer

__all__ = [
    "DATA_BUDGET",
    "PICTURE_NOTE",
    "PICTURE_SCALE",
    "VEGALITE_MIME_TYPE",
    "attention_data",
    "attention_explorer",
    "bpe_merges_data",
    "bpe_merges_explorer",
    "chart_datasets",
    "chart_rows",
    "dependency_data",
    "dependency_explorer",
    "embedding_scale_data",
    "embedding_scale_explorer",
    "encoder_decoder_data",
    "encoder_decoder_explorer",
    "layer_norm_gradient_data",
    "layer_norm_gradient_explorer",
    "positional_curves_data",
    "positional_curves_explorer",
    "relative_position_data",
    "relative_position_explorer",
    "checkpoint_data",
    "checkpoint_explorer",
    "sampling_data",
    "sampling_explorer",
    "scaling_data",
    "scaling_explorer",
    "ablation_data",
    "ablation_explorer",
    "render",
    "show",
]
