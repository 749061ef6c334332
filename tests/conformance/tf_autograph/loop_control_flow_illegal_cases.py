# Ported from tensorflow/tensorflow: tensorflow/python/autograph/tests/loop_control_flow_illegal_cases_test.py
# at commit 84e2e6c717e89d7e8a9b7458290b11aa5b596658.
# Copyright 2017 The TensorFlow Authors. Licensed under the Apache License, Version 2.0.
# Changes, API spellings only: `import tensorflow as tf` -> `import torch`; tf.greater -> torch.greater. The
# absl test class is not ported: its parameters are the CASES at the end. TensorFlow refuses each of these
# (a tensor `break`/`return` inside a Python loop); eager PyTorch answers them, so the corpus compares with it.
# The inputs are lists of tensors (a Python loop) and tensors: torch.greater needs a tensor operand.
"""Loop control statements (e.g. break, return) in illegal patterns.

Meant to verify that:
  * break/return on a dynamic condition raises error inside Python loop
"""

import torch


def tf_break_in_py_for(l):
    s = 0
    for c in l:
        if torch.greater(c % 2, 0):
            break
        s += c
    return s


def tf_return_in_py_for(l):
    s = 0
    for c in l:
        if torch.greater(c % 2, 0):
            return s
        else:
            return s
        s += c
    return s


def tf_break_in_py_while(x):
    s = 0
    while x > 0:
        x -= 1
        if torch.greater(x % 2, 0):
            break
        s += x
    return s


def tf_return_in_py_while(x):
    s = 0
    while x > 0:
        x -= 1
        if torch.greater(x % 2, 0):
            return s
        else:
            return s
        s += x
    return s


# ---- The corpus's cases (ours): the reference test's parameters as inputs. ----
from cases import case, t  # noqa: E402

_LISTS = ([1], [1, 2], [1, 2, 3])

CASES = (
    case(tf_break_in_py_for, *(list(map(t, l)) for l in _LISTS)),
    case(tf_return_in_py_for, *(list(map(t, l)) for l in _LISTS)),
    case(tf_break_in_py_while, 1, 2, 3, t(1), t(2), t(3)),
    case(tf_return_in_py_while, 1, 2, 3, t(1), t(2), t(3)),
)
