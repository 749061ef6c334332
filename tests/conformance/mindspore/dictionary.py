# Ported from mindspore-ai/mindspore: tests/ut/python/graph_syntax/dict/test_dictionary.py
# at commit 08404e1ff63cd94b0f8ef904adebfb671c725772.
# Copyright 2020 Huawei Technologies Co., Ltd. Licensed under the Apache License, Version 2.0.
# Changes, API spellings only: `from mindspore.nn import Cell` -> `from torch.nn import Module as Cell`,
# `construct` -> `forward`, `@jit` removed (the corpus applies ta.function), Tensor(v) -> torch.tensor(v),
# Tensor(np.arange(6).reshape(1, 2, 3)) -> torch.arange(6).reshape(1, 2, 3). The `Net` of test_dict4 and the
# `foo` of each multitype-keys test are lifted to module level under their tests' names, bodies unchanged; the
# tests' calls are the CASES at the end. Not ported: test_dict_with_multitype_keys_3 (`dict.has_key`, not
# Python 3) and the three tests of MindSpore's own key restrictions.
""" test_dictionary """
import torch
from torch.nn import Module as Cell


class Net1(Cell):
    def forward(self, x):
        dic = {'x': 0, 'y': 1}
        output = []
        for i in dic.keys():
            output.append(i)
        for j in dic.values():
            output.append(j)
        return output


class Net2(Cell):
    def forward(self, x):
        dic = {'x': x, 'y': 1}
        output = []
        for i in dic.keys():
            output.append(i)
        for j in dic.values():
            output.append(j)
        return output


class Net3(Cell):
    def forward(self, x):
        dic = {'x': 0}
        dic['y'] = (0, 1)
        output = []
        for i in dic.keys():
            output.append(i)
        for j in dic.values():
            output.append(j)
        return output


class Dict4Net(Cell):
    def forward(self, tuple_x):
        output = tuple_x + tuple_x
        return output


def dict_with_multitype_keys_1():
    ele_num = 3.14
    ele_str = "str"
    ele_tensor = torch.tensor([1, 2])
    ele_tuple = (ele_num, (ele_str, ele_tensor))
    dic = {ele_num: ele_tuple, ele_str: ele_tensor, ele_tensor: ele_str, ele_tuple: ele_num}
    return dic.get(torch.tensor([1, 2]), 0)


def dict_with_multitype_keys_2():
    constant_tensor1 = torch.arange(6).reshape(1, 2, 3)
    constant_tensor2 = torch.tensor([1, 2])
    dic = {"str": 10, 2: 20, ("str_in_tuple", 3.14159): 30, constant_tensor1: 40.5,
           (1, (constant_tensor2, "3")): {1: 2}}
    sum_values = dic.get("str") + dic.get(2) + dic.get(("str_in_tuple", 3.14159)) + dic.get(constant_tensor1)
    return sum_values


# ---- The corpus's cases (ours): the tests' inputs. ----
from cases import A, case  # noqa: E402

torch.manual_seed(0)
_X = torch.randn(2, 3, 4, 5)
CASES = (
    case(Net1, _X),
    case(Net2, _X),
    case(Net3, _X),
    case(Dict4Net, A((1, torch.tensor([1, 2, 3]), (torch.tensor([1, 2, 3]), 1)))),
    case(dict_with_multitype_keys_1, A()),
    case(dict_with_multitype_keys_2, A()),
)
