"""包的源码不腐烂（issue 28）：没有手写的章节号、注释里提到的路径都存在、书名只有一个、异常消息只用一种语言。

- 章节号由 Sphinx 排（``tests/book/test_numbering.py`` 管笔记本）；包里写死的“第 5 章 5.3 节”在章节重排后
  就错了，所以 ``src/`` 里只写章或节的标题（“注意力机制”一章、“掩码加在分数矩阵上”一节）。论文的节号
  是论文的，前面写“论文”就可以（“论文 §3.4”）。
- docstring 和注释里写到的仓库路径（``tests/...py``、``chapters/...``、``tools/...``、``*.md``……）都要存在；
  运行时才生成的文件（``runs/zh_en.safetensors``、导出的 ``translator.json``）列在 ``RUNTIME_PATHS``，各带理由。
- 书名以 ``_config.yml`` 的 ``title``（网站显示的）为准，README、``pyproject.toml``、包的 docstring 与它一致。
- 本包的异常消息是英文（与 torch 一样）；命令行把它们译成中文给读者。引用用户输入的部分（引号里的
  repr）可以有中文，其余部分不能中英混写：运行时的消息（连同缩写很长的中文输入时的注明）由
  ``test_bad_inputs.py`` 的表逐字钉住（``activation-long-str``、``vocab-encode-long-str``、``translate-long-unknown``）。
"""

import ast
import re
import tokenize
from pathlib import Path

import tinyformer
from tests.kit import ROOT

SRC = ROOT / "src" / "tinyformer"
SOURCES = sorted(SRC.rglob("*.py"))
# 路径的检查也覆盖工具、Sphinx 扩展、测试和基准脚本：它们的注释同样会指向改过名的文件
PY_FILES = (
    SOURCES
    + sorted(
        path
        for folder in ("tools", "_ext", "tests", "benchmarks")
        for path in (ROOT / folder).rglob("*.py")
        if path != Path(__file__)
    )
    + [ROOT / "tasks.py"]
)

# “第 5 章”“第 1–8 章”“第 6.4 节”“5.3 节”“5.2、5.6–5.8 节”“§5.5”；“论文 §3.4”是论文的节号，不算
BOOK_NUMBER = re.compile(
    r"第\s*\d+(?:\s*[–、,，-]\s*\d+)*\s*章"
    r"|(?:第\s*)?\d+\.\d+(?:\s*[–、,，-]\s*\d+(?:\.\d+)?)*\s*节"
    r"|(?<!论文 )(?<!论文)§\s*\d"
)


def _comments_and_strings(path: Path):
    """(行号, 文字)：文件里的每个注释和字符串字面量（docstring、消息）。"""
    with path.open("rb") as file:
        for token in tokenize.tokenize(file.readline):
            if token.type in (tokenize.COMMENT, tokenize.STRING) or (
                token.type == getattr(tokenize, "FSTRING_MIDDLE", None)
            ):
                yield token.start[0], token.string


def test_the_number_pattern_catches_book_numbers_and_spares_the_papers():
    caught = [
        "（第 5 章 5.3–5.9 节讲解）",
        "第 6.4 节",
        "8.2 节",
        "§5.5",
        "第 1–8 章",
        "5.2、5.6–5.8 节",
    ]
    spared = ["论文 §3.4", "论文§5.3", "“注意力机制”一章", "第 100 步", "第 2i 维", "第 3 个词元"]
    assert all(BOOK_NUMBER.search(text) for text in caught)
    assert not any(BOOK_NUMBER.search(text) for text in spared)


def test_no_hand_typed_chapter_or_section_numbers_in_the_package():
    found = []
    for path in SOURCES:
        for line, text in _comments_and_strings(path):
            for match in BOOK_NUMBER.finditer(text):
                found.append(f"{path.relative_to(ROOT)}:{line}: {match.group()}")
    assert found == [], "name the chapter or section instead of its number:\n" + "\n".join(found)


# 路径：以仓库的顶层文件夹开头，或者是仓库根目录的 *.md / *.toml / *.txt 文件；包内的 fonts/、weights/
# 相对于包的文件夹
TOP_LEVEL = (
    "tests|chapters|_ext|tools|_vendor|_static\\w*|_theme|_templates|benchmarks|binder|edition|src"
)
REPO_PATH = re.compile(
    rf"(?<![\w/.-])(?:{TOP_LEVEL})/[\w./*-]*[\w*]|(?<![\w/.-])[\w-]+\.(?:md|toml|txt)\b"
)
PACKAGE_PATH = re.compile(r"(?<![\w/.-])(?:fonts|weights)/[\w./-]*\w")
# 运行时才有的路径（前缀）与理由；另外 *.html 是构建出来的页面（_build/html/ 之下）
RUNTIME_PATHS = {
    "_build/": "the book's build output, made by jupyter-book",
    "_static/": "the built site's static folder (_build/html/_static/), filled by Sphinx",
    "_vendor/": "the page scripts tools/web_assets.py fetches at build time (absent in a fresh clone)",
    "runs/": "where the command line writes checkpoints the reader trains",
}


def test_the_path_pattern_finds_paths():
    text = "见 tests/unit/test_dropout.py、_vendor/site/site.css 和 STYLE.md；字体 fonts/OFL.txt"
    assert REPO_PATH.findall(text) == [
        "tests/unit/test_dropout.py",
        "_vendor/site/site.css",
        "STYLE.md",
    ]
    assert PACKAGE_PATH.findall(text) == ["fonts/OFL.txt"]


def _comments_and_docstrings(path: Path):
    """(行号, 文字)：注释与 docstring（工具和测试的其他字符串常常是故意不存在的路径）。"""
    for line, text in _comments_and_strings(path):
        if text.startswith("#"):
            yield line, text
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            docstring = ast.get_docstring(node, clean=False)
            if docstring:
                yield (node.body[0].lineno, docstring)


def _file_names() -> set[str]:
    skip = {".venv", "_build", ".git", "node_modules", "edition"}
    return {
        path.name
        for path in ROOT.rglob("*")
        if not skip & set(path.relative_to(ROOT).parts) and path.is_file()
    }


def test_every_path_named_in_the_package_and_its_tools_exists():
    missing, seen, names = [], 0, _file_names()
    for path in PY_FILES:
        in_package = path.is_relative_to(SRC)
        texts = _comments_and_strings(path) if in_package else _comments_and_docstrings(path)
        for line, text in texts:
            for name in REPO_PATH.findall(text):
                seen += 1
                if any(name.startswith(p) for p in RUNTIME_PATHS) or name.endswith(".html"):
                    continue
                # 目录、文件、通配（chapters/ch05_*.ipynb）或 Sphinx 的文档名（chapters/ch05_attention）
                exists = (
                    any(ROOT.glob(name)) or any(ROOT.glob(f"{name}.*"))
                    if "/" in name
                    else name in names
                )
                if not exists:
                    missing.append(f"{path.relative_to(ROOT)}:{line}: {name}")
            for name in PACKAGE_PATH.findall(text) if in_package else ():
                seen += 1
                if not (
                    (SRC / name).exists() or (path.parent / name).exists()
                ):  # 相对包根或本模块所在的子包
                    missing.append(f"{path.relative_to(ROOT)}:{line}: {name} (in the package)")
    assert seen >= 20  # the pattern does find the paths the files name
    assert missing == [], "paths that do not exist:\n" + "\n".join(missing)


def test_one_book_title():
    import tomllib

    title = "动手学 Transformer"
    config = (ROOT / "_config.yml").read_text()
    assert re.search(r"^title:\s*(.+?)\s*$", config, re.M)[1] == title
    assert (ROOT / "README.md").read_text().splitlines()[0] == f"# {title}"
    description = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["description"]
    assert description.startswith(f"{title}：")
    assert f"《{title}》" in tinyformer.__doc__.splitlines()[0]
    stale = [
        str(path.relative_to(ROOT))
        for folder in ("src", "tools", "_ext", "chapters", "tests")
        for path in (ROOT / folder).rglob("*")
        if path.suffix in {".py", ".md", ".ipynb", ".toml", ".yml"}
        and path != Path(__file__)
        and "动手实现 Transformer" in path.read_text(errors="replace")
    ]
    assert stale == []


CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")


def test_raised_messages_in_the_source_are_english():
    """AST：每个 ``raise`` 里写下的字符串（含 f-string 的文字部分）都不含中文。

    命令行（``translation/cli.py``）除外：它对读者说中文，``argparse.ArgumentTypeError`` 的消息就是读者
    看到的那一行（只说中文由 ``tests/unit/test_cli.py`` 检查）。
    """
    found = []
    for path in SOURCES:
        if path.name == "cli.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Raise) and node.exc is not None:
                for part in ast.walk(node.exc):
                    if isinstance(part, ast.Constant) and isinstance(part.value, str):
                        if CJK.search(part.value):
                            found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {part.value!r}")
    assert found == []
