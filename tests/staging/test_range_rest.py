"""A tensor `break`/`return` in a Python `for` over a range: once the flag is a graph value, the rest of the
range is one graph loop (not a guarded copy of the body per remaining element), and a body that needs its
element as a Python int falls back to the guarded copies. Checked against eager Python."""

from __future__ import annotations

import pytest
import torch

import torch_autograph as ta
from torch_autograph.graph import CondOp, WhileOp
from torch_autograph.graph.walkers import walk_nodes
from torch_autograph.state import StateEffectError


def after_loop(x, t):
    i = -1
    for i in range(8):
        x = x + i
        if x.sum() > t:
            break
    return x, i


def growing(x, t):
    for _ in range(6):
        x = torch.cat([x, x[-1:] + 1])
        if x.sum() > t:
            break
    return x


def returns(x, t):
    for i in range(7):
        x = x * 2
        if x.sum() > t:
            return x - i
    return x


def appends(x, t):
    out = []
    for _ in range(6):
        x = x + 1
        out.append(x)
        if x.sum() > t:
            break
    return torch.stack(out)


def python_if_on_the_element(x, t):
    for i in range(1, 12, 2):
        if i % 4 == 1:
            x = x + i
        else:
            x = x * 2
        if x.sum() > t:
            break
    return x


LAYERS = torch.nn.ModuleList([torch.nn.Linear(2, 2) for _ in range(4)])
SEEN = {"n": 0}


def indexes_a_module_list(x, t):
    for i in range(len(LAYERS)):
        x = LAYERS[i](x)
        SEEN["n"] = SEEN["n"] + 1
        if x.sum() > t:
            break
    return x


def _counts(fn, *args):
    graph = ta.function(fn).get_concrete_function(*args).graph
    nodes = list(walk_nodes(graph))
    return (sum(isinstance(n.op.target, WhileOp) for n in nodes), sum(isinstance(n.op.target, CondOp) for n in nodes))


def _same(a, b):
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_same(p, q) for p, q in zip(a, b))
    return torch.equal(torch.as_tensor(a), torch.as_tensor(b))


@pytest.mark.parametrize("fn", [after_loop, growing, returns, appends, python_if_on_the_element])
def test_the_rest_of_the_range_is_one_graph_loop(fn):
    g = ta.function(fn)
    for t in [0.0, 10.0, 40.0, 1e6]:
        x, limit = torch.ones(2), torch.tensor(t)
        assert _same(g(x, limit), fn(x, limit)), t
    assert g.experimental_get_tracing_count() == 1
    loops, conds = _counts(fn, torch.ones(2), torch.tensor(0.0))
    # the first element runs as Python (its flag's `if`, maybe the return's), the rest is one loop
    assert loops == 1 and conds <= 4


def test_a_body_needing_its_element_as_a_python_int_guards_each_remaining_element():
    g = ta.function(indexes_a_module_list)
    for t in [-10.0, 0.0, 1e6]:
        x, limit = torch.ones(2), torch.tensor(t)
        SEEN["n"] = 0
        want = indexes_a_module_list(x, limit)
        want_seen = SEEN["n"]
        SEEN["n"] = 0
        assert torch.allclose(g(x, limit), want) and SEEN["n"] == want_seen, t
    assert g.experimental_get_tracing_count() == 1
    loops, conds = _counts(indexes_a_module_list, torch.ones(2), torch.tensor(0.0))
    assert loops == 0 and conds >= 3


LOG = []


def logs_each_element(x, t):
    for i in range(len(LAYERS)):
        LOG.append(i)
        x = LAYERS[i](x)
        if x.sum() > t:
            break
    return x


def test_a_python_list_the_guarded_rest_grows_is_refused_at_the_loop():
    # Eagerly the list gets one element per iteration run, which the graph decides when it runs: no trace can
    # replay that. The failed graph-loop attempt leaves nothing behind in it, and the error names the loop.
    LOG.clear()
    line = logs_each_element.__code__.co_firstlineno + 1
    with pytest.raises(StateEffectError, match=rf"LOG grows or shrinks .*test_range_rest.py:{line}"):
        ta.function(logs_each_element)(torch.ones(2), torch.tensor(0.0))
    assert LOG == [0]  # the first element ran as Python, as eagerly; nothing of the traces stayed


def caches_each_element(x, t):
    cache = {"k": torch.zeros(0, 2)}
    for _ in range(len(LAYERS)):
        cache["k"] = torch.cat([cache["k"], x[None]])  # an entry the rest's loop carries: its length grows
        x = LAYERS[cache["k"].shape[0] - 1](x)  # ... and the body needs that length as a Python int
        if x.sum() > t:
            break
    return x, cache["k"]


def test_a_body_that_reads_a_growing_size_as_a_python_int_is_refused_at_its_line():
    # The graph loop would carry `cache["k"]` with a symbolic length, which the body reads as a Python int (an
    # index); the guarded copies merge two lengths per `if`. No graph can take that decision: a clear error at
    # the line that reads it (before: an internal "loop variable types did not settle").
    line = caches_each_element.__code__.co_firstlineno + 4
    for t in [-10.0, 1e6]:
        with pytest.raises(ta.errors.OperatorNotAllowedInGraphError, match=rf"test_range_rest.py:{line}"):
            ta.function(caches_each_element)(torch.ones(2), torch.tensor(t))
