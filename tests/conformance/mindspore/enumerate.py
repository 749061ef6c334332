# Ported from mindspore-ai/mindspore: tests/ut/python/graph_syntax/python_builtin_functions/test_enumerate.py
# at commit 243e14fb17edbc531f8583152f59ca5119752e0b.
# Copyright 2020 Huawei Technologies Co., Ltd. Licensed under the Apache License, Version 2.0.
# Changes, API spellings only: mindspore.nn.Cell -> torch.nn.Module, `construct` -> `forward`; each `Net` class
# nested in a test function is lifted to module level under its test's name (`test_enumerate_list_const` ->
# `EnumerateListConst`), its body unchanged; Tensor(np.arange(n).reshape(s)) -> torch.arange(n).reshape(s).
# The test functions' calls and asserts are the CASES at the end; the two tests that check MindSpore's own
# errors or its numpy fallback are not ported.
""" test enumerate"""
import torch
import torch.nn as nn


class EnumerateListConst(nn.Module):
    def __init__(self):
        super(EnumerateListConst, self).__init__()
        self.value = [11, 22, 33, 44]

    def forward(self):
        index_sum = 0
        value_sum = 0
        for i, j in enumerate(self.value):
            index_sum += i
            value_sum += j
        return index_sum, value_sum


class EnumerateTupleConst(nn.Module):
    def __init__(self):
        super(EnumerateTupleConst, self).__init__()
        self.value = (11, 22, 33, 44)

    def forward(self):
        index_sum = 0
        value_sum = 0
        for i, j in enumerate(self.value):
            index_sum += i
            value_sum += j
        return index_sum, value_sum


class EnumerateListParameter(nn.Module):
    def __init__(self):
        super(EnumerateListParameter, self).__init__()

    def forward(self, x, y):
        index_sum = 0
        value = [x, y]
        ret = ()
        for i, j in enumerate(value):
            index_sum += i
            ret += (j,)
        return index_sum, ret


class EnumerateTupleParameter(nn.Module):
    def __init__(self):
        super(EnumerateTupleParameter, self).__init__()

    def forward(self, x, y):
        index_sum = 0
        value = (x, y)
        ret = ()
        for i, j in enumerate(value):
            index_sum += i
            ret += (j,)
        return index_sum, ret


class EnumerateTensorParameter(nn.Module):
    def __init__(self):
        super(EnumerateTensorParameter, self).__init__()

    def forward(self, x):
        index_sum = 0
        ret = ()
        for i, j in enumerate(x):
            index_sum += i
            ret += (j,)
        return index_sum, ret


class EnumerateTupleConst1(nn.Module):
    def __init__(self):
        super(EnumerateTupleConst1, self).__init__()
        self.value = (11, 22, 33, 44)

    def forward(self):
        index_sum = 0
        value_sum = 0
        for i in enumerate(self.value):
            index_sum += i[0]
            value_sum += i[1]
        return index_sum, value_sum


class EnumerateTensorConst1(nn.Module):
    def __init__(self):
        super(EnumerateTensorConst1, self).__init__()
        self.value = torch.arange(2*3).reshape(2, 3)

    def forward(self):
        index_sum = 0
        ret = ()
        for i in enumerate(self.value):
            index_sum += i[0]
            ret += (i[1],)
        return index_sum, ret


class EnumerateTupleParameter1(nn.Module):
    def __init__(self):
        super(EnumerateTupleParameter1, self).__init__()

    def forward(self, x, y):
        index_sum = 0
        value = (x, y)
        ret = ()
        for i in enumerate(value):
            index_sum += i[0]
            ret += (i[1],)
        return index_sum, ret


class EnumerateTensorParameter1(nn.Module):
    def __init__(self):
        super(EnumerateTensorParameter1, self).__init__()

    def forward(self, x):
        index_sum = 0
        ret = ()
        for i in enumerate(x):
            index_sum += i[0]
            ret += (i[1],)
        return index_sum, ret


class EnumerateTupleConst2(nn.Module):
    def __init__(self):
        super(EnumerateTupleConst2, self).__init__()
        self.value = (11, 22, 33, 44)

    def forward(self):
        index_sum = 0
        value_sum = 0
        for i in enumerate(self.value, 1):
            index_sum += i[0]
            value_sum += i[1]
        return index_sum, value_sum


class EnumerateTensorConst2(nn.Module):
    def __init__(self):
        super(EnumerateTensorConst2, self).__init__()
        self.value = torch.arange(2 * 3).reshape(2, 3)

    def forward(self):
        index_sum = 0
        ret = ()
        for i in enumerate(self.value, 1):
            index_sum += i[0]
            ret += (i[1],)
        return index_sum, ret


class EnumerateTupleParameter2(nn.Module):
    def __init__(self):
        super(EnumerateTupleParameter2, self).__init__()

    def forward(self, x, y):
        index_sum = 0
        value = (x, y)
        ret = ()
        for i in enumerate(value, 1):
            index_sum += i[0]
            ret += (i[1],)
        return index_sum, ret


class EnumerateTensorParameter2(nn.Module):
    def __init__(self):
        super(EnumerateTensorParameter2, self).__init__()

    def forward(self, x):
        index_sum = 0
        ret = ()
        for i, j in enumerate(x, 1):
            index_sum += i
            ret += (j,)
        return index_sum, ret


# ---- The corpus's cases (ours): the test functions' inputs. ----
from cases import A, case  # noqa: E402

_X4 = torch.arange(4)
_M23 = torch.arange(2 * 3).reshape(2, 3)
CASES = (
    case(EnumerateListConst, A()),
    case(EnumerateTupleConst, A()),
    case(EnumerateListParameter, A(_X4, _X4)),
    case(EnumerateTupleParameter, A(_X4, _X4)),
    case(EnumerateTensorParameter, _M23, jit=True),
    case(EnumerateTupleConst1, A()),
    case(EnumerateTensorConst1, A()),
    case(EnumerateTupleParameter1, A(_X4, _X4)),
    case(EnumerateTensorParameter1, _M23),
    case(EnumerateTupleConst2, A()),
    case(EnumerateTensorConst2, A()),
    case(EnumerateTupleParameter2, A(_X4, _X4)),
    case(EnumerateTensorParameter2, _M23),
)
