"""测试共用的小零件：仓库路径、缺少前提时跳过（CI 里失败）、极小的模型与数据（issue 14 的"一套测试工具"）。

单元测试（``tests/unit``）与书和网站的测试（``tests/book``）都从这里取；``conftest.py`` 把工厂
包成 fixture。工厂每次都新建对象并固定随机种子，所以测试之间互不影响。
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import signal
from pathlib import Path

import pytest
import torch

from tinyformer import GPT, GPTConfig, Transformer, TransformerConfig, Vocab

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "_build" / "html"

# 翻译器的小词表：覆盖 tiny_translator 能翻译的几句话
TINY_SRC_VOCAB = Vocab([["我", "明天", "去", "北京", "。"], ["他", "喝", "绿茶", "吗", "？"]])
TINY_TGT_VOCAB = Vocab([["i", "will", "go", "to", "beijing", "tomorrow", "."]])


def skip_or_fail(reason: str) -> None:
    """缺少前提时本地跳过；CI（CI=true）里必须真的测到，所以改为失败。"""
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason}（CI=true：不允许跳过）")
    pytest.skip(reason)


def package_copy(folder: Path) -> Path:
    """只含打包所需文件（pyproject.toml、README.md、src/）的本包副本：从它安装时，setuptools 不会把
    源目录 build/ 里上次构建留下的旧文件（模块搬走之前的）装进新的 wheel。"""
    folder.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, folder / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    shutil.copytree(ROOT / "src", folder / "src", ignore=ignore)
    return folder


def playwright_chromium():
    """(``sync_playwright``, Debian 的 chromium 的路径)：playwright 不下载浏览器。缺了就跳过（CI 里失败）。"""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        skip_or_fail("没有 playwright（pip install -r requirements.txt）")
    executable = shutil.which("chromium")
    if executable is None:
        skip_or_fail("没有 chromium（apt-get install chromium fonts-noto-cjk）")
    return sync_playwright, executable


def needs_torch_bernoulli_stream() -> None:
    """按同一个种子比较带 dropout 的两种算法之前调用：torch 的 bernoulli_ 不从全局 CPU 生成器取数时跳过。

    torch 的 CPU 版 bernoulli_ 逐个元素从全局生成器取一个 float64 均匀随机数；在某些构建、某些 CPU 上
    它改用 MKL 的随机数流，那时 nn.Dropout（以及 F.scaled_dot_product_attention 的 dropout）的随机数
    与任何基于 torch.rand 的写法都不同，逐位比较没有意义（分布的检查仍然做）。
    """
    torch.manual_seed(0)
    a = torch.empty(1000).bernoulli_(0.5)
    torch.manual_seed(0)
    if not torch.equal(a, (torch.rand(1000, dtype=torch.float64) < 0.5).float()):
        pytest.skip("torch draws bernoulli_ from MKL's stream on this machine")


class Payload:
    """pickle 里的恶意载荷：反序列化时调用 ``os.system("echo pwned")``。读检查点绝不能走到这一步；
    测试用 ``capfd``（文件描述符一级，子进程的输出也在内）确认没有打印 pwned。"""

    def __reduce__(self):
        return (os.system, ("echo pwned",))


def tiny_transformer_config(**overrides) -> TransformerConfig:
    """极小的编码器–解码器配置：词表 12/12，C=16，4 个头，各 1 层，d_ff=32，max_len=20，无 dropout。"""
    kwargs = dict(
        src_vocab_size=12,
        tgt_vocab_size=12,
        d_model=16,
        num_heads=4,
        num_encoder_layers=1,
        num_decoder_layers=1,
        d_ff=32,
        dropout=0.0,
        max_len=20,
    )
    return TransformerConfig(**{**kwargs, **overrides})


def tiny_transformer(seed: int = 0, **overrides) -> Transformer:
    """按 :func:`tiny_transformer_config` 建的模型（``torch.manual_seed(seed)`` 后初始化），``eval()`` 模式。"""
    torch.manual_seed(seed)
    return Transformer(tiny_transformer_config(**overrides)).eval()


def tiny_gpt(seed: int = 0, **overrides) -> GPT:
    """极小的 GPT：词表 30，max_len=16，C=16，4 个头，2 层；``eval()`` 模式。"""
    kwargs = dict(vocab_size=30, max_len=16, d_model=16, num_heads=4, num_layers=2)
    torch.manual_seed(seed)
    return GPT(GPTConfig(**{**kwargs, **overrides})).eval()


def padded_ids(
    lengths: tuple[int, ...] = (5, 3), vocab_size: int = 12, pad_id: int = 0, seed: int = 1
) -> torch.Tensor:
    """(B, max(lengths)) 的随机编号，第 b 行前 ``lengths[b]`` 个是 [pad_id + 1, vocab_size) 里的词元，其余是填充。"""
    generator = torch.Generator().manual_seed(seed)
    width = max(lengths)
    ids = torch.randint(pad_id + 1, vocab_size, (len(lengths), width), generator=generator)
    for row, length in enumerate(lengths):
        ids[row, length:] = pad_id  # (B, width)
    return ids


def tiny_translator(seed: int = 0):
    """用 ``TINY_SRC_VOCAB``/``TINY_TGT_VOCAB`` 建的未训练翻译器（C=16，各 1 层，d_ff=32）。"""
    from tinyformer.translation.translator import new_translator

    return new_translator(
        TINY_SRC_VOCAB, TINY_TGT_VOCAB, seed=seed, d_model=16, num_heads=4, num_layers=1, d_ff=32
    )


@contextlib.contextmanager
def deadline(seconds: int):
    """``with deadline(5): ...``：还在运行就抛出 ``TimeoutError``——测“不会卡住”的测试失败而不是卡住。

    用 SIGALRM，所以也能打断卡在系统调用里的主线程（例如打开一个没有写端的命名管道）。
    """

    def fail(signum, frame):
        raise TimeoutError(f"still running after {seconds} s: it hangs")

    previous = signal.signal(signal.SIGALRM, fail)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def captured(call):
    """(``call()`` 的返回值，或它的 ``SystemExit`` 的退出码, stdout, stderr)。"""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = call()
        except SystemExit as exit_info:
            code = exit_info.code
    return code, out.getvalue(), err.getvalue()


def run_cli(command, argv):
    """像 ``python -m`` 那样运行一个翻译的子命令（经过 ``cli.run``），返回 (退出码, stdout, stderr)。"""
    from tinyformer.translation import cli

    return captured(lambda: cli.run(lambda: command(argv)))


# 写诗模型的小字表：几个字加 ，。（第 9 章，tinyformer.poetry）
TINY_POEMS = ["春风吹柳绿，花落鸟啼声。", "秋月照山明，夜深春水声。"]


def tiny_poet(seed: int = 0, max_len: int = 40):
    """(极小的 GPT, 它的字表)：字表由 ``TINY_POEMS`` 建（每个字都收），C=16，2 层；``eval()`` 模式。"""
    from tinyformer.poetry.corpus import Vocab

    vocab = Vocab.build(TINY_POEMS, min_count=1)
    return tiny_gpt(seed, vocab_size=len(vocab), max_len=max_len), vocab


@torch.no_grad()
def rounded_to_half(model: torch.nn.Module) -> torch.nn.Module:
    """把 ``model`` 的每个参数就地舍入到 float16 再换回 float32：网页（半精度的权重）算的就是这个模型。"""
    for p in model.parameters():
        p.data = p.data.half().float()
    return model


def same_merges_up_to_ties(ours, theirs) -> list[int]:
    """两个 BPE 训练器的合并表（两个 ``ByteBPE``）：换成字节串后是同一批合并，位置不同的只是相邻两条对调
    （次数相同的平手，两边的字节编号不同，所以先合并的不同）。返回对调处的位置（从 0 数）。"""
    a = [(ours.vocab[x], ours.vocab[y]) for x, y in ours.merges]
    b = [(theirs.vocab[x], theirs.vocab[y]) for x, y in theirs.merges]
    assert len(a) == len(b) and set(a) == set(b)
    differ = [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y]
    for i in differ[::2]:  # 每处对调占相邻的两个位置
        assert i + 1 in differ and (a[i], a[i + 1]) == (b[i + 1], b[i]), i
    assert len(differ) % 2 == 0
    return differ
