# Ported from tensorflow/tensorflow: tensorflow/python/autograph/converters/continue_statements_test.py
# at commit 2c8c71a65f22961f1d7fc78b7e894a003e15fb5b.
# Copyright 2017 The TensorFlow Authors. Licensed under the Apache License, Version 2.0.
# Changes, API spellings only: ops.name_scope('') -> torch.profiler.record_function('') (torch's named scope).
# Each test's inner function `f` is lifted to module level and named after its test (`test_basic` -> `basic`),
# its body unchanged; the tests' inputs are the CASES at the end, each also given as a tensor (torch.tensor).
"""Tests for continue_statements module."""

import torch


def basic(x):
    v = []
    while x > 0:
        x -= 1
        if x % 2 == 0:
            continue
        v.append(x)
    return v


def multiple_continues(x):
    v = []
    while x > 0:
        x -= 1
        if x > 1:
            continue
        if x > 2:
            continue
        v.append(x)
    return v


def multiple_continues_in_nested_scope(a):
    v = []
    for x in a:
        x -= 1
        if x > 100:
            continue
        try:
            raise ValueError('intentional')
        except ValueError:
            continue
        v.append(x)     # TODO: This line of code is unreachable
    return v


def for_loop(a):
    v = []
    for x in a:
        x -= 1
        if x % 2 == 0:
            continue
        v.append(x)
    return v


def nested_with(x):
    v = []
    while x > 0:
        x -= 1
        with torch.profiler.record_function(''):
            if x % 2 == 0:
                continue
        v.append(x)
    return v


def nested_multiple_withs(x):
    v = []
    while x > 0:
        x -= 1
        with torch.profiler.record_function(''):
            if x % 2 == 0:
                continue
        with torch.profiler.record_function(''):
            v.append(x)
        v.append(x)
    return v


def nested_multiple_withs_and_statements(x):
    v = []
    while x > 0:
        x -= 1
        with torch.profiler.record_function(''):
            if x % 2 == 0:
                continue
            v.append(x)
        v.append(x)
        with torch.profiler.record_function(''):
            v.append(x)
        v.append(x)
    return v


def nested_multiple_withs_and_nested_withs(x):
    v = []
    while x > 0:
        x -= 1
        with torch.profiler.record_function(''):
            if x % 2 == 0:
                continue
            with torch.profiler.record_function(''):
                v.append(x)
        v.append(x)
        with torch.profiler.record_function(''):
            v.append(x)
        v.append(x)
    return v


def nested(x):
    v = []
    u = []
    w = []
    while x > 0:
        x -= 1
        if x % 2 == 0:
            if x % 3 != 0:
                u.append(x)
            else:
                w.append(x)
                continue
        v.append(x)
    return v, u, w


def multiple_guarded_continues_with_side_effects(x):
    def track(y, z):
        y.append(z)
        return z

    u = []
    v = []
    while x > 0:
        x -= 1
        if track(u, x) > 1:
            continue
        if track(u, x) > 2:
            continue
        v.append(x)
    return u, v


# ---- The corpus's cases (ours): the tests' inputs, as Python numbers and as tensors. ----
from cases import case, each, t  # noqa: E402

_N = (0, 1, 3, 4)
_LISTS = ([], [1], [2], [1, 2, 3])
CASES = (
    case(basic, *each(_N, int, t), jit=True),
    case(multiple_continues, *each(_N, int, t)),
    case(multiple_continues_in_nested_scope, *each(_LISTS, list, t)),
    case(for_loop, *each(_LISTS, list, t)),
    case(nested_with, *each(_N, int, t)),
    case(nested_multiple_withs, *each(_N, int, t)),
    case(nested_multiple_withs_and_statements, *each(_N, int, t)),
    case(nested_multiple_withs_and_nested_withs, *each(_N, int, t)),
    case(nested, *each(_N, int, t)),
    case(multiple_guarded_continues_with_side_effects, *each([3, 2], int, t)),
)
