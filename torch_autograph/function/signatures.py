"""Trace types of arguments: TensorSpec, literals, identities and structures of them.

A call's trace key is the tuple of the trace types of its canonically bound
arguments. Types are hashable; `is_subtype` says whether a call may use a trace
made for a more general type (a fixed dim fits a None dim), and
`common_supertype` is what `reduce_retracing=True` traces instead.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .. import nest
from ..graph import ArraySpec, TensorSpec, fits, merge_dims


@dataclass(frozen=True)
class Literal:
    """A Python value that is part of the trace key by type and value (`2`, `2.0`, `True` differ)."""

    value: Any

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Literal) and type(self.value) is type(other.value) and self.value == other.value

    def __hash__(self) -> int:
        return hash((type(self.value), self.value))

    def __repr__(self) -> str:
        return f"Literal[{self.value!r}]"


class Identity:
    """Any other object: matched by identity, held weakly (a dead object matches nothing)."""

    __slots__ = ("_ref", "_strong", "_id", "_repr")

    def __init__(self, obj: Any) -> None:
        try:
            self._ref = weakref.ref(obj)
            self._strong = None
        except TypeError:  # not weak-referenceable (e.g. a list subclass instance): keep it
            self._ref = None
            self._strong = obj
        self._id = id(obj)
        self._repr = f"{type(obj).__name__} at {self._id:#x}"

    @property
    def obj(self) -> Any:
        return self._strong if self._ref is None else self._ref()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Identity) and self._id == other._id and self.obj is not None and self.obj is other.obj

    def __hash__(self) -> int:
        return self._id

    def __repr__(self) -> str:
        return f"Object[{self._repr}]"


@dataclass(frozen=True)
class Structure:
    """A tuple/list/dict/namedtuple/dataclass of trace types."""

    kind: Any  # list, tuple, dict, or the namedtuple / dataclass type
    keys: tuple
    items: tuple
    context: Any = None  # the pytree context of other kinds (nest.context_key): part of the structure

    def __repr__(self) -> str:
        if self.kind is dict:
            return "Dict[" + ", ".join(f"[{k!r}, {v!r}]" for k, v in zip(self.keys, self.items)) + "]"
        name = {list: "List", tuple: "Tuple"}.get(self.kind, getattr(self.kind, "__name__", "Struct"))
        return f"{name}[" + ", ".join(repr(v) for v in self.items) + "]"


_LITERAL_TYPES = (int, float, bool, str, bytes, type(None), complex, torch.dtype, torch.device)


def trace_type(obj: Any) -> Any:
    """The trace type of one argument value."""
    if isinstance(obj, torch.Tensor):
        if isinstance(obj, torch.nn.Parameter) or hasattr(obj, "_ta_keyed_by_identity"):
            return Identity(obj)
        return TensorSpec(tuple(obj.shape), obj.dtype, None, obj.device)
    if isinstance(obj, np.ndarray):
        return ArraySpec(obj.shape, torch.from_numpy(np.empty((0,), obj.dtype)).dtype, None, torch.device("cpu"))
    if isinstance(obj, TensorSpec):
        return obj
    if isinstance(obj, _LITERAL_TYPES):
        return Literal(obj)
    kids = nest.children(obj)
    if kids is None and nest.unregistered_holder(obj):
        raise TypeError(nest.unregistered_message(obj, "an argument"))
    if kids is not None:
        kind = type(obj) if not isinstance(obj, dict) else dict
        return Structure(kind, tuple(k for k, _ in kids), tuple(trace_type(c) for _, c in kids),
                         nest.context_key(obj))
    try:
        hash(obj)
    except TypeError:
        pass
    return Identity(obj)


def is_subtype(a: Any, b: Any) -> bool:
    """Whether a call with type `a` may run a trace made for type `b`."""
    if isinstance(a, TensorSpec) and isinstance(b, TensorSpec):
        if a.dtype != b.dtype or (b.device is not None and a.device != b.device) or \
                isinstance(a, ArraySpec) != isinstance(b, ArraySpec):
            return False
        if b.shape is None:
            return True
        return a.shape is not None and fits(a.shape, b.shape)
    if isinstance(a, Structure) and isinstance(b, Structure):
        return (a.kind == b.kind and a.keys == b.keys and a.context == b.context and len(a.items) == len(b.items)
                and all(is_subtype(x, y) for x, y in zip(a.items, b.items)))
    return a == b


def common_supertype(a: Any, b: Any) -> Any | None:
    """The most specific type both fit, or None when there is none (different literals...)."""
    if isinstance(a, TensorSpec) and isinstance(b, TensorSpec):
        if a.dtype != b.dtype or a.device != b.device or type(a) is not type(b):
            return None
        if a.shape is None or b.shape is None or len(a.shape) != len(b.shape):
            return None  # a graph needs the rank: one trace per rank
        return type(a)(merge_dims(a.shape, b.shape), a.dtype, a.name, a.device)
    if isinstance(a, Structure) and isinstance(b, Structure):
        if a.kind != b.kind or a.keys != b.keys or a.context != b.context:
            return None
        items = [common_supertype(x, y) for x, y in zip(a.items, b.items)]
        return None if any(i is None for i in items) else Structure(a.kind, a.keys, tuple(items), a.context)
    return a if a == b else None


def generality(t: Any) -> int:
    """How general a type is (unknown dims count); lower is more specific."""
    if isinstance(t, TensorSpec):
        return 1000 if t.shape is None else sum(d is None for d in t.shape) + (t.device is None)
    if isinstance(t, Structure):
        return sum(generality(i) for i in t.items)
    return 0


def describe(t: Any) -> str:
    """How a type is printed in signatures and retrace explanations."""
    return repr(t)


def diff(old: Any, new: Any, path: str) -> list[str]:
    """Human-readable differences between two trace types of one argument."""
    if old == new:
        return []
    if isinstance(old, Structure) and isinstance(new, Structure) and old.kind == new.kind and old.keys == new.keys:
        out: list[str] = []
        for k, x, y in zip(old.keys, old.items, new.items):
            out += diff(x, y, f"{path}[{k!r}]")
        return out
    if isinstance(old, TensorSpec) and isinstance(new, TensorSpec):
        parts = []
        if type(old) is not type(new):
            parts.append(" -> ".join("a NumPy array" if isinstance(t, ArraySpec) else "a tensor" for t in (old, new)))
        if old.shape != new.shape:
            parts.append(f"shape {_shape(old)} -> {_shape(new)}")
        if old.dtype != new.dtype:
            parts.append(f"dtype {old.dtype} -> {new.dtype}")
        if old.device != new.device:
            parts.append(f"device {old.device} -> {new.device}")
        return [f"{path}: " + ", ".join(parts)]
    return [f"{path}: {describe(old)} -> {describe(new)}"]


def _shape(t: TensorSpec) -> str:
    return "<unknown rank>" if t.shape is None else "(" + ", ".join(str(d) for d in t.shape) + ("," if len(t.shape) == 1 else "") + ")"
