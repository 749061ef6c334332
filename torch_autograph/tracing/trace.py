"""One trace: the graph being recorded, its names and captures; `tracing(graph)` runs user code into it.

`tracing(graph)` makes a new `TraceState` current (a ContextVar, so threads
trace independently) and activates the tracing TorchFunctionMode for its
duration only. Control flow records its branches and loop bodies into
sub-traces (`subtrace`), whose values of enclosing traces are lifted in
through a hook.
"""

from __future__ import annotations

import itertools
import keyword
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import torch

from ..graph import Graph, Value, ValueKind, map_nest
from .context import activate, current
from .guards import ModuleModes, trace_hooks
from .lists import GraphList
from .messages import autocast_state, leaked_tensor_error
from .tensor import GraphTensor, TracingMode

_RESERVED = frozenset(keyword.kwlist) | {"torch", "operator", "math", "inf", "nan", "self", "None", "True", "False",
                                         "_", "abs", "slice"}


class TraceState:
    """Everything one trace accumulates; the current one lives in a ContextVar."""

    def __init__(self, graph: Graph, parent: "TraceState | None" = None) -> None:
        self.graph = graph
        self.parent = parent
        self.root: TraceState = parent.root if parent is not None else self
        self.entry_grad = torch.is_grad_enabled() if parent is None else parent.entry_grad
        self.entry_autocast = autocast_state() if parent is None else parent.entry_autocast
        # Read once per trace: torch.get_default_device() costs microseconds per call.
        self.default_device = torch.get_default_device() if parent is None else parent.default_device
        self.closed = False
        self._names: set[str] = set() if parent is None else self.root._names
        self._captures: dict[int, GraphTensor] = {}
        self.modules: dict[int, torch.nn.Module] = {}
        self.module_modes = ModuleModes() if parent is None else parent.root.module_modes
        self.warned: set = set()  # (kind, user line) of warnings given once per trace
        # A run-time Python number whose __index__ torch's argument parser tried since the last recorded
        # op: if the trace then fails with a TypeError, that refusal is the likely cause.
        self.refused_index: Value | None = None
        # Sub-graph hook: how a value of an enclosing graph enters this one (control flow).
        self.lift_outer: Callable[[GraphTensor], GraphTensor] | None = None

    # ----- names ----------------------------------------------------------------------
    def fresh_name(self, base: str) -> str:
        base = "".join(c if c.isalnum() or c == "_" else "_" for c in base).strip("_") or "v"
        if base[0].isdigit():
            base = "v" + base
        name, i = base, 1
        while name in self._names or name in _RESERVED:
            name = f"{base}_{i}"
            i += 1
        self._names.add(name)
        return name

    # ----- values ---------------------------------------------------------------------
    def placeholder(self, name: str, dtype: torch.dtype, shape: tuple | None, device: torch.device | None,
                    kind: ValueKind = ValueKind.TENSOR) -> GraphTensor:
        value = Value(self.fresh_name(name), dtype, shape, device, kind)
        self.graph.inputs.append(value)
        return GraphTensor(value, self)

    def wrap(self, value: Value) -> GraphTensor:
        """The user-facing object for a value of this trace: a GraphList for a LIST value, else a GraphTensor."""
        return (GraphList if value.kind is ValueKind.LIST else GraphTensor)(value, self)

    def capture(self, t: torch.Tensor, name: str | None = None) -> GraphTensor:
        """The graph value standing for real tensor `t` (a module parameter, a closure tensor...)."""
        if self.parent is not None:
            outer = self.root.capture(t, name)
            return self.to_graph_tensor(outer)
        gt = self._captures.get(id(t))
        if gt is None:
            value = Value(self.fresh_name(name or self._capture_name(t)), t.dtype, tuple(t.shape), t.device)
            self.graph.captures.append((value, t))
            gt = GraphTensor(value, self)
            self._captures[id(t)] = gt
        return gt

    def _capture_name(self, t: torch.Tensor) -> str:
        """`linear_weight` for a parameter of a module that ran in this trace, else `param` / `const`."""
        for m in reversed(list(self.modules.values())):
            for pname, p in itertools.chain(m.named_parameters(recurse=False), m.named_buffers(recurse=False)):
                if p is t:
                    return f"{type(m).__name__.lower()}_{pname}"
        return "param" if isinstance(t, torch.nn.Parameter) else "const"

    def to_graph_tensor(self, g: GraphTensor) -> GraphTensor:
        """`g` as a value usable in this trace (lifting values of enclosing traces)."""
        if g._trace is self:
            return g
        state = self.parent
        while state is not None:
            if g._trace is state:
                if self.lift_outer is None:
                    raise AssertionError("bug in torch_autograph: a sub-trace without a lifting hook")
                return self.lift_outer(g)
            state = state.parent
        raise leaked_tensor_error(g)

    def to_value(self, obj: Any) -> Any:
        """Replace graph and real tensors in a nest of arguments by graph Values of this trace."""
        return map_nest(self._leaf_value, obj)

    def _leaf_value(self, x: Any) -> Any:
        if isinstance(x, GraphTensor):
            return self.to_graph_tensor(x)._value
        if isinstance(x, torch.Tensor):
            return self.capture(x)._value
        if hasattr(x, "_ta_graph_value"):  # a Variable: the tensor it stands for
            return self.to_value(x._ta_graph_value())
        return x


@contextmanager
def tracing(graph: Graph) -> Iterator[TraceState]:
    """Make `graph` the current trace of this thread; record torch calls into it."""
    state = TraceState(graph)
    try:
        with trace_hooks.installed(), activate(state), TracingMode():
            yield state
    finally:
        state.closed = True
        state.module_modes.restore()


@contextmanager
def subtrace(graph: Graph, lift_outer: Callable[[GraphTensor], GraphTensor]) -> Iterator[TraceState]:
    """Record into a sub-graph (a branch or loop body) of the current trace."""
    parent = current()
    assert parent is not None, "bug in torch_autograph: subtrace outside a trace"
    graph.parent = parent.graph
    state = TraceState(graph, parent)
    state.lift_outer = lift_outer
    try:
        with activate(state):
            yield state
    finally:
        state.closed = True


@contextmanager
def reenter(state: TraceState) -> Iterator[TraceState]:
    """Record into an existing sub-trace again (e.g. to convert a branch output after both branches ran)."""
    with activate(state):
        yield state
