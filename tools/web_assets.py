"""取得网页离线运行所需的前端文件，放进 _vendor/（git 忽略；构建时作为 html_static_path 复制进 _static/）。

网页上的控件需要 require.js 和 ipywidgets 的 HTML 管理器（embed-amd.js 及其运行时加载的字体）。
默认它们来自 CDN，在国内很慢或打不开，离线时没有；这里改为从本站加载。MathJax 另由 PyPI 包
sphinx-mathjax-offline 提供。

版本与 myst-nb 1.4.0 默认引用的一致（nb_ipywidgets_js 的默认值），html-manager 1.0.6 满足
ipywidgets 8.1.9 的要求（^1.0.1）。tarball 由 npm 客户端从 npm 注册表取得（`npm pack`），
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
        "1.0.6",
        "sha512-+Mn+Ra8wyIHrYaUpfmf9A3dsLkt/NuwzPQN8sthdxBD35VV5cOJbpmgMhNR27n/rmP3mKyEe0PWCJrtZrXTXDQ==",
        "html-manager",
        # embed-amd.js 自带 base/controls/output 三个控件模块和样式；样式里的图标字体
        # 从 embed-amd.js 所在目录加载（webpack 的 publicPath 取自它自己的地址）。
        # 浏览器取 @font-face 里第一个认识的格式：woff2，旧浏览器 woff；eot/ttf/svg 不再需要。
        [
            "package/LICENSE",
            "package/dist/embed-amd.js",
            "package/dist/*.woff2",
            "package/dist/*.woff",
        ],
    ),
}


# ---- 各章探索器的图（tinyformer.explorers → _ext/vega_charts.py）：Vega、Vega-Lite、vega-embed。
# 版本与 requirements.txt 里的 altair 一致：altair 6.3.0 生成 Vega-Lite 6.4.1 的规格，用 Vega 6、
# vega-embed 7（altair.VEGALITE_VERSION / VEGA_VERSION / VEGAEMBED_VERSION，tests/test_explorers.py 核对）。
# 只取 UMD 构建（页面上用 <script> 加载）和许可证；每个包一个目录，许可证文件名才不冲突。
VEGA_PACKAGES = {
    "vega": (
        "6.4.0",
        "sha512-rHXCq2LpEWCLMjXBEj7hocY9G0/i5TGYRayGGSj06VTF4+l2IG2Z7oeZKCjWbUh/7hTE/mVhbaOPB72wCElh6g==",
        "vega",
        ["package/LICENSE", "package/build/vega.min.js"],
    ),
    "vega-lite": (
        "6.4.1",
        "sha512-KO3ybHNouRK4A0al/+2fN9UqgTEfxrd/ntGLY933Hg5UOYotDVQdshR3zn7OfXwQ7uj0W96Vfa5R+QxO8am3IQ==",
        "vega-lite",
        ["package/LICENSE", "package/build/vega-lite.min.js"],
    ),
    "vega-embed": (
        "7.3.0",
        "sha512-wQ8s5GaSzqoKgmRfbRolgBrjE2CP7ZKHXqH7NijxMqPjpdWxSs4Dn8tvp9g0giQvh2cK+3p56sxjWWM0wNngGw==",
        "vega-embed",
        ["package/LICENSE", "package/build/vega-embed.min.js"],
    ),
}


def sha512_integrity(data: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def fetch(name: str, packages: dict = PACKAGES) -> None:
    version, integrity, folder, patterns = packages[name]
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
    for name in VEGA_PACKAGES:
        fetch(name, VEGA_PACKAGES)


if __name__ == "__main__":
    main()
