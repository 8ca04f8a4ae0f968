/*
 * 搜索页的中文分词、排序与摘要（_ext/search_dict.py 把它连同术语词典写进 language_data.js）。
 *
 * 1. 分词。Sphinx 的 searchtools.js 只按空白和标点切查询，“位置编码的公式”是一个词，索引里没有。
 *    这里按正向最大匹配切汉字串：词典是术语表生成的 jieba 用户词典（索引正是用它切的），加上索引
 *    本身的键（jieba 切出的其余的词，例如“公式”）；匹配不上的单字丢掉（索引里没有单字）。
 *    searchtools.js 要求结果页含有查询的每一个词，所以只保留能与前面的词同时出现在某一页里的词：
 *    术语优先，其余的词（“公式”“区别”）能缩小范围时才加，永远不会把结果缩成空。
 * 2. 排序。讲一个术语的章节排在术语表、符号表这些附录前面：附录页的分数减去一个常数。
 * 3. 摘要。摘要取自结果页的 HTML，行内公式在那里还是 TeX 源码（\(d_\text{model}\)）；
 *    这里先把公式换成读得懂的纯文本（d_model），去掉页面的按钮、打印用的目录、代码与输出，
 *    并把连续的空白并成一个空格，摘要就是一段正文。
 *
 * 第 1 条在 Node 里由 tests/book/test_search_index.py 运行，第 1–3 条由 tests/book/test_browser.py 在浏览器里检查。
 */

var TINYFORMER_DICTIONARY = new Set(/*DICTIONARY*/ []);
var TINYFORMER_MAX_WORD = 12;
var TINYFORMER_HAN = /[\u3400-\u4dbf\u4e00-\u9fff]/;

/** 一个词在哪些页面里（正文或标题）；索引还没加载时为 null。 */
function tinyformerPagesWith(word) {
  const index = typeof Search !== "undefined" ? Search._index : null;
  if (!index) return null;
  const pages = new Set();
  for (const key of ["terms", "titleterms"]) {
    const files = index[key][word];
    if (files === undefined) continue;
    (Array.isArray(files) ? files : [files]).forEach((f) => pages.add(f));
  }
  return pages;
}

/** 正向最大匹配：在词典或索引里的最长的词；一个字也匹配不上时跳过这个字。 */
function tinyformerSegmentHan(text) {
  const words = [];
  let i = 0;
  while (i < text.length) {
    let length = Math.min(TINYFORMER_MAX_WORD, text.length - i);
    for (; length > 1; length--) {
      const word = text.substr(i, length);
      const pages = tinyformerPagesWith(word);
      if (TINYFORMER_DICTIONARY.has(word) || (pages && pages.size)) break;
    }
    if (length > 1) words.push(text.substr(i, length));
    i += Math.max(length, 1);
  }
  return words;
}

/** 术语在前；其余的词只在与已选的词还能同时出现在某一页里时才保留。 */
function tinyformerKeepMatchable(words) {
  const ordered = [
    ...words.filter((w) => TINYFORMER_DICTIONARY.has(w)),
    ...words.filter((w) => !TINYFORMER_DICTIONARY.has(w)),
  ];
  const kept = [];
  let common = null;
  for (const word of ordered) {
    if (kept.includes(word)) continue;
    const pages = tinyformerPagesWith(word);
    if (pages === null) {
      kept.push(word); // 索引还没加载：只按词典切
      continue;
    }
    const both = common === null ? pages : new Set([...pages].filter((p) => common.has(p)));
    if (both.size) {
      kept.push(word);
      common = both;
    }
  }
  return kept;
}

var splitQuery = (query) => {
  const parts = query
    .split(/[^\p{Letter}\p{Number}_\p{Emoji_Presentation}]+/gu)
    .filter((term) => term);
  const terms = [];
  for (const part of parts) {
    // 汉字串与其他字符（英文、数字）分开
    for (const run of part.match(/[\u3400-\u4dbf\u4e00-\u9fff]+|[^\u3400-\u4dbf\u4e00-\u9fff]+/g)) {
      if (TINYFORMER_HAN.test(run)) terms.push(...tinyformerKeepMatchable(tinyformerSegmentHan(run)));
      else terms.push(run);
    }
  }
  return terms;
};

/* 附录（术语表、符号表……）排在讲这个词的章节后面。Scorer 的其余字段与 Sphinx 7.4 的默认值相同。 */
var Scorer = {
  score: (result) => {
    const [docname, , , , score] = result;
    return docname.startsWith("chapters/appendix_") ? score - 1000 : score;
  },
  objNameMatch: 11,
  objPartialMatch: 6,
  objPrio: { 0: 15, 1: 5, 2: -5 },
  objPrioDefault: 0,
  title: 15,
  partialTitle: 7,
  term: 5,
  partialTerm: 2,
};

/** 一段 TeX 变成纯文本：\text{model} → model，\sqrt{d_k} → √(d_k)，\top → ᵀ，去掉其余命令的反斜杠与花括号。 */
function tinyformerTexToText(tex) {
  const symbols = {
    top: "ᵀ", cdot: "·", times: "×", infty: "∞", sum: "∑", prod: "∏", in: "∈", le: "≤", leq: "≤",
    ge: "≥", geq: "≥", approx: "≈", neq: "≠", ne: "≠", to: "→", rightarrow: "→", odot: "⊙",
    dots: "…", ldots: "…", cdots: "⋯", lVert: "‖", rVert: "‖", Vert: "‖", mid: "|", pm: "±",
    alpha: "α", beta: "β", gamma: "γ", epsilon: "ε", theta: "θ", lambda: "λ", mu: "μ",
    pi: "π", sigma: "σ", omega: "ω", Phi: "Φ", partial: "∂", nabla: "∇", circ: "∘",
  };
  let text = tex.trim().replace(/^(\\\(|\\\[|\$\$?)|(\\\)|\\\]|\$\$?)$/g, "");
  for (let pass = 0; pass < 3; pass++) {
    text = text
      .replace(/\\(?:text|mathrm|operatorname|mathbf|mathcal|mathit|boldsymbol|textrm|mbox)\s*\{([^{}]*)\}/g, "$1")
      .replace(/\\frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}/g, "($1)/($2)")
      .replace(/\\sqrt\s*\{([^{}]*)\}/g, "√($1)");
  }
  return text
    .replace(/\\begin\{[^}]*\}|\\end\{[^}]*\}/g, " ")
    .replace(/\\(?:left|right|big|Big|bigg|Bigg|quad|qquad|displaystyle)\b/g, "")
    .replace(/\\[,;:! ]/g, " ")
    .replace(/\\\\/g, "; ")
    .replace(/\\([A-Za-z]+)/g, (_, name) => symbols[name] ?? name)
    .replace(/[{}&]/g, "")
    .replace(/\s+/g, " ")
    .trim();
}

function tinyformerPatchExcerpts() {
  const htmlToText = Search.htmlToText;
  Search.htmlToText = (htmlString, anchor) => {
    const page = new DOMParser().parseFromString(htmlString, "text/html");
    page
      .querySelectorAll(".bd-header-article, #jb-print-docs-body, .cell_input, .cell_output, pre")
      .forEach((chrome) => chrome.remove());
    page.querySelectorAll(".math").forEach((math) => {
      // 带编号的公式里，编号“(6.1)”和它的链接“#”排在 \[…\] 前面：只留公式本身
      math.querySelectorAll(".eqno, .headerlink").forEach((number) => number.remove());
      math.replaceWith(page.createTextNode(` ${tinyformerTexToText(math.textContent)} `));
    });
    return htmlToText(page.documentElement.outerHTML, anchor).replace(/\s+/g, " ");
  };
}

// 网页上 searchtools.js 先于本文件加载，Search 已经有了；tests/book/test_search_index.py 把两个文件拼成
// 一个脚本在 Node 里运行，那时 Search 还在暂时性死区里，摘要也用不到
try {
  tinyformerPatchExcerpts();
} catch (error) {
  if (!(error instanceof ReferenceError)) throw error;
}
