"""Functional list operations so that lists can be loop state (appends in a tensor loop work).

`l.append(x)` becomes `l = ag__.list_append(l, x)`, `y = l.pop()` becomes
`l, y = ag__.list_pop(l)`, `l.insert(i, x)` becomes
`l = ag__.list_insert(l, i, x)`, `del l[i]` becomes
`l = ag__.list_delitem(l, i)`, `l.extend(xs)`
becomes `l = ag__.list_extend(l, xs)` and `l += [x]` becomes
`l = ag__.list_iadd(l, [x])` (see converters/lists.py). With a plain list they
mutate it in place and return it, exactly like the method calls and `+=`.
"""

from __future__ import annotations

from typing import Any, Iterable

from torch_autograph.autograph.operators import dispatch
from torch_autograph.errors import OperatorNotAllowedInGraphError

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


def list_popped(pair: tuple, rebound: Any) -> Any:
    """The element of `pair = list_pop(...)`; `rebound` is the store of the list evaluated alongside.

    A `pop` inside an expression becomes
    `ag__.list_popped(popped := ag__.list_pop(l), l := popped[0])`: the list is
    rebound where Python pops it, and the expression still gives the element.
    """
    return pair[1]


def list_insert(target: Any, index: Any, element: Any) -> Any:
    """`target.insert(index, element)`; returns the (possibly new, if staged) list."""
    b = _registry.backend
    if b is None or type(target) in _PLAIN or not b.is_staged(target):
        target.insert(index, element)
        return target
    return b.list_insert(target, index, element, dispatch.caller_origin())


def list_delitem(target: Any, index: Any) -> Any:
    """`del target[index]`; returns the (possibly new, if staged) list."""
    b = _registry.backend
    if b is None or type(target) in _PLAIN or not b.is_staged(target):
        del target[index]
        return target
    return b.list_delitem(target, index, dispatch.caller_origin())


def list_extend(target: Any, items: Any) -> Any:
    """`target.extend(items)`; returns the (possibly new, if staged) list."""
    b = _registry.backend
    if b is not None and type(target) not in _PLAIN and b.is_staged(target):
        out = b.list_extend(target, items, dispatch.caller_origin())
        if out is not NotImplemented:
            return out
    target.extend(items)
    return target


def list_iadd(target: Any, items: Any) -> Any:
    """`target += items`; returns the new value of `target`.

    A staged list is extended like `list_extend`; anything else (a plain list,
    a tensor, a tuple) gets Python's own `+=`.
    """
    b = _registry.backend
    if b is not None and type(target) not in _PLAIN and b.is_staged(target):
        out = b.list_extend(target, items, dispatch.caller_origin())
        if out is not NotImplemented:
            return out
    target += items
    return target


def get_item(target: Any, index: Any) -> Any:
    """`target[index]`; a list or tuple read at a staged index asks the backend (the index exists only later)."""
    if type(index) in _PLAIN or type(target) not in _SEQUENCES:
        return target[index]
    b = _registry.backend
    if b is None or not b.is_staged(index):
        return target[index]
    return b.sequence_getitem(target, index, dispatch.caller_origin())


class ElementWrittenList(list):
    """The copy of a Python list that a generated function of a staged loop or branch assigns elements of.

    Its elements are the state's slots, fixed while tracing: an index known only when the graph runs cannot
    pick one, and is refused at the user's line (torch would stop on a data-dependent guard instead).
    """

    __slots__ = ()

    def __setitem__(self, index: Any, value: Any) -> None:
        b = _registry.backend
        if type(index) not in _PLAIN and not isinstance(index, slice) and b is not None and b.is_staged(index):
            origin = dispatch.caller_origin()
            raise OperatorNotAllowedInGraphError(
                f"{origin.filename}:{origin.lineno}: assigning an element of a Python list at an index known only "
                f"when the graph runs (`{origin.source_line}`): the list is state of a tensor loop or branch, "
                "whose elements are fixed while tracing. Index it with a Python int, or keep the values in a "
                "tensor (`acc = torch.stack(acc)`, then `acc[i] = v`).")
        list.__setitem__(self, index, value)


_SEQUENCES = frozenset({list, tuple, ElementWrittenList})


def new_list(iterable: Iterable[Any] = ()) -> list:
    """`list(iterable)`: a fresh Python list (the backend turns it into a graph list when needed)."""
    return list(iterable)
