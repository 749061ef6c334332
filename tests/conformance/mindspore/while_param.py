# Ported from mindspore-ai/mindspore: tests/ut/python/graph_syntax/control_flow/test_while_param.py
# at commit 780900ae5f432ac1bf3d3b3e25451e9911492a3f.
# Copyright 2020 Huawei Technologies Co., Ltd. Licensed under the Apache License, Version 2.0.
# Changes, API spellings only: `from mindspore.nn import Cell` / nn.Cell -> torch.nn.Module, each `construct` ->
# `forward`; ms.Parameter(value, name) -> ta.Variable(value, name=name) (a graph-updated state);
# Tensor(v, ms.float32) -> torch.tensor(v, dtype=torch.float32); P.Assign() -> ta.Variable.assign (called as
# assign(var, value), returning the variable); @ms_function removed (the corpus applies ta.function). The test
# functions are not ported: their inputs are the CASES at the end.
""" test_cont_break """
import torch
from torch import nn
from torch.nn import Module as Cell

import torch_autograph as ta


class WhileSubGraphParam(Cell):
    def __init__(self):
        super().__init__()
        self.update = ta.Variable(torch.tensor(1, dtype=torch.float32), name="update")

    def forward(self, x, y, z):
        out1 = z
        while x < y:
            self.update = self.update + 1
            out1 = out1 + 1
            x = x + 1
        return out1, self.update


class WhileSubGraphParam2(Cell):
    def __init__(self):
        super().__init__()
        self.update = ta.Variable(torch.tensor(1, dtype=torch.float32), name="update")

    def forward(self, x, y, z):
        out1 = z
        i = self.update
        while x < y:
            i = i + 1
            out1 = out1 + 1
            x = x + 1
        return out1, self.update


class WhileSubGraphParam3(Cell):
    def __init__(self, initial_input_x):
        super().__init__()
        self.initial_input_x = initial_input_x
        self.X = ta.Variable(initial_input_x, name="parameter_x")
        self.Y = ta.Variable(self.initial_input_x, name="parameter_y")

    def forward(self):
        a = 0
        while a < 3:
            self.X = self.X + self.Y
            a += 1
        return self.X


class ControlMixedWhileIf(nn.Module):
    def __init__(self):
        super().__init__()
        self.assign = ta.Variable.assign
        self.var = ta.Variable(torch.tensor([1], dtype=torch.float32), name="var")

    def forward(self, x, y, z, c2, c4):
        out = self.assign(self.var, c4)
        while x < c2:
            y = self.assign(self.var, c4)
            while y < c2 and x < c2:
                if 2 * y < c2:
                    y = y + 2
                else:
                    y = y + 1
            out = out + y
            z = self.assign(self.var, c4)
            while z < c2:
                z = z + 1
            out = out + z
            x = x + 1
        out = out + x
        while x < 2 * c2:
            y = self.assign(self.var, c4)
            x = x + 1
            while y < c2:
                z = self.assign(self.var, c4)
                while z < c2:
                    z = z + 1
                if x < c2:
                    y = y - 1
                else:
                    y = y + 1
                out = out + z
            out = out + y
        out = out + x
        return out


# ---- The corpus's cases (ours): the test functions' inputs. ----
import functools  # noqa: E402

from cases import A, case  # noqa: E402


def _f32(v):
    return torch.tensor(v, dtype=torch.float32)


def _i32(v):
    return torch.tensor(v, dtype=torch.int32)


_XYZ = (A(_f32(0), _f32(10), _f32(100)), A(_f32(3), _f32(5), _f32(1)))
CASES = (
    case(WhileSubGraphParam, *_XYZ),
    case(WhileSubGraphParam2, *_XYZ),
    case(functools.partial(WhileSubGraphParam3, _f32(0)), A(), name="WhileSubGraphParam3", build=True),
    case(functools.partial(WhileSubGraphParam3, _f32(2)), A(), name="WhileSubGraphParam3:nonzero", build=True),
    case(ControlMixedWhileIf, A(_i32(2), _i32(14), _i32(1), _i32([14]), _i32([0])),
         A(_i32(2), _i32(14), _i32(1), _i32([6]), _i32([0]))),
)
