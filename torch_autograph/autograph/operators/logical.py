"""Runtime of converted `and`, `or`, `not`, `in` and `assert`.

`a and b` becomes `ag__.and_(a, lambda: b)`: the right operand stays lazy,
so short-circuiting and the returned operand are exactly Python's when the
left operand is a plain value.
"""

from __future__ import annotations

from typing import Any, Callable, Optional

from torch_autograph.autograph.operators import dispatch

_registry = dispatch._registry
_PLAIN = dispatch.PLAIN_TYPES


def and_(left: Any, right_thunk: Callable[[], Any], truth: bool = False) -> Any:
    """`left and right`. `truth`: only its truth is read (an `if`/`while`/`assert` test), so operands of
    different kinds (a float and a bool, None, a `[1]`-shaped tensor) meet as the bools Python tests."""
    b = _registry.backend
    if b is None or type(left) in _PLAIN or not b.is_staged(left):
        # Python returns the first falsy operand, else the last one.
        return right_thunk() if left else left
    origin = dispatch.caller_origin()
    if truth:
        return b.and_(b.truth(left, origin), _truth_of(right_thunk, b, origin), origin)
    return b.and_(left, right_thunk, origin)


def or_(left: Any, right_thunk: Callable[[], Any], truth: bool = False) -> Any:
    """`left or right` (`truth`: as for `and_`)."""
    b = _registry.backend
    if b is None or type(left) in _PLAIN or not b.is_staged(left):
        return left if left else right_thunk()
    origin = dispatch.caller_origin()
    if truth:
        return b.or_(b.truth(left, origin), _truth_of(right_thunk, b, origin), origin)
    return b.or_(left, right_thunk, origin)


def _truth_of(thunk: Callable[[], Any], b: dispatch.StagingBackend, origin: Any) -> Callable[[], Any]:
    def run() -> Any:
        value = thunk()
        return bool(value) if type(value) in _PLAIN or not b.is_staged(value) else b.truth(value, origin)

    return run


def not_(value: Any) -> Any:
    """`not value`."""
    b = _registry.backend
    if b is None or type(value) in _PLAIN or not b.is_staged(value):
        return not value
    return b.not_(value, dispatch.caller_origin())


def in_(element: Any, container: Any) -> Any:
    """`element in container`: Python's bool, or the backend's graph bool where an operand is staged (a graph
    tensor, or a tuple or list holding one), where Python's `__contains__` would have to read a value."""
    b = _registry.backend
    if b is None or not hasattr(b, "contains") or not (
            b.is_staged(container) or b.is_staged(element) or _holds_staged(b, container)):
        return element in container
    return b.contains(element, container, dispatch.caller_origin())


def _holds_staged(b: Any, container: Any) -> bool:
    return type(container) in (list, tuple) and any(b.is_staged(x) for x in container)


def assert_stmt(cond: Any, msg_thunk: Optional[Callable[[], Any]] = None) -> None:
    """`assert cond, msg`: AssertionError for plain values; a run-time check when staged."""
    b = _registry.backend
    if b is None or type(cond) in _PLAIN or not b.is_staged(cond):
        if not cond:
            if msg_thunk is None:
                raise AssertionError
            raise AssertionError(msg_thunk())
        return None
    b.assert_(cond, msg_thunk, dispatch.caller_origin())
    return None
