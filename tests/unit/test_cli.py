"""cli.py：argparse 的公开接口、我们自己的一张中文消息表、每种错误一个退出码（issue 26、33）。

坏参数逐条的消息钉在 test_bad_inputs.py 的表里（CLI）。
"""

import re

import pytest
import torch

from tests.kit import run_cli
from tinyformer import _cli
from tinyformer.translation import cli
from tinyformer.weights import WeightsError

CJK = re.compile(r"[\u4e00-\u9fff]")


def test_help_is_chinese_lists_the_exit_codes_and_fits_80_columns(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    for command, codes in (
        (cli.train_main, cli.TRAIN_EXIT_CODES),
        (cli.translate_main, cli.TRANSLATE_EXIT_CODES),
        (cli.convert_main, cli.CONVERT_EXIT_CODES),
    ):
        with pytest.raises(SystemExit) as info:
            command(["--help"])
        out = capsys.readouterr().out
        assert info.value.code == 0 and "显示这段帮助并退出" in out and "\n参数:\n" in out
        for code in codes:
            assert f"  {code:<3}  {cli.EXIT_CODES[code]}" in out
        lines = out.splitlines()
        width = [sum(2 if CJK.match(c) or c in "（），：；、。" else 1 for c in s) for s in lines]
        assert max(width) <= 80, lines[width.index(max(width))]


def test_argparse_is_not_patched():
    # 别的解析器不受影响（argparse 自己的用法错误照它的样子打印：test_bad_inputs.py 的 CLI 表）
    import argparse

    assert argparse.ArgumentParser(prog="demo").format_usage().startswith("usage: ")
    assert not hasattr(cli, "ARGPARSE_ZH") and not hasattr(cli, "Parser")
    # 写诗的命令行是同一种写法：数值参数由 _cli.number 读（“--x 应为…”），argparse 也不打补丁
    from tinyformer.poetry import cli as poetry_cli

    assert not hasattr(poetry_cli, "ARGPARSE_ZH") and not hasattr(poetry_cli, "Parser")


def test_every_reason_has_a_chinese_message():
    reasons = {"missing", "permission", "not_a_file", "pickle", "damaged", "metadata", "mismatch"}
    assert reasons | {"unsafe"} == set(_cli.WEIGHTS_ZH)
    assert set(cli.SENTENCE_ZH) == {"empty", "unknown_words", "too_long"}
    for text in [*_cli.WEIGHTS_ZH.values(), *cli.SENTENCE_ZH.values()]:
        assert CJK.search(text)
    err = WeightsError("/x/m.safetensors", "permission", "permission denied")
    assert cli.reader_message(err) == "权重文件 '/x/m.safetensors' 没有读取权限"
    # 原因留在这一行里：nan 的权重与 float64 的权重不再都读作“已损坏”“名字或形状不对”
    err = WeightsError("/m", "damaged", "has 3 non-finite…", "non_finite", name="w", count=3)
    assert cli.reader_message(err) == "权重文件 '/m' 已损坏或被截断：张量 'w' 里有 3 个 nan 或 inf"
    err = WeightsError(
        "/m",
        "mismatch",
        "…",
        "dtype",
        name="w",
        file="torch.float64",
        model="torch.float32",
        more=2,
    )
    assert cli.reader_message(err) == (
        "权重文件 '/m' 里的权重与它的配置不符：'w' 在文件里是 torch.float64，模型里是 torch.float32（另有 2 处不符）"
    )
    assert (
        cli.reader_message(PermissionError(13, "denied", "/root/x"))
        == "读写出错 '/root/x'：没有权限"
    )
    assert cli.reader_message(RuntimeError("boom")).startswith("意外的内部错误 RuntimeError")


# ---------------------------------------------------------------- 退出码：每种错误一个
# 用法错误 2、权重文件 3、翻译不了 4：test_bad_inputs.py 的 CLI 表钉着；这里是其余几种
def _raise(error):
    def command(argv):
        raise error

    return command


EXIT_CASES = [
    ("internal", _raise(RuntimeError("bug")), [], 1),
    ("io-error", _raise(BrokenPipeError(32, "Broken pipe")), [], 5),
    ("ctrl-c", _raise(KeyboardInterrupt()), [], 130),
    ("sigterm", _raise(_cli.Terminated()), [], 143),
]


@pytest.mark.parametrize(
    "command, argv, code", [c[1:] for c in EXIT_CASES], ids=[c[0] for c in EXIT_CASES]
)
def test_one_exit_code_per_kind_of_error(command, argv, code):
    status, out, err = run_cli(command, argv)
    assert status == code and code in cli.EXIT_CODES
    if code != 0:
        errors = [line for line in err.splitlines() if not line.startswith("提示：")]
        assert len(errors) == 1 and errors[0].startswith("错误：") and "Traceback" not in err, err


def test_translate_loads_the_model_once_and_builds_it_once(monkeypatch):
    from tinyformer import model

    built = []
    real_init = model.Transformer.__init__

    def counting_init(self, config):  # 在 meta 设备上核对形状的那一次不占内存，不算
        if torch.get_default_device().type != "meta":
            built.append(config)
        real_init(self, config)

    monkeypatch.setattr(model.Transformer, "__init__", counting_init)
    status, out, err = run_cli(cli.translate_main, ["我明天去北京。"])
    assert status == 0 and len(built) == 1
