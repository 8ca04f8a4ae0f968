"""诚实地评估生成的诗：形状、抄了多少、押不押韵（“只有解码器”一章讲解）。

每字比特数说模型对 **真诗** 的预测有多准；这里看它 **写出来的** 诗：

- :func:`format_valid`：是不是绝句或律诗的形状（与语料的筛选规则相同）；
- :func:`lines_copied`：生成的句子里有多少是训练集里逐字出现过的句子（背诵，而不是创作）；
- :func:`rhyme_rate`：偶数句（第 2、4、…句）的末字是否同韵。韵母取 ``pypinyin`` 的 **普通话读音**
  （多音字取它的默认读音），不是唐代的中古音：今天不押韵的唐诗不少（如 "斜" xié 与 "家" jiā），
  所以只把它与真诗在同一把尺子下的比率对比，不当作格律的判据。
"""

from __future__ import annotations

import functools
import importlib.util
import json
import re
import unicodedata
from collections.abc import Iterable, Sequence
from pathlib import Path

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
    known = {c for poem in train_poems for c in clauses(poem)}
    written = [c for poem in samples for c in clauses(poem)]
    return sum(c in known for c in written) / max(1, len(written))


# 《汉语拼音方案》的声母（y、w 不算：它们是 i、u、ü 行韵母自成音节时的写法）与韵母
_INITIALS = re.compile(r"^(zh|ch|sh|[bpmfdtnlgkhjqxrzcs])")
_FINALS = set(
    "i u ü a ia ua o uo e ie üe ai uai ei uei ao iao ou iou an ian uan üan en in uen ün "
    "ang iang uang eng ing ueng ong iong er ê".split()
)
_TONE_MARKS = {"\u0300", "\u0301", "\u0304", "\u030c"}  # 第四、二、一、三声的符号（分解后）


@functools.cache
def _readings() -> dict[str, str]:
    """pypinyin 的单字读音表（字 → 带调的默认读音，多音字取第一个）。

    直接读 pypinyin 随包的 ``pinyin_dict.json``，不导入 pypinyin：导入它会连同四十多万条的词语读音表
    一起载入（约 45 MB），而押韵只查单字。``tests/unit/test_poetry.py`` 核对 :func:`rhyme` 对表里的
    每一个字都与 ``pypinyin.lazy_pinyin(ch, style=Style.FINALS)`` 的结果（去掉介音）相同。
    """
    spec = importlib.util.find_spec("pypinyin")  # 只找到包的位置，不执行它
    if spec is None:
        raise ModuleNotFoundError("rhyme() needs pypinyin: pip install pypinyin")
    folder = Path(next(iter(spec.submodule_search_locations)))
    table = json.loads((folder / "pinyin_dict.json").read_text(encoding="utf-8"))
    return {chr(int(code)): readings.split(",")[0] for code, readings in table.items()}


def rhyme(ch: str) -> str:
    """一个字的韵（普通话）：默认读音的韵母去掉介音 i、u、ü（"ian"→"an"，"uang"→"ang"，
    "iong"→"ong"），单独的 i、u、ü 保留（ü 写作 v）；读音表里没有的字返回空串。

    韵母按《汉语拼音方案》还原：yu→ü、ju→jü，y、w 开头的音节是 i、u 行的韵母（ya→ia、wo→uo），
    iu、ui、un 前有声母时是 iou、uei、uen 的省写。

    例子::

        >>> [rhyme(c) for c in "流楼天山光"]
        ['ou', 'ou', 'an', 'an', 'ang']
    """
    reading = _readings().get(ch)
    if reading is None:
        return ""
    decomposed = unicodedata.normalize("NFD", reading)  # ǎ -> a + ̌（ü 的两点也分开，再合回去）
    syllable = unicodedata.normalize("NFC", "".join(c for c in decomposed if c not in _TONE_MARKS))
    initial = _INITIALS.match(syllable)
    final = syllable[initial.end() if initial else 0 :]
    rest = syllable[1:]
    if syllable.startswith("yu"):  # yu→ü、yuan→üan
        final = "ü" + rest[1:]
    elif syllable.startswith("y"):  # yi→i、yin→in、ya→ia
        final = rest if rest.startswith("i") else "i" + rest
    elif syllable.startswith("w"):  # wu→u、wo→uo
        final = rest if rest.startswith("u") else "u" + rest
    elif initial and initial.group() in "jqx" and final.startswith("u"):  # ju→jü
        final = "ü" + final[1:]
    elif initial:  # niu→iou、gui→uei、lun→uen
        final = {"iu": "iou", "ui": "uei", "un": "uen"}.get(final, final)
    if final not in _FINALS:  # 不合方案的拼写（“哟”yo、“噷”hm）：只去掉开头的辅音
        final = _INITIALS.sub("", syllable.removeprefix("y").removeprefix("w"))
        if final not in _FINALS:
            return ""
    for medial in ("i", "u", "ü"):
        if final.startswith(medial) and len(final) > 1:
            final = final[1:]
            break
    return final.replace("ü", "v")


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
