"""Flatten and pack nested structures: tuple, list, dict, namedtuple, dataclass.

Leaves are everything else, including dataclasses that declare themselves
leaves with a true `_nest_leaf` class attribute (e.g. `TensorSpec`). Dicts
flatten in sorted-key order (so `{1: a, 3: b}` and `{3: b, 1: a}` flatten
alike) but are packed back in their original order.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import Any, Callable, Iterator


def is_namedtuple(obj: Any) -> bool:
    return isinstance(obj, tuple) and hasattr(type(obj), "_fields")


def is_dataclass_instance(obj: Any) -> bool:
    """A dataclass instance that nests (its fields are children), unless its class opts out with `_nest_leaf`."""
    return dataclasses.is_dataclass(obj) and not isinstance(obj, type) and not getattr(obj, "_nest_leaf", False)


def sorted_keys(d: dict) -> list:
    try:
        return sorted(d)
    except TypeError:
        return sorted(d, key=lambda k: (type(k).__name__, repr(k)))


def children(obj: Any) -> list[tuple[Any, Any]] | None:
    """[(key, child)] of a structure, or None for a leaf."""
    if isinstance(obj, (list, tuple)) and not isinstance(obj, str):
        if type(obj) not in (list, tuple) and not is_namedtuple(obj) and type(obj).__module__ != "torch.return_types":
            return None  # e.g. torch.Size: a leaf
        if hasattr(obj, "_fields") and is_namedtuple(obj):
            return list(zip(obj._fields, obj))
        return list(enumerate(obj))
    if isinstance(obj, dict):
        return [(k, obj[k]) for k in sorted_keys(obj)]
    if is_dataclass_instance(obj):
        return [(f.name, getattr(obj, f.name)) for f in dataclasses.fields(obj)]
    flatten_hook = getattr(type(obj), "__ta_children__", None)
    if flatten_hook is not None:
        return flatten_hook(obj)  # library containers such as TensorArray
    return None


def structure_signature(obj: Any) -> Any:
    """A hashable description of `obj`'s nesting (leaves are `*`): equal iff the structures match."""
    kids = children(obj)
    if kids is None:
        return "*"
    kind = dict if isinstance(obj, dict) else type(obj)
    return (kind, tuple((k, structure_signature(c)) for k, c in kids))


def flatten(obj: Any) -> list[Any]:
    """The leaves of `obj`, depth first."""
    return list(iter_leaves(obj))


def iter_leaves(obj: Any) -> Iterator[Any]:
    kids = children(obj)
    if kids is None:
        yield obj
    else:
        for _, child in kids:
            yield from iter_leaves(child)


def iter_with_paths(obj: Any, path: tuple = ()) -> Iterator[tuple[tuple, Any]]:
    """(path, leaf) pairs; a path is the tuple of keys from the root."""
    kids = children(obj)
    if kids is None:
        yield path, obj
    else:
        for key, child in kids:
            yield from iter_with_paths(child, path + (key,))


def rebuild(obj: Any, new_children: dict) -> Any:
    """A structure like `obj` whose children are `new_children[key]`."""
    if isinstance(obj, dict):
        return type(obj)((k, new_children[k]) for k in obj) if type(obj) is not dict else {k: new_children[k] for k in obj}
    if is_namedtuple(obj):
        return type(obj)(*[new_children[f] for f in obj._fields])
    if isinstance(obj, (list, tuple)):
        items = [new_children[i] for i in range(len(obj))]
        return type(obj)(items)
    if hasattr(type(obj), "__ta_rebuild__"):
        return obj.__ta_rebuild__(new_children)
    if is_dataclass_instance(obj):
        new = copy.copy(obj)
        for f in dataclasses.fields(obj):
            object.__setattr__(new, f.name, new_children[f.name])
        return new
    raise TypeError(f"not a structure: {type(obj).__name__}")


def map_structure(fn: Callable[[Any], Any], obj: Any) -> Any:
    """Apply `fn` to every leaf, keeping the structure."""
    kids = children(obj)
    if kids is None:
        return fn(obj)
    return rebuild(obj, {k: map_structure(fn, c) for k, c in kids})


def pack_sequence_as(structure: Any, flat: list[Any]) -> Any:
    """Inverse of `flatten`: fill `structure`'s leaves with `flat` in order."""
    it = iter(flat)
    out = map_structure(lambda _: next(it), structure)
    rest = list(it)
    if rest:
        raise ValueError(f"pack_sequence_as: {len(rest)} leaves left over")
    return out
