# Ported from mindspore-ai/mindspore: tests/ut/python/graph_syntax/control_flow/test_if_function.py
# at commit 780900ae5f432ac1bf3d3b3e25451e9911492a3f.
# Copyright 2020 Huawei Technologies Co., Ltd. Licensed under the Apache License, Version 2.0.
# Changes, API spellings only: mindspore.nn.Cell -> torch.nn.Module, `construct` -> `forward`; the `Net` class
# nested in test_if_function is lifted to module level as `Net` (its body unchanged);
# Tensor(np.ones([1, 2, 3], np.int32)) -> torch.ones([1, 2, 3], dtype=torch.int32) (the inputs).
""" test if function"""
import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self, func):
        super(Net, self).__init__()
        self.func = func

    def forward(self, x, y):
        if self.func:
            return self.func(x, y)
        return x - y


def add(x, y):
    return x + y


# ---- The corpus's cases (ours): the test function's inputs. ----
import functools  # noqa: E402

from cases import A, case  # noqa: E402

_ONES = A(torch.ones([1, 2, 3], dtype=torch.int32), torch.ones([1, 2, 3], dtype=torch.int32))
CASES = (
    case(functools.partial(Net, add), _ONES, name="Net:add", build=True),
    case(functools.partial(Net, None), _ONES, name="Net:None", build=True),
)
