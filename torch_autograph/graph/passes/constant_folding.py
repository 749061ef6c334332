"""Constant folding: compute once, at trace time, what every call would compute the same way.

Before (`torch.tensor` and `torch.ones` get only Python constants)::

    %tensor = torch.tensor([1.0, 2.0])
    %ones = torch.ones(2)
    %add = %tensor + %ones
    %mul = %x * %add
    return %mul

After (`%add` becomes a constant tensor the graph reads; `%tensor` and `%ones`
are no longer needed and dead-code elimination drops them)::

    captures:
      %add: float32[2] cpu        # = tensor([2., 3.]), computed once
    %mul = %x * %add
    return %mul

Folded: deterministic, non-stateful nodes whose tensor inputs are all
constants, where constants start at factories (`torch.tensor`, `zeros`,
`ones`, `full`, `arange`, `eye`, `linspace`...) called with Python constants
only. Never folded: random ops (stateful), captured tensors and Variables (they
may change between calls), `torch.empty` (no defined value), factories asked
for `requires_grad=True`, values something may write in place later or that
reach the graph outputs (each call must return a new tensor), results larger
than `MAX_FOLDED_BYTES`. Only the top-level graph is folded.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

import torch

from ..graph import Graph, Node
from ..ops import OpKind, Trait, under_autocast
from ..values import Value, ValueKind, is_static
from ..walkers import iter_values, map_nest
from .dead_code import eliminate_dead_code
from .effects import output_aliases, possibly_mutated

MAX_FOLDED_BYTES = 1 << 20

_FACTORIES = frozenset({
    torch.tensor, torch.as_tensor, torch.scalar_tensor, torch.zeros, torch.ones, torch.full, torch.arange,
    torch.eye, torch.linspace, torch.logspace,
})
def fold_constants(graph: Graph) -> int:
    """Fold constant nodes of `graph` into captured constant tensors in place; return how many were folded."""
    mutated = possibly_mutated(graph) | output_aliases(graph)
    consts: dict[int, torch.Tensor] = {}  # id(Value) -> its value, for folded and factory values
    folded: list[tuple[Value, torch.Tensor]] = []
    kept: list[Node] = []
    for node in graph.nodes:
        value = _evaluate(node, consts) if _foldable(node, consts, mutated) else None
        if value is None:
            kept.append(node)
            continue
        out = node.outputs[0]
        consts[id(out)] = value
        if _is_factory(node):
            kept.append(node)  # creating it is as cheap as reading it; it stays unless a fold consumes it
        else:
            folded.append((out, value))
    if not folded:
        return 0
    graph.nodes = kept
    graph.captures.extend(folded)
    eliminate_dead_code(graph)
    used = {id(v) for n in graph.nodes for v in n.input_values()} | {id(v) for v in iter_values(graph.outputs)}
    for n in graph.nodes:
        for sub in n.subgraphs:
            used.update(id(v) for v in sub.inputs)
    graph.captures = [(v, t) for v, t in graph.captures if id(v) in used or not any(v is f for f, _ in folded)]
    return len(folded)


def _is_factory(node: Node) -> bool:
    return node.op.kind is OpKind.FUNCTION and node.op.target in _FACTORIES


def _foldable(node: Node, consts: dict[int, torch.Tensor], mutated: set[int]) -> bool:
    op = node.op
    if op.stateful or op.kind is OpKind.CONTROL or node.subgraphs or Trait.NOT_A_VALUE in op.traits:
        return False
    if len(node.outputs) != 1 or not isinstance(node.pattern, Value):
        return False
    out = node.outputs[0]
    if out.kind is not ValueKind.TENSOR or id(out) in mutated or not is_static(out.shape):
        return False
    if math.prod(out.shape) * torch.empty((), dtype=out.dtype).element_size() > MAX_FOLDED_BYTES:
        return False
    if node.kwargs.get("requires_grad") is True:
        return False
    inputs = list(node.input_values())
    if _is_factory(node):
        return not inputs
    if not op.pure:
        return False  # library helpers (tapes, lists) have effects or identities of their own
    return bool(inputs) and all(id(v) in consts and v.kind is ValueKind.TENSOR for v in inputs)


def run_now(node: Node, values: dict[int, Any]) -> Any:
    """What `node` computes on `values` (id of each Value it reads -> its tensor or number), computed now, without
    grad or torch function modes, under the node's autocast state; raises what the op raises."""

    def sub(a: Any) -> Any:
        return map_nest(lambda x: values[id(x)] if isinstance(x, Value) else x, a)

    args, kwargs, op = sub(node.args), sub(node.kwargs), node.op
    with torch.no_grad(), torch._C.DisableTorchFunction(), under_autocast(node.autocast) \
            if node.autocast is not None else contextlib.nullcontext():
        if op.kind is OpKind.FUNCTION or op.kind is OpKind.OPERATOR:
            return op.target(*args, **kwargs)
        if op.kind is OpKind.METHOD:
            return getattr(args[0], op.target)(*args[1:], **kwargs)
        return getattr(args[0], op.target)


def _evaluate(node: Node, consts: dict[int, torch.Tensor]) -> torch.Tensor | None:
    """Run `node` on the constant values now; None when it fails or gives something unexpected."""

    try:
        result = run_now(node, consts)
    except Exception:  # noqa: BLE001 - leave the node to fail (or not) when the graph runs, as eagerly
        return None
    out = node.outputs[0]
    if not isinstance(result, torch.Tensor) or result.dtype != out.dtype or tuple(result.shape) != out.shape \
            or result.requires_grad:
        return None
    if any(result is t for t in consts.values()):
        result = result.clone()  # e.g. `.float()` of a float constant returns the constant itself
    return result
