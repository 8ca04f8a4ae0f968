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
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field

import torch

from .._checks import (
    check_bool,
    check_instance,
    check_int,
)
from ..cache import KVCache
from ..gpt import GPT, check_sampling, next_distribution
from .corpus import Vocab

__all__ = ["Poem", "next_distribution", "write"]

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
    while len(ids) < max_len:
        forced = None
        if acrostic is not None:
            if clauses == len(acrostic) and ids[-1] in ends:
                forced = vocab.eos_id
            elif clauses < len(acrostic) and (ids[-1] == vocab.bos_id or ids[-1] in ends):
                forced = vocab.stoi[acrostic[clauses]]
        if forced is not None:
            next_id, choices = forced, [(vocab.itos[forced], 1.0)]
        else:
            logits = logits.index_fill(0, banned, float("-inf"))
            if acrostic is not None:  # 藏头诗写满之前不许结束
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
        if next_id == vocab.eos_id:
            break
        ids.append(next_id)
        poem.text += vocab.itos[next_id]
        poem.choices.append(choices)
        clauses += next_id in ends
        if len(ids) == max_len:
            break
        if use_cache:
            logits = model(torch.tensor([[next_id]], device=device), cache=cache)[0, -1]  # 只送新字
        else:
            logits = model(torch.tensor([ids], device=device))[0, -1]  # 整段重算：(V,)
    return poem
