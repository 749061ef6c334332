# Ported from tensorflow/tensorflow: tensorflow/python/autograph/tests/nested_control_flow_test.py
# at commit 91754f4f0790961e2e38654e47bbdcf560662fcd.
# Copyright 2017 The TensorFlow Authors. Licensed under the Apache License, Version 2.0.
# Changes, API spellings only: `import tensorflow as tf` -> `import torch`; tf.name_scope('') ->
# torch.profiler.record_function('') (torch's named scope); tf.range -> torch.arange and tf.constant(x,
# tf.int32) -> torch.tensor(x, dtype=torch.int32) (the inputs). The absl test class is not ported: its
# parameters are the CASES at the end.
"""Nested loops and conditional statements (e.g. while, for, if).

Meant to verify that arbitrarily nested statements are processed correctly.
"""

import torch


def independent_ifs(x, y):
  z = 0
  if x > 0:
    if y > 0:
      z = x + y
  return z


def dependent_inner_if(x):
  y = 0
  if x > 0:
    y = -2 * x
    if y > 0:
      x = -3 * x
  else:
    y = 4 * x
  return x, y


def dependent_imbalanced_inner_if(x):
  y = 0
  if x > 0:
    if x < 3:
      y = -2 * x
      x = -3 * x
  return x, y


def _hidden_raise():
  raise ValueError('exception used for control flow')


def if_with_local_modification_masked_by_exception(x):
  y = 0
  if x > 0:
    try:
      if x > 1:
        _hidden_raise()
      y = 1
    except ValueError:
      pass
    if y == 0:
      y = 2
  return y


_test_global = None


def if_nested_with_modification_of_global(x):
  y = 0
  if x > 0:
    if x > 0:
      global _test_global
      if _test_global is None:
        _test_global = 1
      else:
        _test_global += 1
      y += _test_global
  return y


def independent_inner_for(a, b):
  p = 0
  for _ in a:
    tmp = b
    for j in tmp:
      p += j
  return p


def independent_inner_while(a, b):
  p = 0
  while a > 0:
    tmp = b
    while tmp > 0:
      p += 1
      tmp -= 1
    a -= 1
  return p


def dependent_inner_for(a, b):
  r = 1
  s = 0
  for _ in a:
    r += s
    tmp = b
    for j in tmp:
      s += j
  return r


def dependent_inner_while(a, b):
  r = 1
  while a > 0:
    r += 1
    tmp = b
    while tmp > 0:
      a -= 1
      tmp -= 1
    a -= 1
  return r


def if_in_for(a):
  k = 0
  for i in a:
    if i % 2 > 0:
      j = i // 2
      k += j
  return k


def while_with_continue_in_context_manager(x):
  z = 0
  while x > 0:
    with torch.profiler.record_function(''):
      x = x - 1
      if x < 5:
        continue
      z = z + 1
  return z


def while_continue_in_try(x):
  z = 0
  while x > 0:
    x = x - 1
    try:
      if x < 5:
        continue
      z = z + 1
    finally:
      z = z + 10
  return z


def while_break_in_context_manager(x):
  z = 0
  while x > 0:
    with torch.profiler.record_function(''):
      x = x - 1
      if x < 5:
        break
      z = z + 1
  return z


def while_break_in_try(x):
  z = 0
  while x > 0:
    x = x - 1
    try:
      if x < 5:
        break
      z = z + 1
    finally:
      z = z + 10
  return z


def loop_initializing_invariant_variable(n):
  for i in range(n):
    if i == 0:
      a = 1
    else:
      a = 2
  return a


def loop_initializing_variant_variable(n):
  for i in range(n):
    if i == 0:
      a = 1
    else:
      a = a + 1
  return a


# ---- The corpus's cases (ours): the reference test's parameters as inputs. ----
from cases import A, case, each, grid, i32  # noqa: E402


def _ranges(fn, values, jit=False):
    return case(fn, *grid([range(a) for a in values], [range(b) for b in values]),
                *grid([torch.arange(a) for a in values], [range(b) for b in values]),
                *grid([range(a) for a in values], [torch.arange(b) for b in values]),
                *grid([torch.arange(a) for a in values], [torch.arange(b) for b in values]), jit=jit)


def _ints(fn, values):
    return case(fn, *grid(values, values), *grid([i32(a) for a in values], values),
                *grid([i32(a) for a in values], [i32(b) for b in values]))


def _global_reset(x):
    global _test_global
    _test_global = None
    return if_nested_with_modification_of_global(x), _test_global


CASES = (
    _ints(independent_ifs, (-1, 1)),
    case(dependent_inner_if, *each([-1, 1], int, i32)),
    case(dependent_imbalanced_inner_if, *each([-1, 1], int, i32)),
    case(if_with_local_modification_masked_by_exception, -1, 0, 1, 2),
    case(_global_reset, 1, 0, name="if_nested_with_modification_of_global"),
    _ranges(independent_inner_for, (0, 1, 2)),
    _ints(independent_inner_while, (0, 1, 2)),
    _ranges(dependent_inner_for, (0, 1, 2), jit=True),
    case(dependent_inner_while, *grid((0, 1, 2, 3, 4), (0, 1, 2, 3, 4)),
         *grid([i32(a) for a in (0, 1, 2, 3, 4)], [i32(b) for b in (0, 1, 2, 3, 4)])),
    case(if_in_for, *each([0, 1, 2], range, torch.arange)),
    case(while_with_continue_in_context_manager, *each([0, 4, 10], int, i32)),
    case(while_continue_in_try, *each([0, 4, 10], int, i32)),
    case(while_break_in_context_manager, *each([0, 4, 10], int, i32)),
    case(while_break_in_try, *each([0, 4, 10], int, i32)),
    case(loop_initializing_invariant_variable, *each([1, 2], int, i32)),
    case(loop_initializing_invariant_variable, 0, i32(0), name="loop_initializing_invariant_variable:empty",
         raises=True),
    case(loop_initializing_variant_variable, 1, 2),
    case(loop_initializing_variant_variable, i32(1), i32(2), i32(0),
         name="loop_initializing_variant_variable:tensor"),
)
