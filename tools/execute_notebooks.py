"""重新执行各章笔记本并把输出存回原文件，可复现：连续运行两次，文件逐字节相同（打印用时的单元格除外）。

    python -m tools.execute_notebooks                     # 执行 _toc.yml 里的全部笔记本
    python -m tools.execute_notebooks chapters/ch05_attention.ipynb # 只执行指定的笔记本

与 ``jupyter nbconvert --execute --inplace`` 的区别：
- 不记录执行时间（``record_timing=False``），单元格元数据里没有时间戳；
- 保存 ipywidgets 的状态（``store_widget_state=True``），网页里才能显示控件；
  控件的 model id 每次运行都是随机的，这里按出现顺序换成由笔记本名导出的固定 id；
- 先把各章的 Colab 安装单元格同步成 ``_config.yml`` 里的仓库地址（见 ``colab_setup.py``）；
- 元数据里去掉随机器而变的 Python 小版本号；
- 笔记本和统计文件都原子地写（``tinyformer.atomic.atomic_write``）：执行中途按 Ctrl-C 或磁盘满了，
  原来的文件原封不动，不会只剩半个；
- 每章的执行秒数、内核的峰值内存（MB）、日期（UTC）、Python / PyTorch / tinyformer 的版本和 CPU 记进
  ``chapters/execution_stats.json``（进仓库；只更新执行了的那几章，其余条目保留）。笔记本本身
  不含时间，重新执行仍逐字节相同；
- 执行了其他笔记本之后，再执行一次附录“执行统计”（``chapters/appendix_stats.ipynb``），
  它保存的表格因此总与 JSON 一致（nbval 核对）。它自己不记进统计。
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import sys
import time
from importlib.metadata import version
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from tools.colab_setup import sync_setup_cell
from tools.records import machine, write_json, write_text

ROOT = Path(__file__).resolve().parents[1]
MODEL_ID = re.compile(r"[0-9a-f]{32}")
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
STATS_FILE = ROOT / "chapters" / "execution_stats.json"
STATS_NOTEBOOK = ROOT / "chapters" / "appendix_stats.ipynb"


def toc_notebooks() -> list[Path]:
    toc = (ROOT / "_toc.yml").read_text(encoding="utf-8")
    files = re.findall(r"(?:root|file):\s*([^\s#]+)", toc)
    return [ROOT / f"{f}.ipynb" for f in files if (ROOT / f"{f}.ipynb").exists()]


def stable_widget_ids(text: str, model_ids: list[str], name: str) -> str:
    """把随机的控件 model id 按 model_ids 给出的（确定的）顺序换成由笔记本名导出的固定 id。"""
    mapping = {
        old: hashlib.md5(f"{name}:{i}".encode()).hexdigest() for i, old in enumerate(model_ids)
    }

    # 不是控件 id 的 32 位十六进制串原样保留
    return MODEL_ID.sub(lambda match: mapping.get(match.group(0), match.group(0)), text)


def ordered_widget_state(nb, models: dict) -> dict:
    """控件模型按确定的顺序排列：从各单元格输出里的视图出发，深度优先沿 IPY_MODEL_ 引用走。

    nbclient 存下的顺序取决于消息到达的先后，每次运行都可能不同。
    """
    order: list[str] = []

    def visit(model_id: str) -> None:
        if model_id in order or model_id not in models:
            return
        order.append(model_id)
        state = models[model_id].get("state", {})
        for ref in re.findall(r"IPY_MODEL_([0-9a-f]{32})", json.dumps(state, sort_keys=True)):
            visit(ref)

    for model_id in widget_view_ids(nb):
        visit(model_id)
    rest = sorted(set(models) - set(order), key=lambda m: json.dumps(models[m], sort_keys=True))
    return {m: models[m] for m in order + rest}


def peak_rss_bytes(pid: int) -> int:
    """进程 ``pid`` 迄今最大的常驻内存（字节）。

    Linux 读 ``/proc/PID/status`` 的 ``VmHWM``（内核记的高水位，不会漏掉两次读数之间的峰）；
    其他系统没有这个数，用 psutil 读当前的常驻内存（每个单元格之后读一次，取最大，是下界）。
    """
    status = Path(f"/proc/{pid}/status")
    if status.exists():
        match = re.search(r"^VmHWM:\s+(\d+) kB$", status.read_text(), re.M)
        return int(match.group(1)) * 1024
    import psutil  # ipykernel 的依赖

    return psutil.Process(pid).memory_info().rss


def execute(path: Path) -> tuple[float, int]:
    """执行一个笔记本并存回原文件；返回 (秒数, 内核的峰值常驻内存字节数)。"""
    nb = nbformat.read(path, as_version=4)
    sync_setup_cell(nb)
    peak = 0

    def after_cell(**_) -> None:  # nbclient 的 on_cell_executed 钩子：内核还活着时读它的内存
        nonlocal peak
        peak = max(peak, peak_rss_bytes(client.km.provisioner.pid))

    start = time.perf_counter()
    client = NotebookClient(
        nb,
        timeout=900,
        kernel_name="python3",
        record_timing=False,
        store_widget_state=True,
        coalesce_streams=True,  # 同一单元格的 stdout 合成一段：输出的分段取决于计时，不可复现
        resources={"metadata": {"path": str(path.parent)}},
        on_cell_executed=after_cell,
    )
    # 逐个单元格执行，而不是 client.execute()：后者在第 3 章上偶尔一直等下去（内核已空闲），原因未查明
    with client.setup_kernel():
        client.kc.kernel_info()
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
        client.set_widgets_metadata()
    seconds = time.perf_counter() - start
    if not shows_a_widget(nb):
        nb.metadata.pop("widgets", None)
    nb.metadata.get("language_info", {}).pop("version", None)
    nb.metadata["kernelspec"] = {
        "display_name": "Python 3",
        "language": "python",
        "name": "python3",
    }
    text = nbformat.writes(nb) + "\n"
    state = nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
    if state.get("state"):
        state["state"] = ordered_widget_state(nb, state["state"])
        text = nbformat.writes(nb) + "\n"  # 只有用到控件的笔记本才有随机 id 要换
        text = stable_widget_ids(text, list(state["state"]), path.stem)
        # nbformat.writes 按键名排序：用新 id 再写一遍，控件在文件里的顺序才与随机的旧 id 无关
        text = nbformat.writes(nbformat.reads(text, as_version=4)) + "\n"
    elif views := widget_view_ids(nb):
        # 控件只在 remove-output 的单元格里（不存控件状态）：输出里的 model id 也换成固定的
        text = stable_widget_ids(text, views, path.stem)
    write_text(path, text)
    return seconds, peak


def widget_view_ids(nb) -> list[str]:
    """各输出里控件视图的 model id，按单元格和输出的顺序（每次执行都相同）。"""
    return [
        output["data"][WIDGET_VIEW]["model_id"]
        for cell in nb.cells
        for output in cell.get("outputs", [])
        if WIDGET_VIEW in output.get("data", {})
    ]


def shows_a_widget(nb) -> bool:
    """网页上是否显示至少一个控件：有控件视图的输出，而且它的单元格没有标 ``remove-output``。

    只在内核里有用、网页上另有不需要内核的替代（“在网页上探索”的 Vega 图、第 8 章的网页翻译器）的
    控件，单元格标为 ``remove-output``：网页上只显示代码。这样的笔记本不存控件状态，myst-nb 就不给
    这一页加载 1.9 MB 的控件管理器（embed.js）；在 Jupyter、Colab 里运行时控件照常出现。
    """
    return any(
        WIDGET_VIEW in output.get("data", {})
        for cell in nb.cells
        if "remove-output" not in cell.get("metadata", {}).get("tags", [])
        for output in cell.get("outputs", [])
    )


def stats_entry(seconds: float, peak_bytes: int) -> dict:
    """一章的执行统计。内核与本脚本用同一个解释器（.venv），版本取自这里。峰值内存以 MB（10^6 字节）计。"""
    return {
        "seconds": round(seconds, 1),
        "peak_mb": round(peak_bytes / 1e6),
        "python": platform.python_version(),
        "tinyformer": version("tinyformer"),
        "cpu_count": os.cpu_count(),
        **machine(),  # torch、date、cpu
    }


def record_stats(entries: dict[str, dict]) -> None:
    """把新测的条目并进 STATS_FILE：只覆盖这次执行了的笔记本。"""
    stats = json.loads(STATS_FILE.read_text(encoding="utf-8")) if STATS_FILE.exists() else {}
    stats.update(entries)
    write_json(STATS_FILE, stats)


def main(argv: list[str]) -> None:
    paths = [Path(a).resolve() for a in argv] or toc_notebooks()
    chapters = [p for p in paths if p != STATS_NOTEBOOK]
    entries = {}
    for path in chapters:
        seconds, peak = execute(path)
        entries[path.relative_to(ROOT).as_posix()] = stats_entry(seconds, peak)
        record_stats(entries)  # 每章执行完就记下：后面的章出错时，前面测到的不丢
        print(
            f"{path.relative_to(ROOT)}: {seconds:.1f} s，峰值内存 {peak / 1e6:.0f} MB", flush=True
        )
    if (entries or STATS_NOTEBOOK in paths) and STATS_NOTEBOOK.exists():
        seconds, _ = execute(STATS_NOTEBOOK)  # 表格取自刚更新的 STATS_FILE
        print(
            f"{STATS_NOTEBOOK.relative_to(ROOT)}: {seconds:.1f} s（执行统计，不计入）", flush=True
        )


if __name__ == "__main__":
    main(sys.argv[1:])
