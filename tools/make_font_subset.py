"""重新生成 src/tinyformer/book/fonts/ 里的中文字体子集（维护者用，读者与 CI 不需要运行）。

来源：PyPI 包 ``pylopdf-fonts-zh-cn==0.1.1`` 中的 Noto Sans SC Regular（SIL OFL 1.1）。
做法：用 fontTools 的 subsetter 只保留 ASCII、常用标点、希腊字母与 GB2312 中的全部汉字
（约 7,500 字），文件从 8 MB 降到约 2 MB，足够显示本书图中的中文。

用法::

    pip download --no-deps -d /tmp/font pylopdf-fonts-zh-cn==0.1.1
    python -m tools.make_font_subset /tmp/font/pylopdf_fonts_zh_cn-0.1.1-py3-none-any.whl
"""

import sys
import zipfile
from pathlib import Path

from fontTools import subset

OUT = Path(__file__).resolve().parents[1] / "src" / "tinyformer" / "book" / "fonts"


def gb2312_characters() -> str:
    chars = []
    for high in range(0xA1, 0xF8):
        for low in range(0xA1, 0xFF):
            try:
                chars.append(bytes([high, low]).decode("gb2312"))
            except UnicodeDecodeError:
                pass
    return "".join(chars)


def main(wheel: str) -> None:
    with zipfile.ZipFile(wheel) as zf:
        font_bytes = zf.read("pylopdf_fonts_zh_cn/NotoSansSC-Regular.otf")
        licence = zf.read("pylopdf_fonts_zh_cn-0.1.1.dist-info/licenses/LICENSE")
    src = OUT / "_full.otf"
    src.write_bytes(font_bytes)
    text = "".join(chr(c) for c in range(0x20, 0x7F)) + "·—‘’“”…→←↑↓√×÷≈≤≥∞−" + gb2312_characters()
    options = subset.Options()
    options.layout_features = ["*"]
    options.name_IDs = ["*"]
    options.notdef_outline = True
    font = subset.load_font(str(src), options)
    subsetter = subset.Subsetter(options)
    subsetter.populate(text=text)
    subsetter.subset(font)
    subset.save_font(font, str(OUT / "NotoSansSC-Regular-GB2312.otf"), options)
    src.unlink()
    (OUT / "OFL.txt").write_bytes(licence)


if __name__ == "__main__":
    main(sys.argv[1])
