# Ported from tensorflow/tensorflow: tensorflow/python/autograph/tests/call_to_print_function_test.py
# at commit 0304934138cbfabd338ec432a630a9c3c1191564.
# Copyright 2017 The TensorFlow Authors. Licensed under the Apache License, Version 2.0.
# Changes, API spellings only: `import tensorflow as tf` -> `import torch` + `import torch_autograph as ta`;
# tf.print -> ta.print; np.array inputs -> torch.tensor. The absl test class is not ported: its parameters are
# the CASES at the end. The harness compares what eager and graph runs print, as the reference test does,
# except for Python's `print` of a tensor: the reference test opts into converting it (BUILTIN_FUNCTIONS); here,
# as in tf.function by default, it runs while tracing (README: `ta.print` runs every call).
"""Simple call to a print function preceding other computations.

The call may be wrapped inside a py_func, but tf.Print should be used if
possible. The subsequent computations will be gated by the print function
execution.
"""

import torch

import torch_autograph as ta


def lone_print(x):
    print(x)


def print_multiple_values(x):
    print("x is", x)


def multiple_prints(x, y):
    ta.print("x is", x)
    ta.print("y is", y)


def print_with_nontf_values(x):
    print("x is", x, {"foo": "bar"})


def print_in_cond(x):
    if x == 0:
        print(x)


def tf_print(x):
    ta.print(x)


# ---- The corpus's cases (ours): the reference test's parameters as inputs. ----
from cases import A, case, t  # noqa: E402

CASES = (
    case(lone_print, 1, t([1, 2, 3]), prints_while_tracing=True),
    case(print_multiple_values, 1, t([1, 2, 3]), prints_while_tracing=True),
    case(multiple_prints, A(1, 2), A(t([1, 2, 3]), 4)),
    case(print_with_nontf_values, 1, t([1, 2, 3]), prints_while_tracing=True),
    case(print_in_cond, 0, 1, t(0), t(1), prints_while_tracing=True),
    case(tf_print, 0, t(0), t(2.5)),
)
