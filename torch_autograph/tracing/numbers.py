"""Run-time Python numbers while tracing: int-, float- and bool-like objects that are torch's symbolic numbers.

A number the graph computes (`n = int(t)`, a loop counter `i` carried by a
tensor loop, a number a tensor `if` merges) is, while tracing, a `TracedInt`
(a `torch.SymInt`), `TracedFloat` or `TracedBool`: arithmetic and comparisons
with other numbers give numbers (symbolic expressions, nothing recorded), a
number where torch wants a size works (`torch.zeros(n, 2)`), and a number
where torch wants a tensor fails as it would when the graph runs.

What plain SymInts do not do, these do: an operation with a tensor on the
other side is the tensor's to record (`i < n` with `n` a tensor is
`n.__gt__(i)`), and `n += t` records that it is an augmented assignment, so
that if re-typing later makes `n` a tensor, the node updates it in place as
the same statement would on a tensor.
"""

from __future__ import annotations

import operator
from typing import Any

import torch

from .context import current
from .symbols import constant_of

_OPERATORS = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor", "lshift", "rshift")
_COMPARISONS = ("lt", "le", "gt", "ge", "eq", "ne")
_AUGMENTED = {"add": "add_", "sub": "sub_", "mul": "mul_", "truediv": "div_", "floordiv": "floor_divide_",
              "mod": "remainder_", "pow": "pow_", "and": "bitwise_and_", "or": "bitwise_or_", "xor": "bitwise_xor_",
              "lshift": "bitwise_left_shift_", "rshift": "bitwise_right_shift_"}


def traced(x: Any) -> Any:
    """A plain SymInt/SymFloat/SymBool as the traced number class of its kind (other values unchanged); a bool
    the sizes' bounds decide (`n == 0` of a size known to be at least 3) as the Python bool."""
    if isinstance(x, torch.SymBool):
        decided = constant_of(x)
        if type(decided) is bool:
            return decided
    cls = _CLASSES.get(type(x))
    return cls(x.node) if cls is not None else x


def _is_tensor(x: Any) -> bool:
    return isinstance(x, torch.Tensor) or getattr(x, "_value", None) is not None


def _binary(base: type, name: str) -> Any:
    method = getattr(base, name, None)
    if method is None:
        return None

    def op(self: Any, other: Any) -> Any:
        if _is_tensor(other):
            return NotImplemented  # the tensor's reflected operator records it
        return traced(method(self, other))

    op.__name__ = name
    return op


# `n op= t` with a tensor `t`: set by the recording module (which imports this one) to record the operator.
record_augmented: Any = None


def _note_augmented(base: Any) -> None:
    """`n op= m` of numbers leaves no node: a loop that later makes `n` a tensor must trace its body again,
    so that the statement is recorded as the augmented assignment it is (a tensor's is in place). Notes
    the symbols `n` is made of, in this trace and those enclosing it."""
    symbols = getattr(getattr(base, "node", None), "expr", None)
    symbols = getattr(symbols, "free_symbols", ())
    state = current()
    while state is not None and symbols:
        state.augmented_symbols.update(symbols)
        state = state.parent


def _augmented(core: str) -> Any:
    def op(self: Any, other: Any) -> Any:
        if _is_tensor(other):
            return record_augmented(_AUGMENTED[core], self, other)
        _note_augmented(self)
        return traced(getattr(operator, core if core not in ("and", "or") else core + "_")(self, other))

    op.__name__ = f"__i{core}__"
    return op


def _unary(base: type, name: str) -> Any:
    method = getattr(base, name)

    def op(self: Any) -> Any:
        return traced(method(self))

    op.__name__ = name
    return op


def _as_int(b: Any) -> Any:
    """A traced bool as the int Python makes of it in arithmetic (True -> 1)."""
    return TracedInt(torch.sym_ite(b, 1, 0).node) if isinstance(b, torch.SymBool) else b


def _bool_arith(name: str) -> Any:
    """Arithmetic on a bool (`True + 1`, `-b`, `~b`): done on the int it is, as Python does."""
    def op(self: Any, *other: Any) -> Any:
        if other and _is_tensor(other[0]):
            return NotImplemented
        return getattr(_as_int(self), name)(*(_as_int(o) for o in other))

    op.__name__ = name
    return op


def _invert(self: Any) -> Any:
    return traced(-self - 1)  # ~n of an int


def _make(base: type, doc: str) -> type:
    namespace: dict[str, Any] = {"__doc__": doc, "__slots__": ()}
    for core in _OPERATORS:
        for name in (f"__{core}__", f"__r{core}__"):
            fn = _binary(base, name)
            if fn is not None:
                namespace[name] = fn
        if hasattr(base, f"__{core}__"):
            namespace[f"__i{core}__"] = _augmented(core)
    for core in _COMPARISONS:
        fn = _binary(base, f"__{core}__")
        if fn is not None:
            namespace[f"__{core}__"] = fn
    for name in ("__neg__", "__pos__", "__abs__", "__invert__"):
        if hasattr(base, name):
            namespace[name] = _unary(base, name)
    if base is torch.SymBool:
        for core in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "lshift", "rshift"):
            for name in (f"__{core}__", f"__r{core}__"):
                namespace[name] = _bool_arith(name)
        for name in ("__neg__", "__pos__", "__abs__", "__invert__"):
            namespace[name] = _bool_arith(name)
    if base is torch.SymInt:
        namespace["__invert__"] = _invert
    namespace["__hash__"] = base.__hash__
    return type(base.__name__.replace("Sym", "Traced"), (base,), namespace)


TracedInt = _make(torch.SymInt, "A Python int known only when the graph runs (a torch.SymInt).")
TracedFloat = _make(torch.SymFloat, "A Python float known only when the graph runs (a torch.SymFloat).")
TracedBool = _make(torch.SymBool, "A Python bool known only when the graph runs (a torch.SymBool).")
_CLASSES = {torch.SymInt: TracedInt, torch.SymFloat: TracedFloat, torch.SymBool: TracedBool}
