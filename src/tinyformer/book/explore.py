"""在子进程里画探索器，内核不必载入 Altair（各章“在网页上探索”一节的单元格用它）。

:func:`show_explorer` 与 ``show(xxx_explorer())``（:func:`tinyformer.book.explorers.show`）输出逐字节
相同的三种表示，区别只在哪个进程建图：Altair 连同它校验规格用的 jsonschema 要占约 50 MB 常驻内存，
在内核里导入就一直占着，而各章在这之前已经载入 PyTorch、训练过模型。mybinder.org 只保证 1 GB，
要放得下两章笔记本和 Jupyter 服务器，每章的峰值要在 500 MB 以内（附录“执行统计”）。子进程建好图、
渲染成 :func:`~tinyformer.book.explorers.render` 的 dict，以 JSON 传回，退出时内存全部还给系统。

代价：子进程要重新导入 PyTorch 和 Altair，多花几秒。
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

__all__ = ["show_explorer"]

# 子进程运行的程序：参数是探索器的名字与 PyTorch 的线程数；渲染好的三种表示以 JSON 写到 stdout
_RENDER = """
import json, sys
import torch
from tinyformer.book import explorers
name, threads = sys.argv[1], int(sys.argv[2])
torch.set_num_threads(threads)
if not name.endswith("_explorer") or not callable(getattr(explorers, name, None)):
    sys.exit(f"no explorer named {name!r} in tinyformer.book.explorers")
chart = getattr(explorers, name)()
bundle = explorers.render(chart.to_dict(context={"pre_transform": False}))
sys.stdout.write(json.dumps(bundle, ensure_ascii=False))
"""


def explorer_bundle(name: str) -> dict:
    """在子进程里建 ``tinyformer.book.explorers`` 的探索器 ``name``（不带参数调用）并渲染；返回三种表示。

    子进程用与本进程相同的 Python、模块搜索路径和 PyTorch 线程数（``torch.get_num_threads()``），
    所以导入的是同一份 ``tinyformer``，算出的数据与在本进程里建图时相同（线程数不同，矩阵乘法的求和
    顺序就不同，舍入到 4 位的概率偶尔差最后一位）。
    """
    import torch

    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    done = subprocess.run(
        [sys.executable, "-c", _RENDER, name, str(torch.get_num_threads())],
        capture_output=True,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise ValueError(message[-1] if message else f"explorer {name!r} failed")
    return json.loads(done.stdout)


def show_explorer(name: str) -> None:
    """在 Notebook 里显示探索器 ``name``（如 ``"sampling_explorer"``），图在子进程里建（见模块说明）。

    例子::

        >>> show_explorer("sampling_explorer")  # doctest: +SKIP
    """
    from IPython.display import display

    display(explorer_bundle(name), raw=True)
