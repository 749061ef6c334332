# Ported from tensorflow/tensorflow: tensorflow/python/autograph/tests/loop_with_function_call_test.py
# at commit 84e2e6c717e89d7e8a9b7458290b11aa5b596658.
# Copyright 2017 The TensorFlow Authors. Licensed under the Apache License, Version 2.0.
# Changes, API spellings only: `import tensorflow as tf` -> `import torch`; tf.constant -> torch.tensor,
# tf.range -> torch.arange, tf.abs -> torch.abs (the inputs). The absl test class is not ported: its
# parameters are the CASES at the end (the two programs it skips are left without cases).
"""Function calls inside the while loop body."""

import torch


def while_with_call_in_cond(n, fn):
    i = 0
    s = 0
    while i < fn(n):
        s = s * 10 + i
        i += 1
    return s


def for_with_call_in_target(l, fn):
    s = 0
    for i in fn(l):
        s = s * 10 + i
    return s


def while_with_local_call_in_cond(n):
    def local_fn(x):
        return x * 3

    i = 0
    s = 0
    while i < local_fn(n):
        s = s * 10 + i
        i += 1
    return s


def for_with_local_call_in_target(l):
    def local_fn(l):
        return l * 1

    s = 0
    for i in local_fn(l):
        s = s * 10 + i
    return s


def while_with_call(n, fn):
    i = 0
    s = 0
    while i < n:
        s = s * 10 + fn(i)
        i += 1
    return s


def for_with_call(l, fn):
    s = 0
    for i in l:
        s = s * 10 + fn(i)
    return s


def while_with_local_call(n):
    def local_fn(x):
        return x * 3

    i = 0
    s = 0
    while i < n:
        s = s * 10 + local_fn(i)
        i += 1
    return s


def for_with_local_call(l):
    def local_fn(x):
        return x * 3

    s = 0
    for i in l:
        s = s * 10 + local_fn(i)
    return s


def while_with_closure_call(n):
    i = 0

    def i_via_closure():
        return i + 2

    i = 0
    s = 0
    while i < n:
        s = s * 10 + i_via_closure()
        i += 1
    return s


def for_with_closure_call(l):
    i = 0

    def i_via_closure():
        return i + 2

    s = 0
    for i in l:
        s = s * 10 + i_via_closure()
    # TODO(b/134822197): Remove i from return values.
    return s, i


def while_with_lambda_closure_call(n):
    i = 0
    s = 0
    i_via_closure = lambda: i + 2
    while i < n:
        s = s * 10 + i_via_closure()
        i += 1
    return s


def for_with_lambda_closure_call(l):
    i = 0
    s = 0
    i_via_closure = lambda: i + 2
    for i in l:
        s = s * 10 + i_via_closure()
    # TODO(b/134822197): Remove i from return values.
    return s, i


def while_with_method_closure_call(n):
    i = 0

    class Callable(object):
        def __call__(self):
            return i

    i_via_closure = Callable()
    i = 0
    s = 0
    while i < n:
        s = s * 10 + i_via_closure()
        i += 1
    return s


def for_with_method_closure_call(l):
    i = 0

    class Callable(object):
        def __call__(self):
            return i

    i_via_closure = Callable()
    i = 0
    s = 0
    for i in l:
        s = s * 10 + i_via_closure()
    # TODO(b/134822197): Remove i from return values.
    return s, i


def global_fn(x):
    return x * 2


class TestClass(object):
    def method(self, x):
        return x * 4


# ---- The corpus's cases (ours): the reference test's parameters as inputs. ----
from cases import A, case, each, grid, i32, t  # noqa: E402

_FNS = (global_fn, lambda x: x * 1, TestClass().method, abs)
_LISTS = ([], [1], [1, 2])
CASES = (
    case(while_with_call_in_cond, *grid([0, 1, 2], _FNS), *grid([t(0), t(1), t(2)], _FNS)),
    case(for_with_call_in_target, *grid(_LISTS, _FNS[:3]), *grid([i32(l) for l in _LISTS], _FNS[:3] + (torch.abs,)),
         *grid([0, 1, 2], [range, torch.arange]), *grid([i32(0), i32(1), i32(2)], [range, torch.arange])),
    case(while_with_local_call_in_cond, *each([0, 1, 2], int, t)),
    case(for_with_local_call_in_target, *each(_LISTS, list, i32)),
    case(while_with_call, *grid([0, 1, 2], _FNS), *grid([t(0), t(1), t(2)], _FNS), jit=True),
    case(for_with_call, *grid(_LISTS, _FNS), *grid([i32(l) for l in _LISTS], _FNS)),
    case(while_with_local_call, *each([0, 1, 2], int, t)),
    case(for_with_local_call, *each(_LISTS, list, i32)),
    case(while_with_closure_call, *each([0, 1, 2], int, t)),
    case(for_with_closure_call, *each(_LISTS, list, i32)),
    case(while_with_lambda_closure_call, *each([0, 1, 2], int, t)),
    case(for_with_lambda_closure_call, *each(_LISTS, list, i32)),
)
