/*
 * “只有解码器”一章：在读者的浏览器里写诗（本书自己的 JavaScript 前向）。
 *
 * 页面上的 <div class="poem-writer" data-model="…" data-shared="…"> 由“只有解码器”一章的
 * {raw} html 单元格写出。读者按下“写诗”之前什么都不加载；按下后才加载：
 *   - “完整模型”一章的 live_translator.js（与模型无关的解码与采样 sampleDecode：网页上只有这一份）和它旁边的
 *     transformer.js（前向：gptLogits，整段前缀 → 下一个字的 logits）；
 *   - tinyformer.poetry.export.export_poet 写的 poet.safetensors（半精度的权重与配置）与 poet.json。
 * 写诗的规则与 tinyformer.poetry.sampling.write 相同（规则里的数从 poet.json 读）：
 *   - 永不采 never_sampled（<pad>、<bos>、<unk>）；
 *   - 藏头诗：第 i 句的第一个字强制为第 i 个字（句以 clause_ends 分隔）；写满之前不许 <eos>，写满之后强制 <eos>；
 *   - 最多写到 max_len 个位置（含 <bos>）；
 *   - 选了体裁（五绝、七绝、五律、七律）时按平水韵的格律约束每一步，与 tinyformer.poetry.sampling.MeterMask 相同：
 *     形状固定；第 2、4、6 字的平仄、押韵句末的韵部（不重韵）、不押韵句末的仄声按四种格式约束，每写一个字去掉与它不合的格式；
 *     不合格律的字从分布里去掉（同 ban），再用同一个采样公式。平水韵在 export_poet 写的 meter.json 里，选了体裁才下载。
 * 采样用网页自己的种子（mulberry32）：同一个种子写出同一首诗，但不会与 Python（torch 的生成器）抽到的逐字相同；
 * 贪心时与 Python 逐字相同，每一步的概率与 next_distribution 的相同（tests/book/test_poem_writer.py 核对）。
 *
 * 页面级接口（测试调用）：
 *   window.tinyformerPoem({prefix, acrostic, form, rhyme, temperature, top_k, top_p, seed, greedy})
 *     → Promise<{text, steps: [{char, topk: [[字, 概率], …], support}]}>：steps[i] 对应 text[prefix.length + i]，
 *     与 Python 的 Poem.choices 一一对应（被强制的字是 [[字, 1]]；概率为 0 的候选不列出）。
 */
(function () {
  "use strict";
  if (window.tinyformerPoem) return;

  const absolute = (path) => new URL(path, document.baseURI).href;
  let loading = null; // load() 的 Promise

  function loadScript(src) {
    return new Promise((resolve, reject) => {
      const script = Object.assign(document.createElement("script"), { src });
      script.onload = resolve;
      script.onerror = () => reject(new Error(`${src} 没能加载`));
      document.head.append(script);
    });
  }

  /** 加载共用脚本与模型（只一次）；返回 {live, tf, net, settings, stoi, bytes, seconds}。 */
  function load(root) {
    loading ??= (async () => {
      const started = performance.now();
      if (!window.tinyformerLive) await loadScript(absolute(root.dataset.shared));
      const live = window.tinyformerLive;
      const base = absolute(root.dataset.model);
      const [tf, settings] = await Promise.all([live.loadForward(), fetch(base + "poet.json").then((r) => r.json())]);
      const net = await tf.loadModel(base + "poet.safetensors");
      const stoi = new Map(settings.itos.map((ch, i) => [ch, i]));
      const bytes = performance
        .getEntriesByType("resource")
        .filter((e) => e.startTime >= started)
        .reduce((sum, e) => sum + (e.encodedBodySize || e.transferSize || 0), 0);
      return { live, tf, net, settings, stoi, bytes, seconds: (performance.now() - started) / 1000 };
    })();
    loading.catch(() => (loading = null)); // 失败了下次再试
    return loading;
  }

  const SPECIAL = /^<.*>$/;

  // ---- 格律（平水韵）：与 tinyformer.poetry.sampling.MeterMask 相同 ----

  const PING = 1;
  const ZE = 2;
  const TONE_NAME = { [PING]: "平", [ZE]: "仄" };
  const flip = (tone) => (tone === PING ? ZE : PING);
  let meterLoading = null;

  /** 加载 meter.json（只一次）：{tones: Uint8Array, groupsOf: [[韵部…]…], groupNames, forms}。 */
  function loadMeter(root, model) {
    meterLoading ??= fetch(absolute(root.dataset.model) + "meter.json")
      .then((r) => r.json())
      .then((meter) => {
        const groupsOf = model.settings.itos.map(() => []);
        for (const [name, chars] of Object.entries(meter.groups)) {
          for (const ch of chars) groupsOf[model.stoi.get(ch)].push(name);
        }
        const tones = Uint8Array.from(meter.tones, (d) => Number(d));
        const han = model.settings.itos.map((ch) => ch.length === 1 && ch >= "\u4e00" && ch <= "\u9fff");
        return { tones, han, groupsOf, groupNames: Object.keys(meter.groups), forms: meter.forms };
      });
    meterLoading.catch(() => (meterLoading = null));
    return meterLoading;
  }

  /** 一首 form 的格律状态（四种格式都还可能）；rhyme 是韵部全名或韵目（如“尤”）。 */
  function meterRules(meter, form, rhyme) {
    const [lines, length] = meter.forms[form];
    let groups = null;
    if (rhyme) {
      const fits = meter.groupNames.filter((g) => g.endsWith(rhyme));
      if (fits.length !== 1) throw new Error(`韵部应为一个平声韵部的名字，如 尤 或 下平声十一尤，得到“${rhyme}”`);
      groups = new Set(fits);
    }
    const templates = [PING, ZE].flatMap((x) => [true, false].map((first) => ({ x, first, groups })));
    // rhymed：已经作过韵脚的字（编号），不重韵
    return { meter, form, lines, length, templates, clause: 0, position: 0, finished: false, rhymed: new Set() };
  }

  /** 这种格式在当前位置的要求：{tone, groups}（groups 为 null 时不论韵部）；null = 不论（一三五）。 */
  function need(rules, template) {
    const j = rules.position;
    if (j === rules.length - 1) {
      if (rules.clause % 2 === 1 || (rules.clause === 0 && template.first)) {
        return { tone: PING, groups: template.groups ?? new Set(rules.meter.groupNames) };
      }
      return { tone: ZE, groups: null };
    }
    if (j % 2 === 1) {
      const line = ((rules.clause + 1) >> 1) % 2 === 0 ? template.x : flip(template.x);
      return { tone: j % 4 === 1 ? line : flip(line), groups: null };
    }
    return null;
  }

  function fits(rules, id, req) {
    const { meter } = rules;
    if (!meter.han[id]) return false;
    if (req == null) return true;
    if (!(meter.tones[id] & req.tone)) return false;
    if (req.groups == null) return true;
    return !rules.rhymed.has(id) && meter.groupsOf[id].some((g) => req.groups.has(g));
  }

  /** 一个位置的要求的中文说法（同 sampling._describe）。 */
  function describe(req) {
    const tone = `${TONE_NAME[req.tone]}声`;
    return req.groups == null || req.groups.size > 3 ? tone : `${tone}、押${[...req.groups].sort().join("/")}`;
  }

  /** 标点、<eos> 的位置只有一个字可写：它的编号；其余位置 null。 */
  function forcedId(rules, settings, stoi) {
    if (rules.finished) return settings.eos_id;
    if (rules.position === rules.length) return stoi.get(rules.clause % 2 === 0 ? "，" : "。");
    return null;
  }

  /** 写下编号 id，去掉与它不合的格式；不合任何格式时抛出中文消息（同 MeterError.zh）。 */
  function advance(rules, id, settings, stoi) {
    const { meter } = rules;
    const ch = settings.itos[id];
    const misfit = (wanted) => {
      const has = [PING, ZE].filter((t) => meter.tones[id] & t).map((t) => `${TONE_NAME[t]}声`).join("或");
      return new Error(
        `不合${rules.form}的格律：第 ${rules.clause + 1} 句第 ${rules.position + 1} 个字“${ch}”` +
          `是${has || "平水韵表里没有的字"}，这里要${wanted}`,
      );
    };
    const forced = forcedId(rules, settings, stoi);
    if (forced != null) {
      if (id !== forced) throw misfit(rules.finished ? "<eos>" : `“${settings.itos[forced]}”`);
      if (rules.position === rules.length) {
        rules.clause += 1;
        rules.position = 0;
        rules.finished = rules.clause === rules.lines;
      }
      return;
    }
    if (!meter.han[id]) throw misfit(`汉字（每句 ${rules.length} 个字）`);
    const kept = [];
    let rhymes = false;
    for (const template of rules.templates) {
      const req = need(rules, template);
      if (!fits(rules, id, req)) continue;
      let { groups } = template;
      if (req && req.groups) {
        groups = new Set(meter.groupsOf[id].filter((g) => req.groups.has(g)));
        rhymes = true;
      }
      kept.push({ ...template, groups });
    }
    if (!kept.length) {
      const wanted = [...new Set(rules.templates.map((t) => describe(need(rules, t))))];
      wanted.sort((a, b) => (a.startsWith("平") === b.startsWith("平") ? (a < b ? -1 : 1) : a.startsWith("平") ? -1 : 1));
      const repeat = rules.rhymed.has(id) ? `，且不重韵（“${ch}”已经作过韵脚）` : "";
      throw misfit(wanted.join("或") + repeat);
    }
    if (rhymes) rules.rhymed.add(id); // 这个字可能作了韵脚（首句末字两读时也算）
    rules.templates = kept;
    rules.position += 1;
  }

  /** 当前位置允许的字：Uint8Array(V)，与 MeterMask.allowed 相同。 */
  function allowedIds(rules) {
    const { meter } = rules;
    const mask = new Uint8Array(meter.tones.length);
    const reqs = rules.templates.map((t) => need(rules, t));
    for (let id = 0; id < mask.length; id += 1) mask[id] = reqs.some((req) => fits(rules, id, req)) ? 1 : 0;
    return mask;
  }

  /** 从头重放 ids（<bos> 之后的字）得到格律状态。 */
  function replay(meter, options, ids, settings, stoi) {
    const rules = meterRules(meter, options.form, options.rhyme);
    for (const id of ids) advance(rules, id, settings, stoi);
    return rules;
  }

  /** 与 write 相同的检查；不合格时抛出中文消息。 */
  function check(model, prefix, acrostic, meter, options) {
    const { stoi, settings } = model;
    const text = prefix + (acrostic ?? "");
    const unknown = [...new Set([...text])].filter((ch) => !stoi.has(ch) || SPECIAL.test(ch)).sort();
    if (unknown.length) throw new Error(`这些字不在模型的字表里：${unknown.join("")}（字表只有全唐诗里出现过至少几次的字）`);
    if (acrostic != null && prefix) throw new Error("续写与藏头只能选一种");
    if (acrostic != null && !acrostic.length) throw new Error("藏头诗要给出每句开头的字（4 个或 8 个）");
    if ([...prefix].length + 1 >= settings.max_len) throw new Error(`开头太长：模型最多读 ${settings.max_len - 1} 个字`);
    if (!meter) return;
    const [lines] = meter.forms[options.form];
    if (acrostic != null && [...acrostic].length !== lines) {
      throw new Error(`${options.form}有 ${lines} 句，藏头应为 ${lines} 个字，得到 ${[...acrostic].length} 个`);
    }
    const rules = replay(meter, options, [...prefix].map((ch) => stoi.get(ch)), settings, stoi);
    if (rules.finished) throw new Error(`开头已经是一整首${options.form}了，没有可写的`);
  }

  /** 写一首：规则同 tinyformer.poetry.sampling.write（见文件开头）。onStep({char, topk, forced}) 每写一个字调用一次。 */
  async function writePoem(model, options, onStep, meter = null) {
    const { live, tf, net, settings, stoi } = model;
    const prefix = options.prefix ?? "";
    const acrostic = options.acrostic ? [...options.acrostic] : null;
    try {
      check(model, prefix, options.acrostic ?? null, meter, options);
    } catch (err) {
      if (err.message.startsWith("不合")) err.message = `开头${err.message}`;
      throw err;
    }
    const ends = new Set(settings.clause_ends);
    const start = [settings.bos_id, ...[...prefix].map((ch) => stoi.get(ch))];
    // 格律：重放已写的字得到状态；标点、<eos>、藏头的字强制，其余禁掉不合律的字（与 never_sampled）
    const constrainMeter = (ids) => {
      const rules = replay(meter, options, ids.slice(1), settings, stoi);
      const forced = forcedId(rules, settings, stoi);
      if (forced != null) return { force: forced };
      if (acrostic && rules.position === 0) return { force: stoi.get(acrostic[rules.clause]) };
      const mask = allowedIds(rules);
      const ban = new Set(settings.never_sampled);
      mask.forEach((ok, id) => ok || ban.add(id));
      const reqs = rules.templates.map((t) => need(rules, t)).filter((req) => req);
      const note = [...new Set(reqs.map(describe))].join("或");
      return { ban: [...ban], mask, note };
    };
    // 藏头诗的约束：按已写完的句数强制下一个字或 <eos>；否则只禁止 never_sampled（与写满之前的 <eos>）
    const constrain = meter ? constrainMeter : (ids) => {
      const last = ids[ids.length - 1];
      if (acrostic) {
        const clauses = ids.slice(start.length).filter((id) => ends.has(id)).length;
        if (clauses === acrostic.length && ends.has(last)) return { force: settings.eos_id };
        if (clauses < acrostic.length && (last === settings.bos_id || ends.has(last))) {
          return { force: stoi.get(acrostic[clauses]) };
        }
        return { ban: [...settings.never_sampled, settings.eos_id] };
      }
      return { ban: settings.never_sampled };
    };
    const step = async ([ids]) => ({ logits: [tf.gptLogits(net, ids)] }); // 整段前缀 → 下一个字的 logits (V)
    const toChars = (record) => ({
      char: settings.itos[record.next],
      // 概率为 0 的候选（被 top-k/top-p 去掉、被禁止的）不列出：它们并列，顺序没有意义
      topk: record.top.filter(([, p]) => p > 0).map(([id, p]) => [settings.itos[id], p]),
      forced: record.forced,
      support: record.support,
      ...(meter && !record.forced ? ruled(record) : {}),
    });
    // 格律这一步去掉了什么：模型原本（τ = 1）放在合律的字上的概率，与被去掉的字里概率最大的三个
    const ruled = (record) => {
      const rule = constrain(record.prefix);
      if (!rule.mask) return {};
      const probs = live.nextDistribution(Float64Array.from(record.raw));
      let kept = 0;
      const removed = [];
      probs.forEach((p, id) => {
        if (rule.mask[id]) kept += p;
        else if (meter.han[id]) removed.push([settings.itos[id], p]);
      });
      removed.sort((a, b) => b[1] - a[1]);
      return { rule: rule.note || "汉字（一三五不论）", kept, removed: removed.slice(0, 3) };
    };
    const { steps } = await live.sampleDecode({
      step,
      bos: settings.bos_id,
      eos: settings.eos_id,
      start,
      maxLen: settings.max_len - start.length,
      greedy: Boolean(options.greedy),
      temperature: options.temperature ?? 1,
      topK: options.top_k ?? null,
      topP: options.top_p ?? null,
      seed: options.seed ?? 0,
      constrain,
      show: settings.show,
      onStep: onStep && ((record) => record.next !== settings.eos_id && onStep(toChars(record))),
    });
    const written = steps.filter((s) => s.next !== settings.eos_id).map(toChars);
    return { text: prefix + written.map((s) => s.char).join(""), steps: written };
  }

  // ---- 页面 ----

  const STYLE = `
    .poem-writer { border: 1px solid var(--pst-color-border, #d0d7de); border-radius: 6px; padding: 0.8em 1em; margin: 1em 0; max-width: 100%; box-sizing: border-box; }
    .poem-writer fieldset { border: 0; padding: 0; margin: 0 0 0.5em; display: flex; flex-wrap: wrap; gap: 0.3em 1.2em; align-items: center; min-width: 0; }
    .poem-writer legend { padding: 0; font-weight: 600; font-size: 1em; margin-bottom: 0.2em; }
    .poem-writer label { display: inline-flex; align-items: center; gap: 0.4em; flex-wrap: wrap; }
    .poem-writer .pw-text input { width: 16em; max-width: 100%; font-size: 1.05em; padding: 0.15em 0.4em; }
    .poem-writer .pw-text { flex: 1 1 100%; }
    .poem-writer input[type=range] { width: 8em; }
    .poem-writer input[type=number] { width: 6em; }
    .poem-writer input, .poem-writer button { color: inherit; background: var(--pst-color-background, #fff); border: 1px solid var(--pst-color-border, #8c959f); border-radius: 4px; }
    .poem-writer input[type=range] { border: 0; background: transparent; accent-color: var(--pst-color-primary, #0969da); }
    .poem-writer button { padding: 0.25em 1.2em; font-size: 1em; cursor: pointer; }
    .poem-writer :focus-visible { outline: 2px solid var(--pst-color-primary, #0969da); outline-offset: 2px; }
    .poem-writer output { font-variant-numeric: tabular-nums; min-width: 2.6em; }
    .poem-writer .pw-status { color: var(--pst-color-text-muted, #57606a); font-size: 0.85em; margin: 0.4em 0; }
    .poem-writer .pw-poem { font-size: 1.5em; letter-spacing: 0.08em; line-height: 1.7; margin: 0.4em 0; min-height: 1.7em; overflow-wrap: anywhere; }
    .poem-writer .pw-poem .pw-given { color: var(--pst-color-text-muted, #57606a); }
    .poem-writer .pw-poem .pw-forced { text-decoration: underline; text-underline-offset: 0.2em; }
    .poem-writer .pw-steps { display: grid; grid-template-columns: repeat(auto-fill, minmax(9.5em, 1fr)); gap: 0.5em; padding: 0; margin: 0.5em 0 0; list-style: none; }
    .poem-writer .pw-step { border: 1px solid var(--pst-color-border, #d0d7de); border-radius: 4px; padding: 0.3em 0.5em; font-size: 0.85em; min-width: 0; }
    .poem-writer .pw-step > b { font-size: 1.25em; margin-right: 0.3em; }
    .poem-writer .pw-bar { display: grid; grid-template-columns: minmax(1.3em, auto) 1fr 3.6em; align-items: center; gap: 0.3em; }
    .poem-writer .pw-bar span:nth-child(2) { height: 0.7em; background: var(--pst-color-border, #d0d7de); border-radius: 2px; overflow: hidden; }
    .poem-writer .pw-bar i { display: block; height: 100%; background: var(--pst-color-primary, #0969da); opacity: 0.55; }
    .poem-writer .pw-bar.pw-chosen i { opacity: 1; }
    .poem-writer .pw-bar.pw-chosen { font-weight: 600; }
    .poem-writer .pw-bar span:last-child { text-align: right; font-variant-numeric: tabular-nums; }
    .poem-writer .pw-rule { color: var(--pst-color-text-muted, #57606a); font-size: 0.9em; margin: 0.1em 0 0.2em; overflow-wrap: anywhere; }
    .poem-writer select { color: inherit; background: var(--pst-color-background, #fff); border: 1px solid var(--pst-color-border, #8c959f); border-radius: 4px; max-width: 100%; }`;

  const percent = (p) => (p >= 0.9995 ? "100%" : p < 0.0005 ? "<0.1%" : `${(100 * p).toFixed(1)}%`);

  function stepCard(step, index) {
    const item = document.createElement("li");
    item.className = "pw-step";
    const head = document.createElement("b");
    head.textContent = step.char;
    item.append(head, `第 ${index + 1} 字${step.forced ? "（强制）" : ""}`);
    if (step.rule) {
      // 格律这一步要什么、去掉了哪些字（模型原本的概率）
      const note = document.createElement("div");
      note.className = "pw-rule";
      const removed = step.removed.map(([ch, p]) => `${ch} ${percent(p)}`).join("、");
      note.textContent = `格律：${step.rule}；合律的字原本占 ${percent(step.kept)}` + (removed ? `，去掉了 ${removed}……` : "");
      item.append(note);
    }
    for (const [ch, p] of step.topk) {
      const bar = document.createElement("div");
      bar.className = "pw-bar" + (ch === step.char ? " pw-chosen" : "");
      const label = document.createElement("span");
      label.textContent = ch === "<eos>" ? "完" : ch; // <eos>：诗到这里结束
      const track = document.createElement("span");
      const fill = document.createElement("i");
      fill.style.width = `${(100 * p).toFixed(1)}%`;
      track.append(fill);
      const value = document.createElement("span");
      value.textContent = percent(p);
      bar.append(label, track, value);
      bar.title = `${ch === "<eos>" ? "<eos>（结束）" : ch}：${p.toFixed(4)}`;
      item.append(bar);
    }
    return item;
  }

  function setUp(root) {
    if (!document.getElementById("pw-style")) {
      document.head.append(Object.assign(document.createElement("style"), { id: "pw-style", textContent: STYLE }));
    }
    const $ = (selector) => root.querySelector(selector);
    const input = $(".pw-input");
    const button = $(".pw-run");
    const status = $(".pw-status");
    const poem = $(".pw-poem");
    const list = $(".pw-steps");
    const sliders = ["temperature", "top_k", "top_p"].map((name) => [name, $(`.pw-${name}`)]);
    const show = () => {
      for (const [name, slider] of sliders) {
        const out = root.querySelector(`output[for="${slider.id}"]`);
        const value = Number(slider.value);
        out.value = name === "top_k" && value === 0 ? "不限" : name === "top_p" && value === 1 ? "不限" : slider.value;
      }
      const greedy = $(".pw-greedy").checked;
      for (const [, slider] of sliders) slider.disabled = greedy;
      $(".pw-seed").disabled = greedy;
    };
    root.addEventListener("input", show);
    show();
    const options = () => {
      const acrosticMode = $(".pw-mode-acrostic").checked;
      const text = input.value.trim();
      const topK = Number($(".pw-top_k").value);
      const topP = Number($(".pw-top_p").value);
      return {
        prefix: acrosticMode ? "" : text,
        acrostic: acrosticMode ? text : null,
        temperature: Number($(".pw-temperature").value),
        top_k: topK === 0 ? null : topK,
        top_p: topP === 1 ? null : topP,
        seed: Math.trunc(Number($(".pw-seed").value) || 0),
        greedy: $(".pw-greedy").checked,
        form: $(".pw-form").value || null,
        rhyme: $(".pw-rhyme").value || null,
      };
    };
    // 选了体裁才下载平水韵（meter.json），并把韵部填进下拉框
    const formSelect = $(".pw-form");
    const rhymeSelect = $(".pw-rhyme");
    formSelect.addEventListener("change", async () => {
      rhymeSelect.disabled = !formSelect.value;
      if (!formSelect.value || rhymeSelect.options.length > 1) return;
      try {
        status.textContent = "正在下载平水韵……";
        const meter = await loadMeter(root, await load(root));
        for (const name of meter.groupNames) rhymeSelect.append(new Option(name, name));
        status.textContent = `平水韵：${meter.groupNames.length} 个平声韵部。`;
      } catch (err) {
        console.warn("poem writer: the rhyme table did not load", err);
        status.textContent = "平水韵没能加载：请通过 http 访问本站";
      }
    });
    let busy = false;
    const run = async () => {
      if (busy) return;
      busy = true;
      button.disabled = true; // 文本框照样可以聚焦、可以改
      root.dataset.state = "busy";
      poem.replaceChildren();
      list.replaceChildren();
      let model;
      try {
        if (!loading) status.textContent = "正在下载模型……";
        model = await load(root);
      } catch (err) {
        console.warn("poem writer: the model did not load", err);
        status.textContent = "模型没能加载：从 file:// 打开时浏览器不允许读取模型文件，请通过 http 访问本站（详细原因见浏览器的控制台）";
        root.dataset.state = "error";
        button.disabled = false;
        busy = false;
        return;
      }
      const chosen = options();
      const given = document.createElement("span");
      given.className = "pw-given";
      given.textContent = chosen.prefix;
      poem.append(given);
      const started = performance.now();
      let count = 0;
      try {
        const meter = chosen.form ? await loadMeter(root, model) : null;
        await writePoem(model, chosen, async (step) => {
          const ch = document.createElement("span");
          ch.textContent = step.char;
          if (step.forced) ch.className = "pw-forced";
          poem.append(ch);
          list.append(stepCard(step, count));
          count += 1;
          await new Promise((resolve) => setTimeout(resolve, 0)); // 让浏览器把这个字画出来
        }, meter);
        const mb = (model.bytes / 1e6).toFixed(1);
        status.textContent = `写了 ${count} 个字，在本页算完（本书自己的 JavaScript 前向），用时 ${((performance.now() - started) / 1000).toFixed(2)} 秒` +
          (model.bytes ? `（模型共下载 ${mb} MB，之后不再下载）` : "");
        root.dataset.state = "done";
      } catch (err) {
        poem.replaceChildren();
        list.replaceChildren();
        status.textContent = err.message;
        root.dataset.state = "error";
      }
      button.disabled = false;
      busy = false;
    };
    button.addEventListener("click", run);
    input.addEventListener("keydown", (e) => e.key === "Enter" && run());
    $(".pw-mode-acrostic").addEventListener("change", () => {
      if (!input.value || input.value === input.dataset.prefix) input.value = input.dataset.acrostic;
    });
    $(".pw-mode-prefix").addEventListener("change", () => {
      if (!input.value || input.value === input.dataset.acrostic) input.value = input.dataset.prefix;
    });
  }

  /** 页面级接口（测试用）：不动页面，只写诗。第一次调用时加载模型。 */
  window.tinyformerPoem = async (options) => {
    const root = document.querySelector(".poem-writer");
    const model = await load(root);
    const meter = options.form ? await loadMeter(root, model) : null;
    const { text, steps } = await writePoem(model, options, null, meter);
    return { text, steps: steps.map(({ char, topk, support, rule, kept }) => ({ char, topk, support, rule, kept })) };
  };

  const start = () => document.querySelectorAll(".poem-writer").forEach(setUp);
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", start);
  else start();
})();
