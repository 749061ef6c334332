# Ported from tensorflow/tensorflow: tensorflow/python/autograph/tests/logical_expression_test.py
# at commit 0304934138cbfabd338ec432a630a9c3c1191564.
# Copyright 2017 The TensorFlow Authors. Licensed under the Apache License, Version 2.0.
# Changes, API spellings only: `import tensorflow as tf` -> `import torch`; tf.constant -> torch.tensor (the
# inputs, as the reference test's all_inputs_tensors does). The absl test class is not ported: its parameters
# are the CASES at the end.
"""Basic logical expressions that are not autoboxed to TF."""

import torch


def composite_ors_with_callable(x, y, z):
    z1 = lambda: z
    return x or y or z1()


def composite_ors(x, y, z):
    return x or y or z


def composite_ands(x, y, z):
    return x and y and z


def composite_mixed(x, y, z):
    return x or y or z and y and z


def equality(x, y):
    return x == y


def inequality(x, y):
    return x != y


def multiple_equality(x, y, z):
    return x == y == z


def comparison(x, y, z):
    return x < y and y < z


# ---- The corpus's cases (ours): the reference test's parameters as inputs. ----
from cases import A, case  # noqa: E402


def _both(*calls):
    return (*calls, *(A(*(torch.tensor(v) for v in c)) for c in calls))


_PERMUTATIONS = (A(1, 2, 3), A(2, 1, 3), A(3, 2, 1), A(3, 1, 2), A(1, 3, 2), A(2, 3, 1))
CASES = (
    case(composite_ors, *_both(A(False, True, False), A(False, False, False)), jit=True),
    case(composite_ands, *_both(A(True, True, True), A(True, False, True))),
    case(composite_mixed, *_both(A(False, True, True))),
    case(composite_ors_with_callable, *_both(A(False, True, False), A(False, False, True), A(False, False, False))),
    case(comparison, *_both(*_PERMUTATIONS)),
    case(equality, *_both(A(1, 1), A(1, 2))),
    case(inequality, *_both(A(1, 1), A(1, 2))),
    case(multiple_equality, *_both(A(1, 1, 2), A(1, 1, 1))),
)
