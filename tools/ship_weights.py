"""重新生成随包发布的第 8 章权重（见 ``tinyformer.translation.pretrained``）。

    .venv/bin/python -m tools.ship_weights

对每个步数运行一次 ``python -m tinyformer.translation train --steps N --seed 0 --out ...``，把命令和它最后打印的
那行 JSON 指标连同 torch 版本、日期、CPU 写进 ``src/tinyformer/translation/weights/zh_en.json``。
重新生成之后要重新执行第 8 章（``python3 tasks.py execute chapters/ch08_translation.ipynb``）。
"""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

from tinyformer.atomic import atomic_write
from tools.execute_notebooks import cpu_model

ROOT = Path(__file__).resolve().parents[1]
WEIGHTS = Path("src") / "tinyformer" / "translation" / "weights"
STEPS = (100, 150, 600)
SEED = 0


def main() -> None:
    runs = {}
    for steps in STEPS:
        out = WEIGHTS / f"zh_en_step{steps}.safetensors"
        command = [
            "python", "-m", "tinyformer.translation", "train",
            "--steps", str(steps), "--seed", str(SEED), "--out", out.as_posix(), "--no-progress",
        ]  # fmt: skip
        print("+", " ".join(command), flush=True)
        done = subprocess.run(
            [sys.executable, *command[1:]], cwd=ROOT, check=True, capture_output=True, text=True
        )
        metrics = json.loads(done.stdout.strip().splitlines()[-1])
        metrics.pop("checkpoint", None)
        runs[str(steps)] = {"command": " ".join(command), "metrics": metrics}
    record = {
        "torch": version("torch"),
        "tinyformer": version("tinyformer"),
        "date": datetime.datetime.now(datetime.UTC).date().isoformat(),
        "cpu": cpu_model(),
        "checkpoints": runs,
    }
    text = json.dumps(record, indent=1, ensure_ascii=False, sort_keys=True) + "\n"
    with atomic_write(ROOT / WEIGHTS / "zh_en.json") as file:  # 打断时旧的来历文件原封不动
        file.write(text.encode("utf-8"))


if __name__ == "__main__":
    main()
