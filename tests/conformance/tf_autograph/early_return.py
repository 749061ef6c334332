# Ported from tensorflow/tensorflow: tensorflow/python/autograph/tests/early_return_test.py
# at commit c7ffe90138b2a238b8dd80da9aed0922208f4ccc.
# Copyright 2017 The TensorFlow Authors. Licensed under the Apache License, Version 2.0.
# Changes, API spellings only: `import tensorflow as tf` -> `import torch` + `import torch_autograph as ta`;
# tf.print -> ta.print, tf.constant -> torch.tensor, tf.stack -> torch.stack, tf.reduce_sum -> torch.sum,
# tf.name_scope('') -> torch.profiler.record_function('') (torch's named scope). The absl test class is not
# ported: its parameters are the CASES at the end.
"""Multiple returns, some in conditionals."""

import torch

import torch_autograph as ta


def return_with_default(x):
  if x > 0:
    ta.print('x', x)
    return x
  return x * x


def return_dependent_on_local(c):
  t = torch.tensor(1)
  if c:
    return t
  t = torch.stack([t, t])
  return torch.sum(t)


def return_possibly_undefined(x):
  if x > 0:
    if x < 5:
      return x
  else:
    return x * x * x


def nested_ifs(x):
  if x > 0:
    if x < 5:
      return x
    else:
      return x * x
  else:
    return x * x * x


def possible_return_before_loop(c1, c2, n):
  if c1:
    if c2:
      return 1
  for _ in range(n):
    pass
  return 2


def nested_ifs_and_context_managers(x):
  with torch.profiler.record_function(''):
    if x > 0:
      if x < 5:
        with torch.profiler.record_function(''):
          return x
      else:
        return x * x
    else:
      return x * x * x


def unreachable_return(x):
  with torch.profiler.record_function(''):
    if x > 0:
      if x < 5:
        with torch.profiler.record_function(''):
          return x
      else:
        return x * x
    else:
      return x * x * x
  return x * x * x * x


def return_with_default_in_contexmanager(x):
  with torch.profiler.record_function(''):
    if x > 0:
      return 1
    return 0


def return_in_try_with_finally(x):
  try:
    if x > 0:
      return 1
    else:
      return 0
  finally:
    x = x + 1


def return_with_default_in_try_with_finally(x):
  try:
    if x > 0:
      return 1
    return 0
  finally:
    x = x + 1


def return_in_finally(x):
  try:
    return 2
  finally:
    if x > 0:
      return 1  # pylint: disable=lost-exception
    else:
      return 0  # pylint: disable=lost-exception


def return_with_default_in_finally(x):
  try:
    return 2
  finally:
    if x > 0:
      return 1  # pylint: disable=lost-exception
    return 0  # pylint: disable=lost-exception


def return_in_finally_default_in_try(x):
  try:
    if x > 0:
      return 0
  finally:
    return 1  # pylint: disable=lost-exception


def _raising_helper():
  raise ValueError()


def raise_during_return_caught():
  try:
    return _raising_helper()
  except ValueError:
    pass
  return 1


def raise_during_return_caught_in_tail_branch(c):
  if c:
    return 2
  try:
    return _raising_helper()
  except ValueError:
    pass
  return 1


# ---- The corpus's cases (ours): the reference test's parameters as inputs. ----
from cases import A, case, each, grid, t  # noqa: E402

CASES = (
    case(return_with_default, *each([0, 1], int, t), jit=True),
    case(return_dependent_on_local, *each([True, False], bool, t)),
    case(return_possibly_undefined, 0, 3, 5),
    case(return_possibly_undefined, t(0), t(3), t(5), name="return_possibly_undefined:tensor"),
    case(nested_ifs, *each([-1, 3, 6], int, t), jit=True),
    case(possible_return_before_loop, *grid([True, False], [True, False], [0, 1, 2])),
    case(nested_ifs_and_context_managers, *each([0, 3, 5], int, t)),
    case(unreachable_return, *each([0, 3, 5], int, t)),
    case(return_with_default_in_contexmanager, *each([0, 1], int, t)),
    case(return_in_try_with_finally, *each([0, 1], int, t)),
    case(return_with_default_in_try_with_finally, *each([0, 1], int, t)),
    case(return_in_finally, *each([0, 1], int, t)),
    case(return_with_default_in_finally, *each([0, 1], int, t)),
    case(return_in_finally_default_in_try, *each([0, 1], int, t)),
    case(raise_during_return_caught, A()),
    case(raise_during_return_caught_in_tail_branch, *each([True, False], bool, t)),
)
