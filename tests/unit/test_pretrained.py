"""随包发布的第 8 章权重：safetensors，分数就是生成它们时记下的分数。"""

import pytest

from tinyformer.translation.corpus import generate_corpus
from tinyformer.translation.pretrained import STEPS, checkpoint_path, load_translator, provenance
from tinyformer.weights import read_metadata


@pytest.fixture(scope="module")
def corpus():
    return generate_corpus(seed=0)


def test_every_shipped_checkpoint_has_provenance_and_is_safetensors_with_its_metrics():
    record = provenance()
    assert record["torch"] and record["date"] and record["cpu"]
    assert sorted(record["checkpoints"], key=int) == [str(s) for s in STEPS]
    for step in STEPS:
        run, path = record["checkpoints"][str(step)], checkpoint_path(step)
        metrics = run["metrics"]
        assert f"--steps {step} --seed 0" in run["command"]
        assert run["command"].startswith("python -m tinyformer.translation train")
        assert metrics["steps"] == step
        assert path.is_file() and path.suffix == ".safetensors"
        metadata = read_metadata(path)  # 只读头：没有 pickle
        assert {k: v for k, v in metadata["metrics"].items() if k in metrics} == metrics


@pytest.mark.parametrize("step", STEPS)
def test_shipped_weights_score_what_was_recorded(step, corpus):
    """重新评估留出的测试集，完全匹配率与 BLEU 等于训练命令打印的指标（推理在任何 CPU 上都相同）。"""
    metrics = provenance()["checkpoints"][str(step)]["metrics"]
    result = load_translator(step).evaluate(corpus.test)
    assert len(result.hypotheses) == metrics["test_sentences"]
    assert round(result.exact_match, 4) == metrics["test_exact_match"]
    assert round(result.bleu, 2) == metrics["test_bleu"]


def test_later_checkpoints_are_better(corpus):
    scores = [provenance()["checkpoints"][str(s)]["metrics"]["test_exact_match"] for s in STEPS]
    assert scores == sorted(scores) and scores[-1] >= 0.99


@pytest.mark.parametrize("step", [0, 200, 600.0, True, "600"])
def test_unknown_step_is_refused(step):
    with pytest.raises(ValueError, match=r"step must be one of \(100, 150, 600\), got step="):
        checkpoint_path(step)
