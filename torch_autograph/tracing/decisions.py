"""Data-dependent Python decisions in code AutoGraph did not convert, taken on the call's value and guarded.

Library code (torch.nn, transformers) is not converted: its `if bool(t):` cannot
become a graph `cond`. When the trace comes from a call, such a read of a value
(`bool(t)`, `int(t)`, `float(t)`, `t.item()`, `t.tolist()` of a small tensor) is
answered with the value the call gives it, and the answer becomes a guard of
the trace::

    mask = generate_square_subsequent_mask(5)          # captured
    if bool((mask == causal).all()):                   # torch's _detect_is_causal_mask: True for this call
        ...                                            # the trace holds the path for True

The value is computed now, on the call's tensors, from the nodes that make it
(its slice of the graph so far). Only a slice of pure nodes is computed (no
random op, no write, no Python run by the graph; nothing it reads was written
earlier in the trace), so computing it runs no effect twice, draws no random
number and changes no captured tensor. Every call computes the same slice
before the graph runs (`DecisionCheck`): a call whose value differs breaks the
trace, and the Function traces again for it (a reason in `trace_history()`),
before anything of the graph ran.

Not taken (the caller keeps the refusal naming the user's line): a trace from
an input signature alone (no call's value), a read inside a sub-trace (a loop
body or branch: the value differs per iteration), a read in AutoGraph's
generated code (converted code makes graph control flow instead), a slice that
is not pure.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import torch

from ..graph import Effect, Node, OpKind, Trait, Value, possibly_mutated, run_now
from .locations import PACKAGE_DIR, user_location

# The reads answered with the call's value: how each turns the computed tensor into the Python answer.
_READS = {"__bool__": bool, "__int__": int, "__float__": float, "__index__": int, "item": torch.Tensor.item,
          "tolist": torch.Tensor.tolist}
MAX_TOLIST = 1024  # elements: a decision on a small tensor (a few token ids), not a way to read a whole batch
_UNSAFE = Effect.RUNS_PYTHON | Effect.UNKNOWN  # anything such a node runs may write what the slice reads
_DISPATCH_FILES = ("torch/overrides.py", "torch/_tensor.py")  # between the caller and the __torch_function__


@dataclass(frozen=True)
class Decision:
    """One value read while tracing, taken on the call's value.

    Attributes:
        nodes: the slice computing it, in program order.
        value: the Value read.
        read: the read (`"__bool__"`, `"item"`...).
        answer: what it gave while tracing.
        where: the user's line (for the reason a call breaks it).
    """

    nodes: tuple[Node, ...]
    value: Value
    read: str
    answer: Any
    where: str

    def describe(self) -> str:
        return f"{_SPELLING[self.read]} was {self.answer!r}{self.where}"


_SPELLING = {"__bool__": "a tensor used as a Python bool", "__int__": "int() of a tensor",
             "__float__": "float() of a tensor", "__index__": "a tensor used as an index", "item": "x.item()",
             "tolist": "x.tolist()"}


def decide(state: Any, g: Any, read: str) -> tuple[bool, Any]:
    """(True, the call's answer to `read` of graph tensor `g`, recorded as a guard of the trace), or (False, None)
    where the decision cannot be taken now (the caller raises its error)."""
    if read not in _READS or state is None or state.parent is not None or not state.trace.assumed.call_inputs:
        return False, None
    if _in_generated_code():
        return False, None
    value = state.resolve(g._value)
    nodes = _slice(state, value)
    if nodes is None:
        return False, None
    computed = _compute(nodes, value, _leaves(state))
    if computed is None or (read == "tolist" and computed.numel() > MAX_TOLIST):
        return False, None
    if read != "tolist" and computed.numel() != 1:
        return False, None
    try:
        answer = _READS[read](computed)
    except (RuntimeError, TypeError, ValueError):
        return False, None
    loc = user_location()
    state.trace.assumed.decisions.append(Decision(tuple(nodes), value, read, answer, f" at {loc}" if loc else ""))
    return True, answer


def _in_generated_code() -> bool:
    """Whether the read comes from AutoGraph's generated code (the first frame outside this package and torch's
    dispatch): there `if t:` is graph control flow, and a bare `bool(t)` keeps its refusal."""
    f = sys._getframe(2)
    while f is not None:
        filename = f.f_code.co_filename
        if not filename.startswith(PACKAGE_DIR) and not filename.endswith(_DISPATCH_FILES):
            return filename.startswith("<autograph ")
        f = f.f_back
    return False


def _leaves(state: Any) -> dict[int, torch.Tensor]:
    """id(Value) -> tensor for the graph's inputs (the call's tensors) and its captures."""
    leaves = dict(state.trace.assumed.call_inputs)
    leaves.update((id(v), t) for v, t in state.graph.captures)
    return leaves


def _slice(state: Any, value: Value) -> list[Node] | None:
    """The nodes of the graph so far that compute `value`, in program order; None if one is not pure, or reads
    something an earlier node may write."""
    graph = state.graph
    if any(n.op.effects & _UNSAFE for n in graph.nodes):
        return None
    producer = {id(o): n for n in graph.nodes for o in n.outputs}
    leaves = {id(v) for v in graph.inputs} | {id(v) for v, _ in graph.captures}
    mutated = possibly_mutated(graph)
    wanted: set[int] = set()
    stack = [value]
    while stack:
        v = stack.pop()
        if id(v) in mutated:
            return None
        if id(v) in leaves:
            continue
        node = producer.get(id(v))
        if node is None:
            return None
        if id(node) in wanted:
            continue
        op = node.op
        if op.stateful or not op.pure or op.kind is OpKind.CONTROL or node.subgraphs \
                or Trait.NOT_A_VALUE in op.traits:
            return None
        wanted.add(id(node))
        stack.extend(node.input_values())
    return [n for n in graph.nodes if id(n) in wanted]


def _compute(nodes: list[Node] | tuple[Node, ...], value: Value, leaves: dict[int, torch.Tensor]) -> Any:
    """Run `nodes` on `leaves` (no grad, no torch function modes); the tensor `value` has, or None."""
    env = dict(leaves)
    for node in nodes:
        try:
            result = run_now(node, env)
        except Exception:  # noqa: BLE001 - the graph fails there when it runs, as eager code would
            return None
        if not bind_results(node.pattern, result, env):
            return None
    out = env.get(id(value))
    if isinstance(out, (bool, int, float)):
        out = torch.tensor(out)
    return out if isinstance(out, torch.Tensor) else None


def bind_results(pattern: Any, result: Any, env: dict[int, Any]) -> bool:
    """Bind `result` to the Values of `pattern` (a Value, or nested tuples of Values and None)."""
    if isinstance(pattern, Value):
        env[id(pattern)] = result
        return True
    if pattern is None:
        return True
    if isinstance(pattern, tuple) and isinstance(result, (tuple, list)) and len(pattern) == len(result):
        return all(bind_results(p, r, env) for p, r in zip(pattern, result))
    return False


class DecisionCheck:
    """What a call must give the decisions of a trace: computed on the call's flat inputs before the graph runs.

    `positions`: id(input Value) -> index in the flat inputs; captures are read by reference (their value now).
    """

    def __init__(self, decisions: list[Decision], inputs: list[Value], captures: list) -> None:
        self.decisions = tuple(decisions)
        self.positions = {id(v): i for i, v in enumerate(inputs)}
        self.captures = tuple((id(v), t) for v, t in captures)

    def __call__(self, flat: list) -> str | None:
        leaves = {k: flat[i] for k, i in self.positions.items()}
        leaves.update(self.captures)
        for d in self.decisions:
            computed = _compute(d.nodes, d.value, leaves)
            try:
                answer = None if computed is None else _READS[d.read](computed)
            except (RuntimeError, TypeError, ValueError):
                answer = None
            if answer != d.answer or type(answer) is not type(d.answer):
                return d.describe()
        return None
