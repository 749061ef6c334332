"""Python numbers that a tensor `if` turned into tensors keep Python's meaning of `y op= x`.

A graph `if` whose branches give a Python number on one side and a tensor on
the other returns a tensor on both: the number is converted in its branch
(`promote_number`). Eager Python on the number's path has a number, and
`z = y; y -= 4` rebinds `y` only; on the tensor's path `y -= 4` updates the
tensor in place, which `z` sees. The graph cannot know the path while tracing,
so it decides when it runs: the converted tensors are remembered
(`is_promoted`), and an augmented assignment on a value that may be one
(`GraphTensor._maybe_number`) is recorded as `augmented`, which rebinds for a
promoted number and updates in place otherwise. Arithmetic between such a
value and Python numbers (`y + 1`) gives a number in eager Python too, so its
result is remembered the same way (`NumberOp`).
"""

from __future__ import annotations

import operator
import weakref
from typing import Any

import torch

# id -> weak reference of every run-time tensor that stands for a Python number (held weakly)
_promoted: dict[int, weakref.ref] = {}


def _remember(t: torch.Tensor) -> torch.Tensor:
    key = id(t)
    _promoted[key] = weakref.ref(t, lambda _ref, key=key: _promoted.pop(key, None))
    return t


def is_promoted(t: Any) -> bool:
    ref = _promoted.get(id(t))
    return ref is not None and ref() is t


def promote_number(n: Any, dtype: torch.dtype, device: Any) -> torch.Tensor:
    """`torch.tensor(n, dtype=dtype, device=device)` for a Python number a graph `if` merged with a tensor."""
    return _remember(torch.tensor(n, dtype=dtype, device=device))


# Each of these reads or writes, at every call, which run-time tensors stand for Python numbers: Python state that
# compiled code (jit_compile=True) would read once, while it traces, so backends run them as Python.
promote_number.runs_python = True


_AUGMENTED = {
    "__iadd__": (operator.add, "add_"), "__isub__": (operator.sub, "sub_"), "__imul__": (operator.mul, "mul_"),
    "__itruediv__": (operator.truediv, "div_"), "__ifloordiv__": (operator.floordiv, "floor_divide_"),
    "__imod__": (operator.mod, "remainder_"), "__ipow__": (operator.pow, "pow_"),
    "__iand__": (operator.and_, "bitwise_and_"), "__ior__": (operator.or_, "bitwise_or_"),
    "__ixor__": (operator.xor, "bitwise_xor_"), "__ilshift__": (operator.lshift, "bitwise_left_shift_"),
    "__irshift__": (operator.rshift, "bitwise_right_shift_"),
}
AUGMENTED_METHODS = {dunder: method for dunder, (_, method) in _AUGMENTED.items()}


class Augmented:
    """Run-time `a op= b` where `a` may stand for a Python number: rebinds it then, else updates in place."""

    runs_python = True  # see promote_number

    def __init__(self, dunder: str) -> None:
        self.dunder = dunder
        self.function, self.method = _AUGMENTED[dunder]

    def __call__(self, a: torch.Tensor, b: Any) -> torch.Tensor:
        if is_promoted(a):
            return _remember(self.function(a, b))
        return getattr(a, self.method)(b)

    def __repr__(self) -> str:
        return f"augmented[{self.method}]"


class NumberOp:
    """Run-time `fn(*args)` whose result is a Python number in eager code when its tensor arguments are."""

    runs_python = True  # see promote_number

    def __init__(self, fn: Any) -> None:
        self.fn = fn
        self.__name__ = getattr(fn, "__name__", "op")

    def __call__(self, *args: Any) -> Any:
        out = self.fn(*args)
        if isinstance(out, torch.Tensor) and all(is_promoted(a) for a in args if isinstance(a, torch.Tensor)):
            _remember(out)
        return out

    def __repr__(self) -> str:
        return f"number_op[{self.__name__}]"
