"""打印 README 中第一个 shell 代码块里的命令（每行一条，去掉注释）。

.ci/run 用它取得“构建”和“测试”两条命令，保证 CI 跑的就是 README 写的，不会各抄一份、渐渐不一致。
块里必须恰好两条命令，否则报错退出。
"""

import re
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def readme_commands() -> list[str]:
    block = re.search(r"```(?:bash|sh|shell)\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    if block is None:
        sys.exit("README.md has no ```bash code block")
    lines = [line.split("#", 1)[0].strip() for line in block.group(1).splitlines()]
    commands = [line for line in lines if line]
    if len(commands) != 2:
        sys.exit(f"README's first shell block must hold exactly two commands, found {commands}")
    return commands


if __name__ == "__main__":
    print("\n".join(readme_commands()))
