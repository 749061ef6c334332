# Ported from tensorflow/tensorflow, three converter tests:
#   tensorflow/python/autograph/converters/conditional_expressions_test.py at 1a0ce58394895ae7c900965f119934ecae47668a
#   tensorflow/python/autograph/converters/lists_test.py at 0304934138cbfabd338ec432a630a9c3c1191564
#   tensorflow/python/autograph/converters/break_statements_test.py is in converters_break_statements.py
# Copyright 2017 The TensorFlow Authors. Licensed under the Apache License, Version 2.0.
# Changes, API spellings only: array_ops_stack.stack(l) of a list of Python ints -> torch.tensor(l). Each test's inner function `f` is lifted to module level and named after
# its test (`ConditionalExpressionsTest.test_basic` -> `ifexp_basic`), its body unchanged; the lists tests that
# need TensorFlow's tensor_list special function are not ported. The tests' inputs are the CASES at the end, each
# also given as a tensor.
"""Tests for conditional_expressions and lists modules."""

import torch


def ifexp_basic(x):
    return 1 if x else 0


def ifexp_nested_orelse(x):
    y = x * x if x > 0 else x if x else 1
    return y


def list_empty_list():
    return []


def list_initialized_list():
    return [1, 2, 3]


def list_double_list_pop(l):
    s = l.pop().pop()
    return s


def list_list_stack():
    l = [1, 2, 3]
    return torch.tensor(l)


# ---- The corpus's cases (ours): the tests' inputs, as Python numbers and as tensors. ----
from cases import A, case, each, t  # noqa: E402

CASES = (
    case(ifexp_basic, *each([0, 3], int, t), jit=True),
    case(ifexp_nested_orelse, *each([-2, 0, 2], int, t)),
    case(list_empty_list, A()),
    case(list_initialized_list, A()),
    case(list_double_list_pop, [1, 2, [1, 2, 3]], [1, 2, [t(1), t(2), t(3)]]),
    case(list_list_stack, A()),
)
