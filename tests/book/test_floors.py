"""pyproject.toml 写的下限是真的：在一次性的虚拟环境里按下限版本安装本包，跑它的单元测试。

Colab 等环境自带各自的版本，本包只写下限（精确版本在 requirements.txt）；下限写高了会逼读者
重装，写低了包在老版本上会坏。这里每个依赖都装它的下限版本，唯一的例外是 torch：本机（与 CI）
只能装本地磁盘上的 2.13.0 CPU 轮子，PyPI 上更老的 Linux 版本都是几 GB 的 CUDA 版。torch 的下限
2.4 来自第 6 章用到的 ``nn.RMSNorm``（2.4 加入），由下面的源码检查守着。

搭环境要几分钟，标为 slow：python3 tasks.py doors 运行它。
"""

import json
import re
import subprocess
import sys
import tomllib
import venv

import pytest
from packaging.version import Version

from tests.kit import ROOT, package_copy

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
TORCH_HERE = "2.13.0"  # 本机能装的 torch（见 requirements.txt）
REQUIREMENTS = (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()


def floors() -> dict[str, str]:
    """pyproject.toml 的依赖（连同附加依赖 onnx）-> 下限版本；每个都必须写成 ``名字>=版本``。"""
    result = {}
    for requirement in PROJECT["dependencies"] + PROJECT["optional-dependencies"]["onnx"]:
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)>=([\d.]+)", requirement)
        assert match, f"dependency must read name>=version, got {requirement!r}"
        result[match.group(1).lower()] = match.group(2)
    return result


def test_torch_floor_covers_what_the_chapters_use():
    """章节里用到的 torch 接口决定 torch 的下限。"""
    needs = {
        "nn.RMSNorm": "2.4",
        "weights_only=True": "1.13",
        "scaled_dot_product_attention": "2.0",
    }
    sources = "".join(p.read_text(encoding="utf-8") for p in ROOT.glob("chapters/*.ipynb"))
    sources += "".join(
        p.read_text(encoding="utf-8") for p in sorted(ROOT.glob("src/tinyformer/**/*.py"))
    )
    used = [v for api, v in needs.items() if api in sources]
    required = max(used, key=lambda v: tuple(map(int, v.split("."))))
    assert floors()["torch"] == required


@pytest.mark.slow
def test_unit_tests_pass_with_the_floor_versions(tmp_path):
    env = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env)
    python = env / "bin" / "python"
    pins = {name: version for name, version in floors().items() if name != "torch"}
    install = [f"{name}=={version}" for name, version in pins.items()]
    # matplotlib 3.11 之前用 pyparsing 的驼峰式接口（parseString），pyparsing 3.3 起对它发弃用警告，
    # 本仓库的测试把 matplotlib 的警告当错误。老版本的 matplotlib 与同时代的 pyparsing 一起装（Colab 也是）
    install.append("pyparsing<3.3")
    # 测试工具与 requirements.txt 里的同版本：pytest、hypothesis，以及 test_walls.py 运行的 import-linter
    tools = [
        line
        for line in REQUIREMENTS
        if line.startswith(("pytest==", "hypothesis==", "import-linter=="))
    ]
    subprocess.run(
        [python, "-m", "pip", "install", "-q", f"torch=={TORCH_HERE}", *install, *tools],
        check=True,
        timeout=1200,
    )
    # 从只含打包所需文件的副本安装（否则 build/ 里的旧文件，例如 build/lib/tinyformer/explorers.py，
    # 会被装进新的 wheel）
    package = package_copy(tmp_path / "package")
    subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", str(package)], check=True)
    listed = subprocess.run(
        [python, "-m", "pip", "list", "--format", "json"], capture_output=True, check=True
    )
    installed = {p["name"].lower(): p["version"] for p in json.loads(listed.stdout)}
    for name, version in pins.items():
        assert Version(installed[name]) == Version(version), (name, installed[name])
    tests = sorted((ROOT / "tests" / "unit").glob("test_*.py"))  # 本包的单元测试
    result = subprocess.run(
        [python, "-m", "pytest", "-q", "--tb=short", "--disable-warnings", "-p", "no:cacheprovider"]
        + ["-o", "addopts=", *tests],
        cwd=tmp_path,  # 不在仓库根目录：import tinyformer 拿到的是装进去的包，不是 src/
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    # 确实测的是装进一次性环境的包
    where = subprocess.run(
        [python, "-c", "import tinyformer; print(tinyformer.__file__)"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=True,
    )
    assert str(env) in where.stdout, where.stdout
    print(result.stdout.splitlines()[-1], file=sys.stderr)
