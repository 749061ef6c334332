"""The jit_compile backend: values and gradients vs eager, per-call state updates, the error and the fallback.

Inductor compiles take seconds: the compiled function is built once per module (fixture) and shared, and
the error / fallback tests fail at lowering, before any compile.
"""

import shutil
import warnings

import pytest
import torch

import torch_autograph as ta
from torch_autograph.errors import GraphLoweringError

pytestmark = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                                reason="inductor on CPU needs a C++ compiler")

torch.manual_seed(0)
LIN = torch.nn.Linear(4, 3)
CALLS = ta.Variable(0.0, trainable=False)


def _loss(x):
    CALLS.assign_add(1.0)  # an in-place update of a capture, at every call of the compiled graph
    h = torch.tanh(LIN(x))
    return (h * h).sum() + x.sum(), h


@pytest.fixture(scope="module")
def jitted():
    return ta.function(_loss, jit_compile=True)


def _eager_grads(x):
    x = x.detach().clone().requires_grad_()
    LIN.zero_grad()
    loss, h = _loss(x)
    loss.backward()
    return loss.detach(), h.detach(), x.grad, LIN.weight.grad.clone(), LIN.bias.grad.clone()


def test_values_and_gradients_match_eager(jitted):
    x = torch.randn(5, 4)
    want = _eager_grads(x)
    xg = x.clone().requires_grad_()
    LIN.zero_grad()
    loss, h = jitted(xg)
    assert loss.requires_grad and h.requires_grad
    loss.backward()
    torch.testing.assert_close((loss.detach(), h.detach(), xg.grad, LIN.weight.grad, LIN.bias.grad), want)
    assert "compile" not in jitted.concrete_functions[0].graph.python_source.splitlines()[0]  # the fx code


def test_captures_are_read_and_written_by_reference_at_every_call(jitted):
    x = torch.randn(5, 4, requires_grad=True)
    jitted(x)  # compiled (shared with the test above when it ran first)
    before = CALLS.numpy().item()
    for _ in range(3):
        jitted(x)
    assert CALLS.numpy().item() == before + 3
    with torch.no_grad():
        LIN.bias.add_(1.0)  # an optimizer-style update is seen by the next call
    try:
        torch.testing.assert_close(jitted(x)[1], torch.tanh(LIN(x)))
    finally:
        with torch.no_grad():
            LIN.bias.sub_(1.0)
    assert jitted.experimental_get_tracing_count() == 1


def _with_loop(x):
    while x.sum() < 100:
        x = x * 2
    return x


def test_a_graph_inductor_cannot_take_is_a_clear_error():
    f = ta.function(_with_loop, jit_compile=True)
    line = _with_loop.__code__.co_firstlineno + 1
    with pytest.raises(GraphLoweringError) as e:
        f(torch.ones(3))
    msg = str(e.value)
    assert "cannot lower node" in msg and "`while` loop" in msg
    assert f'test_inductor.py", line {line}' in msg


def test_auto_falls_back_with_one_warning():
    f = ta.function(_with_loop, jit_compile="auto")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for x in (torch.ones(3), torch.ones(2), torch.full((5,), 0.5)):  # three traces, one warning
            torch.testing.assert_close(f(x), _with_loop(x))
    msgs = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(msgs) == 1, msgs
    assert "jit_compile='auto' falls back to the default backend" in msgs[0] and "`while` loop" in msgs[0]
    assert f.experimental_get_tracing_count() == 3


def test_jit_compile_rejects_other_values():
    with pytest.raises(ValueError, match="jit_compile must be False, True or 'auto'"):
        ta.function(_loss, jit_compile="yes")
