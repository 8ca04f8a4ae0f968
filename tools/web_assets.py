"""取得网页离线运行所需的前端文件，放进 _vendor/（git 忽略；构建时作为 html_static_path 复制进 _static/）。

网页上的控件需要 require.js 和 ipywidgets 的 HTML 管理器（embed-amd.js 及其运行时加载的字体）。
默认它们来自 CDN，在国内很慢或打不开，离线时没有；这里改为从本站加载。MathJax 另由 PyPI 包
sphinx-mathjax-offline 提供。

require.js 的版本与 myst-nb 1.4.0 默认引用的一致（nb_ipywidgets_js 的默认值）。控件管理器用
html-manager 1.0.15 的 embed.js（1.9 MB），而不是 myst-nb 默认的 1.0.6 embed-amd.js（4.4 MB）：
embed-amd.js 为了兼容 ipywidgets 7 另外打包了一份 7.x 的 base 与 controls，还要 require.js；
本书保存的控件状态是 ipywidgets 8.1.9 的，embed.js 自带 8.x 的 base、controls、output，
不需要 require.js。有控件的页面因此轻了约 2.6 MB（issue 12 第 6 条；tests/test_site_size.py）。tarball 由 npm 客户端从 npm 注册表取得（`npm pack`），
用下表固定的 sha512 校验后只解出需要的文件。已解出且校验值相同时不再联网。

    python tools/web_assets.py        tasks.py book 在构建前会运行它
"""

import base64
import hashlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
from fnmatch import fnmatch
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENDOR = ROOT / "_vendor"

# 包名 -> (版本, tarball 的 sha512 完整性校验值, _vendor/ 下的目录, 要解出的文件：tarball 内路径的通配符)
PACKAGES = {
    "requirejs": (
        "2.3.4",
        "sha512-qPD5gRrj6kGQ0ZySAJgqbArkaDqPMbQIT0zSZDkIv1mfA17w/tR2Faq5l2qqRf2CdQx6FWln9nUrgd2UDzb19A==",
        "requirejs",
        ["package/require.js"],
    ),
    "@jupyter-widgets/html-manager": (
        "1.0.15",
        "sha512-5thBIV6ymNgmPVOHvzx+gGy8ZSKmSazhtGw4/c4xJDVzRhG9PTeQsRjF3FUTopvFi//SABeNz1yp47bCrJ3CQA==",
        "html-manager",
        # embed.js 自带 base/controls/output 三个控件模块和样式；样式里的图标字体
        # 从 embed.js 所在目录加载（webpack 的 publicPath 取自它自己的地址）。
        # 浏览器取 @font-face 里第一个认识的格式：woff2，旧浏览器 woff；eot/ttf/svg 不再需要。
        [
            "package/LICENSE",
            "package/dist/embed.js",
            "package/dist/embed.js.LICENSE.txt",
            "package/dist/*.woff2",
            "package/dist/*.woff",
        ],
    ),
}


def sha512_integrity(data: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def fetch(name: str) -> None:
    version, integrity, folder, patterns = PACKAGES[name]
    target = VENDOR / folder
    stamp = target / ".integrity"  # 以点开头：Sphinx 不会把它复制进网站
    if stamp.exists() and stamp.read_text() == integrity:
        return
    with tempfile.TemporaryDirectory() as tmp:
        print(f"+ npm pack {name}@{version}", flush=True)
        try:
            subprocess.run(
                ["npm", "pack", f"{name}@{version}", "--pack-destination", tmp, "--silent"],
                check=True,
                stdout=subprocess.DEVNULL,
            )
        except FileNotFoundError:
            sys.exit("需要 npm（Node.js）来取网页脚本：例如 apt-get install npm")
        (tarball,) = Path(tmp).glob("*.tgz")
        data = tarball.read_bytes()
        if sha512_integrity(data) != integrity:
            sys.exit(f"{name}@{version}: sha512 mismatch, got {sha512_integrity(data)}")
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        with tarfile.open(tarball) as tar:
            members = [
                m
                for m in tar.getmembers()
                if m.isfile() and any(fnmatch(m.name, p) for p in patterns)
            ]
            for member in members:
                (target / Path(member.name).name).write_bytes(tar.extractfile(member).read())
    if not members:
        sys.exit(f"{name}@{version}: none of {patterns} found in the tarball")
    stamp.write_text(integrity)


def main() -> None:
    for name in PACKAGES:
        fetch(name)


if __name__ == "__main__":
    main()
