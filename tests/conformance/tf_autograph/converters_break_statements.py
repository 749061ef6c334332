# Ported from tensorflow/tensorflow: tensorflow/python/autograph/converters/break_statements_test.py
# at commit 00f0938ae85c7dd68b44b4d80a873f42b1dca16a.
# Copyright 2017 The TensorFlow Authors. Licensed under the Apache License, Version 2.0.
# Changes: none to the programs. Each test's inner function `f` is lifted to module level and named after its
# test (`test_while_loop` -> `while_loop`), its body unchanged; the tests' inputs are the CASES at the end, each
# also given as a tensor (torch.tensor) to stage the loops. The two directive-annotation tests are not ported.
"""Tests for break_statements module."""

import torch


def while_loop(x):
  v = []
  while x > 0:
    x -= 1
    if x % 2 == 0:
      break
    v.append(x)
  return v


def for_loop(a):
  v = []
  for x in a:
    x -= 1
    if x % 2 == 0:
      break
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
        break
    v.append(x)
  return v, u, w


def nested_loops(x):
  v = []
  u = []
  while x > 0:
    x -= 1
    y = x
    while y > 0:
      y -= 1
      if y % 2 == 0:
        break
      u.append(y)
    if x == 0:
      break
    v.append(x)
  return v, u


def loop_orelse(x):
  v = []
  u = []
  while x > 0:
    x -= 1
    y = x
    while y > 1:
      break
    else:
      u.append(y)
      break
    v.append(x)
  return v, u


def multiple_correlated_breaks_with_side_effects(cond1):
  lst = []
  while True:
    if cond1:
      lst.append(1)
    else:
      break
    if lst[-1] > 0:  # lst always has an element here
      break
  return lst


# ---- The corpus's cases (ours): the tests' inputs, as Python numbers and as tensors. ----
from cases import case, each, t  # noqa: E402

CASES = (
    case(while_loop, *each([0, 1, 4], int, t), jit=True),
    case(for_loop, [5, 4], t([5, 4])),
    case(nested, *each([0, 3, 11], int, t)),
    case(nested_loops, *each([0, 2, 3, 5], int, t)),
    case(loop_orelse, *each([0, 2, 3], int, t)),
    case(multiple_correlated_breaks_with_side_effects, *each([True, False], bool, t)),
)
