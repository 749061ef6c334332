# Ported from mindspore-ai/mindspore: tests/ut/python/graph_syntax/tuple/test_tuple.py
# at commit 780900ae5f432ac1bf3d3b3e25451e9911492a3f.
# Copyright 2020 Huawei Technologies Co., Ltd. Licensed under the Apache License, Version 2.0.
# Changes, API spellings only: mindspore.nn.Cell -> torch.nn.Module, `construct` -> `forward`;
# nn.Conv2d(i, o, k, pad_mode='same') -> torch.nn.Conv2d(i, o, k, padding='same'); Tensor(v, mstype.float32) ->
# torch.tensor(v, dtype=torch.float32). The test framework's case table is the CASES at the end.
import torch
import torch.nn as nn


class TupleGraphNet(nn.Module):
    def __init__(self):
        super(TupleGraphNet, self).__init__()
        self.conv1 = nn.Conv2d(3, 1, 3, padding='same')
        self.conv2 = nn.Conv2d(3, 1, 7, padding='same')
        self.conv3 = nn.Conv2d(3, 3, 3, padding='same')
        self.layers = (self.conv1, self.conv2, self.conv3)

    def forward(self, x):
        return self.layers[0](x)


class NestTupleGraphNet(nn.Module):
    def __init__(self):
        super(NestTupleGraphNet, self).__init__()
        self.conv1 = nn.Conv2d(3, 1, 3, padding='same')
        self.conv2 = nn.Conv2d(3, 1, 7, padding='same')
        self.conv3 = nn.Conv2d(3, 3, 3, padding='same')
        self.layers = ((self.conv1, self.conv2),
                       (self.conv2, self.conv1, self.conv3))

    def forward(self, x):
        return self.layers[0][1](x)


class InTupleNet(nn.Module):
    def __init__(self):
        super(InTupleNet, self).__init__()
        self.tuple_ = (1, 2, 3, 4, 5, "ok")

    def forward(self, x):
        ret = x
        if 2 in self.tuple_:
            ret = x + x
            if "ok" in self.tuple_:
                ret = x - x
        return ret


class TensorInTuple(nn.Module):
    def __init__(self):
        super(TensorInTuple, self).__init__()
        self.t1 = torch.tensor(1, dtype=torch.float32)
        self.t2 = torch.tensor(2, dtype=torch.float32)
        self.tuple_ = (self.t1, self.t2)

    def forward(self, x):
        ret = x
        if self.t1 in self.tuple_:
            ret = x + x
        return ret


class TensorNotInTuple(nn.Module):
    def __init__(self):
        super(TensorNotInTuple, self).__init__()
        self.t1 = torch.tensor(1, dtype=torch.float32)
        self.t2 = torch.tensor(2, dtype=torch.float32)
        self.tuple_ = (self.t1, self.t2)

    def forward(self, x):
        ret = x
        if self.t1 not in self.tuple_:
            ret = x + x
        return ret


# ---- The corpus's cases (ours): the case table's inputs. ----
from cases import case  # noqa: E402

_X = torch.ones((3, 3, 24, 24), dtype=torch.float32)
CASES = tuple(case(net, _X) for net in (TupleGraphNet, NestTupleGraphNet, InTupleNet, TensorInTuple,
                                        TensorNotInTuple))
