"""tinyformer.book.memory：del 掉的大块内存还给操作系统，常驻内存降回去。"""

import platform
import subprocess
import sys

import pytest

from tinyformer.book import memory

# 先分配、释放一块 30 MB：glibc 于是把 mmap 阈值调高到 30 MB。之后 25 块 4 MB 的内存都从堆上分，
# 上面再压一小块（也在堆上），堆顶收不回去：释放这 100 MB 后常驻内存有一大半不降——除非先固定了阈值。
PROBE = """
import re, sys
from pathlib import Path
from tinyformer.book.memory import return_freed_memory

def rss():
    return int(re.search(r"VmRSS:\\s+(\\d+)", Path("/proc/self/status").read_text()).group(1)) * 1024

if sys.argv[1] == "fixed":
    assert return_freed_memory()
big = bytearray(b"1") * 30_000_000  # 乘出来的每一页都写过，真的占内存
del big
before = rss()
blocks = [bytearray(b"1") * 4_000_000 for _ in range(25)]
keep = bytearray(b"1") * 1000
del blocks
print(rss() - before)
"""


def retained_bytes(mode: str) -> int:
    run = subprocess.run(
        [sys.executable, "-c", PROBE, mode], capture_output=True, text=True, check=True
    )
    return int(run.stdout)


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="只有 glibc 的 malloc 有这个阈值")
def test_freed_memory_goes_back_to_the_os_only_with_a_fixed_threshold():
    assert retained_bytes("default") > 20e6  # 没调用时：释放的 100 MB 有几十 MB 留在进程里
    assert retained_bytes("fixed") < 5e6


def test_does_nothing_off_glibc(monkeypatch):
    monkeypatch.setattr(platform, "libc_ver", lambda: ("", ""))
    assert memory.return_freed_memory() is False


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="只有 glibc 的 malloc 有这个阈值")
def test_in_ipython_the_heap_is_trimmed_after_every_cell(monkeypatch):
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    trimmed = []
    monkeypatch.setattr(memory, "_trim_heap", lambda result=None: trimmed.append(result))
    monkeypatch.setattr("IPython.get_ipython", lambda: shell)
    try:
        assert memory.return_freed_memory() and memory.return_freed_memory()  # 调用两次只登记一次
        shell.run_cell("x = 1")
        assert len(trimmed) == 1 and trimmed[0].success
    finally:
        shell.events.unregister("post_run_cell", memory._trim_heap)
        InteractiveShell.clear_instance()
