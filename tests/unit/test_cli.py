"""cli.py：argparse 说中文、包里的异常变成给读者的一行中文、每种错误一个退出码（issue 26）。

坏参数逐条的消息见 test_bad_inputs.py（TRAIN_CLI、TRANSLATE_CLI）。
"""

import argparse
import re
import signal
import subprocess
import sys

import pytest

from tests.kit import run_cli, tiny_translator
from tinyformer.translation import checkpoint, cli, translator
from tinyformer.translation.checkpoint import save_checkpoint

# 三个连着的英文单词就算一句英文（选项名、metavar、路径里的词不会这样连着出现）
ENGLISH = re.compile(r"[A-Za-z]{2,}(?: [A-Za-z]{2,}){2,}")


def english_left(text: str) -> list[str]:
    text = text.replace("python -m tinyformer.translation train", "").replace(
        "python -m tinyformer.translation translate", ""
    )
    return ENGLISH.findall(text)


@pytest.mark.parametrize(
    "argv, chinese",
    [
        (["--help"], "用法："),
        (["--help"], "显示这段帮助并退出"),
        (["--help"], "位置参数："),
        (["--help"], "选项："),
        ([], "缺少必需的参数：句子"),
        (["--temperature", "1", "我"], "不认识的参数：--temperature"),
        (["--beam-size"], "参数 --beam-size：需要一个取值"),
        (["--beam-size", "x", "我"], "参数 --beam-size：应为正整数，得到 'x'"),
        (["--b", "2", "我"], None),  # 唯一的前缀：--beam-size，照常解析
        (["--mo"], "参数 --model：需要一个取值"),
    ],
)
def test_translate_cli_speaks_chinese_only(capsys, argv, chinese, monkeypatch):
    monkeypatch.setattr(cli, "load_checkpoint", lambda path: pytest.fail("loaded"))
    if chinese is None:
        status, out, err = run_cli(cli.translate_main, argv, capsys)
        assert status == 0 and out.count("\n") == 1  # 照常翻译了那一句
        return
    status, out, err = run_cli(cli.translate_main, argv, capsys)
    text = out + err
    assert chinese in text, text
    assert english_left(text) == [], text
    assert status == (0 if argv == ["--help"] else 2)


@pytest.mark.parametrize(
    "msgid",
    [
        "usage: ",
        "the following arguments are required: %s",
        "unrecognized arguments: %s",
        "invalid choice: %(value)r (choose from %(choices)s)",
        "expected one argument",
        "show this help message and exit",
        "positional arguments",
        "options",
    ],
)
def test_every_argparse_message_the_brief_lists_has_a_chinese_version(msgid):
    # argparse 的原文必须原样出现在它的源码里（否则换了 Python 版本后我们的表就查不到了）
    import inspect

    assert repr(msgid)[1:-1] in inspect.getsource(argparse) or msgid in inspect.getsource(argparse)
    assert not english_left(cli.ARGPARSE_ZH[msgid]) and re.search(
        r"[\u4e00-\u9fff]", cli.ARGPARSE_ZH[msgid]
    )


def test_invalid_choice_and_ambiguous_option_are_chinese(capsys):
    parser = cli.Parser(prog="demo")
    parser.add_argument("--mode", choices=["fast", "slow"])
    parser.add_argument("--model-path")
    parser.add_argument("--model-name")
    for argv, expected in [
        (["--mode", "quick"], "错误：参数 --mode：无效的选择：'quick'（可选 'fast', 'slow'）"),
        (["--model", "x"], "错误：选项 --model 有歧义，可能是 --model-path, --model-name"),
    ]:
        with pytest.raises(SystemExit):
            parser.parse_args(argv)
        err = capsys.readouterr().err
        assert err.startswith(expected), err
        assert english_left(err) == []


def test_argparse_is_english_again_outside_the_parser():
    # 换中文只在 Parser 的方法里：别的解析器（例如 pytest 的）照旧
    with pytest.raises(SystemExit):
        cli.Parser(prog="demo").parse_args(["--x"])
    assert argparse._("usage: ") == "usage: "
    assert argparse.ArgumentParser(prog="demo").format_usage().startswith("usage: ")


def test_every_checkpoint_and_translator_reason_has_a_chinese_message():
    # 包里每一种原因在 READER_MESSAGES 里都有中文，中文里的花括号都能用异常的 details 填上
    expected = {(checkpoint.CheckpointError, key) for key in checkpoint.REASONS} | {
        (translator.UntranslatableError, key) for key in ("empty", "unknown_words", "too_long")
    }
    assert set(cli.READER_MESSAGES) == expected
    for (kind, key), template in cli.READER_MESSAGES.items():
        assert english_left(template) == [], template
        if kind is checkpoint.CheckpointError:
            english_fields = set(re.findall(r"{(\w+)", checkpoint.REASONS[key]))
            assert set(re.findall(r"{(\w+)", template)) <= english_fields | {"field"}, key


def test_reader_message_of_a_checkpoint_error_is_one_chinese_line(tmp_path):
    err = checkpoint.CheckpointError(
        tmp_path / "m.pt", "config_limit", field="max_len", value=2**31, limit=65536
    )
    assert (
        str(err)
        == f"checkpoint {str(tmp_path / 'm.pt')!r} has config max_len=2147483648, above the limit 65536"
    )
    assert (
        cli.reader_message(err)
        == f"检查点 {str(tmp_path / 'm.pt')!r} 的配置 max_len=2147483648 超过上限 65536"
    )
    assert (
        cli.reader_message(PermissionError(13, "Permission denied", "/root/x"))
        == "读写出错 '/root/x'：没有权限"
    )
    assert cli.reader_message(RuntimeError("boom")).startswith("意外的内部错误 RuntimeError")


# ---------------------------------------------------------------- 退出码：每种错误一个
@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "tiny.pt"
    save_checkpoint(tiny_translator(), path)
    return path


def _raise(error):
    def command(argv):
        raise error

    return command


EXIT_CASES = [
    ("ok", cli.translate_main, ["我明天去北京。"], 0),
    ("out-of-grammar-is-not-an-error", cli.translate_main, ["他昨天没在商店买衣服吗？"], 0),
    ("internal", _raise(RuntimeError("bug")), [], 1),
    ("usage-unknown-option", cli.translate_main, ["--nope", "我"], 2),
    ("usage-bad-out", cli.train_main, ["--out", "/dev/full"], 2),
    ("bad-model-missing", cli.translate_main, ["--model", "/nonexistent/m.pt", "我"], 3),
    ("bad-model-hostile", cli.translate_main, ["--model", "{bad}", "我"], 3),
    ("untranslatable", cli.translate_main, ["我爱你。"], 4),
    ("io-error", _raise(BrokenPipeError(32, "Broken pipe")), [], 5),
    ("ctrl-c", _raise(KeyboardInterrupt()), [], 130),
    ("sigterm", _raise(cli.Terminated()), [], 143),
]


@pytest.mark.parametrize(
    "command, argv, code", [c[1:] for c in EXIT_CASES], ids=[c[0] for c in EXIT_CASES]
)
def test_one_exit_code_per_kind_of_error(tmp_path, capsys, command, argv, code):
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"PK\x03\x04 not really a zip")
    argv = [a.replace("{bad}", str(bad)) for a in argv]
    status, out, err = run_cli(command, argv, capsys)
    assert status == code
    assert code in cli.EXIT_CODES
    if code not in (0,):
        line = err.splitlines()[-1]
        assert line.startswith("错误：") and english_left(line) == [], err


def test_exit_codes_are_documented_in_help_and_in_the_module_docstring(capsys):
    for command, codes in (
        (cli.train_main, cli.TRAIN_EXIT_CODES),
        (cli.translate_main, cli.TRANSLATE_EXIT_CODES),
    ):
        with pytest.raises(SystemExit):
            command(["--help"])
        out = capsys.readouterr().out
        for code in codes:
            assert f"  {code:<3}  {cli.EXIT_CODES[code]}" in out
            assert f"{code:<4}  {cli.EXIT_CODES[code]}" in cli.__doc__


def test_sigterm_in_a_real_process_exits_143(model_file):
    code = (
        "import os, signal, sys\n"
        "from tinyformer.translation import cli\n"
        "def main():\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "sys.exit(cli.run(main))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 143 and result.stderr.startswith("错误：被终止（SIGTERM）")
    assert signal.SIGTERM + 128 == 143


def test_help_columns_line_up_on_screen(capsys):
    # argparse 按字符数对齐，一个汉字却占两列："--model 路径" 后面的说明曾错开两列
    import unicodedata

    def width(text):
        return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)

    for command in (cli.train_main, cli.translate_main):
        with pytest.raises(SystemExit):
            command(["--help"])
        out = capsys.readouterr().out
        assert "\0" not in out
        starts = {
            width(m.group(1))
            for line in out.split("\n\n退出码")[0].splitlines()
            if (m := re.match(r"^(  [^ ].*?  +)\S", line))
        }
        assert len(starts) == 1, starts


@pytest.mark.parametrize("columns", [80, 60])
def test_help_fits_the_terminal_width(capsys, monkeypatch, columns):
    # 一个汉字占两列：argparse 按字符数折行时，80 列的终端里有的行宽到 89 列
    monkeypatch.setenv("COLUMNS", str(columns))
    for command in (cli.train_main, cli.translate_main):
        with pytest.raises(SystemExit):
            command(["--help"])
        lines = capsys.readouterr().out.splitlines()
        too_wide = [line for line in lines if cli.display_width(line) > columns]
        if columns == 80:
            assert too_wide == []
        else:  # 窄终端：说明照样折行，只有不能拆的（用法里的选项、退出码表）可以超出
            assert all(not line.startswith(" " * 18) for line in too_wide), too_wide
