"""重新生成随包发布的第 8 章权重（见 ``tinyformer.translation.pretrained``）。

    .venv/bin/python -m tools.ship_weights

对每个步数运行一次 ``python -m tinyformer.translation train --steps N --seed 0 --out ...``，把命令和它最后打印的
那行 JSON 指标连同 torch 版本、日期、CPU 写进 ``src/tinyformer/translation/weights/zh_en.json``。
重新生成之后要重新执行第 8 章（``python3 tasks.py execute chapters/ch08_translation.ipynb``）。
"""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path

from tools.records import last_json, machine, write_json

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
        metrics = last_json(command)
        metrics.pop("checkpoint", None)
        runs[str(steps)] = {"command": " ".join(command), "metrics": metrics}
    record = {**machine(), "tinyformer": version("tinyformer"), "checkpoints": runs}
    write_json(ROOT / WEIGHTS / "zh_en.json", record)  # 打断时旧的来历文件原封不动


if __name__ == "__main__":
    main()
