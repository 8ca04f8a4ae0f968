"""pre-commit 钩子：去掉笔记本里随执行而变的元数据，但保留输出、标签和控件状态。

去掉的只有两样：单元格的 ``metadata.execution``（``jupyter execute`` 写入的时间戳）和
``metadata.language_info.version``（随机器的 Python 小版本而变）。有改动时改写文件并返回 1，
让 pre-commit 提示重新暂存。
"""

import json
import sys
from pathlib import Path


def clean(nb: dict) -> bool:
    changed = nb.get("metadata", {}).get("language_info", {}).pop("version", None) is not None
    for cell in nb.get("cells", []):
        changed |= cell.get("metadata", {}).pop("execution", None) is not None
    return changed


def main(paths: list[str]) -> int:
    status = 0
    for path in map(Path, paths):
        nb = json.loads(path.read_text(encoding="utf-8"))
        if clean(nb):
            path.write_text(
                json.dumps(nb, sort_keys=True, indent=1, ensure_ascii=False, separators=(",", ": "))
                + "\n",
                encoding="utf-8",
            )
            print(f"cleaned {path}")
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
