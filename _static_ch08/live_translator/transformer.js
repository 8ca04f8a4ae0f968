/*
 * 本书的模型在读者的浏览器里的前向计算：第 8 章的 Transformer（网页翻译器、各章的检查器）和第 9 章的 GPT（写诗器）。
 *
 * 没有运行时，也没有计算图：权重是构建时写下的 safetensors 文件（float16，tinyformer.translation.export.export_for_page、
 * tinyformer.poetry.export.export_poet），前向就是书里推导的那几个公式，逐个写成下面的函数，在 Float32Array 上计算：
 *   嵌入 × √C + 正弦位置编码（Transformer）或 + 学到的位置嵌入（GPT），
 *   多头注意力 softmax(QKᵀ/√D + 掩码) V，前馈网络 W₂ act(W₁x + b₁) + b₂，层归一化，残差，
 *   post-LN（x = LN(x + 子层(x))）或 pre-LN（x = x + 子层(LN(x))），输出层与词嵌入共用一个矩阵。
 * 只算一句（批量 B = 1），不带键/值缓存：每步把整段前缀送入（与 tinyformer.greedy_decode 的 use_cache=False 相同）。
 * 数组都是行优先：形状 (T, C) 的 x 里第 t 行第 c 列是 x[t * C + c]。
 * 解码（贪心、束搜索、采样）不在这里：live_translator.js 的 greedyDecode、beamSearch、sampleDecode 调用 step，
 * step 调用这里的 decode / gptLogits。
 * tests/book/test_page_forward.py 用 node 运行本文件，核对它与把权重舍入到 float16 的 Python 包给出同样的译文；
 * 诗由 tests/book/test_poem_writer.py 在浏览器里核对。
 */
(function () {
  "use strict";

  // ---- 读权重：safetensors = 8 字节小端整数 n，n 字节的 JSON 头，然后是各张量的原始字节 ----

  /** float16 的位（Uint16Array）→ Float32Array：有 Float16Array 的浏览器直接转换，否则按位算。 */
  function halfToFloat(bits) {
    if (typeof Float16Array !== "undefined") {
      return Float32Array.from(new Float16Array(bits.buffer, bits.byteOffset, bits.length));
    }
    return Float32Array.from(bits, (h) => {
      const sign = h & 0x8000 ? -1 : 1;
      const exponent = (h >> 10) & 0x1f; // 5 位指数，偏置 15
      const fraction = h & 0x3ff; // 10 位尾数
      if (exponent === 0) return sign * fraction * 2 ** -24; // 非规格化数（含 ±0）
      if (exponent === 0x1f) return fraction ? NaN : sign * Infinity;
      return sign * (1 + fraction / 1024) * 2 ** (exponent - 15);
    });
  }

  /** safetensors 的字节 → {metadata（save_weights 存的 JSON）, tensors: {名字: {shape, data: Float32Array}}}。 */
  function readSafetensors(buffer) {
    const n = Number(new DataView(buffer).getBigUint64(0, true));
    const header = JSON.parse(new TextDecoder().decode(new Uint8Array(buffer, 8, n)));
    const tensors = {};
    for (const [name, entry] of Object.entries(header)) {
      if (name === "__metadata__") continue;
      const [begin, end] = entry.data_offsets; // 在数据区（8 + n 之后）里的起止字节
      const bytes = buffer.slice(8 + n + begin, 8 + n + end); // 复制一份：对齐到 2、4 字节
      if (entry.dtype === "F16") tensors[name] = { shape: entry.shape, data: halfToFloat(new Uint16Array(bytes)) };
      else if (entry.dtype === "F32") tensors[name] = { shape: entry.shape, data: new Float32Array(bytes) };
      else throw new Error(`${name}: dtype ${entry.dtype} is not supported (F16 or F32)`);
    }
    return { metadata: JSON.parse(header.__metadata__.tinyformer), tensors };
  }

  const loading = new Map(); // 地址 → Promise：同一页上的翻译器和检查器只下载、解码一次
  /** 取权重文件并读出模型（只一次）：{config, tensors}。 */
  function loadModel(url) {
    if (!loading.has(url)) {
      const promise = fetch(url).then(async (response) => {
        if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
        const { metadata, tensors } = readSafetensors(await response.arrayBuffer());
        return { config: metadata.config, tensors };
      });
      promise.catch(() => loading.delete(url)); // 失败了下次再试
      loading.set(url, promise);
    }
    return loading.get(url);
  }

  // ---- 基本运算（一句：批量 B = 1）----

  /** 线性层 y = x Wᵀ + b：x (T, in)，W (out, in)，b (out) → y (T, out)。 */
  function linear(x, T, weight, bias) {
    const [outDim, inDim] = weight.shape;
    const W = weight.data;
    const y = new Float32Array(T * outDim);
    for (let t = 0; t < T; t += 1) {
      for (let o = 0; o < outDim; o += 1) {
        let sum = bias ? bias.data[o] : 0;
        for (let i = 0; i < inDim; i += 1) sum += x[t * inDim + i] * W[o * inDim + i];
        y[t * outDim + o] = sum;
      }
    }
    return y;
  }

  /** 每行在 C 个特征上的均值与有偏方差：(T, C) → (T), (T)。 */
  function stats(x, T, C) {
    const mean = new Float32Array(T);
    const variance = new Float32Array(T);
    for (let t = 0; t < T; t += 1) {
      let sum = 0;
      for (let c = 0; c < C; c += 1) sum += x[t * C + c];
      const mu = sum / C;
      let squares = 0;
      for (let c = 0; c < C; c += 1) squares += (x[t * C + c] - mu) ** 2;
      mean[t] = mu;
      variance[t] = squares / C;
    }
    return { mean, variance };
  }

  /** 层归一化 γ ⊙ (x − μ) / √(σ² + ε) + β，每行各自的 μ、σ²（有偏）：(T, C) → (T, C)。 */
  function layerNorm(x, T, norm, eps = 1e-5) {
    const C = norm.weight.data.length;
    const { mean, variance } = stats(x, T, C);
    const y = new Float32Array(T * C);
    for (let t = 0; t < T; t += 1) {
      const scale = 1 / Math.sqrt(variance[t] + eps);
      for (let c = 0; c < C; c += 1) {
        const beta = norm.bias ? norm.bias.data[c] : 0;
        y[t * C + c] = (x[t * C + c] - mean[t]) * scale * norm.weight.data[c] + beta;
      }
    }
    return y;
  }

  const ACTIVATIONS = {
    relu: (x) => (x > 0 ? x : 0),
    // GPT-2 的 NewGELU：0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³)))
    gelu_tanh: (x) => 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3))),
  };

  /** 逐位置的前馈网络 W₂ act(W₁x + b₁) + b₂：(T, C) → 隐藏层 (T, d_ff) → (T, C)。 */
  function feedForward(x, T, ffn, activation) {
    const hidden = linear(x, T, ffn.linear1.weight, ffn.linear1.bias).map(ACTIVATIONS[activation]); // (T, d_ff)
    return { hidden, output: linear(hidden, T, ffn.linear2.weight, ffn.linear2.bias) }; // (T, d_ff) @ (d_ff, C)
  }

  /** (T, H·D) 拆成 H 个头：(T, H, D) → (H, T, D)。 */
  function splitHeads(x, T, H) {
    const D = x.length / T / H;
    const y = new Float32Array(x.length);
    for (let h = 0; h < H; h += 1)
      for (let t = 0; t < T; t += 1)
        for (let d = 0; d < D; d += 1) y[(h * T + t) * D + d] = x[t * H * D + h * D + d];
    return y;
  }

  /**
   * 多头注意力：Q = x_q W_Qᵀ，K = x_kv W_Kᵀ，V = x_kv W_Vᵀ 各拆成 H 个头，每个头
   * softmax(Q Kᵀ / √D) V，被 masked(t, s) 遮住的分数是 −∞（softmax 之后权重恰好是 0），
   * 各头拼回 (T, C) 再乘 W_Oᵀ。x_q (T, C)，x_kv (S, C) → {q (H, T, D), k, v (H, S, D), weights (H, T, S), output (T, C)}。
   */
  function attention(xq, T, xkv, S, mha, H, masked) {
    const q = splitHeads(linear(xq, T, mha.q_proj.weight, mha.q_proj.bias), T, H); // (T, C) @ (C, C) -> (H, T, D)
    const k = splitHeads(linear(xkv, S, mha.k_proj.weight, mha.k_proj.bias), S, H); // (S, C) @ (C, C) -> (H, S, D)
    const v = splitHeads(linear(xkv, S, mha.v_proj.weight, mha.v_proj.bias), S, H);
    const D = q.length / T / H;
    const weights = new Float32Array(H * T * S);
    const heads = new Float32Array(T * H * D); // 各头的输出拼在一起：(T, H, D) = (T, C)
    const scores = new Float64Array(S);
    for (let h = 0; h < H; h += 1) {
      for (let t = 0; t < T; t += 1) {
        let max = -Infinity;
        for (let s = 0; s < S; s += 1) {
          let dot = 0; // Q 的第 t 行 · K 的第 s 行
          for (let d = 0; d < D; d += 1) dot += q[(h * T + t) * D + d] * k[(h * S + s) * D + d];
          scores[s] = masked(t, s) ? -Infinity : Math.fround(dot) / Math.sqrt(D);
          max = Math.max(max, scores[s]);
        }
        let sum = 0;
        for (let s = 0; s < S; s += 1) sum += (scores[s] = Math.exp(scores[s] - max)); // −∞ → 0
        const row = (h * T + t) * S;
        for (let s = 0; s < S; s += 1) weights[row + s] = scores[s] / sum;
        for (let d = 0; d < D; d += 1) {
          let y = 0; // (1, S) @ (S, D)：按权重加权的 V
          for (let s = 0; s < S; s += 1) y += weights[row + s] * v[(h * S + s) * D + d];
          heads[t * H * D + h * D + d] = y;
        }
      }
    }
    const output = linear(heads, T, mha.out_proj.weight, mha.out_proj.bias); // (T, C) @ (C, C)
    return { q, k, v, weights, output };
  }

  // ---- 记下中间结果（检查器要的，名字与 tinyformer.translation.inspection.inspect 相同）----

  /** record 是 null（不记）或一个对象：名字 → {dims, data（普通数组，能变成 JSON）}。 */
  function keep(record, name, dims, data) {
    if (record) record[name] = { dims, data: Array.from(data) };
  }

  /**
   * 一个子层连同残差与层归一化：post-LN 是 x = LN(x + f(x))，pre-LN 是 x = x + f(LN(x))。
   * f(x) 返回 {output (T, C), ...别的中间结果}；记下 residual{k}（残差和）与 LN 的输入输出的均值、方差。
   */
  function sublayer(x, T, C, norm, normFirst, f, record, name, k, normName) {
    const y = f(normFirst ? layerNorm(x, T, norm) : x);
    const sum = x.map((value, i) => value + y[i]); // 残差：x + f(·)
    keep(record, `${name}.residual${k}`, [T, C], sum);
    if (normFirst) return sum;
    const out = layerNorm(sum, T, norm);
    if (record) {
      const before = stats(sum, T, C);
      const after = stats(out, T, C);
      keep(record, `${name}.${normName}.output`, [T, C], out);
      keep(record, `${name}.${normName}.input_mean`, [T], before.mean);
      keep(record, `${name}.${normName}.input_var`, [T], before.variance);
      keep(record, `${name}.${normName}.output_mean`, [T], after.mean);
      keep(record, `${name}.${normName}.output_var`, [T], after.variance);
    }
    return out;
  }

  /** 注意力子层的 f：记下 q、k、v、weights、output。 */
  function attentionBlock(mha, H, xkv, S, masked, record, name, T) {
    return (x) => {
      const a = attention(x, T, xkv ?? x, xkv ? S : T, mha, H, masked);
      const D = a.q.length / T / H;
      keep(record, `${name}.q`, [H, T, D], a.q);
      keep(record, `${name}.k`, [H, xkv ? S : T, D], a.k);
      keep(record, `${name}.v`, [H, xkv ? S : T, D], a.v);
      keep(record, `${name}.weights`, [H, T, xkv ? S : T], a.weights);
      keep(record, `${name}.output`, [T, a.output.length / T], a.output);
      return a.output;
    };
  }

  /** 前馈子层的 f：记下 hidden、output。 */
  function ffnBlock(ffn, activation, record, name, T) {
    return (x) => {
      const { hidden, output } = feedForward(x, T, ffn, activation);
      keep(record, `${name}.hidden`, [T, hidden.length / T], hidden);
      keep(record, `${name}.output`, [T, output.length / T], output);
      return output;
    };
  }

  /** 按模块的路径取权重：parameters(tensors, "a").b.weight 是 tensors["a.b.weight"]（没有偏置时 .bias 是 undefined）。 */
  function parameters(tensors, prefix) {
    return new Proxy({}, {
      get(_, key) {
        const name = `${prefix}.${String(key)}`;
        return key === "weight" || key === "bias" ? tensors[name] : parameters(tensors, name);
      },
    });
  }

  /** 正弦位置编码 PE(pos, 2i) = sin(pos·ω_i)，PE(pos, 2i+1) = cos(pos·ω_i)，ω_i = 1 / 10000^(2i/C)：(T, C)。 */
  function sinusoidal(T, C, base = 10000) {
    const pe = new Float32Array(T * C);
    for (let pos = 0; pos < T; pos += 1) {
      for (let c = 0; c < C; c += 1) {
        const omega = base ** (-(c - (c % 2)) / C); // 第 2i 与 2i+1 维共用 ω_i
        pe[pos * C + c] = c % 2 === 0 ? Math.sin(pos * omega) : Math.cos(pos * omega);
      }
    }
    return pe;
  }

  /** 嵌入 E[x]·√C + PE：ids (T) → (T, C)；记下查表、×√C、位置编码与它们的和。 */
  function embed(table, ids, C, record, side) {
    const T = ids.length;
    const raw = new Float32Array(T * C);
    ids.forEach((id, t) => raw.set(table.data.subarray(id * C, (id + 1) * C), t * C)); // 查表：(T, C)
    const scaled = raw.map((x) => x * Math.fround(Math.sqrt(C)));
    const pe = sinusoidal(T, C);
    const x = scaled.map((value, i) => value + pe[i]);
    keep(record, `${side}.embedding`, [T, C], raw);
    keep(record, `${side}.embedding_scaled`, [T, C], scaled);
    keep(record, `${side}.positional`, [T, C], pe);
    keep(record, `${side}.input`, [T, C], x);
    return x;
  }

  function checkConfig(config, rules) {
    for (const [key, allowed] of Object.entries(rules)) {
      if (!allowed.includes(config[key])) {
        throw new Error(`the page's forward pass supports ${key} in ${JSON.stringify(allowed)}, got ${JSON.stringify(config[key])}`);
      }
    }
  }

  // ---- 第 8 章的 Transformer（编码器—解码器）----

  /** 编码器：源句编号 src (S) → memory (S, C)。填充（pad_id）的键被遮住。 */
  function encode(model, src, record = null) {
    const { config: c, tensors } = model;
    checkConfig(c, { activation: ["relu", "gelu_tanh"] });
    const S = src.length;
    const C = c.d_model;
    const p = parameters(tensors, "encoder_layers");
    const isPad = (t, s) => src[s] === c.pad_id;
    let x = embed(tensors["src_embed.embedding.weight"], src, C, record, "encoder"); // (S, C)
    for (let i = 0; i < c.num_encoder_layers; i += 1) {
      const layer = p[i];
      const name = `encoder.layers.${i}`;
      const attn = attentionBlock(layer.self_attn, c.num_heads, null, S, isPad, record, `${name}.self_attn`, S);
      x = sublayer(x, S, C, layer.norm1, c.norm_first, attn, record, name, 1, "norm1");
      const ffn = ffnBlock(layer.ffn, c.activation, record, `${name}.ffn`, S);
      x = sublayer(x, S, C, layer.norm2, c.norm_first, ffn, record, name, 2, "norm2");
    }
    if (c.norm_first) x = layerNorm(x, S, parameters(tensors, "encoder_norm"));
    keep(record, "memory", [S, C], x);
    return x;
  }

  /**
   * 解码器：前缀 tgt (T)（以 <bos> 开头）、memory (S, C)、源句 src (S) → logits (T, V)。
   * 自注意力用因果掩码（第 t 个位置看不到 s > t），交叉注意力遮住源句的填充；输出层与目标端嵌入共用矩阵。
   */
  function decode(model, tgt, memory, src, record = null) {
    const { config: c, tensors } = model;
    const T = tgt.length;
    const S = src.length;
    const C = c.d_model;
    const p = parameters(tensors, "decoder_layers");
    const causal = (t, s) => s > t;
    const isPad = (t, s) => src[s] === c.pad_id;
    const table = tensors["tgt_embed.embedding.weight"];
    let x = embed(table, tgt, C, record, "decoder"); // (T, C)
    for (let i = 0; i < c.num_decoder_layers; i += 1) {
      const layer = p[i];
      const name = `decoder.layers.${i}`;
      const self = attentionBlock(layer.self_attn, c.num_heads, null, T, causal, record, `${name}.self_attn`, T);
      x = sublayer(x, T, C, layer.norm1, c.norm_first, self, record, name, 1, "norm1");
      const cross = attentionBlock(layer.cross_attn, c.num_heads, memory, S, isPad, record, `${name}.cross_attn`, T);
      x = sublayer(x, T, C, layer.norm2, c.norm_first, cross, record, name, 2, "norm2");
      const ffn = ffnBlock(layer.ffn, c.activation, record, `${name}.ffn`, T);
      x = sublayer(x, T, C, layer.norm3, c.norm_first, ffn, record, name, 3, "norm3");
    }
    if (c.norm_first) x = layerNorm(x, T, parameters(tensors, "decoder_norm"));
    const output = c.tie_output ? table : tensors["output.weight"];
    const logits = linear(x, T, output); // (T, C) @ (C, V) -> (T, V)
    if (record) {
      const V = output.shape[0];
      keep(record, "decoder.logits", [T, V], logits);
      const probs = [];
      for (let t = 0; t < T; t += 1) probs.push(...softmax(logits.subarray(t * V, (t + 1) * V)));
      keep(record, "decoder.probs", [T, V], probs);
    }
    return logits;
  }

  function softmax(row) {
    let max = -Infinity;
    for (const x of row) max = Math.max(max, x);
    const e = Array.from(row, (x) => Math.exp(x - max));
    const sum = e.reduce((a, b) => a + b, 0);
    return e.map((x) => x / sum);
  }

  // ---- 第 9 章的 GPT（只有解码器，pre-LN）----

  /** 整段前缀 ids (T) → 最后一个位置的 logits (V)：E[x] + P[0..T-1]，因果自注意力的块，最后 LN 与输出层。 */
  function gptLogits(model, ids) {
    const { config: c, tensors } = model;
    checkConfig(c, { norm: ["layernorm"], position: ["learned"], ffn: ["mlp"], num_kv_heads: [null, c.num_heads], activation: ["relu", "gelu_tanh"] });
    const T = ids.length;
    const C = c.d_model;
    const table = tensors["token_embedding.embedding.weight"];
    const positions = tensors["position_embedding.weight"].data;
    const x0 = new Float32Array(T * C);
    ids.forEach((id, t) => {
      for (let i = 0; i < C; i += 1) x0[t * C + i] = table.data[id * C + i] + positions[t * C + i]; // 不乘 √C
    });
    let x = x0;
    const p = parameters(tensors, "layers");
    const causal = (t, s) => s > t;
    for (let i = 0; i < c.num_layers; i += 1) {
      const layer = p[i];
      const self = attentionBlock(layer.self_attn, c.num_heads, null, T, causal, null, "", T);
      x = sublayer(x, T, C, layer.norm1, c.norm_first, self, null, "", 1, "norm1");
      x = sublayer(x, T, C, layer.norm2, c.norm_first, ffnBlock(layer.ffn, c.activation, null, "", T), null, "", 2, "norm2");
    }
    let last = x.subarray((T - 1) * C, T * C); // 只要最后一个位置：(1, C)
    if (c.norm_first) last = layerNorm(last, 1, parameters(tensors, "decoder_norm"));
    const output = c.tie_output ? table : tensors["output.weight"];
    return linear(last, 1, output); // (1, C) @ (C, V) -> (1, V)
  }

  const exported = { halfToFloat, readSafetensors, loadModel, linear, layerNorm, attention, sinusoidal, encode, decode, gptLogits };
  if (typeof document === "undefined") module.exports = exported;
  else window.tinyformerModel = exported;
})();
