# Ported from mindspore-ai/mindspore: tests/ut/python/graph_syntax/list/test_list_pop.py
# at commit 1de6a82d7e276367b1e8864b58b8bfd526787c10.
# Copyright 2022-2023 Huawei Technologies Co., Ltd. Licensed under the Apache License, Version 2.0.
# Changes, API spellings only: `@jit` removed (the corpus applies ta.function); mindspore Tensor(v) ->
# torch.tensor(v), nn.Cell -> torch.nn.Module, `construct` -> `forward`, Tensor(np1, dtype=ms.float32) ->
# torch.randint(6, size, dtype=torch.float32). Each function nested in a test is lifted to module level under its
# test's name (`test_list_pop_1` -> `list_pop_1`), its body unchanged; the tests' calls are the CASES at the end
# (the error-message test of MindSpore's own wording is not ported; its program is, with Python's error).
""" test list pop operation """
import torch
from torch import nn


def list_pop_1():
    x = [1, 2, 3, 4]
    y = x.pop()
    return x, y


def list_pop_2():
    x = [1, 2, 3, 4]
    y = x.pop(-2)
    return x, y


def list_pop_3():
    x = [1, 2, 3, 4]
    y = x.pop(1)
    return x, y


def list_pop_4():
    x = [1, 2, 3, 4]
    y = x.pop(4)
    return x, y


def list_pop_5():
    x = [1, 2, 3, 4]
    y = x.pop(-5)
    return x, y


def list_pop_6():
    x = []
    y = x.pop()
    return x, y


def list_pop_7():
    x1 = [1, 2, 3, 4]
    x2 = [5, 6, 7, 8]
    y1 = x1.pop(1)
    y2 = x2.pop(2)
    return x1, x2, y1 + y2


def list_pop_8(index):
    x = [torch.tensor([1]), torch.tensor([2]), torch.tensor([3])]
    y = x.pop(index)
    return x, y


def list_pop_9(x, index):
    y = x.pop(index)
    return x, y


def list_pop_type_error():
    x = [1, 2, 3]
    x.pop(1.0)
    return x


class ListPopNoReturn(nn.Module):
    def forward(self, x):
        shp1 = x.shape
        shp1 = list(shp1)
        shp1.insert(2, 3)
        shp1.pop()
        return shp1


# ---- The corpus's cases (ours): the tests' calls. ----
from cases import A, case  # noqa: E402

_TENSORS = [torch.tensor([1]), torch.tensor([2]), torch.tensor([3])]
CASES = (
    case(list_pop_1, A()),
    case(list_pop_2, A()),
    case(list_pop_3, A()),
    case(list_pop_4, A(), raises=True),
    case(list_pop_5, A(), raises=True),
    case(list_pop_6, A(), raises=True),
    case(list_pop_7, A()),
    case(list_pop_8, 2, 0, -1),
    case(list_pop_9, A(_TENSORS, 2), A(_TENSORS, 0)),
    case(list_pop_type_error, A(), raises=True),
    case(ListPopNoReturn, torch.randint(6, (2, 4, 3, 4, 5), dtype=torch.float32)),
)
