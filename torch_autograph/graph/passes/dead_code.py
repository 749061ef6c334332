"""Dead-code elimination: drop nodes whose outputs no output needs, keeping stateful ones.

Before::

    %mul = %x * 2
    %add = %x + 1
    %randn = torch.randn(3)
    return %add

After (`%mul` is dropped; the random op stays, it advances the generator)::

    %add = %x + 1
    %randn = torch.randn(3)
    return %add

This is TensorFlow's non-strict execution: an unused op that
would fail does not run, while in-place updates, random ops, prints and
asserts always do, in program order.
"""

from __future__ import annotations

from ..graph import Graph
from ..walkers import iter_values


def eliminate_dead_code(graph: Graph) -> int:
    """Remove dead nodes in place; return how many were removed."""
    live = {id(v) for v in iter_values(graph.outputs)}
    kept = []
    for node in reversed(graph.nodes):
        if node.stateful or any(id(v) in live for v in node.outputs):
            kept.append(node)
            live.update(id(v) for v in node.input_values())
            for sub in node.subgraphs:
                live.update(id(v) for v, _ in sub.captures)
    removed = len(graph.nodes) - len(kept)
    graph.nodes = kept[::-1]
    return removed
