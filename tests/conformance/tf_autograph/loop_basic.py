# Ported from tensorflow/tensorflow: tensorflow/python/autograph/tests/loop_basic_test.py
# at commit 27fa8b39f29dbd12cb3190a472dce03fdb0fa5bf.
# Copyright 2017 The TensorFlow Authors. Licensed under the Apache License, Version 2.0.
# Changes, API spellings only: `import tensorflow as tf` -> `import torch` + `import torch_autograph as ta`;
# tf.TensorArray -> ta.TensorArray, tf.int32 -> torch.int32. The absl test class is not ported: its
# parameters are the CASES at the end (tf.data inputs and the generator helper omitted).
"""Basic loops iterating over various types."""

import torch

import torch_autograph as ta


def while_no_vars(n, v):
  v.assign(0)
  while v.read_value() < n:
    v.assign_add(1)
  return v.read_value()


def for_no_vars(l, v):
  v.assign(0)
  for _ in l:
    v.assign_add(1)
  return v.read_value()


def while_one_var(n):
  i = 0
  while i < n:
    i = i * 10 + 1
  return i


def for_one_var(l):
  i = 0
  for i in l:
    pass
  return i


def while_two_vars(n):
  s = 0
  i = 0
  while i < n:
    s = s * 10 + i
    i += 1
  return s


def for_two_vars(l):
  s = 0
  for i in l:
    s = s * 10 + i
  return s


def while_else(x, y):
  s = 0
  while x > 0:
    x -= 1
    if x > y:
      break
    s += x
  else:
    s = -100
  return s


def for_else(l1, l2):
  s = 0
  for c in l1:
    if c in l2:
      break
    s = s * 10 + c
  else:
    s = -1000
  return s


def while_creates_var(n):
  i = 0
  while i < n:
    i = n + 1
    j = i + 1
  return i, j


def for_creates_var(l):
  for i in l:
    pass
  return i  # pylint:disable=undefined-loop-variable


def successive_while_loops(n1, n2):
  s = 0
  i = 0
  while i < n1:
    s = s * 10 + i
    i += 1
  i = 0
  while i < n2:
    s = s * 10 + i
    i += 1
  return s


def successive_for_loops(l1, l2):
  s = 0
  for i in l1:
    s = s * 10 + i
  for i in l2:
    s = s * 10 + i
  return s


def nested_while_loops(n1, n2):
  i = 0
  l = ta.TensorArray(torch.int32, size=0, dynamic_size=True, element_shape=())
  while i < n1:
    j = 0
    s = 0
    while j < n2:
      s = s * 10 + i * j
      j += 1
    l = l.write(i, s)
    i += 1
  return l.stack()


def nested_for_loops(m):
  l = ta.TensorArray(torch.int32, size=0, dynamic_size=True, element_shape=())
  for i in m:
    s = 0
    for j in i:
      s = s * 10 + j
    l = l.write(l.size(), s)
  return l.stack()


# ---- The corpus's cases (ours): the reference test's parameters as inputs. ----
from cases import A, case, each, grid, i32  # noqa: E402

_LISTS = ([], [1], [1, 2])
CASES = (
    case(while_no_vars, *grid([0, 1, 2], [ta.Variable(0)]), *grid([i32(0), i32(1), i32(2)], [ta.Variable(0)])),
    case(for_no_vars, *grid(_LISTS, [ta.Variable(0)]), *grid([i32(l) for l in _LISTS], [ta.Variable(0)]),
         jit=True),
    case(while_one_var, *each([0, 1, 2], int, i32), jit=True),
    case(for_one_var, *each(_LISTS, list, i32)),
    case(while_two_vars, *each([0, 1, 2], int, i32)),
    case(for_two_vars, *each(_LISTS, list, i32), jit=True),
    case(for_else, *grid([[], [1, 2]], [[], [1, 2]]), *grid([i32([]), i32([1, 2])], [i32([]), i32([1, 2])])),
    case(while_else, *grid([0, 2], [0, 2]), *grid([i32(0), i32(2)], [i32(0), i32(2)])),
    case(while_creates_var, *each([1, 2, 0], int, i32)),
    case(for_creates_var, *each([[1], [1, 2], []], list, i32)),
    case(successive_while_loops, *grid([0, 1, 2], [0, 1, 2]), *grid([i32(0), i32(1), i32(2)], [i32(0), i32(2)])),
    case(successive_for_loops, *grid(_LISTS, _LISTS), *grid([i32(l) for l in _LISTS], [i32([]), i32([1, 2])])),
    case(nested_while_loops, *grid([0, 1, 2], [0, 1, 2]), *grid([i32(0), i32(1), i32(2)], [i32(0), i32(2)])),
    case(nested_for_loops, *each([[[]], [[], []], [[1]], [[1], [2]], [[1, 2]], [[1, 2], [3, 4]]], i32),
         [[], [1], [1, 2]], [[], i32([]), [1], i32([1]), [1, 2]]),
)
