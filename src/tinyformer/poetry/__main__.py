"""``python -m tinyformer.poetry {train,generate,evaluate} ...``：命令行，见 :mod:`tinyformer.poetry.cli`。"""

import sys

from .cli import run

if __name__ == "__main__":
    sys.exit(run())
