"""包的三层在文件树里看得见，依赖只朝一个方向：book → 两个应用（translation、poetry）→ 模型核心。

- 模型核心（``src/tinyformer/*.py``）不导入 ``tinyformer.translation``、``tinyformer.poetry`` 与 ``tinyformer.book``；
- 翻译应用（``src/tinyformer/translation/``）不导入 ``tinyformer.book``；
- 写诗应用（``src/tinyformer/poetry/``）不导入 ``tinyformer.translation`` 与 ``tinyformer.book``：两个应用互不依赖；
- ``import tinyformer`` 只加载核心：不加载另外两层，也不加载只有它们才用的重依赖（matplotlib、Altair、ipywidgets、sacreBLEU、onnx；tqdm 不算：torch 自己就导入它）。

静态的一半是 import-linter 的契约（``pyproject.toml`` 的 ``[tool.importlinter]``，连间接导入、函数里的
延迟导入也查；第二条契约管仓库的其余部分：tests → benchmarks | tools（互不导入）→ Sphinx 扩展 → 包）；运行时的一半在一个新的子进程里看 ``sys.modules``。
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "tinyformer"
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def lint_imports(package_parent: Path) -> subprocess.CompletedProcess:
    """对 ``package_parent`` 下的 tinyformer（和它旁边的文件夹）运行 pyproject.toml 里的契约；
    ``package_parent`` 里没有的 tests、tools、benchmarks、_ext 取仓库里的。"""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(package_parent), str(ROOT)])}
    return subprocess.run(
        [LINT_IMPORTS, "--config", ROOT / "pyproject.toml", "--no-cache"],
        capture_output=True,
        text=True,
        cwd=package_parent,
        env=env,
    )


def test_the_three_layers_exist():
    assert len(list(SRC.glob("*.py"))) >= 15
    assert len(list((SRC / "translation").rglob("*.py"))) >= 8
    assert len(list((SRC / "book").rglob("*.py"))) >= 8
    assert len(list((SRC / "poetry").rglob("*.py"))) >= 6
    assert (SRC / "translation" / "weights").is_dir() and (SRC / "book" / "fonts").is_dir()


def test_the_import_contract_is_kept():
    result = lint_imports(SRC.parent)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Contracts: 2 kept, 0 broken." in result.stdout


def test_tools_and_benchmarks_do_not_import_the_tests_or_each_other(tmp_path):
    # 第二条契约：tests → benchmarks | tools → _ext → tinyformer。基准脚本曾从 tests/ 取参考实现和浏览器
    shutil.copytree(
        SRC, tmp_path / "tinyformer", ignore=shutil.ignore_patterns("weights", "fonts", "data")
    )
    for folder in ("tools", "benchmarks"):
        shutil.copytree(
            ROOT / folder, tmp_path / folder, ignore=shutil.ignore_patterns("__pycache__")
        )
    records = tmp_path / "tools" / "records.py"
    records.write_text(
        records.read_text(encoding="utf-8") + "\n\ndef _kit():\n    from tests import kit\n"
    )
    bench = tmp_path / "benchmarks" / "_bench.py"
    bench.write_text(bench.read_text(encoding="utf-8") + "\nfrom tools import records\n")
    result = lint_imports(tmp_path)
    assert result.returncode != 0, result.stdout
    assert "tools.records -> tests.kit" in result.stdout
    assert "benchmarks._bench -> tools.records" in result.stdout


def test_the_contract_sees_a_forbidden_lazy_import_and_an_unlisted_module(tmp_path):
    shutil.copytree(SRC, tmp_path / "tinyformer", ignore=shutil.ignore_patterns("weights", "fonts"))
    layers = tmp_path / "tinyformer" / "layers.py"
    layers.write_text(
        layers.read_text(encoding="utf-8")
        + "\n\ndef _plot():\n    from .book.plotting import plot_heatmap\n",
        encoding="utf-8",
    )
    result = lint_imports(tmp_path)
    assert result.returncode != 0 and "tinyformer.layers -> tinyformer.book" in result.stdout
    poetry = tmp_path / "tinyformer" / "poetry" / "corpus.py"
    poetry.write_text(poetry.read_text(encoding="utf-8") + "\nfrom ..translation import corpus\n")
    result = lint_imports(tmp_path)
    assert (
        result.returncode != 0
        and "tinyformer.poetry.corpus -> tinyformer.translation" in result.stdout
    )
    poetry.write_text(poetry.read_text(encoding="utf-8").rsplit("\nfrom ..translation", 1)[0])
    layers.write_text(layers.read_text(encoding="utf-8").rsplit("\n\ndef _plot", 1)[0])
    (tmp_path / "tinyformer" / "newcomer.py").write_text("x = 1\n")
    result = lint_imports(tmp_path)
    assert result.returncode != 0 and "tinyformer.newcomer" in result.stdout


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
    applications = ("tinyformer.translation", "tinyformer.poetry", "tinyformer.book")
    assert not any(m.startswith(applications) for m in loaded), loaded


# ---------------------------------------------------------------- 翻译应用的命令行：两种写法是同一个程序


def test_console_scripts_and_python_m_run_the_same_commands():
    import tomllib

    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "scripts"
    ]
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
