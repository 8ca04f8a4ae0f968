"""取得网页离线运行所需的前端文件，放进 _vendor/（git 忽略；构建时作为 html_static_path 复制进 _static/）。

网页上的控件需要 require.js 和 ipywidgets 的 HTML 管理器（embed-amd.js 及其运行时加载的字体）。
默认它们来自 CDN，在国内很慢或打不开，离线时没有；这里改为从本站加载。MathJax 另由 PyPI 包
sphinx-mathjax-offline 提供。

require.js 的版本与 myst-nb 1.4.0 默认引用的一致（nb_ipywidgets_js 的默认值）。控件管理器用
html-manager 1.0.15 的 embed.js（1.9 MB），而不是 myst-nb 默认的 1.0.6 embed-amd.js（4.4 MB）：
embed-amd.js 为了兼容 ipywidgets 7 另外打包了一份 7.x 的 base 与 controls，还要 require.js；
本书保存的控件状态是 ipywidgets 8.1.9 的，embed.js 自带 8.x 的 base、controls、output，
不需要 require.js。有控件的页面因此轻了约 2.6 MB（issue 12 第 6 条；tests/book/test_site_size.py）。tarball 由 npm 客户端从 npm 注册表取得（`npm pack`），
用下表固定的 sha512 校验后只解出需要的文件。已解出且校验值相同时不再联网。

    python -m tools.web_assets        tasks.py book 在构建前会运行它
"""

import base64
import gzip
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


# ---------------------------------------------------------------------------------------
# 第 8 章的网页翻译器：onnxruntime-web，只取 WebAssembly 后端（不要 WebGL/WebGPU/WebNN/JSEP）。
# ort.wasm.min.js 是普通脚本（定义全局 ort），运行时再 import() 同目录的 Emscripten 胶水
# ort-wasm-simd-threaded.mjs，它实例化 ort-wasm-simd-threaded.wasm。1.19 起这是唯一的 CPU 版本
# （单线程另有的版本已取消）；页面设 numThreads = 1，不需要跨源隔离。这个 .wasm 有 14 MB，
# gzip 后约 3.7 MB：这里存成 .wasm.gz，浏览器用 DecompressionStream 解开后交给
# ort.env.wasm.wasmBinary（_static_ch08/live_translator/live_translator.js），模型加运行时不超过 8 MB，
# 也不依赖服务器替我们压缩。这些文件只有第 8 章的页面引用（tests/book/test_live_translator.py 检查）。
# 与 PACKAGES 分开列：PACKAGES 是 myst-nb 的控件脚本（tests/book/test_site_offline.py 核对它们的版本）。
ONNXRUNTIME_WEB = "onnxruntime-web"
ONNXRUNTIME_WASM = "ort-wasm-simd-threaded.wasm"
TRANSLATOR_PACKAGES = {
    ONNXRUNTIME_WEB: (
        "1.30.0",
        "sha512-q0y+JrrtukXSzsBWEMccVfqX25LRmosXHF+CaRJmg8pZClzcV7svNc4rKY3jL02Vb7QmRMDs1SigqR4CXAfKYQ==",
        "onnxruntime-web",
        [
            # 包里没有单独的 LICENSE 文件；ort.wasm.min.js 的文件头写明 MIT 许可
            "package/dist/ort.wasm.min.js",
            "package/dist/ort-wasm-simd-threaded.mjs",
            f"package/dist/{ONNXRUNTIME_WASM}",
        ],
    )
}


def compress_onnxruntime_wasm() -> None:
    """把解出的 .wasm 换成 .wasm.gz（gzip 头里不写时间和文件名，所以每次逐字节相同）。"""
    folder = VENDOR / TRANSLATOR_PACKAGES[ONNXRUNTIME_WEB][2]
    wasm = folder / ONNXRUNTIME_WASM
    if not wasm.exists():
        return  # 已经压缩过（fetch 校验值没变时不会重新解出）
    data = wasm.read_bytes()
    (folder / f"{ONNXRUNTIME_WASM}.gz").write_bytes(gzip.compress(data, compresslevel=9, mtime=0))
    wasm.unlink()


# ---- 各章探索器的图（tinyformer.book.explorers → _ext/vega_charts.py）：Vega、Vega-Lite、vega-embed。
# 版本与 requirements.txt 里的 altair 一致：altair 6.3.0 生成 Vega-Lite 6.4.1 的规格，用 Vega 6、
# vega-embed 7（altair.VEGALITE_VERSION / VEGA_VERSION / VEGAEMBED_VERSION，tests/unit/test_explorers.py 核对）。
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
    fetch(ONNXRUNTIME_WEB, TRANSLATOR_PACKAGES)
    compress_onnxruntime_wasm()
    for name in VEGA_PACKAGES:
        fetch(name, VEGA_PACKAGES)


if __name__ == "__main__":
    main()
