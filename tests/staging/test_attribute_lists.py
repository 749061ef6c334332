"""Lists held in attributes and constant subscripts, grown in graph loops, against eager.

`self.outputs.append(t)` in a tensor loop threads `self.outputs` through the
loop as a graph list, like a local list; `torch.stack(self.outputs)` after the
loop sees every element. Values and gradients match eager PyTorch.
"""

import types

import pytest
import torch
from eager_reference import assert_matches_eager, graph_ops, line_of
from torch import nn

import torch_autograph as ta


class Unroll(nn.Module):
    """A recurrent cell whose forward collects each step's output in `self.outputs`."""

    def __init__(self):
        super().__init__()
        self.cell = nn.Linear(3, 3)

    def forward(self, x, n):
        self.outputs = []
        for i in range(n):
            x = torch.tanh(self.cell(x))
            self.outputs.append(x)
        return torch.stack(self.outputs)


def test_module_attribute_list_in_a_tensor_for_matches_eager():
    torch.manual_seed(0)
    m = Unroll()
    x, n = torch.randn(2, 3), torch.tensor(4)

    def eager(x, n):
        # (a list the eager run left in `m.outputs` would be one the trace may have read, guarded by identity:
        # each call's new list would then make the next call trace again)
        out = m(x, n)
        del m.outputs
        return out

    g = assert_matches_eager(eager, x, n, modules=[m], traced=ta.function(m))
    assert "while" in graph_ops(g, x, n)
    for steps in (1, 6):  # the same graph, other trip counts
        want = Unroll()
        want.load_state_dict(m.state_dict())
        torch.testing.assert_close(g(x, torch.tensor(steps)), want(x, steps))
        # the attribute holds this call's tensors, as eagerly
        assert len(m.outputs) == steps and all(type(t) is torch.Tensor for t in m.outputs)
        torch.testing.assert_close(m.outputs, want.outputs)
    assert g.experimental_get_tracing_count() == 1


STATE = types.SimpleNamespace(items=[], log={"k": []})


def grow_global_objects_lists(x, n):
    STATE.items = [x]
    STATE.log["k"] = []
    i = torch.tensor(0)
    while i < n:
        STATE.items.append(STATE.items[-1] * 1.5)
        STATE.log["k"].append(x * i)
        i = i + 1
    last = STATE.items.pop()
    return torch.stack(STATE.items).sum(0) + last, torch.stack(STATE.log["k"])


def test_attribute_and_subscript_lists_of_a_global_object_in_a_tensor_while():
    x, n = torch.tensor([1.0, -2.0, 0.5]), torch.tensor(3)
    g = assert_matches_eager(grow_global_objects_lists, x, n)
    assert "while" in graph_ops(g, x, n)


class PopToOne:
    def __init__(self):
        self.stack = []

    def run(self, x, n):
        self.stack = [x]
        for i in range(n):
            self.stack.append(self.stack[-1] * (i + 1))
        for _ in range(n):
            top = self.stack.pop()
            x = x + top
        return x, torch.stack(self.stack)


def test_attribute_list_pop_in_a_tensor_loop_matches_eager():
    x, n = torch.tensor([0.5, 1.0]), torch.tensor(3)
    g = assert_matches_eager(PopToOne().run, x, n)
    assert graph_ops(g, x, n).count("while") == 2


class Grow:
    """The other ways to grow a list: `+= [...]`, `extend`, on attributes and locals, in and after loops."""

    def attribute_iadd(self, x, n):
        self.out = []
        i = 0
        while i < n:
            self.out += [x * i]
            i += 1
        return torch.stack(self.out)

    def attribute_extend(self, x, n):
        self.out = [x]
        for i in range(n):
            self.out.extend([x * i, x + i])
        return torch.stack(self.out)

    def local_iadd_and_extend(self, x, n):
        out = []
        for i in range(n):
            out += [x * j for j in range(2)]
            out.extend((x - i,))
        out += [x]  # after the loop: out is a graph list here
        out.extend([x, x])
        return torch.stack(out)

    def item_iadd(self, x, n):
        self.d = {"k": []}
        for i in range(n):
            self.d["k"] += [x * i]
        return torch.stack(self.d["k"])

    def in_a_branch(self, x):
        self.out = [x]
        if x.sum() > 0:
            self.out += [x * 2, x * 3]
        else:
            self.out.extend([-x, x])
        return torch.stack(self.out)


@pytest.mark.parametrize("method", ["attribute_iadd", "attribute_extend", "local_iadd_and_extend", "item_iadd"])
def test_iadd_and_extend_in_a_tensor_loop_match_eager(method):
    x, n = torch.tensor([1.0, -2.0]), torch.tensor(3)
    g = assert_matches_eager(getattr(Grow(), method), x, n)
    assert "while" in graph_ops(g, x, n)


def test_iadd_and_extend_in_a_tensor_if_match_eager():
    g = ta.function(Grow().in_a_branch)
    for x in (torch.tensor([1.0, 2.0]), torch.tensor([-1.0, -2.0])):
        torch.testing.assert_close(g(x), Grow().in_a_branch(x))
    assert g.experimental_get_tracing_count() == 1


def iadd_other_list(x, n):
    out, extra = [], [x, x]
    for i in range(n):
        out += extra  # marker: iadd
    return torch.stack(out)


def extend_with_a_graph_list(x, n):
    out, rows = [], []
    for i in range(n):
        rows.append(x * i)
        out.extend(rows)  # marker: extend
    return torch.stack(out)


def test_extend_with_a_tensor_adds_its_rows_like_eager():
    def extend_with_a_tensor(x, n):
        out = []
        for i in range(n):
            out.extend(torch.stack([x, x * i]))
        return torch.stack(out)

    assert_matches_eager(extend_with_a_tensor, torch.tensor([1.0, 2.0]), torch.tensor(3))


def test_growing_a_graph_list_in_unsupported_ways_names_the_line_and_the_fix():
    x, n = torch.tensor([1.0, 2.0]), torch.tensor(2)
    with pytest.raises(TypeError) as info:
        ta.function(iadd_other_list)(x, n)
    msg = str(info.value)
    assert line_of(iadd_other_list, "marker: iadd") in msg and "lst.extend(items)" in msg
    with pytest.raises(TypeError) as info:
        ta.function(extend_with_a_graph_list)(x, n)
    msg = str(info.value)
    assert line_of(extend_with_a_graph_list, "marker: extend") in msg and "known only when the graph runs" in msg
    assert "lst.append(t)" in msg


class ReadOnly:
    """`items` is a property without a setter over a list."""

    def __init__(self):
        self._items = []

    @property
    def items(self):
        return self._items

    def run(self, x, n):
        self._items.clear()
        for i in range(n):  # marker: loop
            self.items.append(x * i)
        return torch.stack(self.items)


def test_read_only_property_list_works_on_python_values():
    x = torch.tensor([1.0, 2.0])
    g = ta.function(ReadOnly().run)
    torch.testing.assert_close(g(x, 3), ReadOnly().run(x, 3))  # a Python loop: nothing is assigned


def test_read_only_property_list_in_a_tensor_loop_says_what_to_do():
    # The graph list must be stored back for the loop; the property cannot take it.
    with pytest.raises(AttributeError) as info:
        ta.function(ReadOnly().run)(torch.tensor([1.0, 2.0]), torch.tensor(3))
    msg = str(info.value)
    assert "attribute 'items' of 'ReadOnly' object" in msg and "has no setter" in msg
    assert line_of(ReadOnly.run, "marker: loop") in msg
    assert "local variable (`items = []`" in msg and "setter" in msg


class _Wrap(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x, n):
        return self.inner(x, n)


def _nested(m, depth):
    for _ in range(depth):
        m = _Wrap(m)
    return m


def test_attribute_left_holding_the_graph_list_explains_itself():
    # An object deeper than the trace follows (a submodule six levels down) is not written back after each call:
    # the attribute keeps the trace's graph list, which says so when touched.
    m = Unroll()
    x, n = torch.randn(2, 3), torch.tensor(2)
    ta.function(_nested(m, 6))(x, n)
    for touch in (len, lambda lst: lst[0], list, torch.stack, lambda lst: lst.append(x)):
        with pytest.raises(ta.errors.InaccessibleTensorError) as info:
            touch(m.outputs)
        msg = str(info.value)
        assert "graph list that stood for a Python list while '_Wrap' was traced" in msg
        assert "trace time" in msg and "return the list" in msg.lower()
        assert "test_attribute_lists.py:" in msg  # the user's line
    assert str(m.outputs) == repr(m.outputs) and repr(m.outputs).startswith("GraphList(")
