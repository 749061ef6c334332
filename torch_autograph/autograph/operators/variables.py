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
