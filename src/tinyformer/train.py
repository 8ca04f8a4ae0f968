"""``python -m tinyformer.train ...`` = ``python -m tinyformer.cli train ...``（“完整模型”一章“命令行”一节）。

    python -m tinyformer.train --seconds 120 --out runs/zh_en.pt
    python -m tinyformer.train --steps 600 --seed 1

实现和参数说明都在 :mod:`tinyformer.cli`；这里只是让这条写在书里的命令继续可用。
"""

import sys

from .cli import run, train_main

if __name__ == "__main__":
    sys.exit(run(train_main))
