"""Gradients as graph values: `p.grad` read while tracing means `p.grad` when the graph runs.

A traced training step stages `loss.backward()` (a node that accumulates into
`.grad` when the graph runs) and `optimizer.zero_grad()`. Code after them that
reads gradients (`torch.nn.utils.clip_grad_norm_`, `p.grad.norm()`, manual SGD
on `p.grad`, gradient accumulation) must see the gradients of that call, not
the trace-time attribute. So each root trace follows, per leaf tensor (a
parameter, a captured tensor), whether its `.grad` is None when the graph
reaches the read::

    unknown   (start)   the call's own state: the trace assumes what it sees now,
                        and a check node verifies that assumption when the graph runs
    none                after a staged `zero_grad()` (set_to_none) or `p.grad = None`
    defined             after a staged backward that reaches `p`, or `p.grad = g`

A read in state `defined` is a node returning `p.grad` at run time (raising if
it is None then: an over-approximated "reaches" never becomes a silent None);
`none` reads as None, which is what eager code sees on that path. Code like
`[p.grad for p in params if p.grad is not None]` then keeps its meaning.
Writes (`p.grad = None`, `p.grad = g`) are nodes too, never run while tracing.
"""

from __future__ import annotations

from typing import Any

import torch

from ..errors import InvalidArgumentError
from ..graph import Effect, Node, Op, OpKind, Value, ValueKind
from ..tracing import current, meta_example, user_location

_UNKNOWN, _NONE, _DEFINED = "unknown", "none", "defined"


# ----- run-time helpers (called by generated graph code) -------------------------------------------
def read_grad(t: torch.Tensor, where: str) -> torch.Tensor:
    """`t.grad` when the graph runs; the trace expected a gradient there."""
    g = t.grad
    if g is None:
        raise InvalidArgumentError(
            f".grad of a tensor of shape {tuple(t.shape)} is None when the graph runs{where}, but the trace "
            f"expected a gradient there (a staged backward reaches it, or it had one when traced). If no "
            f"gradient reaches it on this call, test `p.grad is not None` outside the function or give it one.")
    return g


def expect_no_grad(t: torch.Tensor, where: str) -> None:
    """The trace read `t.grad` as None (as it was when traced, before anything in the graph set it)."""
    if t.grad is not None:
        raise InvalidArgumentError(
            f".grad of a tensor of shape {tuple(t.shape)} was None when the function was traced{where} and the "
            f"graph took the path for None, but this call starts with a gradient there: zero it with "
            f"`optimizer.zero_grad()` inside the function (then the graph knows), or call it in the same state")


def set_grad(t: torch.Tensor, g: Any) -> None:
    t.grad = g


# ----- what a trace knows ---------------------------------------------------------------------------
class GradTracker:
    """Per root trace: the `.grad` state of every leaf tensor the traced code touched."""

    def __init__(self) -> None:
        self._status: dict[int, tuple[torch.Tensor, str]] = {}
        self._epoch = 0  # bumped by anything that may change which tensor `.grad` holds
        self._reads: dict[tuple, Any] = {}  # (id(tensor), epoch, id(trace)) -> the graph value of a read
        # (graph value, leaf): a backward reaching the value gives the leaf a gradient (FSDP2's sharded
        # parameter behind the unsharded one its pre-hook installs)
        self.flows: list[tuple[Value, torch.Tensor]] = []

    def status(self, t: torch.Tensor) -> str:
        entry = self._status.get(id(t))
        return entry[1] if entry is not None else _UNKNOWN

    def set(self, t: torch.Tensor, status: str) -> None:
        self._status[id(t)] = (t, status)  # holds t: the trace holds its captures anyway

    def changed(self) -> None:
        self._epoch += 1
        self._reads.clear()


def _tracker(state: Any) -> GradTracker:
    """The root trace's tracker, made when it started (`TraceHooks.grads_state`)."""
    return state.trace.grads


def _where() -> str:
    loc = user_location()
    return f" (read at {loc})" if loc else ""


def read(state: Any, t: torch.Tensor) -> Any:
    """What `t.grad` stands for at this point of the traced program (None or a graph tensor)."""
    tracker = _tracker(state)
    status = tracker.status(t)
    where = _where()
    if status == _UNKNOWN:
        if t.grad is None:
            _record(state, Op(OpKind.FUNCTION, expect_no_grad, "expect_no_grad", effects=Effect.RAISES), (t, where))
            tracker.set(t, _NONE)
            return None
        tracker.set(t, _DEFINED)
    elif status == _NONE:
        return None
    key = (id(t), tracker._epoch, id(state))
    hit = tracker._reads.get(key)
    if hit is not None:
        return hit
    out = Value(state.fresh_name("grad"), t.dtype, tuple(t.shape), t.device, ValueKind.TENSOR,
                meta_example(tuple(t.shape), t.dtype))
    state.add_node(Node(Op(OpKind.FUNCTION, read_grad, "grad", effects=Effect.RUNS_PYTHON),
                        state.to_value((t, where)), {}, (out,), pattern=out, origin=user_location()))
    g = state.wrap(out)
    tracker._reads[key] = g
    return g


def write(state: Any, t: torch.Tensor, g: Any) -> None:
    """`t.grad = g` while tracing: a node that assigns it when the graph runs."""
    tracker = _tracker(state)
    _record(state, Op(OpKind.FUNCTION, set_grad, "set_grad", effects=Effect.RUNS_PYTHON), (t, g))
    tracker.changed()
    tracker.set(t, _NONE if g is None else _DEFINED)


def zeroed(params: Any, set_to_none: bool) -> None:
    """A staged `zero_grad()` of `params` was recorded."""
    state = current()
    if state is None:
        return
    tracker = _tracker(state)
    tracker.changed()
    if set_to_none:
        for p in params:
            tracker.set(p, _NONE)


def flows_to(state: Any, g: Any, leaf: torch.Tensor) -> None:
    """A backward that reaches graph tensor `g` leaves a gradient in `leaf.grad` (written by library hooks)."""
    _tracker(state).flows.append((g._value, leaf))


def python_ran() -> None:
    """A staged call that may replace `.grad` tensors (an optimizer or GradScaler step) was recorded."""
    state = current()
    if state is not None and state.trace.grads is not None:
        state.trace.grads.changed()


def after_backward(state: Any, roots: list[Value], inputs: Any) -> None:
    """A staged backward from `roots` was recorded: the leaves it reaches hold a gradient afterwards."""
    tracker = _tracker(state)
    tracker.changed()
    root = state.root
    if inputs is not None:
        leaves = [x for x in (inputs if isinstance(inputs, (list, tuple)) else [inputs])]
        reached = {id(state.to_value(x)) for x in leaves if isinstance(x, torch.Tensor)}
    elif state is root:
        reached = _ancestors(state.graph, roots)
    else:
        # A backward inside a graph loop or branch: its sub-graph reads outer values through lifted inputs
        # that cannot be followed from here. Every captured leaf counts as reached; a read of one that
        # gets no gradient raises when the graph runs.
        reached = {id(v) for v, _ in root.graph.captures}
    for v, t in root.graph.captures:
        if id(v) in reached and t.requires_grad and t.is_leaf:
            tracker.set(t, _DEFINED)
    for v, t in tracker.flows:
        if (id(v) in reached or state is not root) and t.requires_grad:
            tracker.set(t, _DEFINED)


def _ancestors(graph: Any, roots: list[Value]) -> set[int]:
    """Ids of every value the `roots` are computed from in `graph` (through sub-graph operands too)."""
    producer = {id(v): n for n in graph.nodes for v in n.outputs}
    seen: set[int] = set()
    stack = [v for v in roots if isinstance(v, Value)]
    while stack:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        node = producer.get(id(v))
        if node is not None:
            stack.extend(node.input_values())
    return seen


def _record(state: Any, op: Op, args: tuple) -> None:
    vargs = state.to_value(args)
    state.add_node(Node(op, vargs, {}, (), origin=user_location()))
