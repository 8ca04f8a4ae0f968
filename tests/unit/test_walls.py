"""包的三层在文件树里看得见，依赖只朝一个方向：book → 两个应用（translation、poetry）→ 模型核心。

- 模型核心（``src/tinyformer/*.py``）不导入 ``tinyformer.translation``、``tinyformer.poetry`` 与 ``tinyformer.book``；
- 翻译应用（``src/tinyformer/translation/``）不导入 ``tinyformer.book``；
- 写诗应用（``src/tinyformer/poetry/``）不导入 ``tinyformer.translation`` 与 ``tinyformer.book``：两个应用互不依赖；
- ``import tinyformer`` 只加载核心：不加载另外两层，也不加载只有它们才用的重依赖（matplotlib、Altair、ipywidgets、sacreBLEU、onnx；tqdm 不算：torch 自己就导入它）。

静态检查读每个源文件的 AST（包括函数里的延迟导入），运行时检查在一个新的子进程里看 ``sys.modules``。
"""

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "tinyformer"
CORE = sorted(SRC.glob("*.py"))
TRANSLATION = sorted((SRC / "translation").rglob("*.py"))
BOOK = sorted((SRC / "book").rglob("*.py"))
POETRY = sorted((SRC / "poetry").rglob("*.py"))


def imported_modules(path: Path) -> set[str]:
    """``path`` 导入的模块的绝对名（相对导入按它所在的包解析）。"""
    package = ".".join(path.relative_to(SRC.parent).with_suffix("").parts[:-1])
    if path.name == "__init__.py":
        package = ".".join(path.relative_to(SRC.parent).parts[:-1])
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module
            names.add(module)
            names.update(f"{module}.{alias.name}" for alias in node.names)
    return names


def forbidden(path: Path, layers: tuple[str, ...]) -> list[str]:
    return sorted(
        name
        for name in imported_modules(path)
        if any(name == layer or name.startswith(layer + ".") for layer in layers)
    )


def test_the_three_layers_exist():
    assert len(CORE) >= 15 and len(TRANSLATION) >= 8 and len(BOOK) >= 8
    assert (SRC / "translation" / "weights").is_dir() and (SRC / "book" / "fonts").is_dir()


@pytest.mark.parametrize("path", CORE, ids=lambda p: p.name)
def test_the_model_core_imports_neither_the_application_nor_the_book(path):
    assert forbidden(path, ("tinyformer.translation", "tinyformer.poetry", "tinyformer.book")) == []


@pytest.mark.parametrize("path", TRANSLATION, ids=lambda p: p.name)
def test_the_translation_application_does_not_import_the_book(path):
    assert forbidden(path, ("tinyformer.book",)) == []


@pytest.mark.parametrize("path", POETRY, ids=lambda p: p.name)
def test_the_poetry_application_imports_neither_the_translation_application_nor_the_book(path):
    assert forbidden(path, ("tinyformer.translation", "tinyformer.book")) == []


def test_importing_the_poetry_application_loads_neither_translation_nor_book():
    code = (
        "import json, sys; import tinyformer.poetry.cli; "
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('tinyformer'))))"
    )
    loaded = json.loads(
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout
    )
    assert "tinyformer.poetry.cli" in loaded
    assert not any(m.startswith(("tinyformer.translation", "tinyformer.book")) for m in loaded)


def test_the_check_sees_a_forbidden_relative_import(tmp_path, monkeypatch):
    fake = SRC / "layers.py"
    source = fake.read_text(encoding="utf-8") + "\nfrom .book.plotting import plot_heatmap\n"
    monkeypatch.setattr(Path, "read_text", lambda self, encoding=None: source)
    assert forbidden(fake, ("tinyformer.book",)) == [
        "tinyformer.book.plotting",
        "tinyformer.book.plotting.plot_heatmap",
    ]


def test_import_tinyformer_loads_only_the_model():
    code = (
        "import json, sys; import tinyformer; "
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('tinyformer', 'matplotlib', 'altair', 'ipywidgets', 'sacrebleu', 'onnx'))))"
    )
    loaded = json.loads(
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout
    )
    assert all(m.startswith("tinyformer") for m in loaded), loaded
    assert not any(m.startswith(("tinyformer.translation", "tinyformer.book")) for m in loaded), (
        loaded
    )


# ---------------------------------------------------------------- 翻译应用的命令行：两种写法是同一个程序


def test_console_scripts_and_python_m_run_the_same_commands():
    import tomllib

    scripts = tomllib.loads((SRC.parents[1] / "pyproject.toml").read_text(encoding="utf-8"))[
        "project"
    ]["scripts"]
    assert scripts == {
        "tinyformer-train": "tinyformer.translation.cli:train_command",
        "tinyformer-translate": "tinyformer.translation.cli:translate_command",
        "tinyformer-poetry": "tinyformer.poetry.cli:console",
    }
    bin_dir = Path(sys.executable).parent
    for script, command in (("tinyformer-train", "train"), ("tinyformer-translate", "translate")):
        installed = subprocess.run(
            [bin_dir / script, "--help"], capture_output=True, text=True, check=True
        ).stdout
        module = subprocess.run(
            [sys.executable, "-m", "tinyformer.translation", command, "--help"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        # 同一个解析器：除了 usage 里的程序名，帮助文字逐字相同
        assert installed.split("\n", 2)[2] == module.split("\n", 2)[2]
        assert "--help" in module
