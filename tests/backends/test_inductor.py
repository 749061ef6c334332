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


@pytest.fixture
def jit_threshold():
    """Set the jit_compile="auto" threshold for the test (read when a trace is made), then restore it."""
    old = ta.config.get_jit_threshold()
    yield ta.config.set_jit_threshold
    ta.config.set_jit_threshold(old)


def test_auto_falls_back_with_one_warning(jit_threshold):
    jit_threshold(1)  # every trace starts its background compile at its first call
    f = ta.function(_with_loop, jit_compile="auto")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for x in (torch.ones(3), torch.ones(2), torch.full((5,), 0.5)):  # three traces, one warning
            torch.testing.assert_close(f(x), _with_loop(x))
        assert not any(cf.wait_for_compile(30) for cf in f.concrete_functions)
    msgs = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(msgs) == 1, msgs
    assert "ta.function _with_loop: jit_compile='auto' falls back to the default backend" in msgs[0]
    assert "`while` loop" in msgs[0]
    assert [cf.jit_status for cf in f.concrete_functions] == ["failed"] * 3
    torch.testing.assert_close(f(torch.ones(3)), _with_loop(torch.ones(3)))  # still runs, on the default backend
    assert f.experimental_get_tracing_count() == 3


def test_auto_is_tiered_same_values_and_gradients_before_and_after_the_swap(jit_threshold):
    jit_threshold(3)
    f = ta.function(_loss, jit_compile="auto")
    x = torch.randn(5, 4)

    def run(x):
        xg = x.clone().requires_grad_()
        LIN.zero_grad()
        loss, h = f(xg)
        loss.backward()
        return loss.detach(), h.detach(), xg.grad, LIN.weight.grad.clone(), LIN.bias.grad.clone()

    before = [run(x), run(x)]
    cf = f.concrete_functions[0]
    assert cf.jit_status == "default" and cf._fn is not cf._default_fn  # counting
    calls = CALLS.numpy().item()
    run(x)  # the 3rd call starts the compile and returns without waiting for it
    assert cf.jit_status == "compiling" and cf._fn is cf._default_fn  # no counting any more
    during = 0
    while cf.jit_status == "compiling" and during < 1000:  # calls keep running meanwhile
        torch.testing.assert_close(run(x), before[0])
        during += 1
    assert during >= 1
    assert cf.wait_for_compile(120) and cf.jit_status == "compiled"
    assert cf._fn is not cf._default_fn and cf._tier.calls == 3
    after = run(x)
    torch.testing.assert_close(after, before[0])
    torch.testing.assert_close(before[1], before[0])
    assert CALLS.numpy().item() == calls + 2 + during  # the capture update runs at every call, either tier
    # Another requires_grad pattern than the compiled one: the default backend, no compile on the call path.
    loss, h = f(x)
    assert loss.requires_grad  # the Linear's parameters require grad
    torch.testing.assert_close((loss.detach(), h.detach()), before[0][:2])
    assert len(f.concrete_functions) == 1 and f.experimental_get_tracing_count() == 1


def test_jit_threshold_must_be_positive():
    with pytest.raises(ValueError, match="at least 1"):
        ta.config.set_jit_threshold(0)


def test_jit_compile_rejects_other_values():
    with pytest.raises(ValueError, match="jit_compile must be False, True or 'auto'"):
        ta.function(_loss, jit_compile="yes")
