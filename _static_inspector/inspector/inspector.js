/*
 * 各章的“用训练好的模型看看”：读者自己的句子经过第 8 章训练好的模型，每一步的中间结果（本书自己的 JavaScript 前向）。
 *
 * 页面上的 <details class="tf-inspector" data-view="…"> 由 _ext/inspector.py 的 {inspector} 指令写出。
 * 页面打开时只加载本脚本；读者打开它（或它滚进视野）时才加载：
 *   - 第 8 章网页翻译器的 live_translator.js（分词、拼句、viridis、模型的加载、贪心解码与束搜索，
 *     都只写在那里一份）和它旁边的 transformer.js（前向：每个中间结果都按名字记下）；
 *   - 网页翻译器的那一份模型：translator.safetensors（半精度的权重与配置）和 translator.json（词表、拼句规则）。
 * 各页、翻译器和检查器共用同一份文件，浏览器缓存它们。
 *
 * 页面级接口（tests/book/test_inspector.py 调用，与 Python 的 tinyformer.translation.inspection.inspect、
 * tinyformer.decoding.beam_search 核对）：
 *   window.tinyformerInspect(sentence) → Promise<{sentence, srcTokens, srcIds, tgtIds, produced,
 *       translation, stages: {名字: {dims, data}}（去掉批量维）, steps: [{prefix, logits}]}>
 *     stages 的名字与 inspection.inspect 的相同；steps 是贪心解码每一步最后一个位置的 logits。
 *   window.tinyformerBeam(sentence, {beamSize, alpha, maxLen}) → Promise<{steps: [[{ids, tokens,
 *       logProb, length, finished, score}]], best}>：与 beam_search 同样的算法（B = 1），每一步的每个假设。
 */
(function () {
  "use strict";
  if (window.tinyformerInspect) return; // 一页上有几个检查器时脚本只运行一次

  const absolute = (path) => new URL(path, document.baseURI).href;
  let model = null; // load() 的 Promise

  function loadScript(src) {
    return new Promise((resolve, reject) => {
      const script = Object.assign(document.createElement("script"), { src });
      script.onload = resolve;
      script.onerror = () => reject(new Error(`${src} 没能加载`));
      document.head.append(script);
    });
  }

  /** 加载共用脚本与模型（只一次）；返回 live_translator.js 的 loadTranslator 给的 {tf, net, settings, words, stoi}，
   * 外加 live、inspector（模型的尺寸）、bytes、seconds。 */
  function load(root) {
    model ??= (async () => {
      const started = performance.now();
      if (!window.tinyformerLive) await loadScript(absolute(root.dataset.text));
      const live = window.tinyformerLive;
      const m = await live.loadTranslator(absolute(root.dataset.model));
      // 读者看到的“加载了多少”：打开之后浏览器取的每个文件（来自缓存的按文件大小算）
      const bytes = performance
        .getEntriesByType("resource")
        .filter((e) => e.startTime >= started)
        .reduce((sum, e) => sum + (e.encodedBodySize || e.transferSize || 0), 0);
      const seconds = (performance.now() - started) / 1000;
      return { ...m, live, inspector: m.net.config, bytes, seconds };
    })();
    model.catch(() => (model = null)); // 失败后下次再试
    return model;
  }

  function tokenize(m, sentence) {
    const tokens = m.live.segment(sentence, m.words);
    const message = m.live.unknownMessage(sentence, tokens, m.words);
    if (message) throw new Error(message);
    return tokens;
  }

  /** 下一个词元的 logits：前缀 (T) 送进解码器，取最后一个位置的那一行 (V)。 */
  function lastLogits(m, prefix, memory, srcIds, record = null) {
    const logits = m.tf.decode(m.net, prefix, memory, srcIds, record); // (T, V)
    const V = logits.length / prefix.length;
    return logits.subarray(logits.length - V);
  }

  /** 读者的句子 → 每个中间结果（贪心译文整段送回解码器，同 tinyformer.translation.inspection.inspect）。 */
  async function inspect(sentence, root = document.querySelector(".tf-inspector")) {
    const m = await load(root);
    const { settings } = m;
    const srcTokens = tokenize(m, sentence);
    const srcIds = srcTokens.map((t) => m.stoi.get(t));
    const stages = {};
    const memory = m.tf.encode(m.net, srcIds, stages); // (S, C)，记下编码器的每个中间结果
    // 解码循环是 live_translator.js 的 greedyDecode（与网页翻译器同一份）；这里每步取最后一个位置的 logits
    const { ids, steps } = await m.live.greedyDecode({
      step: async ([prefix]) => ({ logits: [Array.from(lastLogits(m, prefix, memory, srcIds))] }),
      bos: settings.bos_id,
      eos: settings.eos_id,
      maxLen: settings.max_len,
    });
    // 最后一步的输入正是 <bos> + 除最后一个词元外的译文：再送入一次，记下解码器的每个中间结果
    lastLogits(m, steps[steps.length - 1].prefix, memory, srcIds, stages);
    const tgtIds = ids.slice(0, steps.length);
    return {
      sentence,
      srcTokens,
      srcIds,
      tgtIds,
      tgtTokens: tgtIds.map((i) => settings.tgt_itos[i]),
      produced: ids.slice(1).map((i) => settings.tgt_itos[i]),
      translation: m.live.decodeIds(ids, settings),
      stages,
      steps: steps.map(({ prefix, logits, next }) => ({
        prefix: prefix.map((i) => settings.tgt_itos[i]),
        logits,
        chosen: next,
      })),
    };
  }

  /** 束搜索（live_translator.js 的 beamSearch，与 tinyformer.decoding.beam_search 一步一步相同）：K 个前缀各送进解码器一次。 */
  async function beam(sentence, options = {}, root = document.querySelector(".tf-inspector")) {
    const { beamSize: K = 4, alpha = 0.6, maxLen = 32 } = options;
    if (!Number.isInteger(K) || K < 1) throw new Error(`beamSize must be a positive integer, got ${K}`);
    const m = await load(root);
    const { settings } = m;
    const srcIds = tokenize(m, sentence).map((t) => m.stoi.get(t));
    const memory = m.tf.encode(m.net, srcIds); // (S, C)
    const result = await m.live.beamSearch({
      step: async (prefixes) => ({ logits: prefixes.map((prefix) => lastLogits(m, prefix, memory, srcIds)) }),
      bos: settings.bos_id,
      eos: settings.eos_id,
      pad: settings.pad_id,
      maxLen,
      beamSize: K,
      alpha,
    });
    const named = (h) => ({ ...h, tokens: h.ids.map((i) => settings.tgt_itos[i]) });
    const steps = result.steps.map((hypotheses) => hypotheses.map(named));
    return { steps, best: { ...named(result.best), translation: m.live.decodeIds(result.best.ids, settings) } };
  }

  window.tinyformerInspect = (sentence) => inspect(sentence);
  window.tinyformerBeam = (sentence, options) => beam(sentence, options);

  // ---- 画图：SVG 热力图 -------------------------------------------------------------------

  const SVG = "http://www.w3.org/2000/svg";
  function el(name, attributes = {}, text) {
    const node = document.createElementNS(SVG, name);
    for (const [k, v] of Object.entries(attributes)) node.setAttribute(k, v);
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function html(name, attributes = {}, text) {
    const node = Object.assign(document.createElement(name), attributes);
    if (text !== undefined) node.textContent = text;
    return node;
  }

  /** 有正有负的值：蓝—白—红，按 ±limit 归一。 */
  function diverging(value, limit) {
    const x = Math.max(-1, Math.min(1, value / (limit || 1)));
    const mix = (a, b) => Math.round(a + (b - a) * Math.abs(x));
    return x < 0 ? `rgb(${mix(247, 33)},${mix(247, 102)},${mix(247, 172)})` : `rgb(${mix(247, 178)},${mix(247, 24)},${mix(247, 43)})`;
  }

  /**
   * rows × cols 的矩阵画成热力图。options：rowLabels、colLabels、title、color（"weights" 用 viridis 0–1，
   * 否则蓝白红）、masked(r, c)（被掩码遮住的格子画成灰色并打 ×）、cell（格宽）。
   */
  function heatmap(matrix, options, live) {
    const rows = matrix.length;
    const cols = matrix[0].length;
    const cell = options.cell ?? (cols > 40 ? 4 : 40);
    const cellH = options.cellH ?? 26;
    const left = 96;
    const top = 4;
    const width = cell * cols;
    const height = cellH * rows;
    const limit = Math.max(...matrix.flat().map(Math.abs));
    const svg = el("svg", {
      class: "tfi-map",
      role: "img",
      viewBox: `0 0 ${left + width + 12} ${top + height + (options.colLabels ? 70 : 8)}`,
      width: left + width + 12,
      "aria-label": `${options.title}：${rows} 行 × ${cols} 列`,
    });
    matrix.forEach((row, r) =>
      row.forEach((value, c) => {
        const masked = options.masked?.(r, c);
        const fill = masked ? "rgb(160,160,160)" : options.color === "weights" ? live.viridis(value) : diverging(value, limit);
        const rect = el("rect", { x: left + c * cell, y: top + r * cellH, width: cell, height: cellH, fill });
        const label = `${options.rowLabels?.[r] ?? r} · ${options.colLabels?.[c] ?? c}：${masked ? "被掩码遮住（权重 0）" : value.toFixed(4)}`;
        rect.append(el("title", {}, label));
        svg.append(rect);
        if (masked && cell >= 20) {
          svg.append(el("text", { x: left + c * cell + cell / 2, y: top + r * cellH + cellH / 2, class: "tfi-mask" }, "×"));
        }
      }),
    );
    (options.rowLabels ?? []).forEach((label, r) =>
      svg.append(el("text", { x: left - 6, y: top + r * cellH + cellH / 2, class: "tfi-ylabel" }, label)),
    );
    // 标题写在图外（HTML 段落），窄屏上折行而不是被裁掉
    const figure = html("div", { className: "tfi-heatmap" });
    figure.append(html("p", { className: "tfi-caption" }, options.title));
    (options.colLabels ?? []).forEach((label, c) =>
      svg.append(
        el("text", {
          x: left + c * cell + cell / 2,
          y: top + height + 8,
          class: "tfi-xlabel",
          transform: `rotate(-40 ${left + c * cell + cell / 2} ${top + height + 8})`,
        }, label),
      ),
    );
    figure.append(svg);
    return figure;
  }

  /** stages 里的 {dims, data} 取成二维数组：(R, C) 或 (H, R, C) 的第 h 个。 */
  function matrix(stage, h = null) {
    const dims = stage.dims;
    const [R, C] = dims.slice(-2);
    const offset = h === null ? 0 : h * R * C;
    return Array.from({ length: R }, (_, r) => stage.data.slice(offset + r * C, offset + (r + 1) * C));
  }
  const norm = (v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
  const fmt = (x, digits = 3) => (Math.abs(x) >= 1e4 || (Math.abs(x) < 1e-3 && x !== 0) ? x.toExponential(2) : x.toFixed(digits));

  function select(label, choices, value) {
    const wrap = html("label", { className: "tfi-control" }, label + " ");
    const node = html("select");
    choices.forEach(([v, text]) => node.append(html("option", { value: v }, text)));
    node.value = String(value);
    wrap.append(node);
    return [wrap, node];
  }
  function range(label, min, max, step, value) {
    const wrap = html("label", { className: "tfi-control" }, label + " ");
    const node = html("input", { type: "range", min, max, step, value });
    const shown = html("output", {}, String(value));
    node.addEventListener("input", () => (shown.textContent = node.value));
    wrap.append(node, shown);
    return [wrap, node];
  }
  function table(header, rows) {
    const node = html("table", { className: "tfi-table" });
    const head = node.createTHead().insertRow();
    header.forEach((h) => head.append(html("th", {}, h)));
    const body = node.createTBody();
    rows.forEach((row) => {
      const tr = body.insertRow();
      row.forEach((value) => tr.append(html("td", {}, String(value))));
    });
    return node;
  }

  // ---- 各章的视图：view(result, m, container) 画出控件与图；控件一变就重画 -----------------

  /** 控件 + 重画：controls 是 [标签元素, 输入元素] 的列表；draw() 返回要显示的节点。 */
  function interactive(container, controls, draw) {
    const bar = html("div", { className: "tfi-controls" });
    controls.forEach(([wrap, input]) => {
      bar.append(wrap);
      input.addEventListener("input", redraw);
      input.addEventListener("change", redraw);
    });
    const figure = html("div", { className: "tfi-figure" });
    container.append(bar, figure);
    function redraw() {
      figure.replaceChildren(...[draw()].flat());
    }
    redraw();
  }

  const VIEWS = {
    embedding(r, m, container) {
      const C = m.inspector.d_model;
      const [scaleWrap, scale] = select("显示", [["raw", "E[x]（查表）"], ["scaled", `E[x]·√d_model（×${Math.sqrt(C).toFixed(2)}）`]], "raw");
      interactive(container, [[scaleWrap, scale]], () => {
        const name = scale.value === "raw" ? "encoder.embedding" : "encoder.embedding_scaled";
        const rows = matrix(r.stages[name]);
        const map = heatmap(rows, { title: `${name}：每行是一个词元的 ${C} 维向量`, rowLabels: r.srcTokens, cell: 4 }, m.live);
        const info = table(
          ["词元", "编号", "‖E[x]‖", "‖E[x]·√d_model‖"],
          r.srcTokens.map((t, i) => [t, r.srcIds[i], fmt(norm(matrix(r.stages["encoder.embedding"])[i])), fmt(norm(matrix(r.stages["encoder.embedding_scaled"])[i]))]),
        );
        return [map, info];
      });
    },

    positional(r, m, container) {
      const [whichWrap, which] = select(
        "显示",
        [["encoder.embedding_scaled", "E[x]·√d_model"], ["encoder.positional", "PE"], ["encoder.input", "和：E[x]·√d_model + PE"]],
        "encoder.input",
      );
      interactive(container, [[whichWrap, which]], () => {
        const rows = matrix(r.stages[which.value]);
        const map = heatmap(rows, { title: which.selectedOptions[0].textContent, rowLabels: r.srcTokens.map((t, i) => `${i} ${t}`), cell: 4 }, m.live);
        const emb = matrix(r.stages["encoder.embedding_scaled"]);
        const pe = matrix(r.stages["encoder.positional"]);
        const info = table(
          ["位置", "词元", "‖E[x]·√d‖", "‖PE‖", "比值"],
          r.srcTokens.map((t, i) => [i, t, fmt(norm(emb[i])), fmt(norm(pe[i])), fmt(norm(emb[i]) / norm(pe[i]), 2)]),
        );
        return [map, info];
      });
    },

    attention(r, m, container) {
      const { num_heads: H, num_encoder_layers: NE, num_decoder_layers: ND } = m.inspector;
      const [kindWrap, kind] = select("注意力", [["encoder.self_attn", "编码器自注意力"], ["decoder.self_attn", "解码器掩码自注意力"], ["decoder.cross_attn", "交叉注意力"]], "decoder.self_attn");
      const [layerWrap, layer] = select("层", Array.from({ length: Math.max(NE, ND) }, (_, i) => [i, `第 ${i + 1} 层`]), 0);
      const [headWrap, head] = select("头", [...Array.from({ length: H }, (_, h) => [h, `头 ${h + 1}`]), ["mean", "各头平均"]], 0);
      interactive(container, [[kindWrap, kind], [layerWrap, layer], [headWrap, head]], () => {
        const [side, sub] = kind.value.split(".");
        const name = `${side}.layers.${layer.value}.${sub}.weights`;
        const stage = r.stages[name];
        const rowsOf = (h) => matrix(stage, h);
        const weights = head.value === "mean"
          ? rowsOf(0).map((row, i) => row.map((_, j) => Array.from({ length: H }, (_, h) => rowsOf(h)[i][j]).reduce((a, b) => a + b) / H))
          : rowsOf(Number(head.value));
        const queries = side === "encoder" ? r.srcTokens : r.tgtTokens;
        const keys = side === "decoder" && sub === "self_attn" ? r.tgtTokens : r.srcTokens;
        const causal = kind.value === "decoder.self_attn";
        return [
          heatmap(weights, { title: `${name}（行：查询，列：键）`, rowLabels: queries, colLabels: keys, color: "weights", masked: causal ? (i, j) => j > i : undefined }, m.live),
          html("p", { className: "tfi-note" }, causal ? "灰色 × 是因果掩码遮住的格子：第 t 个位置看不到它后面的词元，softmax 之后权重恰好是 0。" : "单独一句没有填充，填充掩码不遮任何格子；每行加起来是 1。"),
        ];
      });
    },

    norm_ffn(r, m, container) {
      const { num_encoder_layers: NE } = m.inspector;
      const [layerWrap, layer] = select("编码器层", Array.from({ length: NE }, (_, i) => [i, `第 ${i + 1} 层`]), 0);
      const [normWrap, which] = select("LayerNorm", [["norm1", "注意力之后（norm1）"], ["norm2", "FFN 之后（norm2）"]], "norm1");
      interactive(container, [[layerWrap, layer], [normWrap, which]], () => {
        const p = `encoder.layers.${layer.value}`;
        const get = (n) => r.stages[`${p}.${which.value}.${n}`].data;
        const stats = table(
          ["词元", "输入均值", "输入方差", "输出均值", "输出方差"],
          r.srcTokens.map((t, i) => [t, fmt(get("input_mean")[i]), fmt(get("input_var")[i]), fmt(get("output_mean")[i]), fmt(get("output_var")[i])]),
        );
        const hidden = matrix(r.stages[`${p}.ffn.hidden`]);
        const zeros = hidden.flat().filter((x) => x === 0).length / hidden.flat().length;
        return [
          html("p", { className: "tfi-note" }, `残差和（LayerNorm 的输入）的每个词元在 ${m.inspector.d_model} 个特征上的均值、方差，与归一化（再乘 γ 加 β）之后的：`),
          stats,
          heatmap(hidden, { title: `${p}.ffn.hidden：ReLU 之后的 ${m.inspector.d_ff} 个隐藏激活（${(100 * zeros).toFixed(1)}% 是 0）`, rowLabels: r.srcTokens, cell: 2 }, m.live),
        ];
      });
    },

    stack(r, m, container) {
      const { num_encoder_layers: NE, num_decoder_layers: ND, num_heads: H } = m.inspector;
      const [layerWrap, layer] = select("解码器层", Array.from({ length: ND }, (_, i) => [i, `第 ${i + 1} 层`]), ND - 1);
      const [headWrap, head] = select("头", Array.from({ length: H }, (_, h) => [h, `头 ${h + 1}`]), 0);
      interactive(container, [[layerWrap, layer], [headWrap, head]], () => {
        const rowsNorm = (name) => matrix(r.stages[name]).map((v) => fmt(norm(v), 2)).join(" ");
        const stackRows = [["编码器输入", rowsNorm("encoder.input")]];
        for (let i = 0; i < NE; i += 1) stackRows.push([`编码器第 ${i + 1} 层`, rowsNorm(`encoder.layers.${i}.norm2.output`)]);
        stackRows.push(["memory", rowsNorm("memory")], ["解码器输入", rowsNorm("decoder.input")]);
        for (let i = 0; i < ND; i += 1) stackRows.push([`解码器第 ${i + 1} 层`, rowsNorm(`decoder.layers.${i}.norm3.output`)]);
        const name = `decoder.layers.${layer.value}.cross_attn.weights`;
        return [
          table(["经过", "每个词元向量的长度 ‖x‖"], stackRows),
          heatmap(matrix(r.stages[name], Number(head.value)), { title: `${name}，头 ${Number(head.value) + 1}`, rowLabels: r.tgtTokens, colLabels: r.srcTokens, color: "weights" }, m.live),
        ];
      });
    },

    decoding(r, m, container) {
      const [stepWrap, step] = range("第几步", 0, r.steps.length - 1, 1, 0);
      const [tempWrap, temperature] = range("温度", 0.1, 3, 0.1, 1);
      const [kWrap, topK] = select("top-k", [[5, "5"], [10, "10"], [20, "20"]], 5);
      const [beamWrap, beamSize] = select("束宽", [[1, "1（贪心）"], [2, "2"], [3, "3"], [4, "4"], [5, "5"]], 3);
      const beamBox = html("div", { className: "tfi-beam" });
      let beamToken = 0;
      const drawBeam = async () => {
        const token = (beamToken += 1);
        const result = await beam(r.sentence, { beamSize: Number(beamSize.value) });
        if (token !== beamToken) return;
        const rows = result.steps.flatMap((hyps, t) =>
          hyps.map((h, k) => [t + 1, k + 1, h.tokens.slice(1).filter((w) => w !== "<pad>").join(" "), fmt(h.logProb), fmt(h.score), h.finished ? "是" : ""]),
        );
        beamBox.replaceChildren(
          html("p", {}, `束搜索（束宽 ${beamSize.value}，α = 0.6）的译文：${result.best.translation}；贪心：${r.translation}`),
          table(["步", "假设", "前缀", "log P", "得分 = log P / lp", "已结束"], rows),
        );
      };
      beamSize.addEventListener("change", drawBeam);
      interactive(container, [[stepWrap, step], [tempWrap, temperature], [kWrap, topK]], () => {
        const s = r.steps[Number(step.value)];
        const tau = Number(temperature.value);
        const scaled = s.logits.map((x) => x / tau);
        const probs = m.live.logSoftmax(scaled).map(Math.exp);
        const order = probs.map((p, v) => [p, v]).sort((a, b) => b[0] - a[0]).slice(0, Number(topK.value));
        const bars = el("svg", { class: "tfi-map", role: "img", viewBox: `0 0 420 ${order.length * 22 + 8}`, width: 420, "aria-label": "下一个词的概率" });
        order.forEach(([p, v], i) => {
          bars.append(
            el("text", { x: 96, y: i * 22 + 16, class: "tfi-ylabel" }, m.settings.tgt_itos[v]),
            el("rect", { x: 100, y: i * 22 + 4, width: Math.max(1, 260 * p), height: 16, fill: v === s.chosen ? "rgb(178,24,43)" : "rgb(33,102,172)" }),
            el("text", { x: 104 + 260 * p, y: i * 22 + 16 }, p.toFixed(3)),
          );
        });
        return [
          html("p", {}, `前缀：${s.prefix.join(" ")}　→ 贪心选 ${m.settings.tgt_itos[s.chosen]}（温度只改概率的形状，不改最大者）`),
          bars,
        ];
      });
      const beamBar = html("div", { className: "tfi-controls" });
      beamBar.append(beamWrap);
      container.append(beamBar, beamBox);
      drawBeam();
    },
  };

  // ---- 页面 ------------------------------------------------------------------------------

  const STYLE = `
    .tf-inspector { border: 1px solid var(--pst-color-border, #d0d7de); border-radius: 6px; padding: 0.4em 1em; margin: 1em 0; }
    .tf-inspector > summary { cursor: pointer; font-weight: 600; }
    .tf-inspector input[type=text] { width: 14em; max-width: 100%; font-size: 1em; padding: 0.15em 0.4em; }
    .tf-inspector .tfi-controls { display: flex; flex-wrap: wrap; gap: 0.4em 1em; align-items: center; margin: 0.5em 0; }
    .tf-inspector .tfi-controls label input { margin-left: 0.4em; }
    .tf-inspector .tfi-status { color: var(--pst-color-text-muted, #57606a); font-size: 0.85em; margin: 0.4em 0; }
    .tf-inspector svg { font-size: 13px; fill: currentColor; max-width: 100%; height: auto; display: block; margin: 0.5em 0; }
    .tf-inspector .tfi-caption { font-size: 0.85em; margin: 0.6em 0 0; }
    .tf-inspector .tfi-ylabel { text-anchor: end; dominant-baseline: middle; }
    .tf-inspector .tfi-xlabel { text-anchor: end; dominant-baseline: hanging; }
    .tf-inspector .tfi-mask { text-anchor: middle; dominant-baseline: middle; fill: #fff; }
    .tf-inspector .tfi-table { font-size: 0.85em; display: block; overflow-x: auto; }
    .tf-inspector .tfi-table td { font-family: var(--pst-font-family-monospace, monospace); }
    .tf-inspector .tfi-table th, .tf-inspector .tfi-table td { padding: 0.1em 0.6em 0.1em 0; white-space: nowrap; }
    @media print { .tf-inspector { display: none; } }`;

  async function show(root) {
    const status = root.querySelector(".tfi-status");
    const view = root.querySelector(".tfi-view");
    const sentence = root.querySelector(".tfi-sentence").value;
    root.dataset.sentence = sentence;
    root.dataset.state = "busy";
    status.textContent = "正在加载模型……";
    let m;
    try {
      m = await load(root);
    } catch (err) {
      status.textContent = `模型没能加载：${err.message || err}（从 file:// 打开时浏览器不允许读取模型文件，请通过 http 访问本站）`;
      root.dataset.state = "error";
      return;
    }
    const loaded = `模型：加载了 ${(m.bytes / 1e6).toFixed(1)} MB，用时 ${m.seconds.toFixed(1)} 秒（各章共用，浏览器缓存）。`;
    try {
      const started = performance.now();
      const result = await inspect(sentence, root);
      const seconds = (performance.now() - started) / 1000;
      view.replaceChildren(html("p", {}, `${sentence} → ${result.translation}（词元：${result.srcTokens.join(" / ")}）`));
      VIEWS[root.dataset.view](result, m, view);
      status.textContent = `${loaded} 这句算了 ${seconds.toFixed(2)} 秒。`;
      root.dataset.state = "done";
    } catch (err) {
      view.replaceChildren(html("p", {}, `无法翻译：${err.message || err}`));
      status.textContent = loaded;
      root.dataset.state = "error";
    }
  }

  function setUp(root) {
    let started = false;
    const once = () => {
      if (started) return;
      started = true;
      show(root);
    };
    root.addEventListener("toggle", () => root.open && once());
    root.querySelector(".tfi-run").addEventListener("click", () => show(root));
    root.querySelector(".tfi-sentence").addEventListener("change", () => started && show(root));
  }

  function start() {
    if (!document.getElementById("tfi-style")) {
      document.head.append(Object.assign(document.createElement("style"), { id: "tfi-style", textContent: STYLE }));
    }
    document.querySelectorAll(".tf-inspector").forEach(setUp);
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
