"""Nested structures of arguments and results, as torch's pytree (`torch.utils._pytree`) sees them.

A structure is whatever torch's pytree knows: tuples, lists, dicts,
namedtuples, `torch.return_types`, `torch.Size`, OrderedDict, defaultdict,
deque, dataclasses registered with `torch.utils._pytree.register_dataclass`,
and containers libraries register (a Hugging Face `ModelOutput`). Everything
else is a leaf, None included; an unregistered dataclass is a leaf, as under
torch.export. These are thin helpers on torch's walker: `flatten`,
`map_structure`, `pack_sequence_as` are pytree's flatten, map and unflatten.

Two helpers look one level deep (`children`, `rebuild`), through the node
pytree registered for the type: trace types describe an argument level by
level. There a dict's keys come sorted (`{1: a, 3: b}` and `{3: b, 1: a}` are
one trace type); everywhere else a dict keeps its insertion order, as in
torch's pytree. `same_structure`/`leaves_like` compare and align two
structures regardless of dict key order (the two branches of an `if`).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Iterator

import torch
import torch.utils._pytree as pytree

TreeSpec = pytree.TreeSpec


def _node(obj: Any) -> Any:
    """pytree's NodeDef for `obj`'s type, or None for a leaf."""
    return pytree.SUPPORTED_NODES.get(pytree._get_node_type(obj))


def is_structure(obj: Any) -> bool:
    return _node(obj) is not None


def sorted_keys(keys: Any) -> list:
    try:
        return sorted(keys)
    except TypeError:
        return sorted(keys, key=lambda k: (type(k).__name__, repr(k)))


def _plain_key(entry: Any) -> Any:
    for attr in ("key", "idx", "name"):  # MappingKey, SequenceKey, GetAttrKey
        if hasattr(entry, attr):
            return getattr(entry, attr)
    return entry


def children(obj: Any) -> list[tuple[Any, Any]] | None:
    """[(key, child)] of a structure one level down (a mapping's keys sorted), or None for a leaf."""
    t = type(obj)
    if t is tuple or t is list:  # what pytree's own nodes for them give, without the registry walk (per call)
        return list(enumerate(obj))
    if t is dict:
        return [(k, obj[k]) for k in sorted_keys(obj)]
    node = _node(obj)
    if node is None:
        return None
    if node.flatten_with_keys_fn is None:
        return list(enumerate(node.flatten_fn(obj)[0]))
    keyed, _ = node.flatten_with_keys_fn(obj)
    pairs = [(_plain_key(k), c) for k, c in keyed]
    if keyed and all(isinstance(k, pytree.MappingKey) for k, _ in keyed):
        order = {k: i for i, k in enumerate(sorted_keys([k for k, _ in pairs]))}
        pairs.sort(key=lambda kc: order[kc[0]])
    return pairs


def rebuild(obj: Any, new_children: dict) -> Any:
    """A structure like `obj` whose children are `new_children[key]` (keys as `children` gives them)."""
    t = type(obj)
    if t is tuple or t is list:
        return t(new_children[i] for i in range(len(obj)))
    if t is dict:
        return {k: new_children[k] for k in obj}
    node = _node(obj)
    if node is None:
        raise TypeError(f"not a structure: {type(obj).__name__}")
    _, context = node.flatten_fn(obj)
    if node.flatten_with_keys_fn is None:
        keys = range(len(node.flatten_fn(obj)[0]))
    else:
        keys = [_plain_key(k) for k, _ in node.flatten_with_keys_fn(obj)[0]]
    return node.unflatten_fn([new_children[k] for k in keys], context)


def context_key(obj: Any) -> Any:
    """A hashable form of the pytree context of `obj`'s node (what is not a child: a namedtuple's class, a
    registered container's fixed fields), None for tuples, lists, dicts and leaves. Two values whose contexts
    differ are different structures, as two differently keyed dicts are."""
    t = type(obj)
    if t is tuple or t is list or t is dict:
        return None
    node = _node(obj)
    if node is None:
        return None
    context = node.flatten_fn(obj)[1]
    return None if context is t else _hashable(context)  # a namedtuple's context is its class: its kind


def _hashable(x: Any) -> Any:
    try:
        hash(x)
        return x
    except TypeError:
        if isinstance(x, (list, tuple)):
            return tuple(_hashable(i) for i in x)
        if isinstance(x, dict):
            return tuple((k, _hashable(v)) for k, v in x.items())
        return ("unhashable", id(x))  # compared by identity: a context it cannot compare is never taken as equal


_PLAIN_LEAVES = (int, float, bool, str, type(None))


def _flat(obj: Any) -> bool:
    """Whether `obj` is a plain tuple or list of tensors and Python scalars (pytree's leaves for certain): the
    common case of loop variables and branch outputs, answered without pytree's walk."""
    t = type(obj)
    return (t is tuple or t is list) and all(type(x) in _PLAIN_LEAVES or isinstance(x, torch.Tensor) for x in obj)


def structure_signature(obj: Any) -> Any:
    """A hashable description of `obj`'s nesting, equal iff the structures match up to dict key order."""
    if _flat(obj):
        return (type(obj), None, ("*",) * len(obj))  # what `_canonical` makes of its TreeSpec
    return _canonical(pytree.tree_structure(obj))


def _canonical(spec: TreeSpec) -> Any:
    if spec.is_leaf():
        return "*"
    kids = tuple(_canonical(c) for c in spec.children())
    context = spec.context
    if spec.type is dict:
        order = sorted(range(len(context)), key=lambda i: sorted_keys(context).index(context[i]))
        return (dict, tuple(context[i] for i in order), tuple(kids[i] for i in order))
    try:
        hash(context)
    except TypeError:
        context = repr(context)
    return (spec.type, context, kids)


def flatten(obj: Any) -> list[Any]:
    """The leaves of `obj`, in pytree's order."""
    return list(obj) if _flat(obj) else pytree.tree_leaves(obj)


def flatten_spec(obj: Any) -> tuple[list[Any], TreeSpec]:
    return pytree.tree_flatten(obj)


def iter_leaves(obj: Any) -> Iterator[Any]:
    return iter(pytree.tree_leaves(obj))


def iter_with_paths(obj: Any) -> Iterator[tuple[tuple, Any]]:
    """(path, leaf) pairs; a path is the tuple of keys from the root."""
    for path, leaf in pytree.tree_flatten_with_path(obj)[0]:
        yield tuple(_plain_key(k) for k in path), leaf


def map_structure(fn: Callable[[Any], Any], obj: Any) -> Any:
    """Apply `fn` to every leaf, keeping the structure."""
    return pytree.tree_map(fn, obj)


def pack_sequence_as(structure: Any, flat: list[Any]) -> Any:
    """Inverse of `flatten`: fill `structure`'s leaves (a structure or its TreeSpec) with `flat` in order."""
    if _flat(structure):
        if len(flat) != len(structure):
            raise ValueError(f"pack_sequence_as: {len(flat)} values for a structure of {len(structure)} leaves")
        return type(structure)(flat)
    spec = structure if isinstance(structure, TreeSpec) else pytree.tree_structure(structure)
    if len(flat) != spec.num_leaves:
        raise ValueError(f"pack_sequence_as: {len(flat)} values for a structure of {spec.num_leaves} leaves")
    return pytree.tree_unflatten(list(flat), spec)


def same_structure(a: Any, b: Any) -> bool:
    return structure_signature(a) == structure_signature(b)


def leaves_like(like: Any, obj: Any) -> list[Any]:
    """`obj`'s leaves in the order of `like`'s (the same structure but for dict key order)."""
    if type(obj) is type(like) and _flat(obj) and _flat(like) and len(obj) == len(like):
        return list(obj)
    leaves, spec = pytree.tree_flatten(obj)
    if spec == pytree.tree_structure(like):
        return leaves
    by_path = dict(pytree.tree_flatten_with_path(obj)[0])
    return [by_path[path] for path, _ in pytree.tree_flatten_with_path(like)[0]]


def unregistered_holder(obj: Any) -> bool:
    """Whether `obj` is a dataclass instance pytree does not know (a leaf) holding tensors in its fields."""
    if not dataclasses.is_dataclass(obj) or isinstance(obj, type) or is_structure(obj):
        return False
    return any(isinstance(leaf, torch.Tensor) for f in dataclasses.fields(obj)
               for leaf in pytree.tree_leaves(getattr(obj, f.name, None)))


def unregistered_message(obj: Any, what: str) -> str:
    name = type(obj).__qualname__
    return (f"{what} is a {name}, a dataclass holding tensors that torch's pytree does not know, so its tensors "
            f"cannot be {'' if 'argument' in what else 'graph '}{'inputs' if 'argument' in what else 'outputs'}. "
            f"Register it, as torch.export requires: torch.utils._pytree.register_dataclass({name})")
