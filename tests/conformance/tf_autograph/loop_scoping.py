# Ported from tensorflow/tensorflow: tensorflow/python/autograph/tests/loop_scoping_test.py
# at commit 0cadda00c709df0c88ed66ce7a382177cfa1c813.
# Copyright 2017 The TensorFlow Authors. Licensed under the Apache License, Version 2.0.
# Changes, API spellings only: `import tensorflow as tf` -> `import torch`; tf.range -> torch.arange and
# tf.constant(x, dtype=tf.int32) -> torch.tensor(x, dtype=torch.int32) (the inputs). The absl test class is not
# ported: its parameters are the CASES at the end (the cases it skips are left out too).
"""Tests that verify scoping around loops."""

import torch


#tf.autograph.set_verbosity(10, True)
def for_with_local_var(l):
  s = 0
  for i in l:
    x = i + 2
    s = s * 10 + x
  return s


def while_with_local_var(x):
  s = 0
  while x > 0:
    y = x + 2
    s = s * 10 + y
    x -= 1
  return s

def for_with_lambda_iter(l):
  fns = []
  results = []
  for i in l:
    fns.append(lambda: i+i)
  for f in fns:
    results.append(f())
  return results

def for_with_lambda_iter_local_var(l):
  fns = []
  results = []
  for i in l:
    fns.append(lambda i=i: i+i)
  for f in fns:
    results.append(f())
  return results

def for_initializes_local_var(l):
  s = 0
  for i in l:
    if i == l[0]:
      x = 0
    else:
      x += 1
    s = s * 10 + x
  return s


def while_initializes_local_var(x):
  s = 0
  while x > 0:
    if x > 0:
      y = 0
    else:
      y += 1
    s = s * 10 + y
    x -= 1
  return s


def for_defines_var(l):
  for i in l:
    x = i + 2
  return x


def while_defines_var(x):
  while x > 0:
    y = x + 2
    x -= 1
  return y


def for_defines_iterate(n, fn):
  s = 0
  for i in fn(n):
    s = s * 10 + i
  return i, s  # pylint:disable=undefined-loop-variable


def for_reuses_iterate(n, fn):
  i = 7
  s = 0
  for i in fn(n):
    s = s * 10 + i
  return i, s


def for_alters_iterate(n, fn):
  i = 7
  s = 0
  for i in fn(n):
    i = 3 * i + 1
    s = s * 10 + i
  return i, s


# ---- The corpus's cases (ours): the reference test's parameters as inputs. ----
from cases import A, case, each, grid, i32  # noqa: E402

_LISTS = ([], [1], [1, 2])


def _as_list(x):
    return list(x)


CASES = (
    case(for_with_local_var, *each(_LISTS, list, i32), *each([0, 1, 2], range, torch.arange), jit=True),
    case(for_with_lambda_iter, [1], [1, 2]),
    case(for_with_lambda_iter_local_var, [1], [1, 2]),
    case(while_with_local_var, *each([0, 1, 2], int, i32)),
    case(for_initializes_local_var, *_LISTS),
    case(while_initializes_local_var, 0, 1, 2),
    case(for_defines_var, [1], [1, 2]),
    case(while_defines_var, 1, 2),
    case(for_defines_iterate, *grid([1, 2], [range, torch.arange])),
    case(for_reuses_iterate, *grid(_LISTS, [_as_list, i32]), *grid([0, 1, 2], [range, torch.arange])),
    case(for_alters_iterate, *grid(_LISTS, [_as_list, i32]), *grid([0, 1, 2], [range, torch.arange])),
)
