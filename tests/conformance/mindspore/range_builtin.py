# Ported from mindspore-ai/mindspore: tests/ut/python/graph_syntax/python_builtin_functions/test_range.py
# at commit 1484a1a6083c9b876e6f49d1f196e00a33a13a4e.
# Copyright 2019 Huawei Technologies Co., Ltd. Licensed under the Apache License, Version 2.0.
# Changes, API spellings only: `@jit()` removed (the corpus applies ta.function); Tensor(np.array(np.ones(s) * v))
# -> torch.ones(s, dtype=torch.float64) * v; P.Transpose()(t, (1, 0)) -> torch.permute(t, (1, 0)); P.ReLU() ->
# torch.nn.ReLU(); nn Cell -> torch.nn.Module, `construct` -> `forward`. Each function nested in a test is
# lifted to module level under its test's name, with the test's local values (batch_size, num_layers, the
# tuples) as module globals; bodies unchanged. The tests' calls are the CASES at the end.
import torch
from torch.nn import Module as Cell

batch_size = 2
num_layers = 5
batch_tuple = tuple(torch.ones((2, 3), dtype=torch.float64) * 0.01 for i in range(batch_size))
layers_tuple = tuple(torch.ones((3, 4), dtype=torch.float64) * 0.02 for i in range(num_layers))
transpose1 = torch.permute


def nest_range_transpose():
    out1 = ()
    for m in range(num_layers):
        out1 += (transpose1(layers_tuple[m], (1, 0)),)
    # Both for loop will the same range symbol as phi node, when range primitive is converted
    # to DoSigature MetaFuncGraph, that MetaFuncGraph will take 2 and 5 as argument, so there is
    # 2 entries in that MetaFuncGraphEvaluator, that will make Specialier try to use ValueAny to
    # FindGeneralized for S-make_range MetaFuncGraph but it will fail as ValueAny is not constant.
    for i in range(batch_size):
        out1 += (transpose1(batch_tuple[i], (1, 0)),)
        for j in range(num_layers):
            out1 += (transpose1(layers_tuple[j], (1, 0)),)
    return out1


def nest_range_simple():
    out1 = ()
    for m in range(num_layers):
        out1 += (layers_tuple[m],)
    for i in range(batch_size):
        out1 += (batch_tuple[i],)
        for j in range(num_layers):
            out1 += (layers_tuple[j],)
    return out1


class ParserRaiseErrorInForCondition(Cell):
    def __init__(self):
        super(ParserRaiseErrorInForCondition, self).__init__()
        self.relu = torch.nn.ReLU()

    def forward(self, x):
        out = x
        for _ in range(x):
            out = self.relu(x)
        return out


def range_with_empty_result():
    a = range(-1)
    return tuple(a)


def range_with_empty_result_2():
    a = range(5, 2)
    return tuple(a)


def range_with_empty_result_3():
    a = range(2, 5, -1)
    return tuple(a)


# ---- The corpus's cases (ours): the tests' calls. ----
from cases import A, case  # noqa: E402

CASES = (
    case(nest_range_transpose, A()),
    case(nest_range_simple, A()),
    case(ParserRaiseErrorInForCondition, torch.rand(2, 3, 4, 5), raises=True),
    case(range_with_empty_result, A()),
    case(range_with_empty_result_2, A()),
    case(range_with_empty_result_3, A()),
)
