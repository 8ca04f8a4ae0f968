"""把网页需要的前端文件从 node_modules/ 复制进 _vendor/（git 忽略；构建时作为 html_static_path 复制进 _static/）。

版本与完整性校验值在仓库根目录的 ``package.json`` 和 ``package-lock.json`` 里：``npm ci`` 按锁文件安装、
核对每个包的 sha512（锁文件里的 ``integrity``），这里只挑出网站需要的几个文件。锁文件没变时不重新安装
（``node_modules/.package-lock.json`` 是 npm 自己记下的已装版本，与锁文件相同就跳过）。
浏览器测试用的工具（axe-core、Lighthouse）另有自己的锁文件（``tests/browser_tools/``），不进这里的安装。

- 控件的 HTML 管理器：html-manager 1.0.15 的 embed.js（1.9 MB），而不是 myst-nb 默认的 1.0.6 embed-amd.js
  （4.4 MB）：embed-amd.js 为了兼容 ipywidgets 7 另外打包了 7.x 的 base 与 controls，还要 require.js；本书保存的
  控件状态是 ipywidgets 8.1.9 的，embed.js 自带 8.x 的 base、controls、output，不需要 require.js。
- 各章探索器的图（tinyformer.book.explorers → _ext/vega_charts.py）：vega、vega-lite、vega-embed，
  版本与 requirements.txt 里的 altair 一致（tests/book/test_site_offline.py 核对）。

    python -m tools.web_assets        tasks.py book 在构建前会运行它
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENDOR = ROOT / "_vendor"
NODE_MODULES = ROOT / "node_modules"

# 包名 -> (_vendor/ 下的目录, 要复制的文件：包目录里的路径)
PACKAGES = {
    # embed.js 自带 base/controls/output 三个控件模块和样式；样式里的图标字体从 embed.js 所在目录加载。
    # 浏览器取 @font-face 里第一个认识的格式：woff2，旧浏览器 woff；eot/ttf/svg 不需要。
    "@jupyter-widgets/html-manager": (
        "html-manager",
        ["dist/embed.js", "dist/embed.js.LICENSE.txt", "dist/*.woff2", "dist/*.woff"],
    ),
}
# 只取 UMD 构建（页面上用 <script> 加载）和许可证；每个包一个目录，许可证文件名才不冲突
VEGA_PACKAGES = {
    name: (name, ["LICENSE", f"build/{name}.min.js"])
    for name in ("vega", "vega-lite", "vega-embed")
}


def locked_version(name: str) -> str:
    """``package-lock.json`` 为这个包固定的版本。"""
    lock = json.loads((ROOT / "package-lock.json").read_text("utf-8"))
    return lock["packages"][f"node_modules/{name}"]["version"]


def npm_ci() -> None:
    """按锁文件安装（锁文件与已装的相同时跳过）。--ignore-scripts：这些包不需要安装脚本。"""
    installed = NODE_MODULES / ".package-lock.json"
    lock = json.loads((ROOT / "package-lock.json").read_text("utf-8"))["packages"]
    if installed.exists():
        have = json.loads(installed.read_text("utf-8"))["packages"]
        if all(
            have.get(k, {}).get("integrity") == v.get("integrity") for k, v in lock.items() if k
        ):
            return
    command = ["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund"]
    print("+", " ".join(command), flush=True)
    try:
        subprocess.run(command, cwd=ROOT, check=True)
    except FileNotFoundError:
        sys.exit("需要 npm（Node.js）来取网页脚本：例如 apt-get install npm")


def copy(name: str, folder: str, patterns: list[str]) -> None:
    source = NODE_MODULES / name
    target = VENDOR / folder
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    for pattern in patterns:
        files = sorted(source.glob(pattern))
        if not files:
            sys.exit(f"{name}: {pattern} not found in {source}")
        for file in files:
            shutil.copyfile(file, target / file.name)


def main() -> None:
    npm_ci()
    shutil.rmtree(VENDOR, ignore_errors=True)  # 不再需要的包（以前的版本留下的目录）不进网站
    for packages in (PACKAGES, VEGA_PACKAGES):
        for name, (folder, patterns) in packages.items():
            copy(name, folder, patterns)


if __name__ == "__main__":
    main()
