"""诚实地评估生成的诗：形状、抄了多少、押不押韵（“只有解码器”一章讲解）。

每字比特数说模型对 **真诗** 的预测有多准；这里看它 **写出来的** 诗：

- :func:`format_valid`：是不是绝句或律诗的形状（与语料的筛选规则相同）；
- :func:`lines_copied`：生成的句子里有多少是训练集里逐字出现过的句子（背诵，而不是创作）；
- :func:`rhyme_rate`：偶数句（第 2、4、…句）的末字是否同韵。韵母取 ``pypinyin`` 的 **普通话读音**
  （多音字取它的默认读音），不是唐代的中古音：今天不押韵的唐诗不少（如 "斜" xié 与 "家" jiā），
  所以只把它与真诗在同一把尺子下的比率对比，不当作格律的判据。韵母表 ``data/pinyin_finals.json``
  由 ``tools/pinyin_finals.py`` 从 pypinyin 生成、随包发布（见 :func:`rhyme`）。
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from functools import cache
from importlib.resources import files

__all__ = ["clauses", "format_valid", "lines_copied", "rhyme", "rhyme_rate", "rhymes"]

HAN = "\u4e00-\u9fff"  # CJK 统一汉字基本区
_COUPLETS = re.compile(rf"(?:[{HAN}]+，[{HAN}]+。)+")  # 一联 = 两句 + ，。


def clauses(poem: str) -> list[str]:
    """按 ，。 切成句（不含标点）。

    例子::

        >>> clauses("白日依山尽，黄河入海流。欲穷千里目，更上一层楼。")
        ['白日依山尽', '黄河入海流', '欲穷千里目', '更上一层楼']
    """
    return [c for c in re.split("[，。]", poem) if c]


def format_valid(poem: str) -> bool:
    """绝句或律诗的形状：2 或 4 联 ``A，B。``，即 4 或 8 句；每句都是 5 个或都是 7 个汉字。

    例子::

        >>> format_valid("白日依山尽，黄河入海流。欲穷千里目，更上一层楼。")
        True
        >>> format_valid("白日依山尽，黄河入海流。")  # 只有 2 句
        False
        >>> format_valid("白日依山尽，黄河入海流。欲穷千里目，更上一层高楼。")  # 5、5、5、6
        False
        >>> format_valid("白日依山尽。黄河入海流，欲穷千里目，更上一层楼。")  # 标点不在位置上
        False
    """
    if not _COUPLETS.fullmatch(poem):
        return False
    parts = clauses(poem)
    return len(parts) in (4, 8) and {len(c) for c in parts} in ({5}, {7})


def lines_copied(samples: Iterable[str], train_poems: Iterable[str]) -> float:
    """生成的句子（所有样本的所有句）里，与训练集某一句 **整句相同** 的比例。

    例子::

        >>> lines_copied(["白日依山尽，江水向东流。"], ["白日依山尽，黄河入海流。"])
        0.5
    """
    written = [c for poem in samples for c in clauses(poem)]
    # 只记下训练集里也有的那些句：不必为训练集的几十万句建一个集合（约多占 20 MB 内存）
    wanted = set(written)
    copied = {c for poem in train_poems for c in clauses(poem) if c in wanted}
    return sum(c in copied for c in written) / max(1, len(written))


def rhyme(ch: str) -> str:
    """一个字的韵（普通话）：pypinyin 的韵母去掉介音 i、u、ü（"ian"→"an"，"uang"→"ang"，
    "iong"→"ong"），单独的 i、u、ü 保留。

    韵母查随包发布的表（:func:`_finals`），与 pypinyin 的 ``lazy_pinyin(ch, style=Style.FINALS,
    v_to_u=False)`` 逐字相同；pypinyin 不认得的字（标点、字母）与它一样原样返回。

    例子::

        >>> [rhyme(c) for c in "流楼天山光"]
        ['ou', 'ou', 'an', 'an', 'ang']
    """
    final = _finals().get(ch, ch)
    for medial in ("i", "u", "v"):
        if final.startswith(medial) and len(final) > 1:
            return final[1:]
    return final


@cache
def _finals() -> dict[str, str]:
    """字 → 韵母（``data/pinyin_finals.json`` 按韵母分组存，这里倒过来）。

    不在运行时导入 pypinyin：它一导入就加载几十万条词语的读音表（内核多占约 55 MB），押韵只看单个字。
    """
    table = json.loads(
        (files("tinyformer.poetry") / "data" / "pinyin_finals.json").read_text("utf-8")
    )
    return {ch: final for final, chars in table["finals"].items() for ch in chars}


def rhymes(poem: str) -> bool:
    """偶数句（第 2、4、…句）的末字韵相同（见 :func:`rhyme`）。

    例子::

        >>> rhymes("白日依山尽，黄河入海流。欲穷千里目，更上一层楼。")
        True
    """
    ends = [c[-1] for c in clauses(poem)[1::2] if c]
    return len(ends) >= 2 and len({rhyme(ch) for ch in ends}) == 1


def rhyme_rate(poems: Sequence[str]) -> float:
    """形状合格的诗里偶数句押韵（:func:`rhymes`）的比例；没有合格的诗时为 0。"""
    valid = [p for p in poems if format_valid(p)]
    return sum(rhymes(p) for p in valid) / max(1, len(valid))
