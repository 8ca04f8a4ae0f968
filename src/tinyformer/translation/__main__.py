"""``python -m tinyformer.translation {train,translate} ...``：命令行，见 :mod:`tinyformer.translation.cli`。"""

import sys

from .cli import main, run

if __name__ == "__main__":
    sys.exit(run(main))
