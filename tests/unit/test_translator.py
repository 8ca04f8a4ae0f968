"""translator.py、checkpoint.py、cli.py：检查点存取（safetensors）、词表外的词、交叉注意力、命令行。"""

import dataclasses
import json
import pathlib
import struct
import warnings
import zipfile

import pytest
import torch

from tests.kit import TINY_SRC_VOCAB as SRC_VOCAB
from tests.kit import TINY_TGT_VOCAB as TGT_VOCAB
from tests.kit import Payload, tiny_translator
from tinyformer.translation import cli
from tinyformer.translation.checkpoint import convert_checkpoint, load_checkpoint, save_checkpoint
from tinyformer.translation.corpus import Pair
from tinyformer.translation.training import fit_translator
from tinyformer.translation.translator import Translator, new_translator
from tinyformer.weights import WeightsError


def test_build_is_reproducible_and_sized_by_the_vocabularies():
    a, b = tiny_translator(), tiny_translator()
    assert a.model.config.src_vocab_size == len(SRC_VOCAB)
    assert a.model.config.tgt_vocab_size == len(TGT_VOCAB)
    for pa, pb in zip(a.model.parameters(), b.model.parameters(), strict=True):
        assert torch.equal(pa, pb)


def test_checkpoint_round_trip_gives_identical_translations(tmp_path):
    translator = tiny_translator()
    sentences = ["我明天去北京。", "他喝绿茶吗？"]
    path = tmp_path / "sub" / "model.safetensors"
    save_checkpoint(translator, path, test_bleu=12.5)
    loaded = load_checkpoint(path)
    assert loaded.metrics == {"test_bleu": 12.5}
    assert loaded.src_vocab.itos == SRC_VOCAB.itos and loaded.tgt_vocab.itos == TGT_VOCAB.itos
    assert loaded.model.config == translator.model.config
    assert loaded.translate(sentences) == translator.translate(sentences)
    # 共享的输出层权重在读回后仍然是同一个参数
    assert loaded.model.output.weight is loaded.model.tgt_embed.embedding.weight


def test_convert_refuses_an_unsafe_pickle(tmp_path, capfd):
    path = tmp_path / "evil.pt"
    torch.save({"format": "tinyformer-translator-1", "payload": Payload()}, path)
    with pytest.raises(WeightsError, match=r"unsafe: its pickle asks to call posix.system") as info:
        convert_checkpoint(path, tmp_path / "new.safetensors")
    assert info.value.reason == "pickle" and not (tmp_path / "new.safetensors").exists()
    assert "pwned" not in capfd.readouterr().out


def test_convert_keeps_every_number_of_an_old_checkpoint(tmp_path):
    translator = tiny_translator()
    old = {
        "format": "tinyformer-translator-1",
        "config": dataclasses.asdict(translator.model.config),
        "src_itos": list(SRC_VOCAB.itos),
        "tgt_itos": list(TGT_VOCAB.itos),
        "state_dict": translator.model.state_dict(),
        "metrics": {"test_bleu": 12.5},
    }
    torch.save(old, tmp_path / "old.pt")
    convert_checkpoint(tmp_path / "old.pt", tmp_path / "new.safetensors")
    loaded = load_checkpoint(tmp_path / "new.safetensors")
    assert loaded.metrics == {"test_bleu": 12.5} and loaded.model.config == translator.model.config
    for name, tensor in translator.model.state_dict().items():
        assert torch.equal(loaded.model.state_dict()[name], tensor), name


def test_a_checkpoint_without_read_permission_names_the_cause(tmp_path, monkeypatch):
    save_checkpoint(tiny_translator(), tmp_path / "m.safetensors")
    real_open = pathlib.Path.open  # 测试以 root 运行时 chmod 挡不住读：模拟 EACCES

    def no_permission(self, *args, **kwargs):
        if self.name == "m.safetensors":
            raise PermissionError(13, "Permission denied", str(self))
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "open", no_permission)
    with pytest.raises(WeightsError, match="permission denied") as info:
        load_checkpoint(tmp_path / "m.safetensors")
    assert info.value.reason == "permission"


def test_the_sentence_is_tokenized_once(monkeypatch):
    translator = tiny_translator()
    calls = []
    real = translator.tokenizer
    translator.tokenizer = lambda text: calls.append(text) or real(text)
    translator.translate_checked("我明天去北京。")
    translator.cross_attention("他喝绿茶吗？")
    assert calls == ["我明天去北京。", "他喝绿茶吗？"]


def test_translate_single_and_batch_agree():
    translator = tiny_translator()
    batch = translator.translate(["我明天去北京。", "他喝绿茶吗？"], max_len=8)
    assert translator.translate("他喝绿茶吗？", max_len=8) == batch[1]
    assert (
        translator.translate("他喝绿茶吗？", beam_size=3, max_len=8)
        == translator.translate(["他喝绿茶吗？"], beam_size=3, max_len=8)[0]
    )


def test_cross_attention_shape_and_rows_sum_to_one():
    translator = tiny_translator()
    src_tokens, tgt_tokens, weights = translator.cross_attention("我明天去北京。")
    assert src_tokens == ["我", "明天", "去", "北京", "。"]
    assert weights.shape == (4, len(tgt_tokens), len(src_tokens))
    torch.testing.assert_close(weights.sum(-1), torch.ones(4, len(tgt_tokens)))
    assert not any(layer.need_weights for layer in translator.model.decoder_layers)
    with pytest.raises(ValueError, match=r"layer must be in \[-1, 1\), got layer=1"):
        translator.cross_attention("我明天去北京。", layer=1)


def test_evaluate_counts_exact_matches():
    translator = tiny_translator()
    pairs = [Pair("我明天去北京。", "x", ("我",), "", "", "affirmative", "", "")] * 2
    hypothesis = translator.translate("我明天去北京。")
    pairs.append(Pair("我明天去北京。", hypothesis, ("我",), "", "", "affirmative", "", ""))
    result = translator.evaluate(pairs, batch_size=2)
    assert result.exact_match == pytest.approx(1 / 3)
    assert [i for i, _, _ in result.errors()] == [0, 1]
    assert 0.0 <= result.bleu <= 100.0


def test_train_cli_prints_one_json_line_and_saves_a_loadable_checkpoint(tmp_path, capsys):
    out = tmp_path / "m.safetensors"
    metrics = cli.train_main(["--steps", "3", "--out", str(out), "--no-progress", "--seed", "1"])
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1 and json.loads(lines[0]) == metrics
    assert metrics["steps"] == 3 and metrics["seed"] == 1
    assert {"test_exact_match", "test_bleu", "seconds", "train_seconds"} <= metrics.keys()
    assert 0.0 <= metrics["test_exact_match"] <= 1.0
    assert load_checkpoint(out).metrics["test_bleu"] == metrics["test_bleu"]

    assert cli.translate_main(["--model", str(out), "我明天去北京。", "他爱我。"]) == 4
    captured = capsys.readouterr()
    assert len(captured.out.strip().splitlines()) == 1
    assert "有模型没学过的词 ['爱']" in captured.err


def test_fit_translator_keeps_the_weights_it_reports():
    translator, history, corpus, best = fit_translator(max_steps=4, eval_every=2, progress=False)
    assert history.steps == 4 and best["best_step"] in (2, 4)
    # 报告的验证集分数就是装回模型的那份权重的分数
    assert translator.evaluate(corpus.valid).exact_match == best["best_valid_exact_match"]
    assert not translator.model.training


def test_show_translation_plots_known_words_and_explains_unknown_ones(capsys, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from tinyformer.book.plotting import setup_chinese_font
    from tinyformer.book.widgets import show_translation, translation_explorer

    setup_chinese_font()  # 像第 8 章的导入单元格一样（导入本包不设字体）
    monkeypatch.setattr(plt, "show", lambda: None)
    translator = tiny_translator()
    expected = translator.translate("我明天去北京。")
    assert show_translation(translator, "我明天去北京。") == expected
    assert capsys.readouterr().out.startswith(f"我明天去北京。  →  {expected}")
    image = plt.gca().get_images()[0]
    assert image.get_array().shape[1] == 5  # 列是 5 个中文词元
    plt.close("all")

    assert show_translation(translator, "我明天去上海。") is None
    message = capsys.readouterr().out
    assert (
        message
        == "无法翻译 '我明天去上海。'：\n有模型没学过的词 ['上海']，模型只能翻译训练语料里的词\n"
    )
    assert plt.get_fignums() == []  # 不认识的词：只有说明，没有图
    widget = translation_explorer(translator, "我明天去北京。")
    assert widget.children[0].value == "我明天去北京。"
    plt.close("all")


def test_cli_main_dispatches_to_the_sub_commands(tmp_path, capsys, monkeypatch):
    seen = []
    monkeypatch.setitem(cli.COMMANDS, "translate", lambda argv: seen.append(argv) or 0)
    assert cli.main(["translate", "--model", "m.safetensors", "我"]) == 0
    assert seen == [["--model", "m.safetensors", "我"]]
    assert cli.main(["--help"]) == 0 and "{train,translate,convert}" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["bogus"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == (
        "错误：第一个参数应是命令 train、translate、convert 之一，得到 'bogus'（用 --help 查看用法）\n"
    )


# ---------------------------------------------------------------- 句型不在训练语料里（issue 26 第 6 项）
def test_translate_checked_tells_the_reader_when_a_sentence_is_outside_the_grammar():
    from tinyformer.translation.corpus import OUT_OF_GRAMMAR
    from tinyformer.translation.pretrained import load_translator
    from tinyformer.translation.translator import Translation

    translator = load_translator()
    inside, outside = "我明天去北京。", "他昨天没在商店买衣服吗？"  # 否定疑问句：语料从不生成
    results = translator.translate_checked([inside, outside])
    assert results == [
        Translation(inside, translator.translate(inside), True, ""),
        Translation(outside, translator.translate(outside), False, OUT_OF_GRAMMAR),
    ]
    # 一句（str）返回一个 Translation；print 时提示在译文的下一行
    single = translator.translate_checked(outside)
    assert str(single) == f"{single.text}\n提示：{OUT_OF_GRAMMAR}"
    assert str(translator.translate_checked(inside)) == "I will go to Beijing tomorrow."
    assert "in_grammar=False" in repr(single) and OUT_OF_GRAMMAR in repr(single)
    # translate 照旧只返回字符串
    assert isinstance(translator.translate(outside), str)


def test_translate_checked_uses_the_translators_own_domain_and_names_unknown_words():
    translator = Translator(
        tiny_translator().model, SRC_VOCAB, TGT_VOCAB, in_domain=lambda words: words[0] == "我"
    )
    assert translator.translate_checked("我明天去北京。").in_grammar
    assert not translator.translate_checked("他喝绿茶吗？").in_grammar
    with pytest.raises(ValueError, match=r"words not in the source vocabulary: \['上海'\]") as info:
        translator.translate_checked("我明天去上海。")
    assert info.value.reason == "unknown_words" and info.value.sentence == "我明天去上海。"


def test_a_model_with_few_positions_translates_with_the_default_max_len(tmp_path, capsys):
    # fuzz run (issue 26)：max_len=16 的检查点，translate() 的默认 max_len=32 曾让解码报
    # "max_len + 1 (for <bos>) must be <= model.config.max_len=16"——读者并没有给 max_len
    small = new_translator(
        SRC_VOCAB, TGT_VOCAB, seed=0, d_model=16, num_layers=1, d_ff=32, max_len=16
    )
    assert isinstance(small.translate("我明天去北京。"), str)
    assert small.translate_ids(small.encode(["我明天去北京。"])).shape[1] <= 16
    save_checkpoint(small, tmp_path / "small.safetensors")
    assert (
        cli.translate_main(["--model", str(tmp_path / "small.safetensors"), "我明天去北京。"]) == 0
    )
    assert capsys.readouterr().out.count("\n") == 1


# ---------------------------------------------------------------- convert 先核对旧文件（issue 52 第 3 项）
def old_checkpoint(path, state_dict=None, **config_changes):
    """像第一版那样用 torch.save 写一个旧检查点（zip 里的成员名以 ``path`` 的主干开头）。"""
    translator = tiny_translator()
    torch.save(
        {
            "format": "tinyformer-translator-1",
            "config": dataclasses.asdict(translator.model.config) | config_changes,
            "src_itos": list(SRC_VOCAB.itos),
            "tgt_itos": list(TGT_VOCAB.itos),
            "state_dict": translator.model.state_dict() if state_dict is None else state_dict,
            "metrics": {},
        },
        path,
    )
    return path


def member_data_offset(data: bytes, info: zipfile.ZipInfo) -> int:
    """zip 成员的数据从第几个字节开始：本地文件头 30 字节，再加上名字与扩展字段（以本地头里的长度为准）。"""
    name_length, extra_length = struct.unpack("<HH", data[info.header_offset + 26 :][:4])
    return info.header_offset + 30 + name_length + extra_length


def converted(source, tmp_path):
    """convert 的 WeightsError (reason, message)；没有写出新文件。"""
    target = tmp_path / "new.safetensors"
    with pytest.raises(WeightsError) as caught:
        convert_checkpoint(source, target)
    assert not target.exists()
    return caught.value.reason, caught.value.message


def test_convert_refuses_a_zip_member_whose_crc_does_not_match(tmp_path):
    path = old_checkpoint(tmp_path / "old.pt")
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo("old/data/3")
    data[member_data_offset(data, info) + 5] ^= 0x40  # 一个权重里的一个字节
    path.write_bytes(data)
    assert torch.load(path, weights_only=True)  # torch.load 自己不查 CRC：悄悄读进另一个权重
    assert converted(path, tmp_path) == (
        "damaged",
        "CRC mismatch in member 'old/data/3' of its zip archive: "
        "the file was damaged after torch.save wrote it",
    )


def test_convert_refuses_two_zip_members_with_one_name(tmp_path):
    path = old_checkpoint(tmp_path / "old.pt")
    with warnings.catch_warnings(), zipfile.ZipFile(path, "a") as archive:
        warnings.simplefilter("ignore")  # zipfile 警告 Duplicate name，但照样写进去
        archive.writestr("old/data/3", bytes(len(archive.read("old/data/3"))))
    assert converted(path, tmp_path) == (
        "damaged",
        "its zip archive holds 2 members named 'old/data/3' (torch.load would read one of them "
        "silently)",
    )


def test_convert_refuses_tied_matrices_that_differ(tmp_path):
    # 旧的 state_dict 里输出层与目标词嵌入是同一个矩阵的两个名字；两份不同时 load_state_dict 悄悄留下一份
    state = {name: tensor.clone() for name, tensor in tiny_translator().model.state_dict().items()}
    state["output.weight"][0, 0] += 1.0
    path = old_checkpoint(tmp_path / "old.pt", state)
    assert converted(path, tmp_path) == (
        "damaged",
        "holds different values for 'tgt_embed.embedding.weight' and 'output.weight', which the "
        "model ties (one shared tensor): refusing to keep one of them silently",
    )


def test_convert_checks_the_old_config_against_the_old_tensors(tmp_path):
    path = old_checkpoint(tmp_path / "old.pt", max_len=2**22)
    reason, message = converted(path, tmp_path)
    assert reason == "metadata" and message.startswith(
        "its config asks for position tables of max_len × d_model = 4194304 × 16 (256.0 MiB as "
        "float32) that the file does not justify; at most 64.0 MiB is allowed"
    )
    state = tiny_translator().model.state_dict()
    state["src_embed.embedding.weight"] = state["src_embed.embedding.weight"].double()
    path = old_checkpoint(tmp_path / "old.pt", state)
    assert converted(path, tmp_path) == (
        "mismatch",
        "does not match the model: 'src_embed.embedding.weight' has dtype torch.float64 in the "
        "file, torch.float32 in the model",
    )


# ---------------------------------------------------------------- 半精度的模型存不进检查点（issue 52 第 4 项）
def test_a_half_precision_translator_is_refused_when_saving(tmp_path):
    translator = tiny_translator()
    translator.model.half()
    with pytest.raises(TypeError) as caught:
        save_checkpoint(translator, tmp_path / "m.safetensors")
    assert str(caught.value) == (
        "translator.model must hold float32 weights to be saved as a checkpoint (the loader "
        "builds a float32 model), got 'src_embed.embedding.weight' with dtype=torch.float16; "
        "call translator.model.float() first"
    )
    assert not (tmp_path / "m.safetensors").exists()
    translator.model.float()  # 照消息做：存得下，也读得回
    save_checkpoint(translator, tmp_path / "m.safetensors")
    assert load_checkpoint(tmp_path / "m.safetensors").model.config == translator.model.config
