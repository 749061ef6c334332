"""Placeholders for unbound variables and the function's return slot.

Before an `if`/loop that may bind `x` for the first time, generated code
does `x = ag__.Undefined('x')`; reads that may see an unbound variable go
through `ag__.ld(x)`, which raises UnboundLocalError exactly like Python.
"""

from __future__ import annotations

from typing import Any

from torch_autograph.autograph.operators import dispatch


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


def retval(value: Any, returned: Any = True) -> Any:
    """The function's result: None if no `return` statement ran.

    `returned` is the `do_return` flag of a function that may reach its end
    without `return`. When that flag is a graph value, whether the function
    returns `value` or None is decided only when the graph runs, which a graph
    cannot express (unless `value` is None too): ValueError naming the
    function and its last line, rather than an invented value.
    """
    if type(value) is UndefinedReturnValue or returned is False:
        return None
    if returned is not True and value is not None and dispatch.is_staged(returned):
        origin = dispatch.caller_origin()
        raise ValueError(
            f"{origin.function_name}() returns a value on some paths and reaches its end without `return` "
            f"(returning None) on others, and a graph value decides which: a graph cannot return None on "
            f"only some paths. The function ends at {origin} (`{origin.source_line}`); end it with a "
            f"`return`, or give each tensor `if` that returns an `else:` that returns too.")
    return value


# Attributes and constant subscripts assigned inside converted control flow
# travel as state too (see converters/state.py). The loads return Undefined
# for a symbol that does not exist yet; the stores skip identical values so
# the plain-Python path does not re-assign anything.


def ld_attr(obj: Any, name: str) -> Any:
    """`obj.name`, or Undefined if it does not exist (or `obj` does not: see `_absent`)."""
    if _absent(obj):
        return obj
    try:
        return getattr(obj, name)
    except AttributeError:
        return Undefined(name)


def st_attr(obj: Any, name: str, value: Any) -> None:
    """`obj.name = value` (deletes it for Undefined; no-op if already that object, or `obj` is absent)."""
    if _absent(obj):
        return
    try:
        current = getattr(obj, name)
    except AttributeError:
        current = _MISSING
    if type(value) is Undefined:
        if current is not _MISSING:
            delattr(obj, name)
    elif current is not value:
        try:
            setattr(obj, name, value)
        except (AttributeError, TypeError) as e:
            _store_failed(e, f"attribute '{name}' of {type(obj).__name__!r} object", name, value)


class _InPlace:
    """The state slot of an item of a tensor: a store into it is an operation the graph records.

    `z[1] = v` on a tensor is already an in-place write in program order,
    inside the branch or loop body that does it; carrying `z[1]` as state
    too would write it again at each iteration and after the loop, changing
    a tensor autograd saved for the backward pass.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return "IN_PLACE"


IN_PLACE = _InPlace()


def _absent(obj: Any) -> bool:
    """The parent of a symbol is itself Undefined (`x['b']` of `x['b']['a']` before the branch creates it) or an
    item of a tensor (IN_PLACE): its children read as it does, and there is nothing to store into. A branch that
    assigns `x['b']['a']` without creating `x['b']` raises Python's KeyError at that line, as eager code does."""
    return type(obj) is Undefined or obj is IN_PLACE


def ld_item(obj: Any, key: Any) -> Any:
    """`obj[key]`, or Undefined if there is no such item; IN_PLACE for an item of a tensor."""
    if _absent(obj):
        return obj
    if type(obj) not in dispatch.PLAIN_TYPES and dispatch.writes_in_place(obj):
        return IN_PLACE
    try:
        return obj[key]
    except (KeyError, IndexError):
        return Undefined(repr(key))


def st_item(obj: Any, key: Any, value: Any) -> None:
    """`obj[key] = value` (deletes it for Undefined; no-op if already that object, or IN_PLACE, or `obj` absent)."""
    if value is IN_PLACE or _absent(obj):
        return
    try:
        current = obj[key]
    except (KeyError, IndexError):
        current = _MISSING
    if type(value) is Undefined:
        if current is not _MISSING:
            del obj[key]
    elif current is not value:
        try:
            obj[key] = value
        except TypeError as e:
            _store_failed(e, f"item {key!r} of {type(obj).__name__!r} object", repr(key), value)


def _store_failed(error: Exception, what: str, name: str, value: Any) -> None:
    """Handles a store the object refused (a property without a setter, a frozen object, a tuple).

    A plain value is only ever stored by AutoGraph itself, never by a user
    assignment (that one would have failed first): e.g. after
    `self.items.append(x)` on a property returning a fresh list per read, which
    Python never assigns. Such a store is dropped. A graph value must be
    stored for the staged `if`/loop to work: that raises, saying what to do.
    """
    if not _holds_graph_values(value):
        return
    cls = AttributeError if isinstance(error, AttributeError) else TypeError
    raise cls(_cannot_store(what, name, value, error)) from error


def _holds_graph_values(value: Any) -> bool:
    """A staged value, or a Python container the backend rebuilt around staged ones."""
    if isinstance(value, (list, tuple)):
        return dispatch.staged_any(value)
    if isinstance(value, dict):
        return dispatch.staged_any(value.values())
    return dispatch.is_staged(value)


def _cannot_store(what: str, name: str, value: Any, cause: BaseException) -> str:
    """Why a staged `if`/loop cannot write its state back into `what`, and what to do."""
    origin = dispatch.caller_origin(4)
    shown = repr(value)
    if len(shown) > 100:
        shown = f"a {type(value).__name__} of {len(value)} graph values" if isinstance(value, (list, tuple)) \
            else shown[:97] + "..."
    local = name if name.isidentifier() else "items"
    return (f"cannot store {shown} back in the {what} at {origin} (`{origin.source_line}`): {cause}.\n"
            "The tensor `if`/loop there carries it as state because the code grows a list in it "
            "(`.append`, `.pop`, `.extend`, `+= [...]`): while tracing, the list becomes a graph list (or a "
            "new list of graph tensors), a new object that AutoGraph must assign back, and this object does "
            "not allow that (a property without a setter, __slots__, a frozen or read-only container).\n"
            f"Fix: keep the list in a local variable (`{local} = []` before the loop, `{local}.append(...)` "
            "in it) and use or return that; or make the attribute settable (e.g. give the property a setter).")


_MISSING = object()
