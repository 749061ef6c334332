# Ported from tensorflow/tensorflow: tensorflow/python/autograph/tests/loop_with_variable_type_test.py
# at commit 0304934138cbfabd338ec432a630a9c3c1191564.
# Copyright 2017 The TensorFlow Authors. Licensed under the Apache License, Version 2.0.
# Changes, API spellings only: `import tensorflow as tf` -> `import torch` + `import torch_autograph as ta`;
# tf.constant -> torch.tensor; tf.concat -> torch.concat, whose Python-list operand TensorFlow converts
# implicitly is written torch.tensor([...]); tf.pad(m, [[1, 1], [1, 1]], constant_values=i) ->
# torch.nn.functional.pad(m, (1, 1, 1, 1), value=i); tf.autograph.experimental.set_loop_options ->
# ta.autograph.experimental.set_loop_options; tf.TensorShape(s) -> s (None: any shape). The SparseTensor
# programs are not ported (no torch counterpart in a loop). The absl test class is not ported: its parameters
# are the CASES at the end (tf.data inputs omitted).
"""Loops with type changing variables."""

import collections

import torch

import torch_autograph as ta


def while_with_variable_shape_growing_vector(n):
    v = torch.tensor([0, 0])
    i = 0
    while i < n:
        ta.autograph.experimental.set_loop_options(
            shape_invariants=[(v, [None])]
        )
        v = torch.concat((v, torch.tensor([i])), 0)
        i += 1
    return v


def for_with_variable_shape_growing_vector(l):
    v = torch.tensor([0, 0])
    for i in l:
        ta.autograph.experimental.set_loop_options(
            shape_invariants=[(v, [None])]
        )
        v = torch.concat((v, torch.tensor([i])), 0)
    return v


def while_with_variable_shape_growing_matrix_rows(n):
    m = torch.tensor([[0]])
    i = 0
    while i < n:
        ta.autograph.experimental.set_loop_options(
            shape_invariants=[(m, [None, 1])]
        )
        m = torch.concat((m, torch.tensor([[i]])), 0)
        i += 1
    return m


def for_with_variable_shape_growing_matrix_rows(l):
    m = torch.tensor([[0]])
    for i in l:
        ta.autograph.experimental.set_loop_options(
            shape_invariants=[(m, [None, 1])]
        )
        m = torch.concat((m, torch.tensor([[i]])), 0)
    return m


def while_with_variable_shape_growing_matrix_cols(n):
    m = torch.tensor([[0, 0]])
    i = 0
    while i < n:
        ta.autograph.experimental.set_loop_options(
            shape_invariants=[(m, [1, None])]
        )
        m = torch.concat((m, torch.tensor([[i]])), 1)
        i += 1
    return m


def for_with_variable_shape_growing_matrix_cols(l):
    m = torch.tensor([[0, 0]])
    for i in l:
        ta.autograph.experimental.set_loop_options(
            shape_invariants=[(m, [1, None])]
        )
        m = torch.concat((m, torch.tensor([[i]])), 1)
    return m


def while_with_variable_shape_growing_matrix(n):
    m = torch.tensor([[0, 0], [0, 0]])
    i = 0
    while i < n:
        ta.autograph.experimental.set_loop_options(
            shape_invariants=[(m, None)]
        )
        m = torch.nn.functional.pad(m, (1, 1, 1, 1), value=i)
        i += 1
    return m


def for_with_variable_shape_growing_matrix(l):
    m = torch.tensor([[0, 0], [0, 0]])
    for i in l:
        ta.autograph.experimental.set_loop_options(
            shape_invariants=[(m, None)]
        )
        m = torch.nn.functional.pad(m, (1, 1, 1, 1), value=i)
    return m


def while_with_variable_shape_inside_if(n):
    v = torch.tensor([0, 0])
    i = 0
    if n > 1:
        while i < n:
            ta.autograph.experimental.set_loop_options(
                shape_invariants=[(v, [None])]
            )
            v = torch.concat((v, torch.tensor([i])), 0)
            i += 1
    else:
        v = torch.tensor([1, 2, 3])
    return v


def for_with_variable_shape_inside_if(n):
    v = torch.tensor([0, 0])
    if n > 1:
        for i in range(n):
            ta.autograph.experimental.set_loop_options(
                shape_invariants=[(v, [None])]
            )
            v = torch.concat((v, torch.tensor([i])), 0)
            i += 1
    else:
        v = torch.tensor([1, 2, 3])
    return v


def for_with_nested_variable_shape_inside_if(n):
    Test = collections.namedtuple("Test", ["var"])
    t = Test(var=torch.tensor([0]))
    v = torch.tensor([0, 0])
    if n > 1:
        for i in range(n):
            ta.autograph.experimental.set_loop_options(
                shape_invariants=[(v, [None])]
            )
            v = torch.concat((v, torch.tensor([i])), 0)
            t = Test(var=t.var + 1)
            i += 1
    else:
        v = torch.tensor([1, 2, 3])
        t = Test(var=torch.tensor([3]))
    return v


def while_with_variable_shape_and_break(n):
    v = torch.tensor([0, 0])
    i = 0
    if n > 1:
        while i < n:
            ta.autograph.experimental.set_loop_options(
                shape_invariants=[(v, [None])]
            )
            v = torch.concat((v, torch.tensor([i])), 0)
            i += 1
            if i > 3:
                break
    else:
        v = torch.tensor([1, 2, 3])
    return v


def for_with_variable_shape_and_break(n):
    v = torch.tensor([0, 0])
    if n > 1:
        for i in range(n):
            ta.autograph.experimental.set_loop_options(
                shape_invariants=[(v, [None])]
            )
            v = torch.concat((v, torch.tensor([i])), 0)
            i += 1
            if i > 3:
                break
    else:
        v = torch.tensor([1, 2, 3])
    return v


# ---- The corpus's cases (ours): the reference test's parameters as inputs. ----
from cases import case, each, t  # noqa: E402

_N = (0, 1, 2)
CASES = (
    case(while_with_variable_shape_growing_vector, *each(_N, int, t), jit=True),
    case(for_with_variable_shape_growing_vector, *each(_N, range, torch.arange)),
    case(while_with_variable_shape_growing_matrix_rows, *each(_N, int, t)),
    case(for_with_variable_shape_growing_matrix_rows, *each(_N, range, torch.arange)),
    case(while_with_variable_shape_growing_matrix_cols, *each(_N, int, t)),
    case(for_with_variable_shape_growing_matrix_cols, *each(_N, range, torch.arange)),
    case(while_with_variable_shape_growing_matrix, *each(_N, int, t)),
    case(for_with_variable_shape_growing_matrix, *each(_N, range, torch.arange)),
    case(while_with_variable_shape_inside_if, *each(_N, int, t)),
    case(for_with_variable_shape_inside_if, *each(_N, int, t)),
    case(for_with_nested_variable_shape_inside_if, *each(_N, int, t)),
    case(while_with_variable_shape_and_break, *each(_N, int, t)),
    case(for_with_variable_shape_and_break, *each((0, 1, 2, 5), int, t)),
)
