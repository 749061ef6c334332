# Ported from tensorflow/tensorflow: tensorflow/python/autograph/tests/call_to_lambda_function_test.py
# at commit 5c3cba59ec3009f5e8084526c2af8aa7e3199769.
# Copyright 2017 The TensorFlow Authors. Licensed under the Apache License, Version 2.0.
# Changes, API spellings only: `import tensorflow.compat.v1 as tf` -> `import torch`; tf.constant ->
# torch.tensor (the inputs). The absl test class is not ported: its parameters are the CASES at the end.
"""Simple call to lambda functions."""

import torch


def inline_lambda(x):
  l = lambda x: x * x if x > 0 else -x
  return l(x)


def external_lambda(x, l):
  return l(x)


# ---- The corpus's cases (ours): the reference test's parameters as inputs. ----
from cases import A, case, t  # noqa: E402

_IS_ZERO = lambda x: x == 0  # noqa: E731
CASES = (
    case(inline_lambda, 1, -2, t(1), t(-2), jit=True),
    case(external_lambda, A(1, _IS_ZERO), A(t(1), _IS_ZERO), A(t(0), _IS_ZERO)),
)
