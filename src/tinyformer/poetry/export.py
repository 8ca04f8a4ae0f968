r"""把写诗模型导出成 ONNX，让网页在读者的浏览器里写诗（“只有解码器”一章的网页）。

导出一张图和一份 JSON：

- ``poet.onnx``：整段前缀 ids (B, T)（以 ``<bos>`` 开头，T ≤ ``max_len``）→ 最后一个位置的 logits (B, V)。
  不带键/值缓存：诗最多 ``max_len`` = 66 个位置，每步重算整段前缀的代价很小，而一张输入输出固定的图
  比把每层的 K、V 当作输入和输出简单得多（与“完整模型”一章的 ``decoder.onnx`` 同一个取舍）。它与
  :func:`~tinyformer.poetry.sampling.write` 的 ``use_cache=False`` 相同：那里每步也把整段送入。
- ``poet.json``：字表 ``itos``、特殊词元的编号、``max_len``、分句的标点 ``clause_ends``（藏头诗按它数句）、
  永不采样的词元 ``never_sampled``，以及每步显示几个候选 ``show``——浏览器照
  :func:`~tinyformer.poetry.sampling.write` 的规则采样，规则里用到的数都从这里读。

采样循环不在这里：网页上的解码与采样只有一份（``_static_ch08/live_translator/live_translator.js`` 的
``greedyDecode``、``beamSearch``、``sampleDecode``，与模型无关）。导出需要 ``onnx``（``torch.onnx.export``
在内部导入它）；本模块不导入它。导出调用与翻译器的相同（:func:`tinyformer.onnx_export.export_onnx`，
在模型核心里，所以本应用不必导入 ``tinyformer.translation``）。
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from torch import Tensor, nn

from .._checks import check_instance, check_positive_int
from ..atomic import atomic_write
from ..gpt import GPT
from ..onnx_export import export_onnx
from .corpus import Vocab
from .sampling import CLAUSE_ENDS

__all__ = ["LastLogitsGraph", "export_poet"]

FORMAT = "tinyformer-onnx-poet-1"
FILES = ("poet.onnx", "poet.json")


class LastLogitsGraph(nn.Module):
    """导出用的一步：整段前缀 → 下一个字的 logits（最后一个位置的）。

    形状:
        - ids: (B, T)，int64，第一列是 ``<bos>``，T ≤ ``max_len``
        - 输出 logits: (B, V)

    例子::

        >>> from tinyformer.poetry.pretrained import load_model
        >>> model, vocab = load_model()
        >>> LastLogitsGraph(model)(torch.tensor([vocab.encode("春眠", bos=True)])).shape
        torch.Size([1, 5341])
    """

    def __init__(self, model: GPT):
        super().__init__()
        check_instance("model", model, GPT)
        self.model = model

    def forward(self, ids: Tensor) -> Tensor:
        return self.model(ids)[:, -1]  # (B, T, V) -> (B, V)


@torch.no_grad()
def export_poet(
    model: GPT, vocab: Vocab, directory: str | Path, show: int = 5, opset_version: int = 17
) -> dict[str, Path]:
    """把写诗模型导出成 ``poet.onnx`` 与 ``poet.json``，返回 ``{文件名: 路径}``。

    参数:
        model, vocab: 例如 ``tinyformer.poetry.pretrained.load_model()``。
        directory: 输出目录（不存在时创建）。
        show: 网页每步列出几个候选（同 :func:`~tinyformer.poetry.sampling.write` 的 ``show``）。
        opset_version: ONNX 算子集版本（默认 17，onnxruntime-web 与 onnxruntime 都支持）。

    两个文件各自原子地写；同一个模型、同一版本的 torch 导出的字节相同。
    """
    check_instance("model", model, GPT)
    check_instance("vocab", vocab, Vocab)
    check_positive_int("show", show)
    check_positive_int("opset_version", opset_version)
    if model.config.vocab_size != len(vocab):
        raise ValueError(
            f"model.config.vocab_size={model.config.vocab_size} but vocab has {len(vocab)} entries"
        )
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    model = model.eval()
    paths = {name: directory / name for name in FILES}
    # 示例输入只决定图的结构；B、T 标成可变长
    ids = torch.tensor([[vocab.bos_id, vocab.unk_id, vocab.unk_id]])  # (1, 3)
    export_onnx(
        LastLogitsGraph(model),
        (ids,),
        paths["poet.onnx"],
        {"ids": ("B", "T")},
        {"logits": ("B",)},
        opset_version,
        fold_constants=False,  # 输出层与词嵌入共用一张表：不折叠，文件里只存一份（少 2.7 MB）
    )
    settings = {
        "format": FORMAT,
        "itos": list(vocab.itos),
        "pad_id": vocab.pad_id,
        "unk_id": vocab.unk_id,
        "bos_id": vocab.bos_id,
        "eos_id": vocab.eos_id,
        "max_len": model.config.max_len,
        "clause_ends": [vocab.stoi[ch] for ch in CLAUSE_ENDS if ch in vocab.stoi],
        # 与 sampling.write 相同：永不采 <pad>、<bos>、<unk>
        "never_sampled": [vocab.pad_id, vocab.bos_id, vocab.unk_id],
        "show": show,
    }
    text = json.dumps(settings, ensure_ascii=False, separators=(",", ":"), sort_keys=True) + "\n"
    with atomic_write(paths["poet.json"]) as file:
        file.write(text.encode("utf-8"))
    return paths
