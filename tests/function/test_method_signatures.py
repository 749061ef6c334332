"""input_signature on methods: it covers the arguments after the instance (as TensorFlow's does)."""

import pytest
import torch

import torch_autograph as ta

SPEC = ta.TensorSpec([None, 3], torch.float32)


class Model(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(3, 2)

    @ta.function(input_signature=[SPEC])
    def predict(self, x):
        return self.lin(x) * 2


class Renamed:
    """The instance parameter need not be called `self`."""

    scale = 3.0

    @ta.function(input_signature=[SPEC])
    def predict(model, x):
        return x * model.scale


class WithStatic:
    @staticmethod
    @ta.function(input_signature=[SPEC])
    def double(x):
        return x * 2


def test_a_decorated_module_method_takes_the_signature_of_its_arguments_after_self():
    m = Model()
    x = torch.randn(5, 3)
    torch.testing.assert_close(m.predict(x), m.lin(x) * 2)
    cf = m.predict.get_concrete_function()
    (spec,) = cf.structured_input_signature[0]
    assert (spec.shape, spec.dtype, spec.name) == ((None, 3), torch.float32, "x")
    torch.testing.assert_close(cf(torch.ones(2, 3)), m.lin(torch.ones(2, 3)) * 2)


def test_the_instance_parameter_may_have_any_name():
    x = torch.randn(4, 3)
    torch.testing.assert_close(Renamed().predict(x), x * 3.0)
    with pytest.raises(TypeError, match=r"argument 'x' can not be cast: expected TensorSpec\(shape=\(None, 3\).*shape \(4, 2\)"):
        Renamed().predict(torch.randn(4, 2))


def test_a_static_method_signature_covers_all_its_arguments():
    x = torch.randn(2, 3)
    torch.testing.assert_close(WithStatic.double(x), x * 2)


def test_a_signature_too_short_for_a_method_still_names_the_missing_argument():
    with pytest.raises(TypeError, match="input_signature does not cover argument 'y', which has no default"):
        class Bad:
            @ta.function(input_signature=[SPEC])
            def f(self, x, y):
                return x + y
