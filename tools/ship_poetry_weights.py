"""重新生成随包发布的写诗模型（见 ``tinyformer.poetry.pretrained``）。

    .venv/bin/python -m tools.ship_poetry_weights

运行一次 :data:`COMMAND`（单线程，CPU），把命令、它最后打印的那行 JSON 指标、torch 版本、日期、CPU
写进 ``src/tinyformer/poetry/weights/poetry.json``。这台 2 核、与别的任务共用的机器上约 20–25 分钟。
"""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
import time
from importlib.metadata import version
from pathlib import Path

from tinyformer.atomic import atomic_write
from tools.execute_notebooks import cpu_model

ROOT = Path(__file__).resolve().parents[1]
WEIGHTS = Path("src") / "tinyformer" / "poetry" / "weights"
COMMAND = [
    "python", "-m", "tinyformer.poetry", "train", "--steps", "1200", "--seed", "0",
    "--batch-size", "64", "--lr", "3e-3", "--d-model", "128", "--layers", "4", "--threads", "1",
    "--out", (WEIGHTS / "poetry.safetensors").as_posix(),
]  # fmt: skip


def main() -> None:
    print("+", " ".join(COMMAND), flush=True)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, *COMMAND[1:]], cwd=ROOT, check=True, stdout=subprocess.PIPE, text=True
    )
    metrics = json.loads(done.stdout.strip().splitlines()[-1])
    record = {
        "command": " ".join(COMMAND),
        "wall_seconds": round(time.perf_counter() - started, 1),
        "torch": version("torch"),
        "date": datetime.datetime.now(datetime.UTC).date().isoformat(),
        "cpu": cpu_model(),
        "metrics": metrics,
    }
    text = json.dumps(record, indent=1, ensure_ascii=False, sort_keys=True) + "\n"
    with atomic_write(ROOT / WEIGHTS / "poetry.json") as file:
        file.write(text.encode("utf-8"))
    print(text)


if __name__ == "__main__":
    main()
