# Ported from tensorflow/tensorflow: tensorflow/python/autograph/tests/call_to_user_function_test.py
# at commit 84e2e6c717e89d7e8a9b7458290b11aa5b596658.
# Copyright 2017 The TensorFlow Authors. Licensed under the Apache License, Version 2.0.
# Changes, API spellings only: `import tensorflow as tf` -> `import torch`; tf.identity -> torch.clone
# (given tensors only: TensorFlow converts the Python 1 implicitly), tf.constant -> torch.tensor (the inputs).
# The absl test class is not ported: its parameters are the CASES at the end.
"""Calls to dynamic (i.e. nonglobal) functions.

Examples:
 * function variables
 * function parameters
 * factories
"""

import torch


def function_1(x):
    return x * x * x


def function_2(x):
    return -1 * x + 11


def factory(n):
    if n == 1:
        return function_1
    return function_2


def static_fn(x):
    a = function_1(x)
    b = function_2(x)
    return a + b


def factory_dynamic_fn(x):
    f = factory(1)
    a = f(x)
    f = factory(2)
    b = f(x)
    return a + b


def param_dynamic_fn(f, x):
    return f(x)


def variable_dynamic_fn(x):
    f = function_1
    a = f(x)
    f = function_2
    b = f(x)
    return a + b


def variable_dynamic_whitelisted_fn(x):
    f = torch.clone
    return f(x)


def dynamic_fn_with_kwargs(f, x):
    return f(x=x)


# ---- The corpus's cases (ours): the reference test's parameters as inputs. ----
from cases import A, case, t  # noqa: E402

CASES = (
    case(static_fn, 1, t(1), t(2.0)),
    case(factory_dynamic_fn, 1, t(1)),
    case(param_dynamic_fn, A(function_1, 1), A(function_1, t(1))),
    case(variable_dynamic_fn, 1, t(1)),
    case(variable_dynamic_whitelisted_fn, t(1), t([1.0, 2.0])),
    case(dynamic_fn_with_kwargs, A(function_1, 1), A(function_1, t(1))),
)
