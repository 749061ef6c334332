# Ported from tensorflow/tensorflow: tensorflow/python/autograph/converters/return_statements_test.py
# at commit 1d66b787ae3f721afdf9fc4a2fd99c50b93285b3.
# Copyright 2017 The TensorFlow Authors. Licensed under the Apache License, Version 2.0.
# Changes, API spellings only: ops.name_scope('') -> torch.profiler.record_function('') (torch's named scope).
# Each test's inner function `f` is lifted to module level and named after its test
# (`test_conditional_nested` -> `conditional_nested`), its body unchanged; the tests' inputs are the CASES at
# the end, each also given as a tensor (torch.tensor) to stage the control flow.
"""Tests for return_statements module."""

import torch


def straightline(x):
  return x * x


def superfluous_returns():
  retval = 1
  return retval
  retval = 2  # pylint:disable=unreachable
  return retval


def superfluous_returns_adjacent():
  return 1
  return 2  # pylint:disable=unreachable


def conditional(x):
  if x > 0:
    return x
  else:
    return x * x


def conditional_missing_else(x):
  if x > 0:
    return x


def conditional_missing_else_then_default(x):
  if x > 0:
    return x
  return x * x


def conditional_else_only_then_default(x):
  if x < 0:
    x *= x
  else:
    return x
  return x


def conditional_nested(x):
  if x > 0:
    if x < 5:
      return x
    else:
      return x * x
  else:
    return x * x * x


def context_manager(x):
  with torch.profiler.record_function(''):
    return x * x


def context_manager_in_conditional(x):
  if x > 0:
    with torch.profiler.record_function(''):
      return x * x
  else:
    return x


def conditional_in_context_manager(x):
  with torch.profiler.record_function(''):
    if x > 0:
      return x * x
    else:
      return x


def no_return(x):
  x *= x


def nested_function(x):

  def inner_fn(y):
    if y > 0:
      return y * y
    else:
      return y

  return inner_fn(x)


def nested_function_in_control_flow(x):

  if x:
    def inner_fn(y):
      return y
    inner_fn(x)


def for_loop(n):
  for _ in range(n):
    return 1


def while_loop(n):
  i = 0
  s = 0
  while i < n:
    i += 1
    s += i
    if s > 4:
      return s
  return -1


def null_return(n):
  if n > 4:
    return
  return


def nested_multiple_withs(x):
  v = []
  while x > 0:
    x -= 1
    with torch.profiler.record_function(''):
      if x % 2 == 0:
        return v
    with torch.profiler.record_function(''):
      v.append(x)
    v.append(x)
  return v


def multiple_returns_in_nested_scope(a):
  v = []
  for x in a:
    x -= 1
    if x > 100:
      return v
    try:
      raise ValueError('intentional')
    except ValueError:  # pylint:disable=bare-except
      return v
    v.append(x)
  return v


# ---- The corpus's cases (ours): the tests' inputs, as Python numbers and as tensors. ----
from cases import A, case, each, t  # noqa: E402

CASES = (
    case(straightline, 2, t(2)),
    case(superfluous_returns, A()),
    case(superfluous_returns_adjacent, A()),
    case(conditional, *each([2, -2], int, t), jit=True),
    case(conditional_missing_else, 2, -2),
    case(conditional_missing_else, t(2), t(-2), name="conditional_missing_else:tensor"),
    case(conditional_missing_else_then_default, *each([2, -2], int, t)),
    case(conditional_else_only_then_default, *each([2, -2], int, t)),
    case(conditional_nested, *each([2, -2, 5], int, t)),
    case(context_manager, *each([2, -2], int, t)),
    case(context_manager_in_conditional, *each([2, -2], int, t)),
    case(conditional_in_context_manager, *each([2, -2], int, t)),
    case(no_return, 2, t(2)),
    case(nested_function, *each([2, -2], int, t)),
    case(nested_function_in_control_flow, *each([2, -2], int, t)),
    case(for_loop, 2, 0),
    case(for_loop, t(2), t(0), name="for_loop:tensor"),
    case(while_loop, *each([0, 2, 4], int, t)),
    case(null_return, *each([4, 5], int, t)),
    case(nested_multiple_withs, *each([0, 1, 3, 4], int, t)),
    case(multiple_returns_in_nested_scope, *each([[], [1], [2], [1, 2, 3]], list, t)),
)
