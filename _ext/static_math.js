// 构建时排版公式（_ext/static_math.py 启动它）：每行读一页的公式 {"fontURL": ..., "formulas": [[TeX, 行间?], ...]}，
// 每行写回 {"html": [...], "css": ...} 或 {"error": ...}。与网页原来加载的是同一个 MathJax 3.2.2（npm 包 mathjax-full），
// 同样的 CHTML 输出、同样的字体；每个公式带一份 MathML 给读屏软件（assistive-mml，MathJax 菜单默认打开的那一项）。
"use strict";
const readline = require("readline");
const {mathjax} = require("mathjax-full/js/mathjax.js");
const {TeX} = require("mathjax-full/js/input/tex.js");
const {AllPackages} = require("mathjax-full/js/input/tex/AllPackages.js");
const {CHTML} = require("mathjax-full/js/output/chtml.js");
const {liteAdaptor} = require("mathjax-full/js/adaptors/liteAdaptor.js");
const {RegisterHTMLHandler} = require("mathjax-full/js/handlers/html.js");
const {AssistiveMmlHandler} = require("mathjax-full/js/a11y/assistive-mml.js");

const adaptor = liteAdaptor();
AssistiveMmlHandler(RegisterHTMLHandler(adaptor));

function typeset(page) {
  // 每页一个文档：一页里 \newcommand 定义的宏在这一页后面的公式里可用（和网页上一样），样式表只含这一页用到的字形
  const tex = new TeX({
    packages: AllPackages.filter((name) => name !== "noundefined"),  // 未定义的命令也是错误
    formatError: (jax, err) => { throw err; },  // 错误的 TeX 让构建失败，而不是在网页上显示红字
  });
  const doc = mathjax.document("", {InputJax: tex, OutputJax: new CHTML({fontURL: page.fontURL})});
  const html = page.formulas.map(([source, display], i) => {
    try {
      const html = adaptor.outerHTML(doc.convert(source, {display, em: 16, ex: 8, containerWidth: 80 * 16}));
      if (html.includes("<mjx-merror")) throw new Error("MathJax 排成了错误提示");
      return html;
    } catch (err) {
      throw new Error(`公式 ${JSON.stringify(source)}：${err.message}`);
    }
  });
  const css = adaptor.textContent(doc.outputJax.styleSheet(doc))
    .replace(/\s*\n\s*/g, "")  // 每条规则一行写完（原样是排好版的，约大一倍）
    // 字体到之前先用本机字体画出公式（字形的宽高由样式表定好，换字体时版面不动），不让整段文字等字体（LCP）
    .replace(/@font-face( \/\* \d+ \*\/)? \{/g, "$&font-display: swap;");
  return {html, css};
}

readline.createInterface({input: process.stdin}).on("line", (line) => {
  let reply;
  try {
    reply = typeset(JSON.parse(line));
  } catch (err) {
    reply = {error: err.message};
  }
  process.stdout.write(JSON.stringify(reply) + "\n");
});
