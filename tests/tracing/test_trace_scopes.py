"""The trace state by scope: one `Trace` for the whole trace, a `Scope` per graph being recorded."""

import dataclasses
import importlib

import torch

import torch_autograph as ta
from torch_autograph.graph import Graph
from torch_autograph.tracing import Scope, Trace, TraceRequest, current, record_inferred_by, tracing

# (`torch_autograph.function.function` is the package's `function` decorator: the module by its name)
function_module = importlib.import_module("torch_autograph.function.function")

_SCOPE = {"graph", "parent", "trace", "closed", "failed", "sym_values", "size_values", "_defined", "_hidden",
          "augmented_symbols", "_checking", "lift_outer", "open_tries"}
_TRACE = {"request", "root", "entry", "symbols", "engine", "namer", "modules", "notes", "assumed", "python_state",
          "grads", "captures"}


def test_a_trace_and_each_scope_hold_what_they_were_built_with_and_nothing_is_added_later(monkeypatch):
    seen = []

    def note_scope(func, args, kwargs):  # a plug-in recording torch.sin: it sees the scope of each call
        seen.append(current())
        return record_inferred_by(func, func, args, kwargs)

    hooks = function_module._HOOKS
    monkeypatch.setattr(function_module, "_HOOKS", dataclasses.replace(
        hooks, special_calls={**hooks.special_calls, torch.sin: note_scope}, _special_cache={}))

    def f(x, n):
        x = torch.sin(x)
        if x.sum() > 0:
            x = torch.sin(x) + 1
        i = 0
        while i < n:
            x = torch.sin(x) * 2
            i += 1
        return x

    out = ta.function(f)(torch.ones(3), torch.tensor(2))
    torch.testing.assert_close(out, f(torch.ones(3), 2))
    assert len(seen) == 3
    root, branch, body = seen[0], seen[1], seen[-1]
    assert {type(s) for s in seen} == {Scope}
    assert set(vars(root)) == set(vars(branch)) == set(vars(body)) == _SCOPE
    assert set(vars(root.trace)) == _TRACE and len(_TRACE) < 15 and len(_SCOPE) < 15
    assert branch.trace is root.trace is body.trace and branch.root is root and root.trace.root is root
    assert branch.parent is root and branch.graph is not root.graph
    assert root.trace.python_state is None  # let go when the trace ended


def test_a_trace_is_built_from_its_request():
    graph = Graph("g")
    request = TraceRequest(backed=True, spec_hint=17, call_tensors=(torch.ones(2),))
    with tracing(graph, request) as state:
        x = state.placeholder("x", torch.float32, (None,), None, hints=(2,))
        trace = state.trace
        assert isinstance(trace, Trace) and trace.request.backed and trace.request.spec_hint == 17
        assert trace.assumed.call_inputs == {id(x._value): request.call_tensors[0]}
        assert trace.entry.grad == torch.is_grad_enabled()
    assert state.closed
