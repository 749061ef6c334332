"""Placeholders for unbound variables and the function's return slot.

Before an `if`/loop that may bind `x` for the first time, generated code
does `x = ag__.Undefined('x')`; reads that may see an unbound variable go
through `ag__.ld(x)`, which raises UnboundLocalError exactly like Python.
"""

from __future__ import annotations

from typing import Any


class Undefined:
    """Stands for a variable that is not bound yet (its name kept for messages).

    Example: `x = ag__.Undefined('x')` before `if c: x = 1`.
    """

    __slots__ = ("symbol_name",)

    def __init__(self, symbol_name: str):
        self.symbol_name = symbol_name

    def __repr__(self) -> str:
        return f"Undefined({self.symbol_name!r})"


class UndefinedReturnValue:
    """The value of `retval_` before a `return` statement ran."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UndefinedReturnValue()"


def is_undefined(value: Any) -> bool:
    """True for `Undefined` placeholders (not for UndefinedReturnValue)."""
    return type(value) is Undefined


def ld(value: Any) -> Any:
    """Reads a possibly unbound variable: raises UnboundLocalError like Python would."""
    if type(value) is Undefined:
        raise UnboundLocalError(
            f"cannot access local variable '{value.symbol_name}' where it is not "
            "associated with a value")
    return value


def retval(value: Any) -> Any:
    """The function's result: None if no `return` statement ran."""
    if type(value) is UndefinedReturnValue:
        return None
    return value


# Attributes and constant subscripts assigned inside converted control flow
# travel as state too (see converters/state.py). The loads return Undefined
# for a symbol that does not exist yet; the stores skip identical values so
# the plain-Python path does not re-assign anything.


def ld_attr(obj: Any, name: str) -> Any:
    """`obj.name`, or Undefined if it does not exist."""
    try:
        return getattr(obj, name)
    except AttributeError:
        return Undefined(name)


def st_attr(obj: Any, name: str, value: Any) -> None:
    """`obj.name = value` (deletes it for Undefined; no-op if already that object)."""
    try:
        current = getattr(obj, name)
    except AttributeError:
        current = _MISSING
    if type(value) is Undefined:
        if current is not _MISSING:
            delattr(obj, name)
    elif current is not value:
        setattr(obj, name, value)


def ld_item(obj: Any, key: Any) -> Any:
    """`obj[key]`, or Undefined if there is no such item."""
    try:
        return obj[key]
    except (KeyError, IndexError):
        return Undefined(repr(key))


def st_item(obj: Any, key: Any, value: Any) -> None:
    """`obj[key] = value` (deletes it for Undefined; no-op if already that object)."""
    try:
        current = obj[key]
    except (KeyError, IndexError):
        current = _MISSING
    if type(value) is Undefined:
        if current is not _MISSING:
            del obj[key]
    elif current is not value:
        obj[key] = value


_MISSING = object()
