# Ported from tensorflow/tensorflow: tensorflow/python/autograph/tests/call_to_named_tuple_test.py
# at commit 6aafb08ab1f2fc79884c3bd003c72a638f414d19.
# Copyright 2017 The TensorFlow Authors. Licensed under the Apache License, Version 2.0.
# Changes, API spellings only: `import tensorflow.compat.v1 as tf` -> `import torch`; tf.constant ->
# torch.tensor (the inputs). The absl test class is not ported: its parameters are the CASES at the end.
"""Simple call to construct a namedtuple."""

import collections

import torch


def inline_namedtuple(x):
  nt = collections.namedtuple('TestNamedTuple', ('a', 'b'))
  n = nt(a=1, b=x)
  return n


def external_namedtuple(x, nt):
  return nt(a=1, b=x)


class NamedTupleSubclass(collections.namedtuple('TestNamedTuple', ('a',))):

  def foo(self):
    return self.a + 1


def namedtuple_subclass(x):
  nt = NamedTupleSubclass(x)
  return nt.foo()


# ---- The corpus's cases (ours): the reference test's parameters as inputs. ----
from cases import A, case, t  # noqa: E402

_NT = collections.namedtuple('TestNamedTuple', ('a', 'b'))
CASES = (
    case(inline_namedtuple, 1, t(1)),
    case(external_namedtuple, A(1, _NT), A(t(1), _NT)),
    case(namedtuple_subclass, 1, t(1)),
)
