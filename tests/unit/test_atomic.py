"""atomic.py：写到一半被打断（异常、SIGINT、SIGTERM、SIGKILL、文件大小上限）时旧文件原封不动。

杀进程的测试真的启动 ``python -m tinyformer.translation train --steps 1``（见 ``CHILD``：写检查点时
写一半就停下来等），在它正写检查点的时候发信号。
"""

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from tests.kit import tiny_translator
from tinyformer.atomic import atomic_write
from tinyformer.translation.checkpoint import load_checkpoint, save_checkpoint


def write_old_checkpoint(path):
    save_checkpoint(tiny_translator(), path, generation=1)
    return path.read_bytes()


def test_exception_while_writing_keeps_the_old_file_and_removes_the_temporary(tmp_path):
    target = tmp_path / "stats.json"
    target.write_bytes(b"old")
    for error in (KeyboardInterrupt, OSError, ValueError):
        with pytest.raises(error):
            with atomic_write(target) as file:
                file.write(b"new but only ha")
                raise error
        assert target.read_bytes() == b"old"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["stats.json"]
    with atomic_write(target) as file:
        file.write(b"new")
    assert target.read_bytes() == b"new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["stats.json"]


def test_new_file_gets_the_usual_permissions(tmp_path):
    with atomic_write(tmp_path / "a.txt") as file:
        file.write(b"x")
    reference = tmp_path / "b.txt"
    reference.write_bytes(b"x")  # 普通 open() 建的文件：0666 去掉 umask
    assert (tmp_path / "a.txt").stat().st_mode == reference.stat().st_mode


# 子进程：真实的命令行 python -m tinyformer.translation train，只是评估换成常数（省几分钟），并在写检查点处"挂钩"
CHILD = textwrap.dedent(
    """
    import contextlib, resource, runpy, signal, sys, time
    from tinyformer import weights
    from tinyformer.translation import checkpoint, cli, translator

    mode, out = sys.argv[1], sys.argv[2]
    signal.signal(signal.SIGINT, signal.default_int_handler)  # 后台启动时 SIGINT 可能被忽略
    translator.Translator.evaluate = lambda self, pairs, *a, **k: translator.score(["x"], ["x"])
    real_atomic_write, real_save = weights.atomic_write, checkpoint.save_checkpoint

    class SlowFile:  # 写一半，告诉父进程，然后等着被杀
        def __init__(self, file):
            self.file = file

        def write(self, data):
            self.file.write(data[: len(data) // 2])
            self.file.flush()
            print("WRITING", flush=True)
            time.sleep(600)
            return self.file.write(data[len(data) // 2 :])

    @contextlib.contextmanager
    def slow_atomic_write(path):
        with real_atomic_write(path) as file:
            yield SlowFile(file)

    def save_on_a_full_disk(model, path, **metrics):  # 文件最多 4096 字节，像磁盘满了一样
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # 超限时 write 抛 OSError 而不是杀进程
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, resource.RLIM_INFINITY))
        real_save(model, path, **metrics)

    if mode == "slow":
        weights.atomic_write = slow_atomic_write
    else:
        cli.save_checkpoint = save_on_a_full_disk
    sys.argv = ["tinyformer.translation", "train", "--steps", "1", "--no-progress", "--out", out]
    runpy.run_module("tinyformer.translation", run_name="__main__")
    """
)


def run_child(tmp_path, mode, send=None):
    out = tmp_path / "zh_en.safetensors"
    old = write_old_checkpoint(out)
    script = tmp_path / "child.py"
    script.write_text(CHILD, encoding="utf-8")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    child = subprocess.Popen(
        [sys.executable, str(script), mode, str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    if send is not None:
        assert child.stdout.readline() == "WRITING\n"  # 子进程正在写检查点
        child.send_signal(send)
    stdout, stderr = child.communicate(timeout=600)
    # 原来的检查点逐字节不变、仍能读
    assert out.read_bytes() == old
    assert load_checkpoint(out).metrics == {"generation": 1}
    return child.returncode, stderr, sorted(p.name for p in tmp_path.iterdir())


@pytest.mark.parametrize(
    "signum, code, message",
    [
        (signal.SIGINT, 130, "错误：被中断（Ctrl-C）；没有写出新文件，原有的文件保持不变\n"),
        (signal.SIGTERM, 143, "错误：被终止（SIGTERM）；没有写出新文件，原有的文件保持不变\n"),
    ],
    ids=["SIGINT", "SIGTERM"],
)
def test_interrupted_save_keeps_the_previous_checkpoint(tmp_path, signum, code, message):
    returncode, stderr, files = run_child(tmp_path, "slow", send=signum)
    assert returncode == code
    assert stderr == message  # 一行，没有 traceback
    assert files == ["child.py", "zh_en.safetensors"]  # 临时文件已删掉


def test_killed_save_keeps_the_previous_checkpoint(tmp_path):
    returncode, stderr, files = run_child(tmp_path, "slow", send=signal.SIGKILL)
    assert returncode == -signal.SIGKILL
    # SIGKILL 来不及清理：只多出一个临时文件，目标文件仍是旧的（run_child 已检查）
    leftovers = [f for f in files if f not in ("child.py", "zh_en.safetensors")]
    assert len(leftovers) == 1 and leftovers[0].startswith(".zh_en.safetensors.")
    assert leftovers[0].endswith(".tmp")


def test_full_disk_keeps_the_previous_checkpoint(tmp_path):
    returncode, stderr, files = run_child(tmp_path, "fsize")
    assert returncode == 5  # cli.EXIT_IO
    assert stderr.count("\n") == 1 and "Traceback" not in stderr
    assert stderr.startswith("错误：检查点 ")
    assert "写不进去（文件太大（超出了系统的限制））" in stderr and "原来的文件保持不变" in stderr
    assert files == ["child.py", "zh_en.safetensors"]
