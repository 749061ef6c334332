"""Value reads in code AutoGraph does not convert: taken on the call's value, guarded at every call.

Compared with eager PyTorch: values, the trace count, the RNG state and captured tensors.
"""

import pytest
import torch

import torch_autograph as ta
from torch_autograph.errors import OperatorNotAllowedInGraphError


def _library_branch(x, scale):
    # what library code does (torch.nn's _detect_is_causal_mask, a shortcut on a mask)
    if bool((scale > 0).all()):
        return x * scale
    return x - 1


def test_a_bool_in_unconverted_code_takes_the_calls_value_and_traces_again_when_it_differs():
    f = ta.function(_library_branch, autograph=False)
    x = torch.randn(3)
    for s in (torch.ones(3), -torch.ones(3), torch.ones(3) * 2, -torch.ones(3)):
        torch.testing.assert_close(f(x, s), _library_branch(x, s))
    history = f.trace_history()
    assert len(history) == 2
    assert any("a tensor used as a Python bool was True at" in r and "test_decisions.py:" in r
               for r in history[1].reasons), history[1].reasons


@pytest.mark.parametrize("read", [int, float, lambda t: t.item(), lambda t: t.tolist()])
def test_int_float_item_tolist_of_a_small_tensor_are_guarded(read):
    def body(x, n):
        return x * torch.tensor(read(n.sum()))

    f = ta.function(body, autograph=False)
    x = torch.randn(4)
    for n in (torch.tensor([1, 2]), torch.tensor([1, 2]), torch.tensor([3, 3])):
        torch.testing.assert_close(f(x, n), body(x, n))
    assert len(f.trace_history()) == 2


def test_the_decision_runs_no_random_op_and_no_effect_twice_and_leaves_captures_alone():
    counter = torch.zeros(())

    def body(x):
        counter.add_(1)  # an effect before the decision: the decision does not read what it writes
        noise = torch.rand(3)
        if bool((x > 0).all()):
            return x + noise
        return x - noise

    f = ta.function(body, autograph=False)
    x = torch.ones(3)
    torch.manual_seed(0)
    got = f(x)
    state_after = torch.get_rng_state()
    torch.manual_seed(0)
    counter.zero_()
    want = body(x)
    torch.testing.assert_close(got, want)
    assert torch.equal(torch.get_rng_state(), state_after)
    assert counter.item() == 1


def test_a_decision_on_a_random_value_or_a_written_capture_keeps_the_refusal():
    def on_random(x):
        return x if bool(torch.rand(()) > 2) else -x

    with pytest.raises(OperatorNotAllowedInGraphError, match=r"as a Python bool.*test_decisions.py:\d+"):
        ta.function(on_random, autograph=False)(torch.ones(2))
    state = torch.zeros(())

    def on_written(x):
        state.add_(x.sum())
        return x if bool(state > 0) else -x

    with pytest.raises(OperatorNotAllowedInGraphError, match=r"as a Python bool.*test_decisions.py:\d+"):
        ta.function(on_written, autograph=False)(torch.ones(2))
    assert state.item() == 0  # nothing ran


def test_a_trace_from_a_signature_alone_keeps_the_refusal():
    f = ta.function(_library_branch, autograph=False, input_signature=[ta.TensorSpec([3]), ta.TensorSpec([3])])
    with pytest.raises(OperatorNotAllowedInGraphError, match=r"as a Python bool.*test_decisions.py:\d+"):
        f.get_concrete_function()


def test_converted_code_keeps_graph_values_and_graph_control_flow():
    # In converted code `bool(t)` is a bool known when the graph runs (AutoGraph's `bool` overload), not a
    # decision taken at trace time: one trace serves both signs.
    def converted(x):
        return bool(x.sum() > 0)

    g = ta.function(converted)
    for x in (torch.ones(2), -torch.ones(2)):
        assert bool(g(x)) is converted(x)
    assert len(g.trace_history()) == 1

    def branch(x, s):
        if (s > 0).all():
            return x * s
        return x - 1

    f = ta.function(branch)
    x = torch.randn(3)
    for s in (torch.ones(3), -torch.ones(3)):
        torch.testing.assert_close(f(x, s), branch(x, s))
    assert len(f.trace_history()) == 1  # one trace with a cond


def test_a_concrete_function_called_with_another_value_says_which_decision_it_breaks():
    f = ta.function(_library_branch, autograph=False)
    cf = f.get_concrete_function(torch.ones(3), torch.ones(3))
    with pytest.raises(ta.errors.InvalidArgumentError, match=r"a tensor used as a Python bool was True"):
        cf(torch.ones(3), -torch.ones(3))


def test_exporting_a_trace_that_holds_a_decision_is_refused_naming_it():
    f = ta.function(_library_branch, autograph=False)
    cf = f.get_concrete_function(torch.ones(3), torch.ones(3))
    with pytest.raises(ta.errors.GraphLoweringError, match=r"a tensor used as a Python bool was True at .*"
                                                           r"test_decisions.py:\d+"):
        cf.export()
    with pytest.raises(ta.errors.GraphLoweringError, match=r"could not check"):
        cf.to_fx()
