# Ported from mindspore-ai/mindspore: tests/ut/python/graph_syntax/control_flow/test_cont_break.py
# at commit dbc9bddf35269a0042d136436b8642de5c8c25de.
# Copyright 2020 Huawei Technologies Co., Ltd. Licensed under the Apache License, Version 2.0.
# Changes, API spellings only: `from mindspore.nn import Cell` -> `from torch.nn import Module as Cell`, each
# `construct` -> `forward`; MindSpore's Tensor(np.random.randn(2, 3)) inputs -> torch.randn(2, 3). The
# run_test driver and the test functions are not ported: their inputs are the CASES at the end.
""" test_cont_break """
import torch
from torch.nn import Module as Cell


# pylint: disable=unnecessary-pass
class for_loop_with_break(Cell):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        for i in range(8):
            if i > 5:
                x *= 3
                break
            x = x * 2
            pass
        return x


class for_loop_with_continue(Cell):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        for i in range(8):
            if i > 5:
                x *= 3
                continue
            x = x * 2
        return x


# pylint: disable=unnecessary-pass
class for_loop_with_cont_break(Cell):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        for i in range(8):
            if i < 3:
                i *= 2
                continue
            if i > 5:
                x *= 3
                break
            x = x * 2
            pass
        return x


class for_nested_loop_with_break(Cell):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        for i in range(3):
            for j in range(5):
                if j > 3:
                    x *= 2
                    break
                x = x * 1.5
        return x


class while_with_break(Cell):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        i = 0
        while i < 5:
            if i > 3:
                x *= 2
                break
            x = x * 1.5
            i += 1
        return x


class while_with_continue(Cell):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        i = 0
        while i < 5:
            if i > 3:
                x *= 2
                i += 1
                continue
            x = x * 1.5
            i += 1
        return x


class while_for_nested(Cell):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        i = 0
        while i < 5:
            if i > 3:
                for j in range(3):
                    if j > 1:
                        break
                    x *= 2
                i += 1
                continue
            x = x * 1.5
            i += 1
        return x


class pass_branch(Cell):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        i = 0
        while i < 5:
            if i > 3:
                pass
            else:
                x = x * 1.5
            i += 1
        return x


# ---- The corpus's cases (ours): run_test's inputs. ----
from cases import case  # noqa: E402

torch.manual_seed(0)
_X = tuple(torch.randn(2, 3) for _ in range(3))
CASES = tuple(case(net, *_X, jit=net is while_for_nested) for net in (
    for_loop_with_break, for_loop_with_continue, for_loop_with_cont_break, for_nested_loop_with_break,
    while_with_break, while_with_continue, while_for_nested, pass_branch))
