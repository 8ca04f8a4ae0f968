"""单元测试用一个线程：测试里的张量都很小，多线程只带来调度开销，机器忙时尤其明显。"""

import torch

torch.set_num_threads(1)
