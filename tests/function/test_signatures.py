"""TensorSpec and trace types: subtyping, generalisation, explanations."""

import collections

import numpy as np
import pytest
import torch

import torch_autograph as ta
from torch_autograph.function import signatures as sig
from torch_autograph.function.signatures import ArraySpec, Identity, Literal, Structure, TensorSpec

CPU = torch.device("cpu")


def test_tensor_spec_fields_and_repr():
    s = TensorSpec([None, 4], torch.float16, name="x")
    assert s.shape == (None, 4) and s.dtype is torch.float16 and s.name == "x" and s.device is None
    assert repr(s) == "TensorSpec(shape=(None, 4), dtype=torch.float16, name='x')"
    assert TensorSpec(None).shape is None and repr(TensorSpec(None)) == (
        "TensorSpec(shape=None, dtype=torch.float32, name=None)")
    assert TensorSpec([2], name="a") == TensorSpec([2], name="b")  # the name is not part of the type
    assert hash(TensorSpec([2], name="a")) == hash(TensorSpec([2]))


def test_tensor_spec_rejects_bad_arguments():
    with pytest.raises(ValueError, match="negative dim -3"):
        TensorSpec([2, -3])
    with pytest.raises(TypeError, match="must be a sequence of ints and None, got the int 3"):
        TensorSpec(3)
    with pytest.raises(TypeError, match="dtype must be a torch.dtype, got 'float32'"):
        TensorSpec([2], "float32")


def test_is_compatible_with():
    spec = TensorSpec([None, 4])
    assert spec.is_compatible_with(torch.ones(7, 4))
    assert not spec.is_compatible_with(torch.ones(7, 5))
    assert not spec.is_compatible_with(torch.ones(7, 4, dtype=torch.float64))
    assert TensorSpec(None).is_compatible_with(torch.ones(1, 2, 3))
    assert not TensorSpec([None], device="cuda").is_compatible_with(torch.ones(2))


def test_trace_types_of_values():
    assert sig.trace_type(torch.ones(2, 3)) == TensorSpec((2, 3), torch.float32, device=CPU)
    # A NumPy array: the same description, but never equal to a tensor's (the traced code sees an array).
    assert sig.trace_type(np.ones(2, np.int32)) == ArraySpec((2,), torch.int32, device=CPU)
    assert sig.trace_type(np.ones(2, np.int32)) != TensorSpec((2,), torch.int32, device=CPU)
    assert sig.trace_type(2) == Literal(2) != sig.trace_type(2.0) != sig.trace_type(True)
    assert sig.trace_type(torch.float32) == Literal(torch.float32)
    p = torch.nn.Parameter(torch.ones(2))
    assert isinstance(sig.trace_type(p), Identity) and sig.trace_type(p) == sig.trace_type(p)
    assert sig.trace_type(torch.nn.Parameter(torch.ones(2))) != sig.trace_type(p)
    nt = collections.namedtuple("NT", "a b")
    t = sig.trace_type(nt(torch.ones(1), 3))
    assert t == Structure(nt, ("a", "b"), (TensorSpec((1,), device=CPU), Literal(3)))
    assert sig.trace_type({"b": 1, "a": 2}) == sig.trace_type({"a": 2, "b": 1})
    assert sig.trace_type([1, 2]) != sig.trace_type([2, 1])


def test_subtyping():
    assert sig.is_subtype(TensorSpec((1, 2)), TensorSpec((None, 2)))
    assert sig.is_subtype(TensorSpec((1, 2)), TensorSpec(None))
    assert not sig.is_subtype(TensorSpec((None, 2)), TensorSpec((1, 2)))
    assert not sig.is_subtype(TensorSpec((1, 2)), TensorSpec((None,)))
    assert not sig.is_subtype(TensorSpec((1,), torch.int64), TensorSpec((None,)))
    assert not sig.is_subtype(Literal(1), Literal(True))


def test_common_supertype_and_generality():
    a, b = TensorSpec((3, 4)), TensorSpec((5, 4))
    assert sig.common_supertype(a, b) == TensorSpec((None, 4))
    assert sig.common_supertype(TensorSpec((3,)), TensorSpec((3, 1))) is None  # a graph needs the rank
    assert sig.common_supertype(TensorSpec((3,)), TensorSpec((3,), torch.int64)) is None
    assert sig.common_supertype(Literal(0), Literal(1)) is None
    assert sig.generality(TensorSpec((1, None), device=CPU)) < sig.generality(TensorSpec((None, None), device=CPU))


def test_diff_explains_changes():
    assert sig.diff(TensorSpec((3,)), TensorSpec((4,), torch.int64), "argument 'x'") == [
        "argument 'x': shape (3,) -> (4,), dtype torch.float32 -> torch.int64"]
    assert sig.diff(Literal(1), Literal(2), "argument 'n'") == ["argument 'n': Literal[1] -> Literal[2]"]
    assert sig.diff(TensorSpec((3,)), TensorSpec(None), "x") == ["x: shape (3,) -> <unknown rank>"]


def test_identity_is_weak_and_matches_only_the_same_object():
    class Obj:
        pass

    o = Obj()
    t = Identity(o)
    assert t == Identity(o) and t != Identity(Obj())
    assert repr(t).startswith("Object[Obj at 0x")
    del o
    assert t.obj is None and t != t  # a dead object matches nothing


def test_ta_shape_eagerly():
    assert ta.shape(torch.ones(2, 3)) == (2, 3)
    assert ta.shape(np.ones((4,))) == (4,)
