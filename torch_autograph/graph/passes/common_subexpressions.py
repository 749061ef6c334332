"""Common-subexpression elimination: compute a repeated pure expression once.

Before::

    %mul = %x * 2
    %sin = torch.sin(%mul)
    %mul_1 = %x * 2
    %sin_1 = torch.sin(%mul_1)
    %add = %sin + %sin_1
    return %add

After (`%mul_1` and `%sin_1` are replaced by `%mul` and `%sin`)::

    %mul = %x * 2
    %sin = torch.sin(%mul)
    %add = %sin + %sin
    return %add

Never merged: stateful nodes (in-place ops, random ops, prints, Variable
updates, control flow with effects); calls of library helpers (a tape's
`watch` makes a new leaf each time); two reads separated by a stateful node
(it may have written the tensor read, a capture or a Variable); a value some
stateful node may write later (merging would let the write show through the
other name); two values that both reach the outputs (the caller would get one
tensor object twice); in a graph traced under grad mode, nodes giving
floating-point tensors (their gradients would round otherwise than eager's).
Sub-graphs are processed on their own.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from ..graph import Graph, Node
from ..ops import OpKind, TryOp, WhileOp
from ..values import Value, ValueKind, shape_key
from ..walkers import substitute, unique_values
from .effects import epochs, output_aliases, possibly_mutated


def eliminate_common_subexpressions(graph: Graph, differentiable: bool = False) -> int:
    """Merge repeated pure nodes of `graph` (and, separately, of each sub-graph) in place; return how many.

    `differentiable`: the graph runs with gradients on (it was traced under grad mode), so nodes giving
    floating-point tensors are kept apart: one node standing for two sums their gradients before its
    backward runs, where eager runs the backward of each and sums after, which rounds differently.
    """
    merged = 0
    mutated = possibly_mutated(graph)
    escaping = output_aliases(graph)
    seen: dict[tuple, Node] = {}
    mapping: dict[int, Value] = {}
    kept: list[Node] = []
    for node, epoch in zip(graph.nodes, epochs(graph)):
        if mapping:
            substitute_node(node, mapping)
        for sub in node.subgraphs:
            merged += eliminate_common_subexpressions(sub, differentiable)
        key = _key(node, epoch) if _mergeable(node, mutated, differentiable) else None
        other = seen.get(key) if key is not None else None
        if other is not None and not (_escapes(node, escaping) and _escapes(other, escaping)):
            for old, new in zip(node.outputs, other.outputs):
                mapping[id(old)] = new
            merged += 1
            continue
        if key is not None:
            seen.setdefault(key, node)
        kept.append(node)
    graph.nodes = kept
    if mapping:
        graph.outputs = substitute(graph.outputs, mapping)
    return merged


def _escapes(node: Node, escaping: set[int]) -> bool:
    return any(id(v) in escaping for v in node.outputs)


def _mergeable(node: Node, mutated: set[int], differentiable: bool) -> bool:
    op = node.op
    if op.stateful or op.kind is OpKind.CONTROL or not node.outputs:
        return False
    if any(v.kind is ValueKind.LIST for v in node.outputs) or any(v.kind is ValueKind.LIST
                                                                   for v in node.input_values()):
        return False
    if any(id(v) in mutated for v in node.outputs):
        return False
    if differentiable and any(v.kind is ValueKind.TENSOR and (v.dtype.is_floating_point or v.dtype.is_complex)
                              for v in node.outputs):
        return False
    return op.pure


def _key(node: Node, epoch: int) -> tuple | None:
    """A hashable description of what `node` computes, or None when an argument cannot be keyed."""
    try:
        args = _const_key(node.args)
        kwargs = _const_key(node.kwargs)
        target = node.op.target
        hash(target)
    except TypeError:
        return None
    outs = tuple((v.dtype, shape_key(v.shape), v.kind) for v in node.outputs)
    return (node.op.kind, target, args, kwargs, node.grad_enabled, node.autocast, _pattern_key(node.pattern), outs,
            epoch)


def _pattern_key(p: Any) -> Any:
    if isinstance(p, Value):
        return "v"
    if isinstance(p, tuple):
        return tuple(_pattern_key(x) for x in p)
    return None


def _const_key(a: Any) -> Any:
    """Constants keyed by type and value (1, 1.0 and True differ); Values by identity."""
    if isinstance(a, Value):
        return ("%", id(a))
    if isinstance(a, (tuple, list)):
        return (type(a).__name__, tuple(_const_key(x) for x in a))
    if isinstance(a, dict):
        return ("dict", tuple((k, _const_key(v)) for k, v in a.items()))
    if isinstance(a, slice):
        return ("slice", _const_key(a.start), _const_key(a.stop), _const_key(a.step))
    if isinstance(a, float):
        return ("float", repr(a))  # -0.0 != 0.0, nan == nan here
    if isinstance(a, torch.Tensor):
        raise TypeError("tensor constant")  # compared by value would be wrong, by identity never merges
    hash(a)
    return (type(a), a)


# ----- substitution (shared by the passes) -----------------------------------------------------------
def substitute_node(node: Node, mapping: dict[int, Value]) -> None:
    """Rewrite a node's arguments (and the outer values its sub-graphs read) in place."""
    if not any(id(v) in mapping for v in _reads(node)):
        return
    node.args = substitute(node.args, mapping)
    node.kwargs = substitute(node.kwargs, mapping)
    if node.op.kind is OpKind.CONTROL:
        target = node.op.target
        if not isinstance(target, WhileOp):
            node.args = node.args[:1] + tuple(unique_values(node.args[1:]))  # cond: (pred, *lifted values)
        if isinstance(target, TryOp) and target.at_raise:
            bound = tuple((p, tuple(mapping.get(id(v), v) for v in values), where)
                          for p, values, where in target.at_raise)
            node.op = dataclasses.replace(node.op, target=dataclasses.replace(target, at_raise=bound))
        if isinstance(target, WhileOp) and target.bound_values():
            limit, trips = (mapping.get(id(v), v) if isinstance(v, Value) else v
                            for v in (target.maximum_iterations, target.trip_count))
            node.op = dataclasses.replace(node.op, target=dataclasses.replace(target, maximum_iterations=limit,
                                                                             trip_count=trips))
        for sub in node.subgraphs:
            _substitute_graph(sub, mapping)


def _substitute_graph(g: Graph, mapping: dict[int, Value]) -> None:
    g.inputs = unique_values(substitute(g.inputs, mapping))
    for n in g.nodes:
        substitute_node(n, mapping)
    g.outputs = substitute(g.outputs, mapping)


def _reads(node: Node) -> list[Value]:
    vals = list(node.input_values())
    for sub in node.subgraphs:
        vals += sub.inputs
        for n in sub.nodes:
            vals += _reads(n)
    target = node.op.target
    if isinstance(target, (WhileOp, TryOp)):
        vals += target.bound_values()
    return vals


