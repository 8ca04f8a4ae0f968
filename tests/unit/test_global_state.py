"""导入本包的任何模块都不改变全局状态（issue 14、28）。

从前 ``translation.py`` 在导入时调用 ``jieba.suggest_freq(..., tune=True)``，改了 jieba 的全局词典：
翻译器能不能把“不”“没”切开，取决于某处有没有导入一个看起来无关的模块；从前导入
``tinyformer.book.plotting`` 就改了 matplotlib 的 ``font.family`` 等三项。所以在子进程里，每个模块
（pkgutil 遍历整个包）都当一次"第一个导入的"，再倒序导入其余全部，每一步都与导入前的 ``snapshot()``
比较；分词、用固定种子建模型和训练的函数也不碰全局状态。
"""

import json
import pkgutil
import subprocess
import sys
import textwrap

import tinyformer

MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(tinyformer.__path__, prefix="tinyformer.")
    if not info.name.rpartition(".")[2].startswith("__")
)

SNAPSHOT = textwrap.dedent(
    """
    import importlib, json, logging, pickle, random, sys
    import altair as alt
    import matplotlib
    import numpy as np
    import torch
    import jieba
    from jieba import finalseg
    from matplotlib import font_manager

    def snapshot():
        return {
            "jieba.dt.initialized": jieba.dt.initialized,
            "jieba.dt.FREQ": len(jieba.dt.FREQ),
            "jieba.dt.total": jieba.dt.total,
            "finalseg.Force_Split_Words": sorted(finalseg.Force_Split_Words),
            "jieba log level": jieba.default_logger.level,
            "torch rng": torch.get_rng_state().tolist(),
            "python random": pickle.dumps(random.getstate()).hex(),
            "numpy random": pickle.dumps(np.random.get_state()).hex(),
            "altair renderer": alt.renderers.active,
            "altair renderers": sorted(alt.renderers.names()),
            # dict 的方法读原值：RcParams["backend"] 会顺手选定后端，读它本身就是一次改动
            **{f"rcParams[{k!r}]": repr(v) for k, v in dict.items(matplotlib.rcParams)},
            "matplotlib backend": repr(dict.__getitem__(matplotlib.rcParams, "backend")),
            "pyplot backend module": repr(getattr(sys.modules.get("matplotlib.pyplot"),
                                                  "_backend_mod", None)),
            "matplotlib fonts": len(font_manager.fontManager.ttflist),
        }

    def changes(before):
        after = snapshot()
        return sorted(key for key in before.keys() | after.keys()
                      if before.get(key) != after.get(key))
    """
)

IMPORT_IN_EVERY_POSITION = SNAPSHOT + textwrap.dedent(
    """
    modules = json.loads(sys.argv[1])
    before = snapshot()
    problems = []
    for first in modules:
        for name in [m for m in sys.modules if m == "tinyformer" or m.startswith("tinyformer.")]:
            del sys.modules[name]
        for name in [first] + [m for m in reversed(modules) if m != first]:
            importlib.import_module(name)
            changed = changes(before)
            if changed:
                problems.append(f"importing {name} (after {first}) changed {changed}")
                before = snapshot()
    print(json.dumps(problems))
    """
)

TOKENIZE = SNAPSHOT + textwrap.dedent(
    """
    before = snapshot()
    from tinyformer import tokenize_zh
    from tinyformer.translation.corpus import corpus_tokenizer
    split = corpus_tokenizer("他明天不去北京。")
    plain = tokenize_zh("他明天不去北京。")
    changed = changes(before)
    with_jieba = jieba.lcut("他明天不去北京。")
    print(json.dumps({"changed": changed, "split": split, "plain": plain, "jieba": with_jieba}))
    """
)


def run_python(code: str, *args: str) -> object:
    result = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_importing_any_module_in_any_position_changes_no_global_state():
    assert {
        "tinyformer.translation.corpus",
        "tinyformer.translation.cli",
        "tinyformer.book.plotting",
    } <= set(MODULES)
    assert run_python(IMPORT_IN_EVERY_POSITION, json.dumps(MODULES)) == []


def test_tokenizing_leaves_jieba_global_dictionary_alone():
    out = run_python(TOKENIZE)
    assert out["changed"] == []
    assert out["split"] == ["他", "明天", "不", "去", "北京", "。"]
    # 通用的 tokenize_zh 与 jieba 自己的全局词典给出同样的切分：“不去”没有被本包改掉
    assert out["plain"] == out["jieba"] == ["他", "明天", "不去", "北京", "。"]


def test_seeded_functions_leave_the_global_random_state_alone(monkeypatch):
    import altair as alt
    import torch

    from tests.kit import TINY_SRC_VOCAB, TINY_TGT_VOCAB, tiny_transformer
    from tinyformer.book import explorers
    from tinyformer.translation.training import train
    from tinyformer.translation.translator import new_translator

    shown = []
    monkeypatch.setattr("IPython.display.display", lambda obj, raw: shown.append(obj))
    torch.manual_seed(1234)
    state, renderer = torch.get_rng_state(), alt.renderers.active
    explorers.dependency_data(lengths=(4,), scales=(0.9,))
    explorers.layer_norm_gradient_data(depths=(1,))
    explorers.show(explorers.encoder_decoder_explorer())
    new_translator(TINY_SRC_VOCAB, TINY_TGT_VOCAB, seed=3, d_model=16, d_ff=32)
    assert torch.equal(torch.get_rng_state(), state)
    examples = [([i + 4], [1, i + 4, 2]) for i in range(8)]  # 1、2 是 <bos>、<eos>
    models = [tiny_transformer(dropout=0.1) for _ in range(3)]  # 工厂自己固定种子，所以先建好
    state = torch.get_rng_state()
    for seed, model in zip((0, 0, 1), models, strict=True):
        train(model, examples, max_steps=2, batch_size=4, warmup=1, progress=False, seed=seed)
    trained = [model.output.weight.detach() for model in models]
    assert torch.equal(torch.get_rng_state(), state)
    assert alt.renderers.active == renderer and "tinyformer" not in alt.renderers.names()
    assert len(shown) == 1
    # 同一个种子结果相同、换种子结果不同：种子确实用上了（而不是把全局随机数原样跳过）
    assert torch.equal(trained[0], trained[1]) and not torch.equal(trained[0], trained[2])
