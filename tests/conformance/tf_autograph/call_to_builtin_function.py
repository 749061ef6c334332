# Ported from tensorflow/tensorflow: tensorflow/python/autograph/tests/call_to_builtin_function_test.py
# at commit 84e2e6c717e89d7e8a9b7458290b11aa5b596658.
# Copyright 2017 The TensorFlow Authors. Licensed under the Apache License, Version 2.0.
# Changes, API spellings only: `import tensorflow as tf` -> `import torch`; tf.constant -> torch.tensor (the
# inputs, as the reference test's all_inputs_tensors does). The absl test class is not ported: its parameters
# are the CASES at the end.
"""Simple call to a builtin function."""

import unittest
import unittest.mock

import torch


# TODO(mdan): Add tests for all builtins.


def dict_call(x):
    return dict(foo=x)


def dict_call_aliased(x):
    def fake_dict(x):
        return x

    dict = fake_dict  # pylint:disable=redefined-builtin
    return dict(x)


def dict_call_dynamic(x):
    def gen_dict():
        return dict

    d = gen_dict()
    return d(foo=x)


def len_call(x):
    return len(x)


def nested_call(x):
    return list(range(len(x)))


def nested_cast(x):
    return float(int(x))


def len_call_aliased(x):
    def fake_len(x):
        return x

    len = fake_len  # pylint:disable=redefined-builtin
    return len(x)


def len_call_dynamic(x):
    def gen_len():
        return len

    l = gen_len()
    return l(x)


def len_call_on_mock():
    x = unittest.mock.MagicMock()
    return len(x)


# ---- The corpus's cases (ours): the reference test's parameters as inputs. ----
from cases import A, case, t  # noqa: E402

CASES = (
    case(dict_call, 1, t(1)),
    case(len_call, [1, 2], t([1, 2])),
    case(dict_call_aliased, 1, t(1)),
    case(len_call_aliased, [1, 2], t([1, 2])),
    case(dict_call_dynamic, 1, t(1)),
    case(len_call_dynamic, [1, 2], t([1, 2])),
    case(nested_call, [], [1, 2, 3], t([1, 2, 3])),
    case(nested_cast, 1, 2.5, t(1), t(2.5)),
    case(len_call_on_mock, A()),
)
