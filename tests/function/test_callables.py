"""`ta.function` over every kind of callable: decorated functions and methods, partials, static and class methods.

The function behind a decorator is converted (tensor `if`s inside it become
graph conditionals) and the decorator's own behaviour is kept (no_grad stays
no_grad); what cannot be a graph (async and generator functions) is refused.
"""

import functools

import pytest
import torch
from eager_reference import assert_matches_eager, graph_ops

import torch_autograph as ta


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.tensor([1.0, -2.0]))

    @torch.no_grad()
    def predict(self, x):
        if (x * self.w).sum() > 0:
            return x * self.w * 2
        return x * self.w

    @torch.inference_mode()
    def infer(self, x):
        if x.sum() > 0:
            return x + 1
        return x - 1

    def forward(self, x):
        return self.predict(x) + x * self.w


def test_methods_behind_torch_decorators_are_converted_and_keep_the_decorator():
    m = Model()
    for v in (1.0, -3.0):
        x = torch.tensor([v, 0.5], requires_grad=True)
        got = ta.function(m.predict)(x)
        assert torch.equal(got, m.predict(x)) and not got.requires_grad  # still under no_grad
        assert "cond" in graph_ops(ta.function(m.predict), x)
        assert torch.equal(ta.function(m.infer)(x.detach()), m.infer(x.detach()))
        assert_matches_eager(m, torch.tensor([v, 0.5]), modules=[m])  # grads flow only outside predict


def logged(f):
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        wrapper.calls += 1
        return f(*args, **kwargs)

    wrapper.calls = 0
    return wrapper


@logged
def absolute(x):
    if x.sum() > 0:
        return x
    return -x


def test_functions_behind_functools_wraps_decorators_are_converted():
    f = ta.function(absolute)
    assert torch.equal(f(torch.tensor([-2.0])), torch.tensor([2.0]))
    assert "cond" in graph_ops(f, torch.tensor([-2.0]))
    assert absolute.calls >= 1  # the decorator's code ran (while tracing)


def scaled(x, k=0.0, *, shift=0.0):
    if x.sum() > 0:
        return x * k + shift
    return x - shift


def test_partials_are_converted_with_their_arguments():
    f = ta.function(functools.partial(scaled, k=3.0, shift=1.0))
    for v in (2.0, -2.0):
        x = torch.tensor([v])
        assert torch.equal(f(x), scaled(x, k=3.0, shift=1.0))
    assert f.name == "scaled"

    def outer(x):
        return functools.partial(scaled, k=2.0)(x)

    assert_matches_eager(outer, torch.tensor([1.5, 0.5]))


class Tools:
    @ta.function
    @staticmethod
    def double_if_positive(x):
        if x.sum() > 0:
            return x * 2
        return x

    @ta.function
    @classmethod
    def name_and_value(cls, x):
        if x.sum() > 0:
            return x + len(cls.__name__)
        return x


def test_static_and_class_methods():
    x = torch.tensor([1.0])
    assert torch.equal(ta.function(staticmethod(absolute.__wrapped__))(-x), x)
    assert torch.equal(Tools.double_if_positive(x), x * 2) and torch.equal(Tools().double_if_positive(-x), -x)
    assert torch.equal(Tools.name_and_value(x), x + 5) and torch.equal(Tools().name_and_value(-x), -x)


async def coroutine(x):
    return x


def generator(x):
    yield x


async def async_generator(x):
    yield x


@pytest.mark.parametrize("fn, kind", [(coroutine, "an async function"), (generator, "a generator function"),
                                      (async_generator, "an async function")])
def test_async_and_generator_functions_are_refused(fn, kind):
    with pytest.raises(TypeError, match=f"cannot compile '{fn.__name__}': it is {kind}"):
        ta.function(fn)
