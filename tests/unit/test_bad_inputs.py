"""坏输入一览（issue 16）：``tools/fuzz_edges.py`` 那张表（也是 fuzz 的输入）里钉死了结局的行（``Case.error``）
在这里逐行跑，要求恰好是那个结局：异常类型和消息（写明参数、取值和规则）、检查点的 **一个**
``WeightsError`` 及其 ``reason``、命令行的退出码和 stderr 上恰好一行 ``错误：…``——在训练开始之前
（argparse 自己发现的用法错误照它的样子打印）。写到一半被打断的检查点见 ``test_atomic.py``。
"""

import re

import numpy as np
import pytest

from tests.kit import run_cli, tiny_translator
from tinyformer.translation import cli
from tinyformer.translation.checkpoint import load_checkpoint, save_checkpoint
from tools import fuzz_edges

PINNED = [case for case in fuzz_edges.CASES if case.error is not None]


@pytest.mark.parametrize("case", PINNED, ids=[case.name for case in PINNED])
def test_bad_input_ends_as_its_row_pins(case, tmp_path, monkeypatch, capfd):
    # 训练绝不能开始：命令行的参数要在那之前全部检查完
    monkeypatch.setattr(cli, "train_and_score", lambda *a, **k: pytest.fail("trained"))
    try:
        result, error = case.call(tmp_path), None
    except Exception as err:  # noqa: BLE001
        result, error = None, err
    problem = fuzz_edges.pinned_problem(case, tmp_path, result, error)
    assert problem is None, problem
    assert "pwned" not in capfd.readouterr().out  # pickle 里的 os.system 没有运行


def test_the_table_names_each_case_once_and_pins_at_least_200():
    names = [case.name for case in fuzz_edges.CASES]
    assert len(names) == len(set(names))
    assert len(PINNED) >= 200


def test_numpy_metrics_are_saved_as_plain_numbers(tmp_path):
    save_checkpoint(
        tiny_translator(),
        tmp_path / "m.safetensors",
        bleu=np.float64(12.5),
        steps=np.int64(3),
        ok=True,
    )
    metrics = load_checkpoint(tmp_path / "m.safetensors").metrics
    assert metrics == {"bleu": 12.5, "steps": 3, "ok": True}
    assert type(metrics["bleu"]) is float and type(metrics["steps"]) is int


def test_a_254_character_file_name_saves_and_loads(tmp_path):
    # issue 26：临时文件名曾是 "." + 整个文件名 + 随机串，超过 255 字节，mkstemp 报 File name too long
    path = tmp_path / ("a" * 242 + ".safetensors")
    save_checkpoint(tiny_translator(), path, bleu=1.0)
    assert load_checkpoint(path).metrics == {"bleu": 1.0}
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # 没有留下临时文件


def test_translate_without_model_uses_the_shipped_weights_and_says_so():
    # issue 26：读者的第一次尝试应当能翻译（旧代码：--model 是必需的参数）
    status, out, err = run_cli(cli.translate_main, ["我明天去北京。"])
    assert (status, out) == (0, "I will go to Beijing tomorrow.\n")
    assert re.fullmatch(
        r"提示：没有给 --model，使用随包发布的权重（训练 \d+ 步）\n",
        err,
    )


def test_translate_says_when_a_sentence_is_outside_the_grammar():
    # issue 26：否定疑问句，语料从不生成；每个词都在词表里，模型给出一句流利但错误的译文
    sentence = "他昨天没在商店买衣服吗？"
    status, out, err = run_cli(cli.translate_main, [sentence, "我明天去北京。"])
    assert status == 0 and len(out.splitlines()) == 2  # 照样给出模型的译文
    assert err.splitlines()[1:] == [f"提示：'{sentence}'：这句话的句型不在训练语料里，译文不可信"]


def test_translate_help_says_how_to_pass_a_sentence_starting_with_a_dash(capsys):
    with pytest.raises(SystemExit):
        cli.translate_main(["--help"])
    assert "以 - 开头的句子放在 -- 之后" in capsys.readouterr().out
