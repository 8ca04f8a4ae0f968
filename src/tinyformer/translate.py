"""``python -m tinyformer.translate ...`` = ``python -m tinyformer.cli translate ...``（“完整模型”一章“命令行”一节）。

    python -m tinyformer.translate --model runs/zh_en.pt "我明天在学校看小说。" "他昨天没去北京。"

实现和参数说明都在 :mod:`tinyformer.cli`；这里只是让这条写在书里的命令继续可用。
"""

import sys

from .cli import run, translate_main

if __name__ == "__main__":
    sys.exit(run(translate_main))
