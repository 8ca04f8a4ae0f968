"""把各章笔记本的代码排进网页的代码框：ruff 排版、整理导入，再把格式化器折不了的长注释折行。

    python -m tools.format_notebooks                      # chapters/ 里的全部笔记本
    python -m tools.format_notebooks chapters/ch05_*.ipynb

行宽是 ``chapters/ruff.toml`` 的 ``line-length``（代码框放得下的列数，汉字按两列计，见那里的说明）。
每个笔记本重复下面三步，直到不再变化，再按 ``tools/execute_notebooks.py`` 的写法（``nbformat.writes``）
写回，输出、元数据一字不动：

1. 超宽的注释：跟在代码后面的移到那一行的上方（本书的风格：长注释写在上一行）；独占一行的在原缩进上
   按显示宽度折成几行；
2. ``ruff check --select I --fix`` 与 ``ruff format``（都从标准输入读整个笔记本，用的是笔记本自己那一层的
   ruff 配置），只取回代码单元格的源码；
3. 仍超宽的单行字符串切成相邻的几段（隐式拼接，值不变，打印的输出也就不变）；写在一行里的文档字符串
   折成几行。

为什么不直接 ``ruff format chapters/``：ruff 写回笔记本时重新序列化全部 JSON，输出里的浮点数
（Vega-Lite 图的数据）会差最后一位。这里只改源码，所以保存的输出逐字节不变；之后
``ruff format --check``、``ruff check`` 也都通过（它们只核对源码）。

脚本是幂等的：再运行一次什么也不改。它折不了的（多行字符串里的长行）由 ``ruff check`` 的 E501
报出来，手改。``tests/book/test_notebook_width.py`` 用这里的 :func:`display_width`
核对代码与保存的输出。
"""

from __future__ import annotations

import io
import re
import subprocess
import sys
import tokenize
import unicodedata
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
RUFF_CONFIG = ROOT / "chapters" / "ruff.toml"
RUFF = Path(sys.executable).parent / "ruff"


def line_length() -> int:
    match = re.search(r"^line-length\s*=\s*(\d+)", RUFF_CONFIG.read_text("utf-8"), re.M)
    return int(match.group(1))


def display_width(text: str) -> int:
    """等宽字体里一行占几列：东亚宽字符（汉字、全角标点）算两列，组合附加符号算零列，其余一列。

    与 ruff 量行宽的办法（Unicode 显示宽度）一致，例如 ``display_width("注意力 x") == 8``。
    """
    width = 0
    for char in text:
        if unicodedata.combining(char):
            continue
        width += 2 if unicodedata.east_asian_width(char) in "WF" else 1
    return width


# 不放在行首的标点（跟在前一个字后面）与不放在行尾的标点（跟着后一个字）
NO_LINE_START = set("，。、；：？！）】》」』”’,.;:?!)]}%")
NO_LINE_END = set("（【《「『“‘([{")
# 好的断行处：这些标点之后（注释、文档字符串、切开的字符串都优先在这里断）
GOOD_BREAK = set("，。；：、！？）”,;:")


def _units(text: str) -> list[str]:
    """把注释正文切成不可再分的小段：一个汉字、一串西文（连同它后面的空格）、或一个标点。"""
    units = re.findall(r"[^\s\u2e80-\u9fff\u3000-\u303f\uff00-\uffef]+\s*|\S\s*|\s+", text)
    merged: list[str] = []
    for unit in units:
        glue_back = merged and (unit[0] in NO_LINE_START or merged[-1].rstrip()[-1:] in NO_LINE_END)
        if glue_back:
            merged[-1] += unit
        else:
            merged.append(unit)
    return merged


def _good_break(unit: str) -> bool:
    return unit.rstrip()[-1:] in GOOD_BREAK


def fill(text: str, room: int) -> list[str]:
    """把一段文字按显示宽度折成几行，每行不超过 ``room`` 列。

    只在汉字之间、西文单词之间断开，标点不放在行首；行的后三分之一里有标点时在那里断，
    最后一行只剩几个字时把上一行末尾的一个分句挪下来。一个放不下的长单词（网址）自成一行。
    """

    def width(units: list[str]) -> int:
        return display_width("".join(units).strip())

    lines: list[list[str]] = []
    current: list[str] = []
    for unit in _units(text):
        if not current or width([*current, unit]) <= room:
            current.append(unit)
            continue
        breaks = [
            k
            for k in range(len(current) - 1)
            if _good_break(current[k]) and width(current[: k + 1]) >= room * 2 // 3
        ]
        cut = breaks[-1] + 1 if breaks else len(current)
        lines.append(current[:cut])
        current = [*current[cut:], unit]
    if current:
        lines.append(current)
    if len(lines) >= 2 and width(lines[-1]) < room // 4:  # 孤零零的最后几个字
        previous = lines[-2]
        for k in reversed(range(len(previous) - 1)):
            if _good_break(previous[k]) and width(previous[k + 1 :] + lines[-1]) <= room:
                lines[-2:] = [previous[: k + 1], previous[k + 1 :] + lines[-1]]
                break
    return ["".join(line).strip() for line in lines if "".join(line).strip()]


def wrap_comment(indent: str, body: str, width: int) -> list[str]:
    """把一条注释的正文折成几行 ``indent + "# " + ...``，每行显示宽度不超过 ``width``。"""
    prefix = indent + "# "
    return [prefix + line for line in fill(body, width - display_width(prefix))]


def wrap_docstring(indent: str, quote: str, body: str, width: int) -> list[str]:
    """把写在一行里的文档字符串折成几行：引号在首行开头与末行结尾，续行与引号对齐。"""
    lines = fill(body, width - display_width(indent) - 2 * len(quote))
    lines[0], lines[-1] = quote + lines[0], lines[-1] + quote
    return [indent + line for line in lines]


def wrap_long_comments(source: str, width: int) -> str:
    """第 1 步；代码本身不动。解析不了的单元格原样返回。"""
    lines = source.split("\n")
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return source
    # 从后往前改，前面的行号不受影响
    for token in reversed(tokens):
        if token.type != tokenize.COMMENT:
            continue
        row, col = token.start
        line = lines[row - 1]
        if display_width(line) <= width:
            continue
        body = token.string[1:].strip()
        code = line[:col].rstrip()
        indent = re.match(r"\s*", line).group()
        if code.strip():  # 行尾注释：移到这一行上方
            lines[row - 1 : row] = [indent + "# " + body, code]
        else:
            lines[row - 1 : row] = wrap_comment(indent, body, width)
    return "\n".join(lines)


STRING_PREFIX = re.compile(r"^([rRbBfFuU]{0,2})('|\")")


def _string_spans(source: str) -> list[tuple[int, int, int, int]]:
    """源码里每个单行、非三引号字符串字面量的位置 (行, 起列, 止列, 括号深度)。

    Python 3.12 起 f-string 拆成 FSTRING_START…FSTRING_END 几个记号，这里把它们合成一段。
    """
    spans, depth, fstring = [], 0, []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        name = tokenize.tok_name[token.type]
        if name == "FSTRING_START":
            fstring.append(token.start)
        elif name == "FSTRING_END":
            start = fstring.pop()
            if not fstring and start[0] == token.end[0]:
                spans.append((start[0], start[1], token.end[1], depth))
        elif fstring:
            continue
        elif token.type == tokenize.OP and token.string in "([{":
            depth += 1
        elif token.type == tokenize.OP and token.string in ")]}":
            depth -= 1
        elif token.type == tokenize.STRING and token.start[0] == token.end[0]:
            spans.append((token.start[0], token.start[1], token.end[1], depth))
    return spans


def _safe_cuts(body: str, is_f: bool) -> list[int]:
    """字符串正文里可以切开的位置：不在 f-string 的 {…} 里，不把转义序列（\\n）切开。"""
    cuts, braces, i = [], 0, 0
    while i < len(body):
        char = body[i]
        if is_f and body.startswith(("{{", "}}"), i) and braces == 0:
            i += 2
            cuts.append(i)
            continue
        if char == "\\":
            i += 2
            if braces == 0:
                cuts.append(i)
            continue
        if is_f and char == "{":
            braces += 1
        elif is_f and char == "}":
            braces -= 1
        i += 1
        if braces == 0:
            cuts.append(i)
    return [c for c in cuts if 0 < c < len(body)]


def _literal(prefix: str, quote: str, body: str) -> str:
    """一段字符串字面量；没有 {…} 的一段去掉 f（ruff 的 F541），{{ }} 随之写回 { }。"""
    if "f" in prefix.lower() and "{" not in body.replace("{{", ""):
        prefix = re.sub("[fF]", "", prefix)
        body = body.replace("{{", "{").replace("}}", "}")
    return prefix + quote + body + quote


def split_long_strings(source: str, width: int) -> str:
    """第 3 步：优先在中文标点、空格之后切；不在括号里的字符串外面加一对括号。切好后由 ruff format
    排版，仍太长的段下一轮再切。"""
    try:
        spans = _string_spans(source)
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return source
    lines = source.split("\n")
    for row, start, end, depth in reversed(spans):
        line = lines[row - 1]
        if display_width(line) <= width:
            continue
        literal = line[start:end]
        match = STRING_PREFIX.match(literal)
        if not match:
            continue
        prefix, quote = match.groups()
        if literal.startswith(quote * 3, len(prefix)):
            # 独占一行的三引号字符串（文档字符串）：折成几行，只改了空白
            if not prefix and line.strip() == literal:
                body = literal[3:-3]
                indent = line[: len(line) - len(line.lstrip())]
                lines[row - 1] = "\n".join(wrap_docstring(indent, quote * 3, body, width))
            continue
        body = literal[len(prefix) + 1 : -1]
        indent = len(line) - len(line.lstrip())
        # 独占一行的字符串切开后各段还在这一缩进上（后面可能跟一个逗号）；否则 ruff 把各段放到下一级缩进
        room = width - indent - len(prefix) - 2 - (1 if start == indent else 5)
        cuts = _safe_cuts(body, "f" in prefix.lower())
        parts, begin = [], 0
        while display_width(body[begin:]) > room:
            fitting = [c for c in cuts if c > begin and display_width(body[begin:c]) <= room]
            if not fitting:
                break
            good = [c for c in fitting if body[c - 1] in GOOD_BREAK or body[c - 1] == " "]
            cut = (
                max(good)
                if good and max(good) - begin > (max(fitting) - begin) // 2
                else max(fitting)
            )
            parts.append(body[begin:cut])
            begin = cut
        if not parts:
            continue
        parts.append(body[begin:])
        joined = "\n".join(_literal(prefix, quote, part) for part in parts)
        if depth == 0:
            joined = "(\n" + joined + "\n)"
        lines[row - 1] = line[:start] + joined + line[end:]
    return "\n".join(lines)


def ruff(notebook_text: str, path: Path, *args: str) -> str:
    """把整个笔记本从标准输入交给 ruff，返回它改好的笔记本 JSON。"""
    result = subprocess.run(
        [str(RUFF), *args, "--stdin-filename", str(path), "-"],
        input=notebook_text,
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=ROOT,
    )
    if not result.stdout.strip():
        raise RuntimeError(f"ruff {' '.join(args)} 处理 {path} 失败：{result.stderr}")
    return result.stdout


def format_sources(nb, path: Path, width: int) -> None:
    """就地改 ``nb`` 里代码单元格的源码，直到三步都不再改它。行尾注释先移走：否则 ruff 为了放下
    注释把代码拆成好几行。"""
    code_cells = [cell for cell in nb.cells if cell.cell_type == "code"]
    for _ in range(5):
        before = [cell.source for cell in code_cells]
        for cell in code_cells:
            cell.source = wrap_long_comments(cell.source, width)
        text = nbformat.writes(nb)
        text = ruff(text, path, "check", "--select", "I", "--fix", "--exit-zero", "--quiet")
        text = ruff(text, path, "format")
        formatted = nbformat.reads(text, as_version=nbformat.NO_CONVERT)
        for cell, new in zip(nb.cells, formatted.cells, strict=True):
            if cell.cell_type == "code":
                cell.source = split_long_strings(new.source, width)
        if [cell.source for cell in code_cells] == before:
            return
    raise RuntimeError(f"{path}：排版五轮仍在变化")


def format_notebook(path: Path) -> bool:
    """排好一个笔记本；改了就写回并返回 True。"""
    path = Path(path).resolve()
    old = path.read_text(encoding="utf-8")
    nb = nbformat.reads(old, as_version=nbformat.NO_CONVERT)
    format_sources(nb, path.relative_to(ROOT), line_length())
    new = nbformat.writes(nb) + "\n"
    if new != old:
        path.write_text(new, encoding="utf-8")
    return new != old


def main(paths: list[str]) -> None:
    notebooks = [Path(p) for p in paths] or sorted((ROOT / "chapters").glob("*.ipynb"))
    for path in notebooks:
        if format_notebook(path):
            print(f"已排版 {path}")


if __name__ == "__main__":
    main(sys.argv[1:])
