"""网页上的前向（_static_ch08/live_translator/transformer.js）在 node 里与 Python 包核对。

网页读的是半精度的权重（``export_for_page``、``export_poet`` 写的 float16 safetensors），所以参照是把包的权重
舍入到 float16 的模型（``tests.kit.rounded_to_half``）：

- 翻译器：全部测试句的贪心译文（编号）与舍入过的包逐个相同；前 PREFIX_CHECKED 句每一步的 logits 与包在同一前缀上的
  相差 ≤ LOGITS_TOL；前 BEAM_CHECKED 句的束搜索（网页的 beamSearch，束宽 4）与 ``beam_search`` 的相同；
  另外数一数网页（半精度）的贪心译文有几句与原来 float32 的包相同（打印出来）：第 8 章写着全部相同。
- 写诗器（GPT 的前向 gptLogits）：tests/book/test_poem_writer.py 在浏览器里核对贪心诗与每一步的概率。
- 读 safetensors：没有 Float16Array 时按位把 float16 换成 float32，全部 65536 个位型与 numpy 的相同。
"""

import numpy as np
import torch

from tests.kit import rounded_to_half
from tinyformer.decoding import beam_search
from tinyformer.translation.corpus import generate_corpus
from tinyformer.translation.export import export_for_page
from tinyformer.translation.pretrained import load_translator

LOGITS_TOL = 1e-4  # × max(1, max|logits|)：两边都是 float32，只是求和顺序不同
PREFIX_CHECKED = 50
BEAM_CHECKED = 20

TRANSLATE_JS = """
const net = read(data.weights);
const out = { greedy: [], logits: [], beam: [] };
for (const [n, src] of data.sources.entries()) {
  const memory = tf.encode(net, src);
  const step = async (prefixes) => ({
    logits: prefixes.map((p) => { const l = tf.decode(net, p, memory, src); return l.subarray(l.length - l.length / p.length); }),
  });
  const { ids, steps } = await m.greedyDecode({ step, bos: data.bos, eos: data.eos, maxLen: 32 });
  out.greedy.push(ids);
  if (n < data.prefixChecked) out.logits.push(steps.map((s) => Array.from(s.logits)));
  if (n < data.beamChecked) {
    const { best } = await m.beamSearch({ step, bos: data.bos, eos: data.eos, pad: data.pad, maxLen: 32, beamSize: 4 });
    out.beam.push(best.ids);
  }
}
return out;
"""


def strip(ids, eos):
    """编号序列截到 <eos>（含）为止，之后的填充不算。"""
    ids = list(ids)
    return ids[: ids.index(eos) + 1] if eos in ids else ids


def test_the_page_translates_every_test_sentence_as_the_half_precision_package(
    node,
    translator,
    tmp_path,
):
    paths = export_for_page(translator, tmp_path)
    rounded = load_translator(600)  # 另一份，权重舍入到 float16
    rounded_to_half(rounded.model)
    vocab = translator.tgt_vocab
    sentences = [pair.zh for pair in generate_corpus().test]
    sources = [translator.encode([s])[0].tolist() for s in sentences]
    web = node(
        TRANSLATE_JS,
        {
            "weights": str(paths["translator.safetensors"]),
            "sources": sources,
            "bos": vocab.bos_id,
            "eos": vocab.eos_id,
            "pad": translator.model.config.pad_id,
            "prefixChecked": PREFIX_CHECKED,
            "beamChecked": BEAM_CHECKED,
        },
    )
    batch = translator.encode(sentences)  # (N, S)，补齐的
    half = [strip(ids, vocab.eos_id) for ids in rounded.translate_ids(batch).tolist()]
    full = [strip(ids, vocab.eos_id) for ids in translator.translate_ids(batch).tolist()]
    assert web["greedy"] == half
    same = sum(w == f for w, f in zip(web["greedy"], full, strict=True))
    print(f"\n{same} / {len(sources)} 个测试句：网页（float16 权重）的贪心译文与 float32 的包相同")
    assert same == len(sources)  # 附录“把翻译器搬进浏览器”写着全部相同
    worst = 0.0
    with torch.no_grad():
        for src, ids, rows in zip(sources, half, web["logits"], strict=False):
            tgt = torch.tensor([ids[:-1]])  # <bos> 与除最后一个外的译文：第 t 行是第 t 步的 logits
            reference = rounded.model(torch.tensor([src]), tgt)[0].numpy()  # (T, V)
            rows = np.asarray(rows)
            assert rows.shape == reference.shape
            limit = LOGITS_TOL * max(1.0, float(np.abs(reference).max()))
            worst = max(worst, float(np.abs(rows - reference).max()) / limit)
    assert worst <= 1.0, f"logits differ by {worst:.2f} × the tolerance"
    for src, ids in zip(sources, web["beam"], strict=False):
        best = beam_search(
            rounded.model, torch.tensor([src]), vocab.bos_id, vocab.eos_id, beam_size=4
        )
        assert strip(ids, vocab.eos_id) == strip(best[0].tolist(), vocab.eos_id), src


def test_half_to_float_by_bits_equals_numpys_float16(node):
    """node 20 没有 Float16Array：走按位计算的那条路，全部 65536 个位型与 numpy 的 float16 相同。"""
    bits = np.arange(65536, dtype=np.uint16)
    expected = bits.view(np.float16).astype(np.float64)
    web = node(
        "return Array.from(tf.halfToFloat(Uint16Array.from(data)),"
        " (x) => (Object.is(x, -0) ? '-0' : Number.isFinite(x) ? x : String(x)));",
        bits.tolist(),
    )
    names = {np.inf: "Infinity", -np.inf: "-Infinity"}
    shown = [
        "NaN" if np.isnan(x) else names.get(x, "-0" if x == 0 and np.signbit(x) else float(x))
        for x in expected
    ]
    assert web == shown
