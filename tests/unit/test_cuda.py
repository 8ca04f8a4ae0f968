"""同一套计算在 CUDA 上：与 CPU 的结果一致，命令行的 ``--device cuda`` 与 ``torchrun`` 能用。

CI 与本书的读者都没有 GPU：没有 CUDA 时整个文件跳过（本书从不需要 GPU）。有 GPU 的机器上
``pytest tests/unit/test_cuda.py`` 核对它；记录见 CONTRIBUTING.md 的“在全唐诗上预训练一个 GPT”一节（GPU 一段）。
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys

import pytest
import torch

from tests.kit import ROOT, tiny_gpt, tiny_poet, tiny_transformer

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="没有 CUDA（本书不需要 GPU）")

# 默认的 GPT-2 式块，与 2017 年之后的块（RMSNorm、RoPE、SwiGLU、GQA、无偏置）
BLOCKS = [{}, dict(norm="rmsnorm", position="rope", ffn="swiglu", num_kv_heads=2, bias=False)]


@pytest.fixture(autouse=True)
def _float32_matmuls():
    """CUDA 的矩阵乘法默认就是 float32（不用 TF32）；这里写明，免得某个全局设置悄悄降低精度。"""
    before = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32 = before


@pytest.mark.parametrize("options", BLOCKS, ids=["gpt2", "modern"])
def test_gpt_forward_and_cached_generation_on_cuda_equal_cpu(options):
    cpu = tiny_gpt(seed=3, **options)
    gpu = copy.deepcopy(cpu).cuda()
    ids = torch.randint(0, 30, (3, 12), generator=torch.Generator().manual_seed(0))  # (B, T)
    torch.testing.assert_close(gpu(ids.cuda()).cpu(), cpu(ids), rtol=1e-4, atol=1e-4)
    prompt = ids[:, :4]  # (B, 4)
    cpu_out = cpu.generate(prompt, max_new_tokens=10, greedy=True)
    gpu_out = gpu.generate(prompt.cuda(), max_new_tokens=10, greedy=True)
    assert gpu_out.device.type == "cuda"
    assert torch.equal(gpu_out.cpu(), cpu_out)


def test_translation_decoding_on_cuda_equals_cpu():
    """编码器–解码器的贪心与束搜索：解码循环里新建的张量都在源句所在的设备上。"""
    from tinyformer.decoding import beam_search, greedy_decode

    cpu = tiny_transformer(seed=5)
    gpu = copy.deepcopy(cpu).cuda()
    src = torch.randint(1, 12, (4, 7), generator=torch.Generator().manual_seed(1))  # (B, S)
    src[2, 5:] = 0  # 一句带填充
    for decode, kwargs in ((greedy_decode, {}), (beam_search, {"beam_size": 3})):
        out_cpu = decode(cpu, src, 1, 2, max_len=12, **kwargs)
        out_gpu = decode(gpu, src.cuda(), 1, 2, max_len=12, **kwargs)
        assert torch.equal(out_gpu.cpu(), out_cpu), decode.__name__


def test_shipped_translator_translates_the_same_on_cuda():
    from tinyformer.translation.corpus import generate_corpus
    from tinyformer.translation.pretrained import load_translator

    translator = load_translator()
    sentences = [pair.zh for pair in generate_corpus(seed=0).test[:64]]  # 第 8 章的测试句
    on_cpu = translator.translate(sentences, beam_size=4)
    translator.model.cuda()
    src = translator.encode(sentences).cuda()  # (B, S)
    on_gpu = translator.decode(translator.translate_ids(src, beam_size=4).cpu())
    assert on_gpu == on_cpu


def test_poetry_loss_and_writing_on_cuda_equal_cpu():
    from tinyformer.poetry import sampling, training

    model, vocab = tiny_poet(seed=2)
    poems = ["春风吹柳绿，花落鸟啼声。", "秋月照山明，夜深春水声。", "春风"]
    loss_cpu, _ = training.batch_loss(model, poems, vocab)
    gpu = copy.deepcopy(model).cuda()
    loss_gpu, _ = training.batch_loss(gpu, poems, vocab)
    torch.testing.assert_close(loss_gpu.cpu(), loss_cpu, rtol=1e-5, atol=1e-5)
    assert (
        sampling.write(gpu, vocab, prefix="春风", greedy=True).text
        == sampling.write(model, vocab, prefix="春风", greedy=True).text
    )


def _poetry_train(tmp_path, *launcher: str) -> dict:
    """``[launcher] -m tinyformer.poetry train --device cuda`` 训练 3 步，返回它打印的指标。"""
    out = tmp_path / "poet.safetensors"
    command = [*launcher, "-m", "tinyformer.poetry", "train", "--device", "cuda"]
    command += ["--steps", "3", "--d-model", "32", "--layers", "1", "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), *sys.path])}
    done = subprocess.run(
        command, capture_output=True, text=True, env=env, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    metrics = json.loads(done.stdout.strip().splitlines()[-1])
    assert metrics["device"] == "cuda" and metrics["steps"] == 3
    from tinyformer.poetry.checkpoint import load_checkpoint

    model, _, _ = load_checkpoint(out)  # 存的是 CPU 上的权重，没有 GPU 的读者也能读
    assert next(model.parameters()).device.type == "cpu"
    return metrics


def test_poetry_cli_trains_on_cuda(tmp_path):
    _poetry_train(tmp_path, sys.executable)


def test_poetry_cli_trains_under_torchrun_on_cuda(tmp_path):
    """一块 GPU 上只能起一个 NCCL 进程（NCCL 拒绝两个进程用同一块卡）：这里核对 torchrun 的启动路径。"""
    metrics = _poetry_train(
        tmp_path,
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        "--nproc_per_node=1",
    )
    assert metrics["processes"] == 1
