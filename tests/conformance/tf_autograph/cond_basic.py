# Ported from tensorflow/tensorflow: tensorflow/python/autograph/tests/cond_basic_test.py
# at commit 6d5bd6de675d607d14eaca123e68c6faaebab608.
# Copyright 2017 The TensorFlow Authors. Licensed under the Apache License, Version 2.0.
# Changes, API spellings only: `import tensorflow as tf` -> `import torch`; tf.constant -> torch.tensor (in the
# inputs), tf.Variable -> ta.Variable. The absl test class is not ported: its parameters are the CASES at the
# end; where TensorFlow accepts a program for Python inputs and refuses it for tensors, the two are two cases
# (the second named `...:tensor`).
"""Basic conditionals."""

import torch


def if_no_vars(c, v):
  v.assign(0)
  if c:
    v.assign_add(1)
  return v.read_value()


def if_else_no_vars(c, v):
  v.assign(0)
  if c:
    v.assign_add(1)
  else:
    v.assign_add(2)
  return v.read_value()


def if_one_var(n):
  i = 0
  if i < n:
    i += 1
  return i


def if_else_one_var(n):
  i = 0
  if i < n:
    i += 1
  else:
    i += 2
  return i


def if_two_vars(n):
  i = 0
  j = 1
  if i < n:
    i += 1
    j *= 10
  return i, j


def if_else_two_vars(n):
  i = 0
  j = 1
  if i < n:
    i += 1
    j *= 10
  else:
    i += 2
    j *= 20
  return i, j


def if_creates_var(c):
  if c:
    i = 1
  return i


def if_else_creates_var(c):
  if c:
    i = 1
  else:
    i = 2
  return i


def else_creates_var(c):
  if c:
    pass
  else:
    i = 2
  return i


def if_destroys_var(c):
  i = 1
  if c:
    del i
  return i


def if_else_destroys_var(c):
  i = 1
  if c:
    del i
  else:
    del i
  return i


def else_destroys_var(c):
  i = 2
  if c:
    pass
  else:
    del i
  return i


def if_returns_none(c):
  i = 0
  j = 1
  if c:
    i = None
    j = 2
  return i, j


def if_else_returns_none(c):
  if c:
    i = None
    j = 1
  else:
    i = None
    j = 2
  return i, j


def else_returns_none(c):
  i = 1
  j = 1
  if c:
    pass
  else:
    i = None
    j = 2
  return i, j


def if_local_var(c):
  i = 0
  if c:
    j = 1
    i = j + 1
  return i


def if_else_local_var(c):
  i = 0
  if c:
    j = 1
  else:
    j = 2
    i = j + 1
  return i


def if_locally_modified_var(c):
  i = 0
  j = 2
  if c:
    j = j + 1
    i = j + 1
  return i


def successive_ifs(n1, n2):
  s = 0
  i = 0
  if i < n1:
    s = s * 10 + i
    i += 1
  i = 0
  if i < n2:
    s = s * 10 + i
    i += 1
  return s


def successive_if_elses(n1, n2):
  s = 0
  i = 0
  if i < n1:
    s = s * 10 + i
    i += 1
  else:
    s = s * 11 + i
    i += 2
  i = 0
  if i < n2:
    s = s * 10 + i
    i += 1
  else:
    s = s * 11 + i
    i += 2
  return s


def nested_ifs(n1, n2):
  i = 0
  l = 0
  if i < n1:
    j = 0
    s = 0
    if j < n2:
      s = s * 10 + i * j
      j += 1
    l = l * 1000 + s
    i += 1
  return l


def nested_if_temporarily_undefined_return(c1, c2):
  if c1:
    if c2:
      return 1
  return 2


def nested_if_elses(n1, n2):
  i = 0
  l = 0
  if i < n1:
    j = 0
    s = 0
    if j < n2:
      s = s * 10 + i * j
      j += 1
    else:
      s = s * 11 + i * j
      j += 2
    l = l * 1000 + s
    i += 1
  else:
    j = 0
    s = 0
    if j < n2:
      s = s * 12 + i * j
      j += 3
    else:
      s = s * 13 + i * j
      j += 4
    l = l * 2000 + s
    i += 1
  return l


# ---- The corpus's cases (ours): the reference test's parameters as inputs. ----
import torch_autograph as ta  # noqa: E402

from cases import A, case, each, grid, t  # noqa: E402

_BOOLS = (True, False)
_COMPOSE = (*grid([0, 1], [0, 1]), *grid([t(0), t(1)], [0, 1]), *grid([0, 1], [t(0), t(1)]),
            *grid([t(0), t(1)], [t(0), t(1)]))
CASES = (
    case(if_no_vars, *grid(_BOOLS, [ta.Variable(0)]), *grid([t(True), t(False)], [ta.Variable(0)]), jit=True),
    case(if_else_no_vars, *grid(_BOOLS, [ta.Variable(0)]), *grid([t(True), t(False)], [ta.Variable(0)])),
    case(if_one_var, *each([0, 1], int, t), jit=True),
    case(if_else_one_var, *each([0, 1], int, t)),
    case(if_two_vars, *each([0, 1], int, t)),
    case(if_else_two_vars, *each([0, 1], int, t)),
    case(if_creates_var, True, False),
    case(if_creates_var, t(True), t(False), name="if_creates_var:tensor"),
    case(if_else_creates_var, *each(_BOOLS, int, t)),
    case(else_creates_var, False, True),
    case(else_creates_var, t(True), t(False), name="else_creates_var:tensor"),
    case(if_destroys_var, False, True),
    case(else_destroys_var, True, False),
    case(if_else_destroys_var, *each(_BOOLS, int, t), raises=True),
    case(if_returns_none, True, False),
    case(if_returns_none, t(True), t(False), name="if_returns_none:tensor"),
    case(if_else_returns_none, False, True),
    case(if_else_returns_none, t(True), t(False), name="if_else_returns_none:tensor"),
    case(else_returns_none, False, True),
    case(else_returns_none, t(True), t(False), name="else_returns_none:tensor"),
    case(if_local_var, *each(_BOOLS, bool, t)),
    case(if_else_local_var, *each(_BOOLS, bool, t)),
    case(if_locally_modified_var, *each(_BOOLS, bool, t)),
    case(nested_if_temporarily_undefined_return, *grid(_BOOLS, _BOOLS)),
    case(nested_if_temporarily_undefined_return, *grid([t(True), t(False)], [t(True), t(False)]),
         name="nested_if_temporarily_undefined_return:tensor"),
    case(successive_ifs, *_COMPOSE),
    case(successive_if_elses, *_COMPOSE, jit=True),
    case(nested_ifs, *_COMPOSE),
    case(nested_if_elses, *_COMPOSE),
)
