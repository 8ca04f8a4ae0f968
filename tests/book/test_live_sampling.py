"""网页上唯一的一份采样（_static_ch08/live_translator/live_translator.js 的 nextDistribution、seededRandom、
sampleDecode）在 node 里与 tinyformer.poetry.sampling 核对。

- nextDistribution：同一行 logits（float64）、同样的温度 / top-k / top-p，留下的字与 Python 的
  next_distribution 完全相同，概率相差 ≤ 1e-12（两边都是 float64，只是求和顺序不同）；
  在随机的 logits（含被禁的 -inf 与并列的值）和随包写诗模型的真 logits 上都核对；
- seededRandom / sampleDecode：同一个种子抽到同样的序列，不同的种子不同；抽样的频率接近分布；
- sampleDecode 的约束：force 的那一步不调用模型，ban 的词元（哪怕 logits 最大）永远抽不到；
  贪心 + ban 时写出的与 Python 的 write(greedy=True) 逐字相同、每步的候选相同：见 tests/book/test_poem_writer.py
  （网页自己的前向算 logits）。
"""

import torch

from tinyformer.poetry.pretrained import load_model
from tinyformer.poetry.sampling import next_distribution

PROB_TOL = 1e-12
SETTINGS = [
    (1.0, None, None),
    (0.7, 5, None),
    (1.3, None, 0.9),
    (0.8, 20, 0.9),
    (2.0, 1, None),
    (0.5, None, 0.05),
    (1.0, 3, 1.0),
    (1.0, 10_000, 0.5),  # k 比词表大
]


def logit_rows():
    """随机的几行（含 -inf 与并列的值）与随包写诗模型在几个前缀上的真 logits（去掉 <pad>/<bos>/<unk>）。"""
    generator = torch.Generator().manual_seed(0)
    rows = []
    for _ in range(6):
        row = torch.randn(50, generator=generator, dtype=torch.float64) * 3
        row[[0, 2, 1]] = float("-inf")
        row[10] = row[11] = row[12]  # 并列
        rows.append(row)
    model, vocab = load_model()
    with torch.no_grad():
        for prefix in ["", "白日依山尽，", "春眠不觉晓，处处"]:
            logits = model(torch.tensor([vocab.encode(prefix, bos=True)]))[0, -1].double()
            logits[[vocab.pad_id, vocab.bos_id, vocab.unk_id]] = float("-inf")
            rows.append(logits)
    return rows


# JSON 里没有 -Infinity：用 null 传，node 里换回来
def encode_row(row):
    return [None if x == float("-inf") else x for x in row.tolist()]


DECODE_ROW = "const row = (r) => r.map((x) => (x === null ? -Infinity : x));"


def test_next_distribution_keeps_the_same_set_with_the_same_probabilities(node):
    rows = logit_rows()
    web = node(
        DECODE_ROW + "return data.rows.map((r) => data.settings.map(([t, k, p]) =>"
        " Array.from(m.nextDistribution(row(r), { temperature: t, topK: k, topP: p }))));",
        {"rows": [encode_row(r) for r in rows], "settings": SETTINGS},
    )
    for r, (row, per_setting) in enumerate(zip(rows, web, strict=True)):
        for (t, k, p), probs in zip(SETTINGS, per_setting, strict=True):
            expected = next_distribution(row, t, k, p)
            got = torch.tensor(probs, dtype=torch.float64)
            kept, web_kept = expected > 0, got > 0
            assert torch.equal(kept, web_kept), (r, t, k, p, int(kept.sum()), int(web_kept.sum()))
            assert float((got - expected).abs().max()) <= PROB_TOL, (r, t, k, p)


def test_seeded_random_is_reproducible_and_uniform(node):
    result = node(
        "const a = m.seededRandom(data.seed), b = m.seededRandom(data.seed), c = m.seededRandom(data.seed + 1);"
        "const xs = Array.from({ length: 20000 }, () => a());"
        "const ys = Array.from({ length: 20000 }, () => b());"
        "return { same: xs.every((x, i) => x === ys[i]), other: c() === ys[0],"
        " min: Math.min(...xs), max: Math.max(...xs), mean: xs.reduce((s, x) => s + x, 0) / xs.length };",
        {"seed": 12345},
    )
    assert result["same"] and not result["other"]
    assert 0 <= result["min"] and result["max"] < 1
    assert abs(result["mean"] - 0.5) < 0.01


def test_draws_follow_the_distribution(node):
    probs = next_distribution(torch.log(torch.tensor([0.5, 0.3, 0.15, 0.05], dtype=torch.float64)))
    counts = node(
        "const r = m.seededRandom(7); const counts = [0, 0, 0, 0];"
        "for (let i = 0; i < 40000; i += 1) counts[m.drawIndex(data.p, r())] += 1; return counts;",
        {"p": probs.tolist()},
    )
    for count, p in zip(counts, probs.tolist(), strict=True):
        sigma = (40000 * p * (1 - p)) ** 0.5
        assert abs(count - 40000 * p) < 5 * sigma, (counts, probs)
    # 概率为 0 的永远抽不到（u 取 0 或接近 1 也一样）
    never = node(
        "return [0, 1e-12, 0.999999999].map((u) => m.drawIndex(data.p, u));",
        {"p": [0, 0.5, 0, 0.5, 0]},
    )
    assert never == [1, 1, 3]


def test_constraints_force_without_calling_the_model_and_bans_are_never_drawn(node):
    result = node(
        "let calls = 0; const step = async () => { calls += 1; return { logits: [[0, 0, 9, 9, 1, 1]] }; };"
        "const runs = [];"
        "for (const seed of [0, 1, 2, 3, 4, 5, 6, 7]) {"
        "  const r = await m.sampleDecode({ step, bos: 0, eos: 1, maxLen: 6, seed,"
        "    constrain: (ids) => (ids.length === 3 ? { force: 5 } : { ban: [0, 1, 2, 3] }) });"
        "  runs.push(r.ids); }"
        "const firstCalls = calls;"
        "const again = await m.sampleDecode({ step, bos: 0, eos: 1, maxLen: 6, seed: 3, constrain: (ids) => ({ ban: [0, 1] }) });"
        "const same = await m.sampleDecode({ step, bos: 0, eos: 1, maxLen: 6, seed: 3, constrain: (ids) => ({ ban: [0, 1] }) });"
        "const forced = (await m.sampleDecode({ step, bos: 0, eos: 1, maxLen: 2, constrain: () => ({ force: 4 }) })).steps;"
        "return { runs, calls: firstCalls, again: again.ids, same: same.ids, forced: forced.map((s) => [s.forced, s.top]) };",
        {},
    )
    for ids in result["runs"]:
        assert ids[0] == 0 and ids[3] == 5 and len(ids) == 7
        assert all(i in (4, 5) for i in ids[1:])  # 2、3 的 logits 最大，但被禁
    assert result["calls"] == 8 * 5  # 每首 6 步，强制的那一步不调用模型
    assert result["again"] == result["same"]
    assert result["forced"] == [[True, [[4, 1]]], [True, [[4, 1]]]]


def test_bad_sampling_options_are_named(node):
    messages = node(
        "const step = async () => ({ logits: [[0, 1]] });"
        "const tries = ["
        " () => m.sampleDecode({ step, bos: 0, eos: 1, temperature: 0 }),"
        " () => m.sampleDecode({ step, bos: 0, eos: 1, topK: 0 }),"
        " () => m.sampleDecode({ step, bos: 0, eos: 1, topP: 1.5 }),"
        " () => m.sampleDecode({ step, bos: 0, eos: 1, show: 0 }),"
        " () => m.sampleDecode({ step, bos: 0, eos: 1, seed: 0.5 }),"
        "];"
        "return Promise.all(tries.map((f) => f().then(() => 'no error', (e) => e.message)));",
        {},
    )
    assert messages == [
        "temperature must be a positive number, got temperature=0",
        "topK must be a positive integer or null, got topK=0",
        "topP must be in (0, 1] or null, got topP=1.5",
        "show must be a positive integer, got show=0",
        "seed must be an integer, got seed=0.5",
    ]
