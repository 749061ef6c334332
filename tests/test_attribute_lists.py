"""Lists held in attributes and constant subscripts, grown in graph loops (SPEC decision 4), against eager.

`self.outputs.append(t)` in a tensor loop threads `self.outputs` through the
loop as a graph list, like a local list; `torch.stack(self.outputs)` after the
loop sees every element. Values and gradients match eager PyTorch.
"""

import types

import torch
from torch import nn

import torch_autograph as ta
from eager_reference import assert_matches_eager, graph_ops


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
    g = assert_matches_eager(m, x, n, modules=[m], traced=ta.function(m))
    assert "while" in graph_ops(g, x, n)
    for steps in (1, 6):  # the same graph, other trip counts
        torch.testing.assert_close(g(x, torch.tensor(steps)), m(x, steps))
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
