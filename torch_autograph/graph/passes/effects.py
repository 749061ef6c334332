"""Which values a graph may mutate or alias: the facts CSE and constant folding must respect.

Tensors are mutable: an in-place op, `x[i] = v`, `Variable.assign` or an
optimizer step changes a tensor (and every view of it) between two reads. A
pass that merges or precomputes a value must know:

- `possibly_mutated(graph)`: values that some stateful node may write, plus
  every value they may be a view of (an op's output can alias its inputs:
  `view`, `reshape`, `x[0]`, `.to()` that returns self...);
- `epochs(graph)`: for each node, how many stateful nodes ran before it, so
  two reads are only merged when nothing could have written in between.

For example::

    %view = %x.view(4)
    %add_ = %view.add_(1)        # writes %view, hence %x too
    -> possibly_mutated = {%view, %x}
"""

from __future__ import annotations

from typing import Iterable

from ..graph import Graph, Node
from ..ops import CondOp, Effect, OpKind, Trait
from ..values import Value
from ..walkers import iter_values, walk_nodes


def returns_fresh(node: Node) -> bool:
    """Whether every output of `node` is a new tensor, never a view of one of its inputs."""
    if node.op.kind is OpKind.OPERATOR:
        return Trait.FRESH in node.op.traits
    if node.op.kind in (OpKind.FUNCTION, OpKind.METHOD):
        # `F.relu(x, inplace=True)` (an op that writes its first argument) returns `x` itself.
        # `torch.add(a, b, out=buf)` returns `buf`.
        return Trait.FRESH in node.op.traits and node.kwargs.get("inplace") is not True and \
            not node.op.effects & (Effect.WRITES_FIRST_ARG | Effect.WRITES_OUT)
    return False


def _written(node: Node) -> Iterable[Value]:
    """The values a node with effects may write."""
    effects = node.op.effects
    if effects & Effect.UNKNOWN:
        yield from iter_values((node.args, node.kwargs))  # anything it reads
        for sub in node.subgraphs:
            yield from sub.inputs
        return
    if effects & Effect.WRITES_OUT:
        yield from iter_values(node.kwargs.get("out"))
    if effects & Effect.WRITES_FIRST_ARG and node.args:
        yield from iter_values(node.args[0])  # x.add_(y) writes x only; torch._foreach_mul_([...], s) the list


def possibly_mutated(graph: Graph) -> set[int]:
    """ids of the values some stateful node (of this graph or a sub-graph) may write, with their aliases."""
    written = {id(v) for node in walk_nodes(graph) if node.stateful for v in _written(node)}
    return _with_aliases(graph, written)


def _with_aliases(graph: Graph, seeds: set[int]) -> set[int]:
    """`seeds` plus every value a seed may be a view of (walking producers backwards)."""
    out = set(seeds)
    for node in reversed(graph.nodes):
        if returns_fresh(node) or not any(id(v) in out for v in node.outputs):
            continue
        if _is_cond(node):
            # A cond output aliases what its branches return: follow the branches, not every operand.
            hit = [i for i, v in enumerate(node.outputs) if id(v) in out]
            for sub in node.subgraphs:
                inner = _with_aliases(sub, {id(sub.outputs[i]) for i in hit if isinstance(sub.outputs[i], Value)})
                out.update(id(v) for v in sub.inputs if id(v) in inner)
        else:
            out.update(id(v) for v in node.input_values())
    return out


def writes_only_its_own(graph: Graph, node: Node) -> bool:
    """Whether `node`, a node of `graph`, only writes tensors `graph` itself made in the call.

    True for an in-place op whose target is no input or capture of `graph`, nor a view of one
    (`F.relu(h, inplace=True)` on an intermediate `h`): its effect ends with the call.
    """
    if node.op.effects not in (Effect.WRITES_FIRST_ARG, Effect.WRITES_OUT):
        return False
    reached = _with_aliases(graph, {id(v) for v in _written(node)})
    return not any(id(v) in reached for v in graph.inputs) and \
        not any(id(v) in reached for v, _ in graph.captures)


def _is_cond(node: Node) -> bool:
    return isinstance(node.op.target, CondOp)


def output_aliases(graph: Graph) -> set[int]:
    """ids of the graph outputs and of every value an output may be a view of."""
    return _with_aliases(graph, {id(v) for v in iter_values(graph.outputs)})


def epochs(graph: Graph) -> list[int]:
    """For each node of `graph`, the number of stateful nodes before it."""
    out, n = [], 0
    for node in graph.nodes:
        out.append(n)
        n += node.stateful
    return out
