# Ported from tensorflow/tensorflow: tensorflow/python/autograph/tests/basic_ifexp_test.py
# at commit 495e66a124024b8942a08e00d5f50e8ceabaa051.
# Copyright 2017 The TensorFlow Authors. Licensed under the Apache License, Version 2.0.
# Changes, API spellings only: `import tensorflow as tf` -> `import torch`; tf.unstack -> torch.unbind,
# tf.size -> torch.numel, tf.autograph.trace -> ta.print (a run-time print of the values), tf.constant ->
# torch.tensor (the inputs). The absl test class is not ported: its parameters are the CASES at the end.
"""Basic if conditional.

The loop is converted to tf.cond.
"""

import torch

import torch_autograph as ta


def consecutive_conds(x):
  if x > 0:
    x = -x if x < 5 else x
  else:
    x = -2 * x if x < 5 else 1
  if x > 0:
    x = -x if x < 5 else x
  else:
    x = (3 * x) if x < 5 else x
  return x


def cond_with_multiple_values(x):
  if x > 0:
    x = -x if x < 5 else x
    y = 2 * x if x < 5 else x
    z = -y if y < 5 else y
  else:
    x = 2 * x if x < 5 else x
    y = -x if x < 5 else x
    z = -y if y < 5 else y
  return x, y, z


def side_effect_only_ifexp_with_imbalanced_structure(x):
  traced_args = torch.unbind(x) if torch.numel(x) > 0 else []
  ta.print(*traced_args)
  return x * 2 + 1


# ---- The corpus's cases (ours): the reference test's parameters as inputs. ----
from cases import case, each, t  # noqa: E402

CASES = (
    case(consecutive_conds, *each([-1, 1, 5], int, t), jit=True),
    case(cond_with_multiple_values, *each([-1, 1, 5], int, t)),
    case(side_effect_only_ifexp_with_imbalanced_structure, t([1.0])),
)
