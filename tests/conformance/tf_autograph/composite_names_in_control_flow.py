# Ported from tensorflow/tensorflow: tensorflow/python/autograph/tests/composite_names_in_control_flow_test.py
# at commit 84e2e6c717e89d7e8a9b7458290b11aa5b596658.
# Copyright 2017 The TensorFlow Authors. Licensed under the Apache License, Version 2.0.
# Changes, API spellings only: `import tensorflow as tf` -> `import torch`; tf.constant -> torch.tensor (the
# inputs). The absl test class is not ported: its parameters are the CASES at the end; programs TensorFlow
# accepts for Python inputs and refuses for tensors are two cases (the second named `...:tensor`).
"""Composite names (attributes) in control flow.

Generally, composite symbols should be treated like regular ones.
"""

import torch


def if_basic_dict(a):
    x = {"a": a}

    if x["a"] > 0:
        x["b"] = 1
    else:
        x["b"] = -1
    return x


def if_basic_list(a):
    x = [a, 0]

    if x[0] > 0:
        x[1] = 1
    else:
        x[1] = -1
    return x


def if_imbalanced(a):
    x = {"a": a}

    if x["a"] > 0:
        x["b"] = 1
    return x


def else_imbalanced(a):
    x = {"a": a}

    if x["a"] > 0:
        pass
    else:
        x["b"] = 1
    return x


def if_imbalanced_nested(a):
    x = {"a": {"a": a}}

    if x["a"]["a"] > 0:
        x["a"]["b"] = 1
    return x


def else_imbalanced_nested(a):
    x = {"a": {"a": a}}

    if x["a"]["a"] > 0:
        pass
    else:
        x["a"]["b"] = 1
    return x


# Note: this is incorrect code. We test that the error message is clear about
# that.
def if_buggy(a):
    x = {"a": {"a": a}}

    if x["a"]["a"] > 0:
        x["b"]["a"] = 1
    else:
        x["b"]["a"] = -1
    return x


# Note: this is incorrect code. We test that the error message is clear about
# that.
def if_imbalanced_buggy(a):
    x = {"a": {"a": a}}

    if x["a"]["a"] > 0:
        x["b"]["a"] = 1
    return x


def while_basic_dict(x, a, b):
    y = {"a": a, "b": b}
    while x > 0:
        x -= 1
        y["a"] += 1
    return y


def while_basic_list(x, a, b):
    y = [a, b]
    while x > 0:
        x -= 1
        y[0] += 1
    return y


def while_state_only_dict(a, b):
    y = {"a": a, "b": b}
    while y["b"] <= 10:
        y["a"] += 1
        y["b"] *= 2
    return y


def while_state_only_list(a, b):
    y = [a, b]
    while y[1] <= 10:
        y[0] += 1
        y[1] *= 2
    return y


def while_imbalanced(b):
    y = {"b": b}
    while y["b"] <= 10:
        y["a"] = y["b"] + 1
        y["b"] *= 2
    return y


def for_basic_dict(n, x, a, b):
    y = {"a": a, "b": b}
    for i in range(n):
        x -= 1
        y["a"] += i
    return y


def for_basic_list(n, x, a, b):
    y = [a, b]
    for i in range(n):
        x -= 1
        y[0] += i
    return y


def for_state_only_dict(n, a, b):
    y = {"a": a, "b": b}
    for _ in range(n):
        y["a"] += 1
    return y


def for_state_only_list(n, a, b):
    y = [a, b]
    for _ in range(n):
        y[0] += 1
    return y


def for_imbalanced(n, x):
    y = {}
    for i in range(n):
        x -= i
        y["a"] = x
    return y


# ---- The corpus's cases (ours): the reference test's parameters as inputs. ----
from cases import A, case, each, grid, t  # noqa: E402

_WHILE = (*grid([0, 1, 2], [3, 7], [0]), *grid([t(0), t(1), t(2)], [3, 7], [0]))
_FOR = (*grid([0, 1, 2], [1], [1], [1]), *grid([t(0), t(1), t(2)], [1], [1], [1]))
_FOR_STATE = (*grid([0, 1, 2], [1], [1]), *grid([t(0), t(1), t(2)], [1], [1]))
CASES = (
    case(if_basic_dict, *each([0, 1], bool, t)),
    case(if_basic_list, *each([0, 1], bool, t), jit=True),
    case(if_imbalanced, 0, 1),
    case(if_imbalanced, t(0), t(1), name="if_imbalanced:tensor"),
    case(else_imbalanced, 0, 1),
    case(else_imbalanced, t(0), t(1), name="else_imbalanced:tensor"),
    case(if_imbalanced_nested, 0, 1),
    case(if_imbalanced_nested, t(0), t(1), name="if_imbalanced_nested:tensor"),
    case(else_imbalanced_nested, 0, 1),
    case(else_imbalanced_nested, t(0), t(1), name="else_imbalanced_nested:tensor"),
    case(if_buggy, 1, t(1), t(0), raises=True),
    case(if_imbalanced_buggy, 1, t(1), t(0)),
    case(while_basic_dict, *_WHILE),
    case(while_basic_list, *_WHILE),
    case(while_state_only_dict, *grid([0], [3, 4, 5, 6]), *grid([0], [t(3), t(4), t(5), t(6)])),
    case(while_state_only_list, *grid([0], [3, 4, 5, 6]), *grid([0], [t(3), t(4), t(5), t(6)])),
    case(while_imbalanced, 5, 10, 11, t(5), t(10)),
    case(while_imbalanced, t(11), name="while_imbalanced:empty"),
    case(for_basic_dict, *_FOR),
    case(for_basic_list, *_FOR),
    case(for_state_only_dict, *_FOR_STATE),
    case(for_state_only_list, *_FOR_STATE),
    case(for_imbalanced, *grid([0, 1, 2], [0]), *grid([t(1), t(2)], [0])),
    case(for_imbalanced, A(t(0), 0), name="for_imbalanced:empty"),
)
