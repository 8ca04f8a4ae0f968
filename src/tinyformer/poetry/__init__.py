"""在全唐诗上预训练一个 GPT（“只有解码器”一章的应用层）。

- :mod:`~tinyformer.poetry.corpus`：随包发布的语料（近体诗，简体）、字表、单字与二元基线；
- :mod:`~tinyformer.poetry.training`：批、学习率、每字比特数、训练循环（可用 ``torchrun`` 多进程）；
- :mod:`~tinyformer.poetry.sampling`：温度、top-k、top-p 采样，藏头诗，键/值缓存；
- :mod:`~tinyformer.poetry.evaluation`：形状、抄袭率、押韵率；
- :mod:`~tinyformer.poetry.checkpoint`、:mod:`~tinyformer.poetry.pretrained`：权重文件与随包发布的模型；
- :mod:`~tinyformer.poetry.cli`：``python -m tinyformer.poetry {train,generate,evaluate}``。

它只导入模型核心（``tinyformer``），不导入 ``tinyformer.translation`` 与 ``tinyformer.book``。
"""
