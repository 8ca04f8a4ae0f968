"""重新生成随包发布的写诗模型（见 ``tinyformer.poetry.pretrained``）。

    .venv/bin/python -m tools.ship_poetry_weights

运行一次 :data:`COMMAND`（单线程，CPU），再运行 :data:`EVALUATE`（默认采样设置下写 100 首诗，
量形状、抄袭率、格律），把两条命令、它们最后打印的那行 JSON、torch 版本、日期、CPU 写进
``src/tinyformer/poetry/weights/poetry.json``。这台 2 核、与别的任务共用的机器上约 20–30 分钟（测试要求训练不超过 30 分钟）。
``--evaluate-only`` 只重跑评估（权重和训练的记录不变）。
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from tools.records import last_json, machine, write_json

ROOT = Path(__file__).resolve().parents[1]
WEIGHTS = Path("src") / "tinyformer" / "poetry" / "weights"
COMMAND = [
    "python", "-m", "tinyformer.poetry", "train", "--steps", "1800", "--seed", "0",
    "--batch-size", "64", "--lr", "3e-3", "--muon-lr", "0.02", "--d-model", "128", "--layers", "4",
    "--threads", "1",
    "--out", (WEIGHTS / "poetry.safetensors").as_posix(),
]  # fmt: skip
EVALUATE = ["python", "-m", "tinyformer.poetry", "evaluate", "--model", COMMAND[-1]]


def main() -> None:
    path = ROOT / WEIGHTS / "poetry.json"
    if "--evaluate-only" in sys.argv[1:]:
        record = json.loads(path.read_text(encoding="utf-8"))
    else:
        started = time.perf_counter()
        metrics = last_json(COMMAND)
        record = {
            "command": " ".join(COMMAND),
            "wall_seconds": round(time.perf_counter() - started, 1),
            **machine(),
            "metrics": metrics,
        }
    record["evaluate_command"] = " ".join(EVALUATE)
    record["evaluate"] = last_json(EVALUATE)
    print(write_json(path, record))


if __name__ == "__main__":
    main()
