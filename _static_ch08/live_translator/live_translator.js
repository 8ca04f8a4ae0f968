/*
 * 第 8 章：在读者的浏览器里翻译（本书自己的 JavaScript 前向，旁边的 transformer.js）。
 *
 * 页面上的 <div class="live-translator" data-model="…"> 里放一个文本框；本脚本读入
 * tinyformer.translation.export.export_for_page 写的 translator.safetensors（半精度的权重，各章的检查器也读这一份）
 * 和 translator.json，与 Python 包做同样的事：
 *   1. 分词：jieba 不能在浏览器里运行。语料里的句子只由源词表里的词组成，用词表做正向最大匹配
 *      （每次从当前位置取词表里最长的词）；tests/test_live_translator.py 用 node 运行本文件的 segment，
 *      核对它在全部语料（训练 + 验证 + 测试）上与语料的 jieba 分词器（tinyformer.translation.corpus.corpus_tokenizer）逐句相同。
 *      词表里没有的字连成一段，当作一个不认识的词，报错的措辞与命令行 python -m tinyformer.translation translate 相同。
 *   2. 贪心解码：编码一次，然后每步把整段前缀送进解码器（transformer.js 的 decode），取最后一个位置 logits 的最大者，
 *      直到 <eos> 或 max_len 个词元（与 tinyformer.greedy_decode 相同）。解码循环 greedyDecode、beamSearch
 *      与模型无关（每步调用调用者给的 step(prefixes)），本页、各章的检查器（inspector.js）和别的页面共用这一份；
 *      采样 sampleDecode（温度、top-k、top-p、可复现的种子、每步的约束：强制的词元与禁止的词元）也在这里，
 *      第 9 章的写诗器（_static_ch09/poem_writer/poem_writer.js）用它。
 *   3. 画交叉注意力：最后一步的前缀送入时，最后一个解码器层的交叉注意力（各头平均，(T, S)）就是整句的注意力图；样子与 Jupyter 里的控件
 *      （tinyformer.book.widgets.show_translation，matplotlib）相同：viridis 色图、0–1 的色条、同样的标题和轴标签。
 * 在 node 里（测试）只导出几个纯函数，不碰 DOM。
 */
(function () {
  "use strict";

  // ---- 分词（与 tinyformer.translation.corpus.corpus_tokenizer 在语料上相同）----

  /** 正向最大匹配：句子 → 词的列表；不在词表里的连续字符合成一个词，空白被跳过（jieba 也丢掉空白）。 */
  function segment(sentence, words) {
    const longest = Math.max(...[...words].map((w) => [...w].length));
    const chars = [...sentence];
    const tokens = [];
    let unknown = "";
    const flush = () => {
      if (unknown) tokens.push(unknown);
      unknown = "";
    };
    let i = 0;
    while (i < chars.length) {
      if (/\s/.test(chars[i])) {
        flush();
        i += 1;
        continue;
      }
      let n = Math.min(longest, chars.length - i);
      while (n > 0 && !words.has(chars.slice(i, i + n).join(""))) n -= 1;
      if (n === 0) {
        unknown += chars[i];
        i += 1;
      } else {
        flush();
        tokens.push(chars.slice(i, i + n).join(""));
        i += n;
      }
    }
    flush();
    return tokens;
  }

  /** Python 的 repr(str)：默认单引号；含单引号而不含双引号时用双引号。 */
  function pyRepr(text) {
    const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
    const body = text.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/\t/g, "\\t");
    return quote + (quote === "'" ? body.replace(/'/g, "\\'") : body) + quote;
  }

  /** tinyformer._checks.shorten：太长的句子只引用前 60 个字符，并注明原来有多长。 */
  function shorten(text) {
    const chars = [...text];
    if (chars.length > 60) return `${pyRepr(chars.slice(0, 60).join(""))}…（共 ${chars.length} 个字符）`;
    return pyRepr(text);
  }
  /** 与命令行（tinyformer.translation.cli.cannot_translate）相同的中文消息；句子能翻译时返回 null。
   * maxLen 是模型的位置数（源句最多几个词），不给时不检查长度。 */
  function unknownMessage(sentence, tokens, words, maxLen) {
    const head = `无法翻译 ${shorten(sentence)}：`;
    if (tokens.length === 0) return head + "句子里没有词";
    const unknown = [...new Set(tokens.filter((t) => !words.has(t)))];
    if (unknown.length > 0) {
      const shown = unknown.length <= 10
        ? `[${unknown.map(pyRepr).join(", ")}]`
        : `[${unknown.slice(0, 10).map(pyRepr).join(", ")}]…（共 ${unknown.length} 个）`;
      return head + `有模型没学过的词 ${shown}，模型只能翻译训练语料里的词`;
    }
    if (maxLen !== undefined && tokens.length > maxLen) {
      return head + "句子太长，超过了模型的位置数 max_len，请拆成短句";
    }
    return null;
  }

  /** tinyformer.text.detokenize_en：标点贴住前一个词，句首、I 和专名大写。 */
  function detokenize(tokens, settings) {
    const words = [];
    let startOfSentence = true;
    for (const tok of tokens) {
      if (settings.attach_left.includes(tok) && words.length) {
        words[words.length - 1] += tok;
      } else {
        let word = settings.capitalized[tok] ?? tok;
        if (startOfSentence) word = word.slice(0, 1).toUpperCase() + word.slice(1);
        words.push(word);
      }
      startOfSentence = settings.sentence_end.includes(tok);
    }
    return words.join(" ");
  }

  // matplotlib 的 viridis 在 0, 1/16, …, 1 处的颜色，中间线性插值：与 viridis 相差不到 6/255
  // （tests/test_live_translator.py 与 matplotlib 核对）
  const VIRIDIS = [
    [68, 1, 84], [72, 24, 106], [71, 45, 123], [66, 64, 134], [59, 82, 139], [51, 99, 141],
    [44, 114, 142], [38, 130, 142], [33, 145, 140], [31, 160, 136], [40, 174, 128], [63, 188, 115],
    [94, 201, 98], [132, 212, 75], [173, 220, 48], [216, 226, 25], [253, 231, 37],
  ];

  function viridis(value) {
    const x = Math.min(Math.max(value, 0), 1) * (VIRIDIS.length - 1);
    const i = Math.min(Math.floor(x), VIRIDIS.length - 2);
    const f = x - i;
    const [r, g, b] = VIRIDIS[i].map((c, k) => Math.round(c + f * (VIRIDIS[i + 1][k] - c)));
    return `rgb(${r},${g},${b})`;
  }

  /** tinyformer.translation.corpus.in_grammar：切好的词序列是不是语法生成的某一句（grammar 来自 grammar.json）。 */
  function inGrammar(tokens, stoi, grammar) {
    const key = tokens.map((t) => String.fromCharCode(grammar.offset + stoi.get(t))).join("");
    return grammar.set.has(key);
  }
  /** 编号 → 译文，与 Translator.decode 相同：跳过 <pad>/<bos>，在 <eos> 处截断，再按 detokenize 拼句。 */
  function decodeIds(ids, settings) {
    const kept = [];
    for (const i of ids) {
      const tok = settings.tgt_itos[i];
      if (tok === "<eos>") break;
      if (tok !== "<pad>" && tok !== "<bos>") kept.push(tok);
    }
    return detokenize(kept, settings);
  }

  // ---- 解码（与 tinyformer.decoding 逐步相同；与模型无关）----
  //
  // 调用者给出 step(prefixes)：prefixes 是 N 个前缀（编号数组，以 <bos> 开头），它运行模型，返回
  // Promise<{logits, ...}>，logits[n] 是第 n 个前缀下一个词元的 logits（长 V 的一行，数组或 Float32Array）；
  // 别的字段（注意力、中间结果……）原样记在每一步的 output 里，留给调用者。

  /** 最大者的下标；相同时取最前面的一个（同 torch.argmax）。 */
  function argmax(row) {
    let best = 0;
    for (let v = 1; v < row.length; v += 1) if (row[v] > row[best]) best = v;
    return best;
  }

  /** log_softmax 一行（float64）。 */
  function logSoftmax(row) {
    let max = -Infinity;
    for (const x of row) if (x > max) max = x;
    let sum = 0;
    for (const x of row) sum += Math.exp(x - max);
    const total = Math.log(sum);
    return Array.from(row, (x) => x - max - total);
  }

  /** GNMT 的长度惩罚 ((5 + length) / 6)^alpha，同 tinyformer.decoding.length_penalty。 */
  const lengthPenalty = (length, alpha) => ((5 + length) / 6) ** alpha;

  function checkDecodeOptions({ step, bos, eos, maxLen }) {
    if (typeof step !== "function") throw new TypeError(`step must be a function, got ${typeof step}`);
    for (const [name, value] of [["bos", bos], ["eos", eos]]) {
      if (!Number.isInteger(value) || value < 0) throw new RangeError(`${name} must be a token id, got ${name}=${value}`);
    }
    if (!Number.isInteger(maxLen) || maxLen < 1) throw new RangeError(`maxLen must be a positive integer, got maxLen=${maxLen}`);
  }

  /**
   * 贪心解码一句，与 tinyformer.greedy_decode（B = 1）相同：每步把整段前缀交给 step，取 logits 的最大者，
   * 直到生成 eos 或 maxLen 个词元。
   * 返回 Promise<{ids（以 bos 开头；生成了 eos 时以 eos 结尾）, steps: [{prefix, logits, next, output}]}>：
   * 第 t 步的前缀、它下一个词元的 logits、选中的词元和 step 返回的整个对象。
   */
  async function greedyDecode({ step, bos, eos, maxLen = 32 }) {
    checkDecodeOptions({ step, bos, eos, maxLen });
    const ids = [bos];
    const steps = [];
    for (let t = 0; t < maxLen; t += 1) {
      const prefix = ids.slice();
      const output = await step([prefix]);
      const logits = output.logits[0];
      const next = argmax(logits);
      steps.push({ prefix, logits, next, output });
      ids.push(next);
      if (next === eos) break;
    }
    return { ids, steps };
  }

  /**
   * 束搜索一句，与 tinyformer.decoding.beam_search（B = 1）一步一步相同：每步 K 个前缀一起交给 step，
   * 在 K × V 个候选中按对数概率选最好的 K 个（相同时取编号小的，同 torch.topk）；生成了 eos 的前缀只能
   * 补 pad，对数概率不变；全都结束或到达 maxLen 时停止，按 logProb / lengthPenalty(length, alpha) 选最佳。
   * beamSize = 1 时选出的词元与 greedyDecode 相同。
   * 返回 Promise<{steps: [[{ids, logProb, length, finished, score}]]（每一步扩展之后的 K 个假设）,
   * best（最后一步得分最高的假设）}>。
   */
  async function beamSearch({ step, bos, eos, pad, maxLen = 32, beamSize = 4, alpha = 0.6 }) {
    checkDecodeOptions({ step, bos, eos, maxLen });
    const K = beamSize;
    if (!Number.isInteger(K) || K < 1) throw new RangeError(`beamSize must be a positive integer, got ${K}`);
    if (!Number.isInteger(pad) || pad < 0) throw new RangeError(`pad must be a token id, got pad=${pad}`);
    if (!(alpha >= 0) || !Number.isFinite(lengthPenalty(maxLen, alpha))) {
      throw new RangeError(`alpha must be >= 0 and keep the length penalty finite, got alpha=${alpha}`);
    }
    let ys = Array.from({ length: K }, () => [bos]);
    // 开始时 K 个前缀一样，只让第一个参与竞争
    let logProbs = Array.from({ length: K }, (_, k) => (k === 0 ? 0 : -Infinity));
    let finished = new Array(K).fill(false);
    let lengths = new Array(K).fill(0); // 不含 <bos> 的长度（含 <eos>）
    const steps = [];
    for (let t = 0; t < maxLen; t += 1) {
      const { logits } = await step(ys);
      const V = logits[0].length;
      const candidates = [];
      for (let k = 0; k < K; k += 1) {
        const scores = finished[k]
          ? Array.from({ length: V }, (_, v) => (v === pad ? 0 : -Infinity)) // 已结束：只能补填充，得分不变
          : logSoftmax(logits[k]);
        scores.forEach((s, v) => candidates.push([logProbs[k] + s, k * V + v]));
      }
      candidates.sort((a, b) => b[0] - a[0] || a[1] - b[1]);
      const top = candidates.slice(0, K);
      const parent = top.map(([, i]) => Math.floor(i / V));
      const token = top.map(([, i]) => i % V);
      ys = parent.map((p, k) => [...ys[p], token[k]]);
      const wasFinished = parent.map((p) => finished[p]);
      lengths = parent.map((p, k) => lengths[p] + (wasFinished[k] ? 0 : 1));
      finished = wasFinished.map((f, k) => f || token[k] === eos);
      logProbs = top.map(([s]) => s);
      steps.push(
        ys.map((ids, k) => ({
          ids,
          logProb: logProbs[k],
          length: lengths[k],
          finished: finished[k],
          score: logProbs[k] / lengthPenalty(lengths[k], alpha),
        })),
      );
      if (finished.every(Boolean)) break;
    }
    const final = steps[steps.length - 1];
    let best = 0;
    final.forEach((h, k) => h.score > final[best].score && (best = k));
    return { steps, best: final[best] };
  }

  // ---- 采样（与 tinyformer.poetry.sampling.next_distribution 相同；与模型无关）----

  /** 可复现的均匀随机数 [0, 1)：mulberry32，种子是 32 位无符号整数。同一个种子给出同一串数
   * （与 torch 的生成器不同：网页上抽到的样本不会与 Python 的逐字相同，分布才相同）。 */
  function seededRandom(seed) {
    if (!Number.isInteger(seed)) throw new RangeError(`seed must be an integer, got seed=${seed}`);
    let a = seed >>> 0;
    return () => {
      a = (a + 0x6d2b79f5) >>> 0;
      let t = a;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }

  function checkSamplingOptions({ temperature, topK, topP }) {
    if (!(temperature > 0) || !Number.isFinite(temperature)) {
      throw new RangeError(`temperature must be a positive number, got temperature=${temperature}`);
    }
    if (topK != null && (!Number.isInteger(topK) || topK < 1)) {
      throw new RangeError(`topK must be a positive integer or null, got topK=${topK}`);
    }
    if (topP != null && !(topP > 0 && topP <= 1)) throw new RangeError(`topP must be in (0, 1] or null, got topP=${topP}`);
  }

  /**
   * logits → 采样用的概率（Float64Array），与 tinyformer.poetry.sampling.next_distribution 相同：
   * 除以温度；topK：只留最大的 k 个（与第 k 大相等的都留下，同 logits < kth 的写法）；softmax；
   * topP：按概率从大到小累加，留下"排在它前面的概率之和 < p"的（至少一个），再归一化。
   * 被去掉的为 0；logits 里的 -Infinity（被禁止的词元）概率为 0。
   */
  function nextDistribution(logits, { temperature = 1, topK = null, topP = null } = {}) {
    checkSamplingOptions({ temperature, topK, topP });
    const V = logits.length;
    const scaled = Float64Array.from(logits, (x) => x / temperature);
    if (topK != null && topK < V) {
      const kth = Float64Array.from(scaled).sort()[V - topK]; // 升序排好后倒数第 k 个
      for (let v = 0; v < V; v += 1) if (scaled[v] < kth) scaled[v] = -Infinity;
    }
    let max = -Infinity;
    for (const x of scaled) if (x > max) max = x;
    const probs = Float64Array.from(scaled, (x) => Math.exp(x - max));
    let sum = probs.reduce((a, b) => a + b, 0);
    for (let v = 0; v < V; v += 1) probs[v] /= sum;
    if (topP != null) {
      const order = rankByProbability(probs);
      let before = 0;
      const keep = new Uint8Array(V);
      for (const v of order) {
        keep[v] = before < topP ? 1 : 0; // 第一个总是留下（before = 0）
        before += probs[v];
      }
      sum = 0;
      for (let v = 0; v < V; v += 1) sum += keep[v] ? probs[v] : 0;
      for (let v = 0; v < V; v += 1) probs[v] = keep[v] ? probs[v] / sum : 0;
    }
    return probs;
  }

  /** 下标按概率从大到小排（相同时编号小的在前）。 */
  function rankByProbability(probs) {
    return Array.from(probs.keys()).sort((a, b) => probs[b] - probs[a] || a - b);
  }

  /** 概率最大的 n 个：[[编号, 概率], …]（相同时编号小的在前）。 */
  function topCandidates(probs, n) {
    return rankByProbability(probs).slice(0, n).map((v) => [v, probs[v]]);
  }

  /** 按概率抽一个编号：u ∈ [0, 1) 落在累加概率的哪一段（概率为 0 的永远抽不到）。 */
  function drawIndex(probs, u) {
    let total = 0;
    for (const p of probs) total += p;
    const target = u * total;
    let cumulative = 0;
    let last = -1;
    for (let v = 0; v < probs.length; v += 1) {
      if (probs[v] <= 0) continue;
      cumulative += probs[v];
      last = v;
      if (target < cumulative) return v;
    }
    return last; // 舍入让 target 落在最后一个之后
  }

  /**
   * 逐个词元地生成（采样或贪心），与模型无关；每步可以加约束。规则与 tinyformer.poetry.sampling.write 相同：
   *   - start：开头的编号（以 bos 开头，可以带前缀），最多再生成 maxLen 个词元，生成了 eos 就停；
   *   - constrain(ids) → {force: 编号} 或 {ban: [编号…]} 或 null：force 时这一步不调用 step，直接取它
   *     （候选记为 [[它, 1]]）；ban 的词元 logits 记为 -Infinity；
   *   - greedy：probs = softmax(logits)（不看温度、topK、topP），取最大者（相同时取编号小的）；
   *     否则 probs = nextDistribution(logits, {temperature, topK, topP})，用 random()（默认 seededRandom(seed)）抽一个。
   *   - onStep(记录)：每生成一个词元就调用一次（网页上一边生成一边显示），可以返回 Promise。
   * 返回 Promise<{ids（含 start；生成了 eos 时以 eos 结尾）, steps: [{prefix, next, forced, top: [[编号, 概率]…],
   * support（概率不为 0 的词元数）, logits（ban 之后）, raw（模型给的、ban 之前的 logits）}]}>：每步的 top 是
   * 概率最大的 show 个。
   */
  async function sampleDecode({
    step, bos, eos, start = null, maxLen = 32, greedy = false, temperature = 1, topK = null, topP = null,
    seed = 0, random = null, constrain = null, show = 5, onStep = null,
  }) {
    checkDecodeOptions({ step, bos, eos, maxLen });
    checkSamplingOptions({ temperature, topK, topP });
    if (!Number.isInteger(show) || show < 1) throw new RangeError(`show must be a positive integer, got show=${show}`);
    const ids = start ? start.slice() : [bos];
    const draw = random ?? seededRandom(seed);
    const steps = [];
    for (let t = 0; t < maxLen; t += 1) {
      const prefix = ids.slice();
      const rule = constrain ? constrain(prefix) : null;
      let record;
      if (rule && rule.force != null) {
        record = { prefix, next: rule.force, forced: true, top: [[rule.force, 1]], support: 1, logits: null, raw: null };
      } else {
        const output = await step([prefix]);
        const logits = Float64Array.from(output.logits[0]);
        for (const v of (rule && rule.ban) || []) logits[v] = -Infinity;
        const probs = greedy ? nextDistribution(logits) : nextDistribution(logits, { temperature, topK, topP });
        const next = greedy ? argmax(probs) : drawIndex(probs, draw());
        const support = probs.reduce((n, p) => n + (p > 0), 0);
        const raw = output.logits[0];
        record = { prefix, next, forced: false, top: topCandidates(probs, show), support, logits, raw };
      }
      steps.push(record);
      ids.push(record.next);
      if (onStep) await onStep(record);
      if (record.next === eos) break;
    }
    return { ids, steps };
  }

  const exported = {
    segment, pyRepr, shorten, unknownMessage, inGrammar, detokenize, decodeIds, viridis,
    argmax, logSoftmax, lengthPenalty, greedyDecode, beamSearch,
    seededRandom, nextDistribution, topCandidates, drawIndex, sampleDecode,
  };
  if (typeof document === "undefined") {
    module.exports = exported;
    return;
  }

  // ---- 模型：本书自己的前向（transformer.js）与半精度的权重 ----

  const here = document.currentScript.src; // 本脚本的地址：transformer.js 在它旁边

  function loadScript(src) {
    return new Promise((resolve, reject) => {
      const script = Object.assign(document.createElement("script"), { src });
      script.onload = resolve;
      script.onerror = () => reject(new Error(`${src} 没能加载`));
      document.head.append(script);
    });
  }

  /** 加载前向计算的脚本 transformer.js（只一次）；各章的检查器、第 9 章的写诗器也用它。 */
  let forward = null;
  function loadForward() {
    forward ??= (window.tinyformerModel ? Promise.resolve() : loadScript(new URL("transformer.js", here).href))
      .then(() => window.tinyformerModel);
    forward.catch(() => (forward = null));
    return forward;
  }

  async function fetchJson(url) {
    const response = await fetch(url);
    if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
    return response.json();
  }

  /** 翻译器（与检查器共用的一份权重）：{tf, net, settings, words, stoi}；网页翻译器另要 grammar.json。 */
  async function loadTranslator(modelBase) {
    const [tf, settings] = await Promise.all([loadForward(), fetchJson(modelBase + "translator.json")]);
    const net = await tf.loadModel(modelBase + "translator.safetensors");
    const words = new Set(settings.src_itos.filter((w) => !/^<.*>$/.test(w)));
    const stoi = new Map(settings.src_itos.map((w, i) => [w, i]));
    return { tf, net, settings, words, stoi };
  }

  async function loadModel(modelBase) {
    const [model, grammar] = await Promise.all([loadTranslator(modelBase), fetchJson(modelBase + "grammar.json")]);
    // 语法能生成的全部句子（_ext/live_translator.py 写的 grammar.json）：判断句型在不在训练语料里
    grammar.set = new Set(grammar.sentences.split("\n"));
    return { ...model, grammar };
  }

  /** 贪心解码一句：返回 {srcTokens, tgtTokens（含 <eos>）, translation, attention[T][S]}。 */
  async function translate(model, srcTokens) {
    const { tf, net, settings, stoi } = model;
    const src = srcTokens.map((t) => stoi.get(t)); // (S)
    const memory = tf.encode(net, src); // (S, C)：每句只算一次
    const { ids, steps } = await greedyDecode({
      step: async ([prefix]) => {
        const logits = tf.decode(net, prefix, memory, src); // (T, V)
        const V = logits.length / prefix.length;
        return { logits: [logits.subarray(logits.length - V)] }; // 最后一个位置的 (V)
      },
      bos: settings.bos_id,
      eos: settings.eos_id,
      maxLen: settings.max_len,
    });
    // 最后一步的前缀是 <bos> + 除最后一个词元外的译文：再送入一次，记下最后一个解码器层的交叉注意力（各头平均）
    const record = {};
    tf.decode(net, steps[steps.length - 1].prefix, memory, src, record);
    const { dims: [H, T, S], data } = record[`decoder.layers.${settings.num_decoder_layers - 1}.cross_attn.weights`];
    const rows = Array.from({ length: T }, (_, t) =>
      Array.from({ length: S }, (_, s) => {
        let sum = 0;
        for (let h = 0; h < H; h += 1) sum += data[(h * T + t) * S + s];
        return sum / H;
      }),
    );
    const produced = ids.slice(1).map((i) => settings.tgt_itos[i]);
    return { srcTokens, tgtTokens: produced, translation: decodeIds(ids, settings), attention: rows };
  }

  // ---- 热力图：与 tinyformer.book.plotting.plot_heatmap（matplotlib）同样的 viridis、色条与标签 ----

  const SVG = "http://www.w3.org/2000/svg";

  function element(name, attributes, text) {
    const node = document.createElementNS(SVG, name);
    for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, value);
    if (text !== undefined) node.textContent = text;
    return node;
  }

  /** 行是生成的英文词元（查询），列是中文词元（键），颜色是注意力权重（0–1）。 */
  function drawMap(result, layer) {
    const { srcTokens, tgtTokens, attention } = result;
    const cellW = 56;
    const cellH = 34;
    const left = 124;
    const top = 40;
    const width = cellW * srcTokens.length;
    const height = cellH * tgtTokens.length;
    const svg = element("svg", {
      class: "lt-map",
      role: "img",
      width: left + width + 90,
      height: top + height + 62,
      // 有了 viewBox，窄屏上（max-width: 100%）整张图按比例缩小，而不是只剩左上角
      viewBox: `0 0 ${left + width + 90} ${top + height + 62}`,
      "aria-label": `交叉注意力热力图：${tgtTokens.length} 个英文词元 × ${srcTokens.length} 个中文词元`,
    });
    svg.append(
      element(
        "text",
        { x: left + width / 2, y: 18, "text-anchor": "middle", class: "lt-title" },
        `第 ${layer} 个解码器层的交叉注意力（各头平均）`,
      ),
    );
    attention.forEach((row, t) =>
      row.forEach((w, s) => {
        const cell = element("rect", {
          x: left + s * cellW,
          y: top + t * cellH,
          width: cellW,
          height: cellH,
          fill: viridis(w),
        });
        cell.append(element("title", {}, `${tgtTokens[t]} → ${srcTokens[s]}：${w.toFixed(2)}`));
        svg.append(cell);
      }),
    );
    tgtTokens.forEach((tok, t) =>
      svg.append(
        element("text", { x: left - 6, y: top + t * cellH + cellH / 2, class: "lt-ylabel" }, tok),
      ),
    );
    srcTokens.forEach((tok, s) =>
      svg.append(
        element("text", { x: left + s * cellW + cellW / 2, y: top + height + 16, class: "lt-xlabel" }, tok),
      ),
    );
    svg.append(
      element("text", { x: left + width / 2, y: top + height + 44, "text-anchor": "middle" }, "中文词元（键）"),
      element(
        "text",
        { x: 14, y: top + height / 2, "text-anchor": "middle", transform: `rotate(-90 14 ${top + height / 2})` },
        "生成的英文词元（查询）",
      ),
    );
    // 色条：0 在下、1 在上，刻度 0, 0.2, …, 1.0（matplotlib 的默认刻度）
    const barX = left + width + 16;
    const gradient = element("linearGradient", { id: "lt-viridis", x1: 0, y1: 1, x2: 0, y2: 0 });
    VIRIDIS.forEach((_, i) =>
      gradient.append(
        element("stop", { offset: i / (VIRIDIS.length - 1), "stop-color": viridis(i / (VIRIDIS.length - 1)) }),
      ),
    );
    const defs = element("defs", {});
    defs.append(gradient);
    svg.append(defs, element("rect", { x: barX, y: top, width: 14, height, fill: "url(#lt-viridis)" }));
    for (let k = 0; k <= 5; k += 1) {
      const y = top + height - (k / 5) * height;
      svg.append(
        element("line", { x1: barX + 14, x2: barX + 18, y1: y, y2: y, stroke: "currentColor" }),
        element("text", { x: barX + 21, y, class: "lt-tick" }, (k / 5).toFixed(1)),
      );
    }
    return svg;
  }

  // ---- 页面 ----

  const STYLE = `
    .live-translator { border: 1px solid #d0d7de; border-radius: 6px; padding: 0.8em 1em; margin: 1em 0; }
    .live-translator input { width: 16em; font-size: 1em; padding: 0.15em 0.4em; }
    .live-translator .lt-status { color: var(--pst-color-text-muted, #57606a); font-size: 0.85em; margin: 0.4em 0; }
    .live-translator .lt-output { font-family: var(--pst-font-family-monospace, monospace); margin: 0.5em 0; white-space: pre-wrap; background: var(--pst-color-surface, #f5f5f5); padding: 0.6em 1em; border-radius: 4px; }
    .live-translator .lt-output:empty { display: none; }
    .live-translator svg { font-size: 14px; fill: currentColor; max-width: 100%; height: auto; }
    .live-translator .lt-title { font-size: 16px; }
    .live-translator .lt-ylabel { text-anchor: end; dominant-baseline: middle; }
    .live-translator .lt-xlabel { text-anchor: middle; dominant-baseline: hanging; }
    .live-translator .lt-tick { dominant-baseline: middle; font-size: 11px; }`;

  async function setUp(root) {
    if (!document.getElementById("lt-style")) {
      document.head.append(Object.assign(document.createElement("style"), { id: "lt-style", textContent: STYLE }));
    }
    const input = root.querySelector("input");
    const button = root.querySelector("button");
    const status = root.querySelector(".lt-status");
    const output = root.querySelector(".lt-output");
    const figure = root.querySelector(".lt-figure");
    const absolute = (path) => new URL(path, document.baseURI).href;
    let model;
    try {
      model = await loadModel(absolute(root.dataset.model));
    } catch (err) {
      // 给读者的消息只用中文；运行时的英文原因（如 "Failed to fetch"）留在控制台里
      console.warn("live translator: the model did not load", err);
      status.textContent =
        "模型没能加载：从 file:// 打开时浏览器不允许读取模型文件，请通过 http 访问本站（详细原因见浏览器的控制台）";
      return;
    }
    // 输入框最多放这么多个字：模型最多读 src_max_len 个词，一个词最多 longest 个字
    const longest = Math.max(...[...model.words].map((w) => [...w].length));
    input.maxLength = model.settings.src_max_len * longest;
    const fail = (message) => {
      output.textContent = message;
      root.dataset.translation = "";
      root.dataset.state = "error";
    };
    const run = async () => {
      const sentence = input.value;
      // 先清掉上一句的结果：出错时页面上绝不能留着上一句的译文，好像它是这一句的答案
      output.textContent = "";
      figure.replaceChildren();
      status.textContent = "";
      root.dataset.sentence = sentence; // 浏览器测试等 data-state 不再是 busy、且句子是它输入的那句
      const tokens = segment(sentence, model.words);
      const message = unknownMessage(sentence, tokens, model.words, model.settings.src_max_len);
      if (message) {
        fail(message);
        return;
      }
      root.dataset.state = "busy";
      const started = performance.now();
      let result;
      try {
        result = await translate(model, tokens);
      } catch (err) {
        console.warn("live translator: the forward pass failed", err); // 英文原因只进控制台
        fail(`无法翻译 ${shorten(sentence)}：模型在浏览器里运行出错（详细原因见浏览器的控制台）`);
        return;
      }
      const seconds = (performance.now() - started) / 1000;
      const known = inGrammar(tokens, model.stoi, model.grammar);
      // 句型不在训练语料里时照样给出模型的译文，但说清楚它不可信（第 8 章“分布偏移”）
      output.textContent = `${sentence}  →  ${result.translation}` + (known ? "" : `\n${model.grammar.notice}`);
      root.dataset.inGrammar = String(known);
      figure.append(drawMap(result, model.settings.num_decoder_layers));
      status.textContent = `在本页算完（本书自己的 JavaScript 前向），用时 ${seconds.toFixed(2)} 秒`;
      root.dataset.translation = result.translation;
      root.dataset.state = "done";
    };
    input.addEventListener("change", run); // 回车或离开文本框时翻译（同控件的 continuous_update=False）
    button.addEventListener("click", run);
    button.disabled = false;
    status.textContent = "模型已加载（在本页运行，不连网）";
    await run();
  }

  window.tinyformerLive = { ...exported, loadForward, loadTranslator };

  // 翻译器滚进视野（或读者把焦点移进它）时才加载模型：页面打开时不下载它
  const start = () =>
    document.querySelectorAll(".live-translator").forEach((root) => {
      // 模型加载时文本框就能聚焦、能改（读者可以先输入）；状态与译文由读屏软件读出
      root.querySelector("input").disabled = false;
      root.querySelector(".lt-status").setAttribute("role", "status");
      root.querySelector(".lt-output").setAttribute("aria-live", "polite");
      let started = false;
      const once = () => {
        if (started) return;
        started = true;
        observer.disconnect();
        setUp(root);
      };
      const observer = new IntersectionObserver((entries) => entries.some((e) => e.isIntersecting) && once());
      observer.observe(root);
      root.addEventListener("focusin", once);
    });
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
