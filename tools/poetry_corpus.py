"""重新生成随包发布的全唐诗语料（``src/tinyformer/poetry/data/``，见 ``tinyformer.poetry.corpus``）。

    .venv/bin/python -m tools.poetry_corpus

1. ``npm pack chinese-poetry@2.0.1`` 到一个临时文件夹，核对压缩包的 sha512 与下面固定的 integrity；
2. 读 ``dist/quantangshi/poet.tang.*.json``（全唐诗，繁体），按文件编号的顺序、文件里的顺序；
3. 每首诗的 ``paragraphs`` 连成一行，用 OpenCC 的 ``t2s`` 转成简体；
4. 只留近体诗的形状（:data:`RULES`，即 ``tinyformer.poetry.evaluation.format_valid``，评估样本用的同一条规则）：2 或 4 联，每联 ``X…X，X…X。``，每句 5 或 7 个字且全诗一样长，
   即 4 句（绝句）或 8 句（律诗）；字只许是 CJK 统一汉字 U+4E00–U+9FFF，所以带括号、□、
   注释、异体扩展区字的诗都不要；
5. 去重（简体后逐字相同的只留第一首）；
6. 把同一首诗的几份归成一组（:func:`tinyformer.poetry.evaluation.twins`：一首至少一半的句在另一首里
   有至多差一个字的伙伴；重出、异文。并查集取传递闭包）；
7. 按组划分：每组以组里最小的 ``sha256(诗的 UTF-8)``（十六进制）为键排序，依次放进第一个还放得下
   整组的集合——测试集（1,000 首）、验证集（1,000 首）、训练集（其余）。一组不会拆到两个集合里，
   划分与读文件的顺序无关；每个集合里的诗按自己的哈希排序；
8. 写出 ``src/tinyformer/poetry/data/train.txt.gz``（gzip，mtime=0，不带文件名）、``valid.txt``、``test.txt``：UTF-8，一行一首诗，
   按上面的哈希顺序；``LICENSE``（原包的许可证原文）和 ``provenance.json``。

同一台机器上重跑得到逐字节相同的文件（没有时间戳；gzip 的输出只取决于 zlib 的版本）。
包运行时不需要 OpenCC：简体文本已经在文件里了。
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import re
import tarfile
import tempfile
from importlib.metadata import version
from pathlib import Path

import opencc

from tinyformer.atomic import atomic_write
from tinyformer.poetry.evaluation import format_valid, twins
from tools.records import fetch_pinned

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "src" / "tinyformer" / "poetry" / "data"
PACKAGE, VERSION = "chinese-poetry", "2.0.1"
INTEGRITY = (
    "sha512-KtYARvV7CWNtax0na9+Jn6PlhGgSoid7PWyDzXI4KsCEm2odZcqEQyval5koaLygZnM/"
    "EQ3lfJ//25K8p3uHNg=="
)
TEST_POEMS, VALID_POEMS = 1000, 1000
RULES = [
    "source: dist/quantangshi/poet.tang.*.json (全唐诗), files in numeric order, poems in file order",
    "text = ''.join(paragraphs), converted with OpenCC t2s",
    "keep if the text is 2 or 4 couplets 'A，B。' with every clause (句) 5 Han characters, "
    "or every clause 7 Han characters: 4 clauses (绝句) or 8 clauses (律诗)",
    "Han character = U+4E00..U+9FFF; anything else (brackets, □, notes, other blocks) rejects the poem",
    "deduplicate on the simplified text, keeping the first occurrence",
    "group twins (tinyformer.poetry.evaluation.twins: at least half of one poem's clauses have a "
    "partner in the other, same length and at most one character different), transitively",
    "order groups by the smallest sha256 (hex) of their poems' UTF-8 text; each group goes whole into "
    "the first split with room for it: test (1000 poems), valid (1000), train (the rest)",
    "inside a split, poems are ordered by their own sha256",
    "files: UTF-8, one poem per line, '\\n' line ends; train gzip-compressed (level 9, mtime 0, no name)",
]


def fetch(folder: Path) -> Path:
    """``npm pack`` 取固定版本的包，核对 sha512，返回压缩包的路径。"""
    command = ["npm", "pack", f"{PACKAGE}@{VERSION}", "--silent"]
    return fetch_pinned(folder, command, f"{PACKAGE}-{VERSION}.tgz", INTEGRITY)


def read_poems(tarball: Path) -> tuple[list[str], str, int]:
    """压缩包里全唐诗的每首诗（繁体，paragraphs 连成一行）、许可证原文、读过的诗数。"""
    pattern = re.compile(r"^package/dist/quantangshi/poet\.tang\.(\d+)\.json$")
    with tarfile.open(tarball) as tar:
        members = {m.name: m for m in tar.getmembers()}
        names = sorted(
            (n for n in members if pattern.match(n)), key=lambda n: int(pattern.match(n)[1])
        )
        licence = tar.extractfile(members["package/LICENSE"]).read().decode("utf-8")
        poems = []
        for name in names:
            for poem in json.load(tar.extractfile(members[name])):
                poems.append("".join(poem.get("paragraphs") or []))
    return poems, licence, len(poems)


def groups(poems: list[str]) -> list[list[str]]:
    """同一首诗的几份归成一组（并查集），组按最小的哈希排序，组内按哈希排序。"""
    parent = list(range(len(poems)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, j in twins(poems):
        parent[root(i)] = root(j)
    members: dict[int, list[str]] = {}
    for i, poem in enumerate(poems):
        members.setdefault(root(i), []).append(poem)
    return sorted((sorted(g, key=digest) for g in members.values()), key=lambda g: digest(g[0]))


def digest(poem: str) -> str:
    return hashlib.sha256(poem.encode("utf-8")).hexdigest()


def build(poems: list[str]) -> tuple[dict[str, list[str]], dict[str, int]]:
    """转简体、筛选、去重、归组、按组划分（:data:`RULES`）；也返回归组的统计。"""
    converter = opencc.OpenCC("t2s")
    kept, seen = [], set()
    for text in poems:
        simple = converter.convert(text)
        if format_valid(simple) and simple not in seen:
            seen.add(simple)
            kept.append(simple)
    room = {"test": TEST_POEMS, "valid": VALID_POEMS, "train": len(kept)}
    splits: dict[str, list[str]] = {name: [] for name in room}
    grouped = groups(kept)
    for group in grouped:
        name = next(n for n in room if len(splits[n]) + len(group) <= room[n])
        splits[name].extend(group)
    for lines in splits.values():
        lines.sort(key=digest)
    shared = [g for g in grouped if len(g) > 1]
    stats = {"groups_of_two_or_more": len(shared), "poems_in_them": sum(map(len, shared))}
    return splits, stats


def write(path: Path, data: bytes) -> None:
    with atomic_write(path) as file:
        file.write(data)


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        tarball = fetch(Path(folder))
        poems, licence, read = read_poems(tarball)
    splits, twin_groups = build(poems)
    DATA.mkdir(parents=True, exist_ok=True)
    counts = {}
    for name, lines in splits.items():
        text = "".join(line + "\n" for line in lines).encode("utf-8")
        if name == "train":
            buffer = io.BytesIO()
            with gzip.GzipFile(
                filename="", mode="wb", fileobj=buffer, compresslevel=9, mtime=0
            ) as gz:
                gz.write(text)
            write(DATA / "train.txt.gz", buffer.getvalue())
        else:
            write(DATA / f"{name}.txt", text)
        counts[name] = {
            "poems": len(lines),
            "characters": sum(len(line) for line in lines),  # 含 ，。，不含换行
            "sha256": hashlib.sha256(text).hexdigest(),  # 未压缩的文本
        }
    record = {
        "source": f"npm {PACKAGE}@{VERSION} (https://github.com/chinese-poetry/chinese-poetry)",
        "integrity": INTEGRITY,
        "licence": "MIT (the package's LICENSE is copied beside this file)",
        "converter": f"opencc {version('opencc')} OpenCC('t2s')",
        "command": "python -m tools.poetry_corpus",
        "poems_read": read,
        "rules": RULES,
        "twin_groups": twin_groups,
        "splits": counts,
    }
    write(DATA / "LICENSE", licence.encode("utf-8"))
    write(
        DATA / "provenance.json",
        (json.dumps(record, indent=1, ensure_ascii=False, sort_keys=True) + "\n").encode("utf-8"),
    )
    print(json.dumps({k: v["poems"] for k, v in counts.items()}))


if __name__ == "__main__":
    main()
