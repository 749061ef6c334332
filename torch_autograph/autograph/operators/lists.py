"""Functional list operations so that lists can be loop state (decision 4).

Inside loops and branches `l.append(x)` becomes `l = ag__.list_append(l, x)`
and `y = l.pop()` becomes `l, y = ag__.list_pop(l)`; with a plain list they
mutate it in place and return it, exactly like the method calls.
"""

from __future__ import annotations

from typing import Any, Iterable

from torch_autograph.autograph.operators import dispatch

_registry = dispatch._registry
_PLAIN = dispatch.PLAIN_TYPES


def list_append(target: Any, element: Any) -> Any:
    """`target.append(element)`; returns the (possibly new, if staged) list."""
    b = _registry.backend
    if b is None or type(target) in _PLAIN or not b.is_staged(target):
        target.append(element)
        return target
    return b.list_append(target, element, dispatch.caller_origin())


def list_pop(target: Any, *args: Any) -> tuple[Any, Any]:
    """`target.pop(*args)`; returns (list, popped element)."""
    b = _registry.backend
    if b is None or type(target) in _PLAIN or not b.is_staged(target):
        return target, target.pop(*args)
    return b.list_pop(target, args, dispatch.caller_origin())


def new_list(iterable: Iterable[Any] = ()) -> list:
    """`list(iterable)`: a fresh Python list (the backend turns it into a graph list when needed)."""
    return list(iterable)
