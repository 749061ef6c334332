"""Bad inputs: every message names the argument and shows what was expected and what was received."""

import numpy as np
import pytest
import torch

import torch_autograph as ta
from torch_autograph.errors import InvalidArgumentError

SPEC = ta.TensorSpec([None, 2], torch.float32)


def _f(x):
    return x * 2


def _sig_fn():
    return ta.function(_f, autograph=False, input_signature=[SPEC])


@pytest.mark.parametrize("value, received", [
    (torch.ones(3, 2, dtype=torch.int64), "a tensor of shape (3, 2) and dtype torch.int64"),
    (torch.ones(3), "a tensor of shape (3,) and dtype torch.float32"),
    (torch.ones(3, 5), "a tensor of shape (3, 5) and dtype torch.float32"),
])
def test_input_signature_mismatch_names_argument_expected_and_received(value, received):
    with pytest.raises(TypeError) as info:
        _sig_fn()(value)
    msg = str(info.value)
    assert "argument 'x'" in msg and "expected TensorSpec(shape=(None, 2), dtype=torch.float32" in msg
    assert f"received {received}" in msg


def test_input_signature_rejects_non_tensors_by_name():
    with pytest.raises(TypeError, match=r"argument 'x' expected a tensor matching TensorSpec.*received 'abc'"):
        _sig_fn()("abc")


@pytest.mark.parametrize("call, reason", [
    (lambda f: f(torch.ones(1, 2), torch.ones(1, 2)), "too many positional arguments"),
    (lambda f: f(), "missing a required argument: 'x'"),
    (lambda f: f(torch.ones(1, 2), y=1), "got an unexpected keyword argument 'y'"),
])
def test_wrong_number_of_arguments(call, reason):
    for f in (_sig_fn(), ta.function(_f, autograph=False)):
        with pytest.raises(TypeError) as info:
            call(f)
        msg = str(info.value)
        assert msg.startswith("Binding inputs to _f failed: " + reason)
        assert "for signature: (x)" in msg


@pytest.mark.parametrize("value, got", [
    (torch.ones(3, 2, dtype=torch.float64), "dtype torch.float64"),
    (torch.ones(3), "shape (3,)"),
    (torch.ones(2, 2, 2), "shape (2, 2, 2)"),
])
def test_concrete_function_wrong_tensor_type(value, got):
    cf = ta.function(_f, autograph=False).get_concrete_function(SPEC)
    with pytest.raises(InvalidArgumentError) as info:
        cf(value)
    msg = str(info.value)
    assert "argument x expected TensorSpec(shape=(None, 2), dtype=torch.float32" in msg and got in msg
    assert msg.startswith(cf.name)


def test_concrete_function_wrong_arguments():
    cf = ta.function(lambda a, b=2: a ** b, autograph=False).get_concrete_function(ta.TensorSpec([3]), 2)
    x = torch.randn(3)
    torch.testing.assert_close(cf(x), x ** 2)
    torch.testing.assert_close(cf(x, 2), x ** 2)
    with pytest.raises(TypeError, match=r"argument b was traced as Literal\[2\]; can not cast 3 to it"):
        cf(x, 3)
    with pytest.raises(TypeError, match=r"argument b was traced as Literal\[2\]; can not cast 2.0 to it"):
        cf(x, 2.0)
    with pytest.raises(TypeError, match="got an unexpected keyword argument 'c'"):
        cf(x, c=1)
    with pytest.raises(TypeError, match="missing a required argument: 'a'"):
        cf()
    with pytest.raises(TypeError, match=r"argument a expected a tensor matching TensorSpec.*got 'x'"):
        cf("x")


def test_concrete_function_structure_mismatch():
    cf = ta.function(lambda d: d["a"] + 1, autograph=False).get_concrete_function({"a": torch.ones(2)})
    with pytest.raises(TypeError, match=r"argument d must have the structure Dict\[\['a', TensorSpec"):
        cf({"b": torch.ones(2)})


def test_negative_tensor_spec_dim():
    with pytest.raises(ValueError, match=r"TensorSpec shape \[-1, 2\] has a negative dim -1; use None"):
        ta.TensorSpec([-1, 2])


def test_bad_input_signature_definitions():
    with pytest.raises(TypeError, match="input_signature must hold only ta.TensorSpec, got 3"):
        ta.function(_f, input_signature=[3])
    with pytest.raises(TypeError, match=r"input_signature has 2 entries but the function takes 1"):
        ta.function(_f, input_signature=[SPEC, SPEC])
    with pytest.raises(TypeError, match=r"input_signature cannot be used with \*\*kwargs"):
        ta.function(lambda x, **kw: x, input_signature=[SPEC])
    with pytest.raises(TypeError, match="does not cover argument 'y', which has no default"):
        ta.function(lambda x, y: x, input_signature=[SPEC])


def test_input_signature_accepts_convertible_values():
    f = _sig_fn()
    torch.testing.assert_close(f(np.ones((2, 2), np.float32)), torch.full((2, 2), 2.0))
    torch.testing.assert_close(f([[1.0, 2.0]]), torch.tensor([[2.0, 4.0]]))
    assert f.experimental_get_tracing_count() == 1


def test_len_of_graph_tensor_with_unknown_first_dim():
    f = ta.function(lambda x: len(x), autograph=False)
    with pytest.raises(TypeError, match=r"(?s)len\(\) of a tensor whose first dim is known only when the graph runs is not allowed.*test_errors.py:\d+.*use x.size\(0\)"):
        f.get_concrete_function(SPEC)
