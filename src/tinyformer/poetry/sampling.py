"""写诗：逐字采样、藏头诗、接着前句写（“只有解码器”一章讲解）。

每一步模型给出下一个字的 logits，:func:`~tinyformer.next_distribution`（模型核心里唯一的采样公式，
:meth:`~tinyformer.GPT.generate` 也用它）把它变成采样用的分布：

1. 除以温度 τ（τ < 1 让分布更尖、更保守，τ > 1 更平、更大胆）；
2. top-k：只留概率最大的 k 个字；
3. top-p（nucleus）：按概率从大到小累加，只留累加到 p 为止的最小集合（至少留一个）；
4. 重新归一化。``greedy=True`` 时不采样，直接取最大的。

:func:`write` 用一个 :class:`~tinyformer.KVCache`：先把 ``<bos>`` 和前句一次送入，之后每步只送入
上一步的字，前面的 K、V 不再重算（``use_cache=False`` 时每步重算整段，只为核对二者相同）。

**加了哪些约束**（其余都由模型自己决定，所以样本能诚实地评估形状）：

- 永不采 ``<pad>``、``<bos>``、``<unk>``（前两个不是字；``<unk>`` 写不出来）；
- 藏头诗：第 i 句的第一个字强制为 ``acrostic[i]``（"句"以 ，。 分隔）；写满 ``len(acrostic)`` 句之前
  不许 ``<eos>``，写满之后强制 ``<eos>``。每句几个字、标点放在哪里不强制——只有一个例外：剩下的
  位置只够这一句的标点和余下各句的首字、标点时，这一句就此结束（藏头的字不会被位置数截掉）。
  藏头的字须是非空的、不含标点的字串，每句按七言（7 字 + 标点）算也放得进模型的位置数。

**格律约束解码**（``form="五绝"``、``"七绝"``、``"五律"``、``"七律"``，见 :class:`MeterMask`）：每一步先把
不合格律的字的 logit 设为 −∞，再用同一个采样公式。形状（句数、字数、，。、``<eos>``）整个固定；第 2、4、6 字
（五言第 2、4 字）的平仄、押韵句末的韵部、不押韵句末的仄声按近体诗的四种格式（平起/仄起 × 首句入韵与否）
约束：哪种格式由写出来的第一个受约束的字决定，韵部由第一个韵脚决定（``rhyme`` 可以指定）。一三五不论。
平水韵表里没有的字不能放在受约束的位置上（它的平仄不知道）。
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field

import torch

from .._checks import (
    arguments_checked,
    check_bool,
    check_instance,
    check_int,
)
from ..cache import KVCache
from ..gpt import GPT, check_sampling, next_distribution
from .corpus import Vocab
from .evaluation import FORMS, PING, ZE, is_han, rhyme_groups, tones

__all__ = ["MeterError", "MeterMask", "Poem", "next_distribution", "write"]

CLAUSE_ENDS = "，。"


def _check_acrostic(acrostic, prefix: str, max_len: int) -> None:
    """藏头诗能不能照办：非空的汉字串、没有前句、每句都能是七言（7 字 + 标点）而不超出模型的位置数。"""
    if prefix:
        raise ValueError(
            f"give prefix or acrostic, not both: prefix={prefix!r}, acrostic={acrostic!r}"
        )
    if not acrostic:
        raise ValueError("acrostic must have at least one character, got acrostic=''")
    marks = sorted({ch for ch in acrostic if unicodedata.category(ch).startswith("P")})
    if marks:  # 标点作句首：写出来的是一串标点，不是诗
        raise ValueError(
            f"acrostic must be characters that begin a clause, not punctuation: "
            f"{''.join(marks)!r} in acrostic={acrostic!r}"
        )
    room = 1 + len(acrostic) * (7 + 1) + 1  # <bos> + 每句 7 字 1 标点 + <eos>
    if room > max_len:
        raise ValueError(
            f"acrostic is too long for the model's context: {len(acrostic)} clauses of up to "
            f"7 characters and a mark need {room} positions, max_len={max_len} (at most "
            f"{(max_len - 2) // 8} characters)"
        )


class MeterMask:
    """格律约束：一首 ``form``（``"五绝"``、``"七绝"``、``"五律"``、``"七律"``）写到哪里，下一个字可以是哪些字。

    四种格式按首句第 2 字的平仄 x（平起/仄起）和首句入不入韵分；其余各句第 2 字依次是 x、反 x、反 x、x、
    x、反 x、反 x、x（对、粘），每句第 2、4、6 字平仄交替（二四六分明）；偶数句与入韵的首句末字押
    同一个平声韵部，其余句末是仄声；用过的韵脚字不再作韵脚（不重韵）。一开始四种格式都还可能，每写一个字就去掉与它不合的格式，所以
    第一个受约束的字定下平起或仄起，首句末字定下入韵与否，第一个韵脚定下韵部（``rhyme`` 给了就只用那一部：
    全名如 ``"下平声十一尤"``，或韵目如 ``"尤"``）。

    - :meth:`allowed`：下一个位置允许的字，``(V,)`` 的布尔张量；
    - :meth:`step`：写下一个字（编号），不合格律时 :class:`MeterError` 说出是哪一句第几个字、这里要什么。

    例子::

        >>> vocab = Vocab(["<pad>", "<unk>", "<bos>", "<eos>", *"春风月明，。"])
        >>> rules = MeterMask(vocab, "五绝")
        >>> rules.step(vocab.stoi["春"])  # 第 1 字：一三五不论
        >>> [vocab.itos[i] for i in rules.allowed().nonzero().flatten().tolist()]  # 第 2 字：平或仄
        ['春', '风', '月', '明']
        >>> rules.step(vocab.stoi["月"])  # 仄起
        >>> rules.templates
        [('仄', True, None), ('仄', False, None)]
    """

    def __init__(self, vocab: Vocab, form: str, rhyme: str | None = None):
        if form not in FORMS:
            raise ValueError(f"form must be one of {tuple(FORMS)}, got form={form!r}")
        self.vocab, self.form = vocab, form
        self.lines, self.length = FORMS[form]
        chars = vocab.itos
        self._han = torch.tensor([is_han(ch) for ch in chars])
        self._tone = {t: torch.tensor([t in tones(ch) for ch in chars]) for t in (PING, ZE)}
        groups_of = [rhyme_groups(ch) for ch in chars]  # 每个字属于哪几部（多音字可以几部）
        names = sorted(set().union(*groups_of))
        row = {g: k for k, g in enumerate(names)}
        table = torch.zeros(len(names), len(chars), dtype=torch.bool)  # (G, V)：第 g 部有哪些字
        members = [(row[g], i) for i, gs in enumerate(groups_of) for g in gs]  # (第几部, 第几个字)
        table[[g for g, _ in members], [i for _, i in members]] = True
        self._group = dict(zip(names, table, strict=True))  # 部名 -> (V,) 布尔
        groups = None
        if rhyme is not None:
            fits = [g for g in names if g.endswith(rhyme)] if rhyme else []
            if len(fits) != 1:
                example = names[0] if names else ""
                raise ValueError(
                    f"rhyme must name one level-tone rhyme group of the Pingshui table, by its "
                    f"full name or its end (such as {example!r} or {example[-1:]!r}), got "
                    f"rhyme={rhyme!r} ({len(fits)} groups match)"
                )
            groups = frozenset(fits)
        # 还可能的格式：(首句第 2 字的平仄, 首句入韵?, 还可能的韵部；None = 任何一部)
        self.templates = [(x, first, groups) for x in (PING, ZE) for first in (True, False)]
        self.clause, self.position = (
            0,
            0,
        )  # 正在写第几句（从 0 数）的第几个字；position == length 是标点
        self.finished = False
        self.rhymed: set[int] = set()  # 已经作过韵脚的字（编号）：不重韵

    def _mark(self) -> str:
        return "，" if self.clause % 2 == 0 else "。"

    def _need(self, template) -> tuple[str, frozenset[str] | None] | None:
        """这种格式在当前位置的要求：``(平仄, 韵部)``；``None`` = 不论（一三五）。"""
        x, first, groups = template
        j, last = self.position, self.length - 1
        if j == last:
            if self.clause % 2 == 1 or (self.clause == 0 and first):
                return PING, groups if groups is not None else frozenset(self._group)
            return ZE, None
        if j % 2 == 1:  # 第 2、4、6 字
            line_tone = x if (self.clause + 1) // 2 % 2 == 0 else _flip(x)
            return (line_tone if j % 4 == 1 else _flip(line_tone)), None
        return None

    def _mask(self, need) -> torch.Tensor:
        if need is None:
            return self._han
        tone, groups = need
        mask = self._tone[tone]
        if groups is not None:  # 韵脚：这几部的字，用过的韵脚字除外
            mask = mask & torch.stack([self._group[g] for g in groups]).any(0)
            mask[list(self.rhymed)] = False
        return mask

    def forced(self) -> int | None:
        """标点和 ``<eos>`` 的位置只有一个字可写：它的编号；其余位置 ``None``。"""
        if self.finished:
            return self.vocab.eos_id
        if self.position == self.length:
            return self.vocab.stoi.get(self._mark(), self.vocab.unk_id)
        return None

    def allowed(self) -> torch.Tensor:
        """下一个位置允许的字：``(V,)`` 的布尔张量（与模型的 logits 同样长）。"""
        forced = self.forced()
        if forced is not None:
            return torch.arange(len(self.vocab)) == forced
        mask = torch.zeros(len(self.vocab), dtype=torch.bool)
        for template in self.templates:
            mask |= self._mask(self._need(template))
        return mask

    def step(self, token: int) -> None:
        """写下编号为 ``token`` 的字，去掉与它不合的格式；不合任何格式时 :class:`MeterError`。"""
        ch = self.vocab.itos[token]
        forced = self.forced()
        if forced is not None:
            if token != forced:
                raise MeterError(self, ch, [("eos",) if self.finished else ("mark", self._mark())])
            if self.position == self.length:
                self.clause, self.position = self.clause + 1, 0
                self.finished = self.clause == self.lines
            return
        if not self._han[token]:
            raise MeterError(self, ch, [("han", self.length)])
        kept, rhymes = [], False
        for template in self.templates:
            need = self._need(template)
            if self._mask(need)[token]:
                x, first, groups = template
                if need is not None and need[1] is not None:  # 韵脚：韵部缩小到这个字的
                    groups, rhymes = need[1] & rhyme_groups(ch), True
                kept.append((x, first, groups))
        if not kept:
            needs = {("tone", *_shown(self._need(t))) for t in self.templates}
            raise MeterError(self, ch, sorted(needs, key=_ping_first), token in self.rhymed)
        if rhymes:  # 这个字可能作了韵脚（首句末字两读时也算）
            self.rhymed.add(token)
        self.templates = kept
        self.position += 1


class MeterError(ValueError):
    """一个字不合格律（:meth:`MeterMask.step`）：``char`` 在第 ``clause`` 句第 ``position`` 个字（都从 1 数）。

    ``wanted`` 是这里可以写的（任一即可）：``("eos",)``、``("mark", 标点)``、``("han", 每句字数)``（一个汉字）、
    ``("tone", 平仄, 韵部或 None)``；``repeat``：这个字已经作过韵脚（不重韵）。消息是英文的，:meth:`zh`
    是命令行用的中文说法。
    """

    def __init__(self, rules: MeterMask, char: str, wanted: list[tuple], repeat: bool = False):
        self.form, self.char, self.wanted, self.repeat = rules.form, char, wanted, repeat
        self.clause, self.position = rules.clause + 1, rules.position + 1
        self.tones = [t for t in (PING, ZE) if t in tones(char)]
        has = " or ".join(_TONE_EN[t] for t in self.tones) or "not in the Pingshui table"
        again = ", and not a character that has already rhymed" if repeat else ""
        super().__init__(
            f"{char!r} does not fit {self.form} at clause {self.clause}, character "
            f"{self.position}: this position needs {' or '.join(map(_english, wanted))}{again}; "
            f"{char!r} is {has}"
        )

    def zh(self) -> str:
        """中文的说法（命令行用；网页的 poem_writer.js 说同样的话）。"""
        has = "或".join(f"{t}声" for t in self.tones) or "平水韵表里没有的字"
        need = "或".join(map(_chinese, self.wanted))
        if self.repeat:
            need += f"，且不重韵（“{self.char}”已经作过韵脚）"
        return (
            f"不合{self.form}的格律：第 {self.clause} 句第 {self.position} 个字“{self.char}”"
            f"是{has}，这里要{need}"
        )


_TONE_EN = {PING: f"level ({PING})", ZE: f"oblique ({ZE})"}


def _english(want: tuple) -> str:
    kind, *rest = want
    if kind == "eos":
        return "<eos>"
    if kind == "mark":
        return repr(rest[0])
    if kind == "han":
        return f"a Han character (each clause has {rest[0]})"
    tone, groups = rest
    article = "a" if tone == PING else "an"
    return f"{article} {_TONE_EN[tone]} character" + (
        f" rhyming in {'/'.join(groups)}" if groups else ""
    )


def _chinese(want: tuple) -> str:
    kind, *rest = want
    if kind == "eos":
        return "<eos>"
    if kind == "mark":
        return f"“{rest[0]}”"
    if kind == "han":
        return f"汉字（每句 {rest[0]} 个字）"
    tone, groups = rest
    return f"{tone}声" + (f"、押{'/'.join(groups)}" if groups else "")


def _flip(tone: str) -> str:
    return ZE if tone == PING else PING


def _ping_first(want: tuple) -> tuple[bool, tuple]:
    return (want[1] != PING, want)


def _shown(need) -> tuple[str, tuple[str, ...] | None]:
    """一个位置的要求，用来说给人听：(平仄, 韵部)；可选的韵部多于 3 个时不列出。"""
    tone, groups = need
    return tone, (tuple(sorted(groups)) if groups is not None and len(groups) <= 3 else None)


@dataclass
class Poem:
    """一首生成的诗：``text``，以及每一步（``choices[i]`` 对应 ``text[len(prefix) + i]``）
    采样分布里概率最大的几个字 [(字, 概率), …]；被强制的字那一步是 [(字, 1.0)]。"""

    text: str
    choices: list[list[tuple[str, float]]] = field(default_factory=list)


@torch.no_grad()
def write(
    model: GPT,
    vocab: Vocab,
    prefix: str = "",
    acrostic: str | None = None,
    form: str | None = None,
    rhyme: str | None = None,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    greedy: bool = False,
    generator: torch.Generator | None = None,
    show: int = 5,
    use_cache: bool = True,
) -> Poem:
    """从 ``<bos> prefix`` 接着写一首诗，直到 ``<eos>`` 或写满 ``model.config.max_len``。

    ``prefix`` 的字与 ``acrostic`` 的字都须在字表里（否则 ``ValueError`` 说出是哪些字）。
    有 ``acrostic`` 时 ``prefix`` 须为空。``show`` 是每步记下的候选个数。会把 ``model`` 设为 eval 模式。

    ``form``（``"五绝"``、``"七绝"``、``"五律"``、``"七律"``）：按格律约束每一步（:class:`MeterMask`），
    ``rhyme`` 指定韵部；藏头的字数须等于这一体的句数，前句须合这一体的格律（否则 ``ValueError``
    说出哪个字、哪条规则）。
    """
    check_instance("prefix", prefix, str)
    check_instance("acrostic", acrostic, str, allow_none=True)
    check_bool("greedy", greedy)
    check_instance("generator", generator, torch.Generator, allow_none=True)
    check_int("show", show, minimum=0)
    check_sampling(temperature, top_k, top_p)
    if len(vocab) != model.config.vocab_size:  # 否则编号对不上字：写出的是别的字，或越界
        raise ValueError(
            f"vocab has {len(vocab)} entries but the model's vocab_size={model.config.vocab_size}: "
            "they come from different checkpoints"
        )
    unknown = sorted({ch for ch in prefix + (acrostic or "") if ch not in vocab})
    if unknown:
        raise ValueError(f"characters not in the vocabulary: {''.join(unknown)!r}")
    max_len = model.config.max_len
    if len(prefix) + 2 > max_len:  # <bos> + 前句 + 至少一个新字
        raise ValueError(
            f"prefix is too long for the model's context: {len(prefix)} characters, "
            f"at most max_len - 2 = {max_len - 2}"
        )
    if acrostic is not None:
        _check_acrostic(acrostic, prefix, max_len)
    check_instance("rhyme", rhyme, str, allow_none=True)
    if rhyme is not None and form is None:
        raise ValueError(f"rhyme needs a form, got rhyme={rhyme!r} and form=None")
    rules = None
    if form is not None:
        rules = MeterMask(vocab, form, rhyme)
        room = 1 + rules.lines * (rules.length + 1)  # <bos> + 每句的字与标点；<eos> 是最后一个预测
        if room > max_len:
            raise ValueError(f"a {form} needs {room} positions, the model's max_len={max_len}")
        if acrostic is not None and len(acrostic) != rules.lines:
            raise ValueError(
                f"a {form} has {rules.lines} clauses, so the acrostic needs {rules.lines} "
                f"characters, got acrostic={acrostic!r} ({len(acrostic)})"
            )
        for ch in prefix:
            rules.step(vocab.stoi[ch])
            if rules.finished:
                raise ValueError(f"prefix is already a whole {form}: prefix={prefix!r}")
    model.eval()
    device = next(model.parameters()).device
    ids = vocab.encode(prefix, bos=True)
    banned = torch.tensor([vocab.pad_id, vocab.bos_id, vocab.unk_id], device=device)
    ends = {vocab.stoi[ch] for ch in CLAUSE_ENDS if ch in vocab.stoi}
    others = torch.tensor([i for i in range(len(vocab)) if i not in ends], device=device)
    cache = KVCache() if use_cache else None
    logits = model(torch.tensor([ids], device=device), cache=cache)[0, -1]  # (V,)
    poem = Poem(text=prefix)
    clauses = 0  # 已写完的句数
    with arguments_checked():  # 每一步送入的都是写出的字：参数已在上面查过，模型不再逐步重查
        while len(ids) < max_len:
            forced = None
            if rules is not None:
                forced = rules.forced()
                if forced is None and acrostic is not None and rules.position == 0:
                    forced = vocab.stoi[acrostic[rules.clause]]
            elif acrostic is not None:
                if clauses == len(acrostic) and ids[-1] in ends:
                    forced = vocab.eos_id
                elif clauses < len(acrostic) and (ids[-1] == vocab.bos_id or ids[-1] in ends):
                    forced = vocab.stoi[acrostic[clauses]]
            if forced is not None:
                next_id, choices = forced, [(vocab.itos[forced], 1.0)]
            else:
                logits = logits.index_fill(0, banned, float("-inf"))
                if rules is not None:  # 不合格律的字概率为 0，其余照常采样
                    logits = logits.masked_fill(~rules.allowed().to(device), float("-inf"))
                elif acrostic is not None:  # 藏头诗写满之前不许结束
                    logits[vocab.eos_id] = float("-inf")
                    # 这一句的标点、余下每句的首字和标点（各 2 个位置）刚好还放得下时，这一句就此结束：
                    # 藏头的字一个也不丢，最后一句也有标点（只在模型写出特别长的句子时才会发生）
                    heads_left = len(acrostic) - clauses - 1
                    if max_len - len(ids) - 1 < 2 * heads_left + 1:
                        logits = logits.index_fill(0, others, float("-inf"))
                if greedy:
                    probs = torch.softmax(logits, dim=-1)  # (V,)
                    next_id = int(probs.argmax())
                else:
                    probs = next_distribution(logits, temperature, top_k, top_p)  # (V,)
                    # 生成器在 CPU 上，所以在 CPU 上抽
                    next_id = int(torch.multinomial(probs.cpu(), 1, generator=generator))
                top = torch.topk(probs, min(show, len(vocab)))
                choices = [
                    (vocab.itos[i], round(p, 4))
                    for p, i in zip(top.values.tolist(), top.indices.tolist(), strict=True)
                ]
            if rules is not None:
                rules.step(next_id)
            if next_id == vocab.eos_id:
                break
            ids.append(next_id)
            poem.text += vocab.itos[next_id]
            poem.choices.append(choices)
            clauses += next_id in ends
            if len(ids) == max_len:
                break
            if use_cache:
                logits = model(torch.tensor([[next_id]], device=device), cache=cache)[
                    0, -1
                ]  # 只送新字
            else:
                logits = model(torch.tensor([ids], device=device))[0, -1]  # 整段重算：(V,)
    return poem
