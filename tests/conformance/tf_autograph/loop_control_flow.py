# Ported from tensorflow/tensorflow: tensorflow/python/autograph/tests/loop_control_flow_test.py
# at commit 84e2e6c717e89d7e8a9b7458290b11aa5b596658.
# Copyright 2017 The TensorFlow Authors. Licensed under the Apache License, Version 2.0.
# Changes, API spellings only: `import tensorflow as tf` -> `import torch`; tf.constant(x, dtype=tf.int32) ->
# torch.tensor(x, dtype=torch.int32) (the inputs). The absl test class is not ported: its parameters are the
# CASES at the end (tf.data inputs omitted); the loops that must run once to define their result are split
# into a legal case and a `...:empty` case (TensorFlow refuses an empty tensor loop there at run time).
"""Nested loops and loop control statements (e.g. break and continue).

Meant to verify that:
  * break/continue in the inner loop does not affect outer loop
  * break/continue inside nested conditionals still works
"""

import torch


def continue_in_single_for(l):
    s = 0
    for c in l:
        if c % 2 > 0:
            continue
        s += c
    return s


def continue_in_single_while(x):
    s = 0
    while x > 0:
        x -= 1
        if x % 2 > 0:
            continue
        s += x
    return s


def continue_in_inner_for(m):
    s = 0
    for l in m:
        for c in l:
            if c % 2 > 0:
                continue
            s += c
    return s


def continue_in_inner_while(x, y):
    s = 0
    while x > 0:
        x -= 1
        while y > 0:
            y -= 1
            if (x + y) % 2 > 0:
                continue
            s += x + y
    return s


def break_in_single_for(l):
    s = 0
    for c in l:
        if c % 2 > 0:
            break
        s += c
    return s


def unconditional_return_in_single_for(l):
    s = 0
    for c in l:
        s += c
        return s
    return s


def effectively_unconditional_return_in_single_for(l):
    s = 0
    for c in l:
        s += c
        if c % 2 > 0:
            return s
        else:
            return -s
    return s


def unconditional_return_in_single_while(x):
    s = 0
    while x > 0:
        x -= 1
        s += x
        return s
    return s


def effectively_unconditional_return_in_single_while(x):
    s = 0
    while x > 0:
        x -= 1
        s += x
        if x % 2 > 0:
            return s
        else:
            return -s
    return s


def break_in_single_while(x):
    s = 0
    while x > 0:
        x -= 1
        if x % 2 > 0:
            break
        s += x
    return s


def break_in_inner_for(m):
    s = 0
    for l in m:
        for c in l:
            if c % 2 > 0:
                break
            s += c
    return s


def break_in_inner_while(x, y):
    s = 0
    while x > 0:
        x -= 1
        while y > 0:
            y -= 1
            if ((x + y) % 2) == 0:
                break
            s += x + y
    return s


def break_continue_in_inner_for(m):
    s = 0
    for l in m:
        for c in l:
            if c % 2 > 0:
                break
            else:
                continue
            s += c
    return s


def break_continue_in_inner_while(x, y):
    s = 0
    while x > 0:
        x -= 1
        while y > 0:
            y -= 1
            if (x + y) % 2 > 0:
                break
            else:
                continue
            s += x + y
    return s


def break_followed_by_cond_in_single_for(x, y):
    for i in range(y):
        if i == 2:
            break
        if x > 0:
            x -= 1
    return x


def break_followed_by_cond_in_single_while(x):
    while x > 0:
        if x == 2:
            break
        if x > 0:
            x -= 1
    return x


def multiple_breaks_in_single_while(n):
    s = 1
    i = 0
    while i < n:
        i += 1
        if i > 10 * n:
            break
        if i == n:
            break
        s = s * 10 + i
    return i, s


# ---- The corpus's cases (ours): the reference test's parameters as inputs. ----
from cases import A, case, each, grid, i32  # noqa: E402

_LISTS = ([], [1], [1, 2], [1, 2, 3], [1, 2, 3, 4])
_NESTED = ([[], []], [[1], [2]], [[1, 2], [3, 4]], [[1, 2, 3], [4, 5, 6]])
_N = (0, 1, 2, 3, 4)
_PAIRS = (*grid(_N, _N), *grid([i32(n) for n in _N], [i32(n) for n in _N]))


def _list_of_int_tensor(l):
    return [i32(x) for x in l]


CASES = (
    case(continue_in_single_for, *each(_LISTS, list, i32), jit=True),
    case(break_in_single_for, *each(_LISTS, list, i32)),
    case(unconditional_return_in_single_for, *each(_LISTS[1:], list, i32)),
    case(unconditional_return_in_single_for, i32([]), name="unconditional_return_in_single_for:empty"),
    case(effectively_unconditional_return_in_single_for, *each(_LISTS[1:], list, i32)),
    case(effectively_unconditional_return_in_single_for, i32([]),
         name="effectively_unconditional_return_in_single_for:empty"),
    case(continue_in_single_while, *each(_N, int, i32)),
    case(break_in_single_while, *each(_N, int, i32), jit=True),
    case(multiple_breaks_in_single_while, *each(_N, int, i32)),
    case(break_followed_by_cond_in_single_while, *each(_N, int, i32)),
    case(unconditional_return_in_single_while, *each(_N[1:], int, i32)),
    case(unconditional_return_in_single_while, i32(0), name="unconditional_return_in_single_while:empty"),
    case(effectively_unconditional_return_in_single_while, *each(_N[1:], int, i32)),
    case(effectively_unconditional_return_in_single_while, i32(0),
         name="effectively_unconditional_return_in_single_while:empty"),
    case(continue_in_inner_for, *each(_NESTED, list, i32, _list_of_int_tensor)),
    case(break_in_inner_for, *each(_NESTED, list, i32, _list_of_int_tensor)),
    case(break_continue_in_inner_for, *each(_NESTED, list, i32, _list_of_int_tensor)),
    case(continue_in_inner_while, *_PAIRS),
    case(break_in_inner_while, *_PAIRS),
    case(break_continue_in_inner_while, *_PAIRS),
    case(break_followed_by_cond_in_single_for, *grid([0, 3, 5], [0, 2, 4]),
         *grid([i32(0), i32(3), i32(5)], [i32(0), i32(2), i32(4)])),
)
