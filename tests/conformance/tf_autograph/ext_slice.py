# Ported from tensorflow/tensorflow: tensorflow/python/autograph/tests/ext_slice_test.py
# at commit 84e2e6c717e89d7e8a9b7458290b11aa5b596658.
# Copyright 2017 The TensorFlow Authors. Licensed under the Apache License, Version 2.0.
# Changes, API spellings only: `import tensorflow as tf` -> `import torch`; tf.newaxis -> None (torch's spelling
# of a new axis), tf.eye -> torch.eye. The absl test class is not ported: its parameters are the CASES at the end.
"""Extended slice operations."""

import torch


def basic_ext_slice(n):
    return n[:, :], n[0, :], n[:, 0]


def basic_expand_dims(n):
    return n[:, None] - n[None, :]


def slice_of_application(n, x):
    return n(x)[:, None] - n(x)[None, :]


# ---- The corpus's cases (ours): the reference test's parameters as inputs. ----
from cases import A, case  # noqa: E402

CASES = (
    case(basic_ext_slice, torch.eye(3), jit=True),
    case(basic_expand_dims, torch.eye(3)),
    case(slice_of_application, A(lambda x: x, torch.eye(3))),
)
