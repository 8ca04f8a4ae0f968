"""书与网站的测试共用的 fixture：node 里运行网页脚本。"""

import json
import shutil
import subprocess

import pytest

from tests.kit import ROOT, skip_or_fail

SCRIPTS = ROOT / "_static_ch08" / "live_translator"
# node 里：m 是 live_translator.js（解码、采样、分词……），tf 是 transformer.js（前向、读 safetensors），
# data 是 JSON；body 是一个 async 函数体，return 的值以 JSON 写到 stdout
PROGRAM = """
const fs = require("fs");
const m = require(%(live)s);
const tf = require(%(transformer)s);
const read = (path) => {
  const b = fs.readFileSync(path);
  const { metadata, tensors } = tf.readSafetensors(b.buffer.slice(b.byteOffset, b.byteOffset + b.length));
  return { config: metadata.config, tensors };
};
const data = JSON.parse(fs.readFileSync(0, "utf-8"));
(async () => { %(body)s })().then((r) => process.stdout.write(JSON.stringify(r)), (e) => { console.error(e); process.exit(1); });
"""


@pytest.fixture(scope="session")
def node():
    """``node(body, data)``：在 node 里运行 body（见 PROGRAM），返回它 return 的值。没有 node 时跳过（CI 里失败）。"""
    executable = shutil.which("node")
    if executable is None:
        skip_or_fail("没有 node（Node.js，npm 自带）")

    def run(body: str, data=None):
        program = PROGRAM % {
            "live": json.dumps(str(SCRIPTS / "live_translator.js")),
            "transformer": json.dumps(str(SCRIPTS / "transformer.js")),
            "body": body,
        }
        result = subprocess.run(
            [executable, "-e", program], input=json.dumps(data), capture_output=True, text=True
        )
        assert result.returncode == 0, result.stderr[-3000:]
        return json.loads(result.stdout)

    return run
