"""书的配置：仓库地址只有一个出处，启动按钮、各章的 Colab 安装单元格、README 都与它一致。"""

import filecmp
import hashlib
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest
import yaml

from tests.kit import ROOT
from tools import colab_setup, execute_notebooks, readme_commands

CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
NOTEBOOKS = sorted(execute_notebooks.toc_notebooks())


def test_toc_entries_exist():
    toc = (ROOT / "_toc.yml").read_text(encoding="utf-8")
    for name in re.findall(r"(?:root|file):\s*([^\s#]+)", toc):
        assert any((ROOT / f"{name}{ext}").exists() for ext in (".ipynb", ".md")), name


def test_launch_buttons_and_language():
    url, branch = colab_setup.repository()
    assert re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+", url)
    assert branch == "main"
    buttons = CONFIG["launch_buttons"]
    assert buttons["binderhub_url"] == "https://mybinder.org"
    assert buttons["colab_url"] == "https://colab.research.google.com"
    assert buttons["thebe"] is True
    sphinx = CONFIG["sphinx"]
    # 没有 recursive_update，sphinx.config 里的字典会替换掉 Jupyter Book 自己的，启动按钮就悄悄消失了
    assert sphinx["recursive_update"] is True
    assert sphinx["config"]["language"] == "zh_CN"
    assert CONFIG["execute"]["execute_notebooks"] == "off"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_starts_with_the_configured_colab_cell(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    first = nb["cells"][0]
    assert first["cell_type"] == "code"
    extras = colab_setup.extras_needed(nbformat.reads(json.dumps(nb), as_version=4))
    assert "".join(first["source"]) == colab_setup.setup_source(extras)
    assert "remove-cell" in first["metadata"]["tags"]
    assert first["outputs"] == []  # 不在 Colab 时它什么也不做


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_is_clean_and_ignored_outputs_say_why(path):
    # 执行时间戳与小版本号：test_nbstripout_hook_keeps_what_the_book_needs（钩子去掉它们，对仓库里的笔记本什么也不改）
    for i, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"]):
        source = "".join(cell["source"])
        # 测试与 lint 的指令不出现在读者复制的代码里：理由写在元数据里
        assert not re.search(r"#\s*nbval|NBVAL_|#\s*noqa", source), f"cell {i}: plumbing in code"
        if "nbval-ignore-output" in cell.get("metadata", {}).get("tags", []):
            reason = cell["metadata"].get("nbval_ignore_reason", "")
            assert len(reason) >= 8, (
                f"cell {i}: say why output is not checked (nbval_ignore_reason)"
            )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_widget_ids_are_the_fixed_ones(path):
    """重复执行逐字节相同：每个控件 model id 都是由笔记本名导出的固定 id（md5(名字:序号)），
    不存控件状态的笔记本（控件只在 remove-output 的单元格里）也一样。"""
    text = path.read_text(encoding="utf-8")
    fixed = {hashlib.md5(f"{path.stem}:{i}".encode()).hexdigest() for i in range(1000)}
    ids = set(re.findall(r'"model_id": "([0-9a-f]{32})"', text))
    assert ids <= fixed, f"random widget ids: {sorted(ids - fixed)[:3]}"


def test_every_github_link_points_at_the_configured_repository():
    url, _ = colab_setup.repository()
    texts = [ROOT / "README.md", *NOTEBOOKS, ROOT / "binder" / "requirements.txt"]
    for path in texts:
        for link in re.findall(
            r"https://(?:github\.com|colab\.research\.google\.com/github)/[\w./@-]+",
            path.read_text(),
        ):
            repo = re.sub(
                r"^https://colab\.research\.google\.com/github", "https://github.com", link
            )
            assert repo.startswith(url + "/") or repo.startswith(url + "@") or repo == url, (
                path.name,
                link,
            )


def test_ci_runs_the_readme_commands():
    commands = readme_commands.readme_commands()
    assert commands == ["python3 tasks.py book", "python3 tasks.py test"]
    ci = (ROOT / ".ci" / "run").read_text()
    assert "python3 -m tools.readme_commands" in ci
    # 网站与浏览器测试读构建好的网站：先构建（第 1 条），再测试（第 2 条）
    assert ci.index('bash -c "${commands[0]}"') < ci.index('bash -c "${commands[1]}"')
    assert "apt-get install -y chromium fonts-noto-cjk" in ci


def test_doors_run_every_file_with_slow_tests():
    """python3 tasks.py doors 逐个文件运行慢测试：新加的慢测试文件不会被漏掉。"""
    import tasks

    marked = {
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "tests").rglob("test_*.py")
        if re.search(
            r"^(@pytest\.mark\.slow|pytestmark = pytest\.mark\.slow)", p.read_text("utf-8"), re.M
        )
    }
    assert sorted(tasks.DOORS) == sorted(marked)


def test_binder_pins_the_same_torch_as_requirements():
    pin = re.search(r"^torch==([\d.]+)$", (ROOT / "requirements.txt").read_text(), re.M).group(1)
    assert f"torch=={pin}+cpu" in (ROOT / "binder" / "requirements.txt").read_text()


def test_preface_shape_letters_match_the_package_docstring():
    """形状字母表印在两处：包的文档字符串与前言（附录的符号表链接到前言的那张表）。"""
    import tinyformer

    preface = json.loads((ROOT / "chapters" / "ch00_preface.ipynb").read_text(encoding="utf-8"))
    table = next(
        "".join(c["source"])
        for c in preface["cells"]
        if "(preface-shape-letters)=" in "".join(c["source"])
    )
    in_preface = re.findall(r"^\| `([A-Z])` \|", table, re.M)
    in_package = re.findall(r"^([A-Z])\s{2,}\S", tinyformer.__doc__, re.M)
    assert in_preface == in_package == ["B", "T", "S", "C", "H", "D", "V"]


STATS_FILE = ROOT / "chapters" / "execution_stats.json"
STATS_NOTEBOOK = "appendix_stats.ipynb"


def test_every_notebook_has_execution_stats():
    """附录“执行统计”的数据：目录里的每个笔记本（统计页自己除外）都有一条，字段齐全。"""
    stats = json.loads(STATS_FILE.read_text(encoding="utf-8"))
    expected = {p.relative_to(ROOT).as_posix() for p in NOTEBOOKS if p.name != STATS_NOTEBOOK}
    missing = sorted(expected - set(stats))
    assert not missing, f"没有执行统计，请运行 python3 tasks.py execute {' '.join(missing)}"
    stale = sorted(set(stats) - expected)
    assert not stale, f"这些条目不在 _toc.yml 里，请从 {STATS_FILE.name} 删去：{stale}"
    fields = {"seconds", "peak_mb", "date", "python", "torch", "tinyformer", "cpu", "cpu_count"}
    for name, entry in stats.items():
        assert set(entry) == fields, name
        assert entry["seconds"] > 0 and re.fullmatch(r"\d{4}-\d{2}-\d{2}", entry["date"]), name
        # mybinder.org 只保证 1 GB：放得下一章正在运行的内核（VmHWM）和 Jupyter 服务器，每章 ≤ 800 MB
        assert 50 < entry["peak_mb"] <= MEMORY_BUDGET_MB, f"{name}: 峰值内存 {entry['peak_mb']} MB"


# 各章不做任何内存上的手脚（glibc 的 malloc 照默认，jieba 用它自己的词典）。内核连同 torch、matplotlib 约占 285 MB，探索器的 Altair 连同 jsonschema 约 47
# （其中约 15 是 jsonschema 导入的 rfc3987-syntax 在导入时建的 Lark 语法分析器）。训练用包自己的
# tinyformer.optim.AdamW：torch.optim 的 step 会导入 torch._dynamo 和 sympy（约 70，之后一直占着）。
# 第 8 章的 ONNX 导出与核对（onnx、onnxruntime、追踪导出器约 60）在附录 appendix_browser 里。
MEMORY_BUDGET_MB = 800


def test_execution_stats_merge_updates_only_the_executed_notebooks(tmp_path, monkeypatch):
    monkeypatch.setattr(execute_notebooks, "STATS_FILE", tmp_path / "stats.json")
    execute_notebooks.record_stats({"a.ipynb": {"seconds": 1.0}, "b.ipynb": {"seconds": 2.0}})
    execute_notebooks.record_stats({"b.ipynb": execute_notebooks.stats_entry(3.04, 123_456_789)})
    stats = json.loads((tmp_path / "stats.json").read_text(encoding="utf-8"))
    assert stats["a.ipynb"] == {"seconds": 1.0}
    assert stats["b.ipynb"]["seconds"] == 3.0
    assert stats["b.ipynb"]["peak_mb"] == 123
    assert stats["b.ipynb"]["torch"].startswith("2.")


def test_few_cells_have_output_checks_off():
    """nbval 不核对输出的单元格（计时、进度条、交互控件）不超过代码单元格的 15%。"""
    code = ignored = 0
    for path in NOTEBOOKS:
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "code" and "".join(cell["source"]).strip():
                code += 1
                ignored += "nbval-ignore-output" in cell.get("metadata", {}).get("tags", [])
    assert ignored <= 0.15 * code, f"{ignored} of {code} code cells have output checks off"


def test_peak_rss_reads_the_high_water_mark_of_a_process():
    """峰值内存读的是进程的高水位：分配过又释放的内存也算在内。"""
    code = "b = bytearray(200_000_000); del b; import sys; sys.stdin.read()"
    child = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while execute_notebooks.peak_rss_bytes(child.pid) < 200e6 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert 200e6 < execute_notebooks.peak_rss_bytes(child.pid) < 400e6
    finally:
        child.communicate(b"")


def nbstripout_hook_command() -> list[str]:
    """.pre-commit-config.yaml 里 nbstripout 钩子的命令行（entry + args）。"""
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text(encoding="utf-8"))
    hook = next(h for repo in config["repos"] for h in repo["hooks"] if h["id"] == "nbstripout")
    return [str(Path(sys.executable).parent / hook["entry"]), *hook["args"]]


def test_nbstripout_hook_keeps_what_the_book_needs(tmp_path):
    """提交前钩子对仓库里的笔记本什么也不改（输出、标签、控件状态都留着），只去掉执行时间戳和小版本号。"""
    copies = []
    for path in NOTEBOOKS:
        copies.append(tmp_path / path.name)
        copies[-1].write_bytes(path.read_bytes())
    dirty = json.loads(NOTEBOOKS[0].read_text(encoding="utf-8"))
    dirty["metadata"].setdefault("language_info", {})["version"] = "3.11.7"
    for cell in dirty["cells"]:
        cell["metadata"]["execution"] = {"iopub.status.idle": "2026-11-23T08:00:00.000Z"}
    (tmp_path / "dirty.ipynb").write_text(
        json.dumps(dirty, indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8"
    )
    subprocess.run([*nbstripout_hook_command(), *copies, tmp_path / "dirty.ipynb"], check=True)
    for path, copy in zip(NOTEBOOKS, copies, strict=True):
        # filecmp：失败时 pytest 不去比两个几 MB 的字节串（那要二十多分钟）
        assert filecmp.cmp(copy, path, shallow=False), f"the hook changed {path.name}"
    assert filecmp.cmp(tmp_path / "dirty.ipynb", NOTEBOOKS[0], shallow=False)
    assert any(json.loads(p.read_text())["metadata"].get("widgets") for p in copies)
