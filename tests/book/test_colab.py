"""Colab 这扇门，模拟：在一个像 Colab 的一次性环境里从头到尾执行每一章的笔记本版（edition/，
启动按钮在 Colab 里打开的就是它；tools/edition.py 由 chapters/ 生成）。

像 Colab 的地方：
- torch 和 ipywidgets 7.7.1（Colab 不支持 8）已经装好，本书的包没有装；
- ``google.colab`` 可以导入（``.pth`` 文件在解释器启动时导入一个空的同名模块），所以每章隐藏的
  第一个单元格真的运行 ``pip install "tinyformer @ git+<仓库>@<分支>"``；
- 每章单独打开：工作目录是一个空目录，旁边没有仓库里的其他文件。

仓库地址只在测试里改：git 的 ``url.<本地>.insteadOf`` 把 _config.yml 里的 GitHub 地址换成一个临时的
本地仓库（当前工作树里的包，分支名取自 _config.yml），安装单元格本身一字不改。

每章都不许出错；ipywidgets 7 下每个控件都建得起来（控件视图的个数与仓库里保存的、用 ipywidgets 8
执行的输出相同；ipywidgets 8 下的执行由 nbval 检查）。

要搭环境、执行全书，标为 slow：python3 tasks.py doors 运行它。
"""

import json
import os
import subprocess
import venv
from pathlib import Path

import pytest

from tests.kit import ROOT, package_copy
from tools import colab_setup, edition, execute_notebooks

repository = colab_setup.repository
toc_notebooks = execute_notebooks.toc_notebooks

# Colab 预装的、与本书有关的包（torch 用本机能装的版本）
COLAB_PACKAGES = ["torch==2.13.0", "ipywidgets==7.7.1", "ipykernel", "matplotlib", "numpy", "tqdm"]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"

RUNNER = r"""
import json, sys
import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError

workdir, results = sys.argv[1], {}
for path in sys.argv[2:]:  # 一章出错也接着执行后面的章，最后一起报告
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=900, kernel_name="python3",
                            resources={"metadata": {"path": workdir}})
    try:
        client.execute()
        error = None
    except (CellExecutionError, CellTimeoutError) as err:
        error = str(err)[-1500:]
    outputs = [o for cell in nb.cells for o in cell.get("outputs", [])]
    results[path] = {
        "error": error,
        "widget_views": sum("application/vnd.jupyter.widget-view+json" in o.get("data", {})
                            for o in outputs),
        "stderr": [o["text"] for o in outputs if o.get("name") == "stderr"],
    }
print(json.dumps(results))
"""


def widget_views(path: Path) -> int:
    nb = json.loads(path.read_text(encoding="utf-8"))
    return sum(WIDGET_VIEW in o.get("data", {}) for c in nb["cells"] for o in c.get("outputs", []))


def package_repository(tmp_path: Path, branch: str) -> Path:
    """只含本包（当前工作树里的版本）的临时 git 仓库，分支 ``branch``。"""
    repo = package_copy(tmp_path / "repo")
    git = ["git", "-C", str(repo), "-c", "user.name=test", "-c", "user.email=test@localhost"]
    subprocess.run([*git, "init", "-q", "-b", branch], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "tinyformer"], check=True)
    return repo


def colab_like_venv(tmp_path: Path) -> Path:
    env = tmp_path / "colab"
    venv.EnvBuilder(with_pip=True).create(env)
    python = env / "bin" / "python"
    subprocess.run([python, "-m", "pip", "install", "-q", *COLAB_PACKAGES], check=True)
    site = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    (site / "google" / "colab").mkdir(parents=True)
    (site / "google" / "colab" / "__init__.py").write_text('"""Colab 的替身（测试用）。"""\n')
    (site / "colab_simulation.pth").write_text("import google.colab\n")
    return python


@pytest.mark.slow
def test_every_chapter_runs_in_a_colab_like_environment(tmp_path):
    url, branch = repository()
    repo = package_repository(tmp_path, branch)
    python = colab_like_venv(tmp_path)
    check = [python, "-c", "import google.colab, ipywidgets; print(ipywidgets.__version__)"]
    assert subprocess.run(check, capture_output=True, text=True).stdout.strip() == "7.7.1"
    missing = subprocess.run([python, "-c", "import tinyformer"], capture_output=True)
    assert missing.returncode != 0, "tinyformer must not be installed before the setup cell runs"

    workdir = tmp_path / "empty"
    workdir.mkdir()
    (tmp_path / "runner.py").write_text(RUNNER, encoding="utf-8")
    notebooks = [ROOT / "edition" / name for name in edition.edition_notebooks()]
    assert len(notebooks) == len(toc_notebooks())
    env = dict(
        os.environ,
        GIT_CONFIG_COUNT="1",
        GIT_CONFIG_KEY_0=f"url.{repo.as_uri()}.insteadOf",
        GIT_CONFIG_VALUE_0=url,
        MPLBACKEND="agg",
    )
    result = subprocess.run(
        [python, tmp_path / "runner.py", workdir, *notebooks],
        capture_output=True,
        text=True,
        env=env,
        timeout=3600,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    results = json.loads(result.stdout.strip().splitlines()[-1])

    # 包是安装单元格从（替身）仓库装进来的，torch 与 ipywidgets 仍是 Colab 自带的
    versions = subprocess.run(
        [
            python,
            "-c",
            "import tinyformer, torch, ipywidgets;"
            "print(tinyformer.__file__, torch.__version__, ipywidgets.__version__)",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=workdir,
    ).stdout.split()
    assert "site-packages" in versions[0] and str(ROOT) not in versions[0]
    assert versions[1:] == ["2.13.0+cpu", "7.7.1"]

    errors = {Path(p).name: r["error"] for p, r in results.items() if r["error"]}
    assert errors == {}
    for path in notebooks:
        run = results[str(path)]
        # 与 chapters/ 里保存的（用 ipywidgets 8 执行的）输出比：笔记本版清空了网站不显示的控件输出
        assert run["widget_views"] == widget_views(ROOT / "chapters" / path.name), path.name
        assert not [t for t in run["stderr"] if "Error" in t or "Traceback" in t], (
            path.name,
            run["stderr"],
        )
