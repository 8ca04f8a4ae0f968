"""重新生成押韵检查读的韵母表 ``src/tinyformer/poetry/data/pinyin_finals.json``。

    .venv/bin/python -m tools.pinyin_finals

对 pypinyin 认得的每个字（它的单字表 ``pinyin_dict``，约 4.2 万字），记下
``lazy_pinyin(字, style=Style.FINALS, v_to_u=False)``——单独一个字的普通话韵母，按韵母分组。
:func:`tinyformer.poetry.evaluation.rhyme` 查这张表，不在运行时导入 pypinyin：
导入它会连带加载一张几十万条的词语读音表，笔记本的内核多占约 55 MB，而押韵只看单个字。
``tests/unit/test_poetry.py`` 用装着的 pypinyin 逐字核对这张表。
"""

from __future__ import annotations

from collections import defaultdict
from importlib.metadata import version
from pathlib import Path

from tools.records import write_json

OUT = (
    Path(__file__).resolve().parents[1]
    / "src"
    / "tinyformer"
    / "poetry"
    / "data"
    / "pinyin_finals.json"
)


def finals_table() -> dict:
    """韵母 → 这个韵母的字（按码位排），外加来历。"""
    from pypinyin import Style, lazy_pinyin, pinyin_dict

    groups = defaultdict(list)
    for code in sorted(pinyin_dict.pinyin_dict):
        ch = chr(code)
        groups[lazy_pinyin(ch, style=Style.FINALS, v_to_u=False)[0]].append(ch)
    return {
        "source": f"pypinyin {version('pypinyin')}: lazy_pinyin(ch, style=Style.FINALS, v_to_u=False)",
        "licence": "MIT, Copyright (c) 2016 mozillazg, 闲耘 (pypinyin)",
        "command": "python -m tools.pinyin_finals",
        "finals": {final: "".join(chars) for final, chars in sorted(groups.items())},
    }


if __name__ == "__main__":
    write_json(OUT, finals_table())
    print(f"写好 {OUT}")
