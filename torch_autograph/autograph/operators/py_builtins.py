"""Overloads of Python builtins that accept staged values (len, range, min, max, ... over tensors).

`converted_call(len, (x,), None)` calls `len_` here. With plain values each
overload calls the builtin itself, so results and exceptions are Python's.
With a staged argument it asks the backend (`call_builtin`). `range`,
`enumerate` and `zip` over staged values return lazy objects that `for_stmt`
hands to the backend's `for_loop`, which can read their parts.
"""

from __future__ import annotations

import builtins
from typing import Any, Callable

from torch_autograph.autograph.operators import dispatch
from torch_autograph.errors import OperatorNotAllowedInGraphError

_registry = dispatch._registry
_enumerate = builtins.enumerate
_PLAIN = dispatch.PLAIN_TYPES


class LazyIterable:
    """Base of iterables whose extent is only known when the graph runs."""

    __slots__ = ()

    def __iter__(self):
        raise OperatorNotAllowedInGraphError(
            f"Iterating over {self!r} is only supported as the iterable of a `for` loop in "
            "converted code; its length depends on a graph value.")


class LazyRange(LazyIterable):
    """`range(start, stop, step)` where some argument is staged.

    Example: `ag__.range_(n)` with staged `n` gives LazyRange(0, n, 1).
    """

    __slots__ = ("start", "stop", "step")

    def __init__(self, start: Any, stop: Any, step: Any = 1):
        self.start, self.stop, self.step = start, stop, step

    def __repr__(self) -> str:
        return f"LazyRange({self.start!r}, {self.stop!r}, {self.step!r})"


class LazyEnumerate(LazyIterable):
    """`enumerate(iterable, start)` over a staged or lazy iterable."""

    __slots__ = ("iterable", "start")

    def __init__(self, iterable: Any, start: Any = 0):
        self.iterable, self.start = iterable, start

    def __repr__(self) -> str:
        return f"LazyEnumerate({self.iterable!r}, {self.start!r})"


class LazyZip(LazyIterable):
    """`zip(*iterables)` where some iterable is staged or lazy."""

    __slots__ = ("iterables", "strict")

    def __init__(self, iterables: tuple, strict: bool = False):
        self.iterables, self.strict = iterables, strict

    def __repr__(self) -> str:
        return f"LazyZip{self.iterables!r}"


def _staged(value: Any, backend: dispatch.StagingBackend) -> bool:
    return type(value) not in _PLAIN and (isinstance(value, LazyIterable)
                                          or backend.is_staged(value))


def _any_staged(args: tuple, kwargs: dict, backend: dispatch.StagingBackend,
                look_inside: bool) -> bool:
    for a in args:
        if type(a) not in _PLAIN and _staged(a, backend):
            return True
    for a in kwargs.values():
        if type(a) not in _PLAIN and _staged(a, backend):
            return True
    # min([a, b]) / sum((a, b)): the staged values sit inside the first argument.
    if look_inside and len(args) == 1 and type(args[0]) in (list, tuple):
        return any(_staged(a, backend) for a in args[0])
    return False


def _overload(builtin: Callable, look_inside: bool = False) -> Callable:
    def overload(*args: Any, **kwargs: Any) -> Any:
        b = _registry.backend
        if b is not None and _any_staged(args, kwargs, b, look_inside):
            result = b.call_builtin(builtin, args, kwargs, dispatch.caller_origin())
            if result is not NotImplemented:
                return result
        return builtin(*args, **kwargs)

    overload.__name__ = overload.__qualname__ = f"{builtin.__name__}_"
    overload.__doc__ = f"`{builtin.__name__}` that also accepts staged values."
    return overload


len_ = _overload(builtins.len)
int_ = _overload(builtins.int)
float_ = _overload(builtins.float)
bool_ = _overload(builtins.bool)
abs_ = _overload(builtins.abs)
min_ = _overload(builtins.min, look_inside=True)
max_ = _overload(builtins.max, look_inside=True)
sum_ = _overload(builtins.sum, look_inside=True)
any_ = _overload(builtins.any, look_inside=True)
all_ = _overload(builtins.all, look_inside=True)
sorted_ = _overload(builtins.sorted, look_inside=True)
isinstance_ = _overload(builtins.isinstance)
# `type(x) is torch.Tensor`: the class of what a staged value is when the graph runs, not of its stand-in.
type_ = _overload(builtins.type)


def range_(*args: Any) -> Any:
    """`range(...)`; a LazyRange when an argument is staged."""
    b = _registry.backend
    if b is not None and _any_staged(args, {}, b, False):
        if len(args) == 1:
            return LazyRange(0, args[0], 1)
        if len(args) in (2, 3):
            return LazyRange(*args)
    return builtins.range(*args)


def enumerate_(iterable: Any, start: Any = 0) -> Any:
    """`enumerate(...)`; a LazyEnumerate over staged or lazy iterables."""
    b = _registry.backend
    # (The type tests first: this runs on every converted `for ... in enumerate(...)`.)
    if b is not None and ((type(iterable) not in _PLAIN and _staged(iterable, b))
                          or (type(start) is not int and _staged(start, b))):
        return LazyEnumerate(iterable, start)
    return _enumerate(iterable, start)


def zip_(*iterables: Any, strict: bool = False) -> Any:
    """`zip(...)`; a LazyZip when any iterable is staged or lazy."""
    b = _registry.backend
    if b is not None and _any_staged(iterables, {}, b, False):
        return LazyZip(iterables, strict)
    return builtins.zip(*iterables, strict=strict) if strict else builtins.zip(*iterables)


# id(builtin) -> overload; converted_call consults it (builtins live forever,
# so their ids are stable).
BUILTIN_OVERLOADS: dict[int, Callable] = {
    id(builtins.len): len_, id(builtins.int): int_, id(builtins.float): float_,
    id(builtins.abs): abs_, id(builtins.bool): bool_, id(builtins.min): min_, id(builtins.max): max_,
    id(builtins.sum): sum_, id(builtins.any): any_, id(builtins.all): all_,
    id(builtins.sorted): sorted_, id(builtins.isinstance): isinstance_, id(builtins.type): type_,
    id(builtins.range): range_, id(builtins.enumerate): enumerate_, id(builtins.zip): zip_,
}
