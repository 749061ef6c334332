"""The walks every pass and backend shares: over nests of arguments, over nodes and sub-graphs, and shape merges.

A node's arguments are nests of tuples, lists, dicts and slices (namedtuples
keep their type) whose leaves are `Value`s or Python constants. `map_nest`
rebuilds such a nest with each leaf replaced; `iter_values` yields its Values.
`walk_nodes` visits the nodes of a graph and of every sub-graph in it.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

from .values import Value

Graph = Node = Any  # graph.Graph, graph.Node: graph.py imports this module, so they are not imported here


def map_nest(fn: Callable[[Any], Any], obj: Any) -> Any:
    """`obj` rebuilt with `fn(leaf)` for every leaf; tuples, lists, dicts and slices are walked, namedtuples kept."""
    t = type(obj)
    if t is tuple or t is list:
        return t([map_nest(fn, x) for x in obj])
    if t is dict:
        return {k: map_nest(fn, v) for k, v in obj.items()}
    if t is slice:
        return slice(map_nest(fn, obj.start), map_nest(fn, obj.stop), map_nest(fn, obj.step))
    if isinstance(obj, tuple):
        items = [map_nest(fn, x) for x in obj]
        return t(*items) if hasattr(obj, "_fields") else tuple(items)  # torch.Size & co. become plain tuples
    if isinstance(obj, list):
        return t([map_nest(fn, x) for x in obj])
    if isinstance(obj, dict):
        return t({k: map_nest(fn, v) for k, v in obj.items()})
    return fn(obj)


def iter_leaves(obj: Any) -> Iterator[Any]:
    """Every leaf of a nest of tuples, lists, dicts and slices, depth first."""
    if isinstance(obj, (tuple, list)):
        for item in obj:
            yield from iter_leaves(item)
    elif isinstance(obj, dict):
        for item in obj.values():
            yield from iter_leaves(item)
    elif isinstance(obj, slice):
        yield from iter_leaves((obj.start, obj.stop, obj.step))
    else:
        yield obj


def iter_values(obj: Any) -> Iterator[Value]:
    """Every `Value` in a nest, depth first."""
    for leaf in iter_leaves(obj):
        if isinstance(leaf, Value):
            yield leaf


def substitute(obj: Any, mapping: dict[int, Value]) -> Any:
    """`obj` with every Value whose id is in `mapping` replaced by its mapped Value."""
    return map_nest(lambda x: mapping.get(id(x), x) if isinstance(x, Value) else x, obj)


def unique_values(values: Any) -> list[Value]:
    """`values` without repeats (by identity), in first-seen order."""
    seen: set[int] = set()
    out = []
    for v in values:
        if id(v) not in seen:
            seen.add(id(v))
            out.append(v)
    return out


def walk_nodes(graph: "Graph") -> Iterator["Node"]:
    """The nodes of `graph` in program order, each followed by the nodes of its sub-graphs."""
    for node in graph.nodes:
        yield node
        for sub in node.subgraphs:
            yield from walk_nodes(sub)


def merge_dims(a: tuple | None, b: tuple | None) -> tuple | None:
    """The most specific shape both `a` and `b` fit: equal dims kept, others None; None (unknown rank) when ranks differ."""
    if a is None or b is None or len(a) != len(b):
        return None
    return tuple(x if x == y else None for x, y in zip(a, b))


def fits(shape: tuple | None, pattern: tuple | None) -> bool:
    """Whether `shape` fits `pattern` (None dims and a None rank in the pattern match anything)."""
    if pattern is None:
        return True
    if shape is None or len(shape) != len(pattern):
        return False
    return all(p is None or s == p for s, p in zip(shape, pattern))
