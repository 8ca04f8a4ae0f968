"""正文引用的数字还在它引用的输出里（issue 51）：笔记本重新执行后，某个数变了而正文没改，是最常见的错。

每一章的 Markdown 里（公式和行内代码除外），每个带小数点的数和每个百分数都要在 **同一章** 某个代码单元格的
源码或保存的输出里逐字出现；论文的节号（§3.4）不算。不是由本章的单元格算出的数（论文、软件版本、文件大小）
写在 :data:`NOT_COMPUTED` 里，各附一句来历。这条规则抓不住“四舍五入之后碰巧还在别处出现”的数，但抓得住
一个数从所有输出里消失。
"""

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "chapters").glob("*.ipynb"))
NUMBER = re.compile(r"(?<![\w.§])(\d+\.\d+|\d+(?:\.\d+)?\s?%)")
# 章 → {正文里的数: 它从哪里来}
NOT_COMPUTED = {
    "appendix_browser": {
        "2.9": "PyTorch 的版本号（2.9 起默认的导出器）",
        "3.6": "onnxruntime-web 的 WebAssembly 文件大小（MB），写在 tools/web_assets.py 的固定版本里",
        "1.4": "半精度权重文件的大小（MB），由 test_live_translator 核对",
    },
    "ch03_positional_encoding": {"0.0625": "float32 在 2^20 附近的间隔 2^-4，由公式得出"},
    "ch04_positional_proofs": {
        "20%": "正文说“20% 以上”，表里是 20.x%–47%",
        "94%": "表里以 0.94x 打印",
        "0.06": "正文说“始终不到 0.06”，图里是最小距离",
    },
    "ch07_encoder_decoder": {"15%": "BERT 论文的掩码比例"},
    "ch11_scale_modern": {"0.73": "Kaplan 等人的 N* ∝ C^a 指数（Pearce 与 Song 2024 的摘要）"},
}


def prose_numbers(cells):
    for cell in cells:
        if cell["cell_type"] == "markdown":
            text = re.sub(r"\$\$.*?\$\$|\$[^$]*\$|`[^`]*`", "", "".join(cell["source"]), flags=re.S)
            for match in NUMBER.finditer(text):
                yield cell.get("id"), match.group(1).replace(" ", "")


def computed_text(cells):
    parts = []
    for cell in cells:
        if cell["cell_type"] == "code":
            parts.append("".join(cell["source"]))
            for output in cell.get("outputs", []):
                parts.append("".join(output.get("text", "")))
                for kind in ("text/plain", "text/html", "text/markdown"):
                    parts.append("".join(output.get("data", {}).get(kind, "")))
    return "".join(parts).replace(" ", "")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_number_quoted_in_prose_is_printed_by_a_cell(path):
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    computed = computed_text(cells)
    allowed = next((v for k, v in NOT_COMPUTED.items() if path.stem.startswith(k)), {})
    missing = [
        (cid, n) for cid, n in prose_numbers(cells) if n not in computed and n not in allowed
    ]
    assert missing == [], (
        f"{path.name}: these numbers appear in no cell's source or output: {missing}"
    )
    unused = [n for n in allowed if n in computed or all(n != q for _, q in prose_numbers(cells))]
    assert unused == [], f"{path.name}: NOT_COMPUTED lists numbers that need no entry: {unused}"
