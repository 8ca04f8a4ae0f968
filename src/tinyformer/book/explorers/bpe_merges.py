"""探索器「看 BPE 一步一步合并」（“中文的字节级 BPE”一章）。"""

from __future__ import annotations

import altair as alt

from ...bpe import ByteBPE
from .charts import control, finish

SENTENCES = ("床前明月光，疑是地上霜。", "春风又绿江南岸", "我爱北京天安门", "Hi 🙂 诗")


def token_label(piece: bytes) -> str:
    """一个词元的字节串写成什么：成字的写字（空格写作 ␣），半个字写十六进制，如 ``e698``。"""
    try:
        return piece.decode("utf-8").replace(" ", "␣")
    except UnicodeDecodeError:
        return piece.hex()


def bpe_merges_data(bpe: ByteBPE, sentences=SENTENCES) -> dict[str, list[dict]]:
    """每个句子编码的每一步（:meth:`ByteBPE.steps`）拆成一格一行。

    返回 dict，两张表：

    - ``tokens``：``s``（句子序号）、``k``（第几步，0 = 字节）、``n``（这句共几步）、``x``（词元的第一个字节
      在句子里的位置）、``w``（字节数）、``t``（写出来的样子）、``new``（这一步刚合并出来的为 1）；
    - ``steps``：``s``、``k``、``n``、``line``（这一步合并了什么、合并表里第几条、还剩几个词元）。
    """
    data = {"tokens": [], "steps": []}
    for s, sentence in enumerate(sentences):
        history = bpe.steps(sentence)
        n = len(history) - 1
        for k, ids in enumerate(history):
            made = None if k == 0 else next(i for i in ids if i not in history[k - 1])
            x = 0
            for i in ids:
                piece = bpe.vocab[i]
                data["tokens"].append(
                    {"s": s, "k": k, "n": n, "x": x, "w": len(piece), "t": token_label(piece),
                     "new": int(i == made)}
                )  # fmt: skip
                x += len(piece)
            if k == 0:
                line = f"UTF-8 字节：{len(ids)} 个（每个汉字 3 个）"
            else:
                a, b = bpe.merges[made - 256]
                line = (
                    f"第 {k} 步：{token_label(bpe.vocab[a])} + {token_label(bpe.vocab[b])}"
                    f" → {token_label(bpe.vocab[made])}（合并表第 {made - 255} 条），"
                    f"剩 {len(ids)} 个词元"
                )
            data["steps"].append({"s": s, "k": k, "n": n, "line": line})
    return data


def bpe_merges_explorer(bpe: ByteBPE, sentences=SENTENCES) -> alt.VConcatChart:
    """“中文的字节级 BPE”一章的探索器：选一句话，拖动步数，看合并表一条一条地把字节并成词元。"""
    data = bpe_merges_data(bpe, sentences)
    most = max(row["n"] for row in data["steps"])
    sentence = control("s", 0, "句子", "select", range(len(sentences)), labels=sentences)
    step = control("k", 0, "第几步", "range", range(most + 1))
    shown = (alt.datum.s == sentence) & (alt.datum.k == alt.expr.min(step, alt.datum.n))
    width = 640
    boxes = (
        alt.Chart(alt.InlineData(values=data["tokens"]))
        .add_params(sentence, step)
        .transform_filter(shown)
        .transform_calculate(end="datum.x + datum.w", mid="datum.x + datum.w / 2")
        .encode(
            x=alt.X(
                "x:Q",
                scale=alt.Scale(nice=False, zero=True),
                axis=alt.Axis(title="字节位置", tickMinStep=3, grid=False),
            ),
            x2="end:Q",
            y=alt.value(24),
        )
    )
    rects = boxes.mark_rect(stroke="white", strokeWidth=2, height=40).encode(
        color=alt.Color(
            "new:N",
            scale=alt.Scale(domain=[0, 1], range=["#9ecae1", "#e6550d"]),
            legend=None,
        ),
        tooltip=[alt.Tooltip("t:N", title="词元"), alt.Tooltip("w:Q", title="字节数")],
    )
    labels = boxes.mark_text(fontSize=12, baseline="middle").encode(x="mid:Q", text="t:N")
    row = alt.layer(rects, labels).properties(width=width, height=48)
    summary = (
        alt.Chart(alt.InlineData(values=data["steps"]))
        .transform_filter(shown)
        .mark_text(align="left", fontSize=13, x=0)
        .encode(text="line:N")
        .properties(width=width, height=18)
    )
    title = f"按合并表一步一步编码（词表 {len(bpe):,}；橙色是这一步刚合并出来的词元）"
    return finish(alt.vconcat(summary, row), title)
