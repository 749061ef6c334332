"""Tensors kept in Python objects between calls are read at each call, and written back after it, as eagerly.

A module's plain tensor attribute (`self.running = 0.9 * self.running + ...`, a cached tensor), a captured dict's
or object's tensor entry that the user replaces between calls: the graph reads the entry's tensor at every call
(an input of the graph), so one trace serves all calls while the tensor keeps its dtype and shape, and after
each call the entry holds that call's real tensor. Each program runs eagerly and as a `ta.function` on twins
of the same state.
"""

import copy
import gc
import types
import weakref

import pytest
import torch

import torch_autograph as ta
from torch_autograph.tracing.context import Traced


class Running(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = torch.nn.Linear(2, 2)
        self.running = torch.zeros(2)  # a plain attribute, not a buffer
        self.count = torch.tensor(0.0)

    def forward(self, x):
        y = self.lin(x)
        self.running = 0.9 * self.running + 0.1 * y.detach().mean(0)
        self.count = self.count + 1
        return y.sum() + self.running.sum()


def _assert_plain_equal(got, want):
    assert not isinstance(got, Traced), f"a graph value was left in the object: {got!r}"
    torch.testing.assert_close(got, want, rtol=0, atol=1e-6)


def test_a_module_s_tensor_attributes_hold_each_call_s_tensor_and_are_read_at_the_next_call():
    eager, graph = Running(), Running()
    f = ta.function(graph)
    for i in range(4):
        x = torch.randn(3, 2)
        torch.testing.assert_close(f(x), eager(x))
        _assert_plain_equal(graph.running, eager.running)
        _assert_plain_equal(graph.count, eager.count)
    assert f.experimental_get_tracing_count() == 1
    assert graph.count.item() == 4


def test_a_user_replacing_the_attribute_between_calls_is_seen_without_a_retrace():
    eager, graph = Running(), Running()
    f = ta.function(graph)
    for i in range(3):
        x = torch.randn(3, 2)
        torch.testing.assert_close(f(x), eager(x))
        eager.running = torch.full((2,), float(i))
        graph.running = torch.full((2,), float(i))
    x = torch.randn(3, 2)
    torch.testing.assert_close(f(x), eager(x))
    _assert_plain_equal(graph.running, eager.running)
    assert f.experimental_get_tracing_count() == 1


def test_an_attribute_replaced_with_another_shape_traces_again_with_the_reason():
    graph = Running()
    f = ta.function(graph)
    f(torch.randn(3, 2))
    graph.running = torch.zeros(2, dtype=torch.float64)
    eager = copy.deepcopy(graph)
    x = torch.randn(3, 2)
    torch.testing.assert_close(f(x), eager(x))
    _assert_plain_equal(graph.running, eager.running)
    assert f.experimental_get_tracing_count() == 2
    reasons = " ".join(r for e in f.trace_history() for r in e.reasons)
    assert "running" in reasons and "float64" in reasons


class Cached(torch.nn.Module):
    """A decorated method caching a tensor on its instance (a cached buffer stored as a plain attribute)."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.tensor([1.0, 2.0]))
        self.cache = torch.ones(2)

    @ta.function
    def step(self, x):
        out = (x * self.w * self.cache).sum()
        self.cache = self.cache * 2 + x
        return out


class CachedEager(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.tensor([1.0, 2.0]))
        self.cache = torch.ones(2)

    def step(self, x):
        out = (x * self.w * self.cache).sum()
        self.cache = self.cache * 2 + x
        return out


def test_a_decorated_method_caching_a_tensor_on_its_instance_with_gradients():
    graph, eager = Cached(), CachedEager()
    for i in range(3):
        x = torch.tensor([1.0, float(i)])
        got, want = graph.step(x), eager.step(x)
        torch.testing.assert_close(got, want)
        got.backward()
        want.backward()
        torch.testing.assert_close(graph.w.grad, eager.w.grad)
        _assert_plain_equal(graph.cache, eager.cache)
    assert graph.step.experimental_get_tracing_count() == 1


def test_the_instance_of_a_method_writing_its_attributes_is_still_collected():
    m = Cached()
    m.step(torch.ones(2))
    ref = weakref.ref(m)
    del m
    gc.collect()
    assert ref() is None


def test_captured_dict_and_object_entries_replaced_between_calls_are_read_at_each_call():
    st = {"w": torch.ones(2), "sub": {"v": torch.zeros(2)}}
    o = types.SimpleNamespace(b=torch.ones(2))

    def h(x):
        return x * st["w"] + o.b + st["sub"]["v"]

    f = ta.function(h)
    for i in range(4):
        st["w"] = torch.full((2,), float(i))
        o.b = torch.full((2,), 10.0 * i)
        st["sub"]["v"] = torch.full((2,), 100.0 * i)
        x = torch.ones(2)
        torch.testing.assert_close(f(x), h(x))
    st["sub"] = {"v": torch.full((2,), -1.0)}  # the inner dict itself replaced
    torch.testing.assert_close(f(torch.ones(2)), h(torch.ones(2)))
    assert f.experimental_get_tracing_count() == 1


def test_a_captured_entry_holding_a_tensor_of_another_shape_traces_again():
    st = {"w": torch.ones(2)}
    f = ta.function(lambda x: x * st["w"])
    f(torch.ones(2))
    st["w"] = torch.full((3, 2), 3.0)
    torch.testing.assert_close(f(torch.ones(2)), torch.full((3, 2), 3.0))
    assert f.experimental_get_tracing_count() == 2


def test_gradients_reach_a_leaf_tensor_the_user_puts_in_a_captured_dict():
    st = {"w": torch.ones(2, requires_grad=True)}
    f = ta.function(lambda x: (x * st["w"]).sum())
    for i in range(3):
        st["w"] = torch.full((2,), float(i), requires_grad=True)
        x = torch.tensor([1.0, 2.0])
        f(x).backward()
        torch.testing.assert_close(st["w"].grad, x)
    assert f.experimental_get_tracing_count() == 1


class LoopAndBranch(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.acc = torch.zeros(2)
        self.hits = torch.tensor(0)

    def forward(self, x, n):
        i = torch.tensor(0)
        while i < n:  # a tensor loop carrying the attribute
            self.acc = self.acc + x
            i = i + 1
        if x.sum() > 0:  # a tensor `if` setting it in one branch
            self.hits = self.hits + 1
        return self.acc * 2


def test_module_attributes_set_in_a_tensor_loop_and_branch_match_eager_over_calls():
    eager, graph = LoopAndBranch(), LoopAndBranch()
    f = ta.function(graph)
    for n in (2, 0, 3, 1):
        x = torch.tensor([1.0, float(n) - 2])
        torch.testing.assert_close(f(x, torch.tensor(n)), eager(x, n))
        _assert_plain_equal(graph.acc, eager.acc)
        _assert_plain_equal(graph.hits, eager.hits)
    assert f.experimental_get_tracing_count() == 1


def test_a_captured_list_s_tensor_replaced_between_calls_is_read_at_each_call():
    weights = [torch.ones(2), torch.zeros(2)]

    def h(x):
        return x * weights[0] + weights[1]

    f = ta.function(h)
    for i in range(3):
        weights[0] = torch.full((2,), float(i + 2))
        weights[1] = torch.full((2,), -float(i))
        torch.testing.assert_close(f(torch.ones(2)), h(torch.ones(2)))
    assert f.experimental_get_tracing_count() == 1


def test_a_tensor_held_by_two_entries_is_guarded_by_identity():
    t = torch.ones(2)
    st = {"a": t, "b": t}  # one tensor, two entries: which one a use read is not known

    def h(x):
        return x * st["a"]

    f = ta.function(h)
    f(torch.ones(2))
    st["a"] = torch.full((2,), 5.0)
    torch.testing.assert_close(f(torch.ones(2)), h(torch.ones(2)))
    assert f.experimental_get_tracing_count() == 2
    reasons = " ".join(r for e in f.trace_history() for r in e.reasons)
    assert "dict['a']" in reasons or "dict['b']" in reasons


def test_a_concrete_function_called_with_an_entry_of_another_shape_raises_naming_it():
    st = {"w": torch.ones(2)}
    f = ta.function(lambda x: x * st["w"])
    cf = f.get_concrete_function(torch.ones(2))
    st["w"] = torch.ones(3, 2)
    with pytest.raises(ta.errors.InvalidArgumentError, match=r"dict\['w'\] holds Tensor float32\[3, 2\]"):
        cf(torch.ones(2))


def test_a_tensor_entry_the_first_trace_creates_is_not_recreated_at_each_call():
    # `if "h" not in state`: the trace made the entry; a call that finds it made traces again, which reads it
    state = {}

    def step(x):
        if "h" not in state:
            state["h"] = torch.zeros(2)
        state["h"] = state["h"] + x
        return state["h"] * 1

    ref = {}

    def eager(x):
        if "h" not in ref:
            ref["h"] = torch.zeros(2)
        ref["h"] = ref["h"] + x
        return ref["h"] * 1

    f = ta.function(step)
    for i in range(4):
        x = torch.full((2,), float(i + 1))
        torch.testing.assert_close(f(x), eager(x))
        _assert_plain_equal(state["h"], ref["h"])
    assert f.experimental_get_tracing_count() == 2
