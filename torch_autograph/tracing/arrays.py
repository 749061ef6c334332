"""A NumPy array argument while tracing: the graph's input, seen by the traced code as the array it was.

Eager code turns an array argument into a tensor itself (`torch.from_numpy(state).float()`, the `select_action`
of pytorch/examples); a tensor placeholder in its place would break those calls, or give other dtypes than
eager NumPy code would (`a / 255` is float64 in NumPy, float32 on an integer tensor). So the argument is a
`GraphArray`: the NumPy-to-torch calls (`torch.from_numpy`, `torch.as_tensor`, `torch.asarray`, `torch.tensor`,
and `np.asarray` / `np.array` / `.astype` / `.copy` in between) give the graph input with the dtype eager gives
(staging/numpy_calls.py), `from_numpy` and `as_tensor` sharing the caller's memory as eager does; `shape`,
`dtype`, `ndim`, `size` and `len()` are known. NumPy operations on the array itself (`a * 2`, `np.sum(a)`,
`a.mean()`) would run once, while tracing, on no data: each is refused at the user's line, as are torch ops
taking the array where a tensor goes.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from .context import Traced
from .locations import user_location


class GraphArray(Traced):
    """A NumPy array argument inside a trace: `tensor`, the graph tensor of its values (`torch.from_numpy` of
    each call's array); `name`, the argument's name (for messages)."""

    __slots__ = ("tensor", "name", "dtype", "_value", "_trace")

    def __init__(self, tensor: Any, name: str, dtype: np.dtype | None = None) -> None:
        self.tensor = tensor
        self.name = name
        self.dtype = dtype if dtype is not None else numpy_dtype(tensor.dtype)
        self._value = tensor._value
        self._trace = tensor._trace

    # ----- what is known while tracing ----------------------------------------------------------------
    @property
    def shape(self) -> tuple:
        return tuple(self.tensor.shape)

    @property
    def ndim(self) -> int:
        return self.tensor.dim()

    @property
    def size(self) -> Any:
        return self.tensor.numel()

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of unsized object")
        return self.shape[0]

    def astype(self, dtype: Any, copy: bool = True) -> "GraphArray":
        """`a.astype(d)`: the values converted (a copy, as NumPy's default)."""
        return converted(self, np.dtype(dtype), copy)

    def copy(self) -> "GraphArray":
        return converted(self, self.dtype, True)

    def __repr__(self) -> str:
        return f"GraphArray({self.name!r}, shape={self.shape}, dtype={self.dtype})"

    # ----- what is refused ------------------------------------------------------------------------------
    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        raise refused(self, "a NumPy conversion of it (np.asarray in code AutoGraph does not convert)")

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        raise refused(self, f"np.{ufunc.__name__}")

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        raise refused(self, f"np.{func.__name__}")

    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        arrays = [a for a in (*args, *(kwargs or {}).values()) if isinstance(a, GraphArray)]
        arrays += [x for a in args if isinstance(a, (list, tuple)) for x in a if isinstance(x, GraphArray)]
        name = getattr(func, "__name__", str(func))
        raise refused(arrays[0], f"torch.{name.strip('_')} taking it where a tensor goes", torch_op=True)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise refused(self, f"`.{name}`")

    def __bool__(self) -> bool:
        raise refused(self, "its truth value")

    def __iter__(self) -> Any:
        raise refused(self, "iterating over it")

    def __getitem__(self, key: Any) -> Any:
        raise refused(self, "indexing it")

    def __setitem__(self, key: Any, value: Any) -> None:
        raise refused(self, "assigning into it")


def _refuse_operator(symbol: str) -> Any:
    def op(self: GraphArray, *args: Any) -> Any:
        raise refused(self, f"`{symbol}`")

    return op


for _name, _symbol in (("add", "+"), ("sub", "-"), ("mul", "*"), ("truediv", "/"), ("floordiv", "//"),
                       ("mod", "%"), ("pow", "**"), ("matmul", "@"), ("and", "&"), ("or", "|"), ("xor", "^"),
                       ("lshift", "<<"), ("rshift", ">>")):
    for _form in (f"__{_name}__", f"__r{_name}__", f"__i{_name}__"):
        setattr(GraphArray, _form, _refuse_operator(_symbol))
for _name, _symbol in (("lt", "<"), ("le", "<="), ("gt", ">"), ("ge", ">="), ("eq", "=="), ("ne", "!="),
                       ("neg", "unary -"), ("pos", "unary +"), ("abs", "abs()"), ("invert", "~"),
                       ("float", "float()"), ("int", "int()"), ("index", "an index")):
    setattr(GraphArray, f"__{_name}__", _refuse_operator(_symbol))
GraphArray.__hash__ = object.__hash__  # (defining __eq__ removed it; identity, as for any object)


def refused(a: GraphArray, what: str, torch_op: bool = False) -> TypeError:
    loc = user_location()
    where = f" at {loc}" if loc else ""
    line = f"\n    {loc.line}" if loc is not None and getattr(loc, "line", None) else ""
    eager = (" (eagerly too, most torch functions refuse an ndarray)" if torch_op else
             ": NumPy code runs once, while tracing, where the array holds no values yet, and its result would be "
             "frozen into the graph")
    return TypeError(f"{what} on the NumPy array argument {a.name!r}{where} cannot be traced{eager}.{line}\n"
                     f"Fix: convert it first, `torch.from_numpy({a.name})` or `torch.as_tensor({a.name})` (the graph's "
                     f"input, with the array's dtype), and compute with torch; or do the NumPy work before the call.")


# The dtypes torch.from_numpy takes, both ways (tables, not a conversion: a tensor made now would be recorded).
_NUMPY_OF = {torch.bool: np.bool_, torch.uint8: np.uint8, torch.int8: np.int8, torch.int16: np.int16,
             torch.int32: np.int32, torch.int64: np.int64, torch.float16: np.float16, torch.float32: np.float32,
             torch.float64: np.float64, torch.complex64: np.complex64, torch.complex128: np.complex128,
             torch.uint16: np.uint16, torch.uint32: np.uint32, torch.uint64: np.uint64}
_TORCH_OF = {np.dtype(n): t for t, n in _NUMPY_OF.items()}


def numpy_dtype(dtype: torch.dtype) -> np.dtype:
    return np.dtype(_NUMPY_OF[dtype])


def torch_dtype(dtype: np.dtype) -> torch.dtype:
    try:
        return _TORCH_OF[np.dtype(dtype)]
    except KeyError:
        raise TypeError(f"can't convert np.ndarray of type {np.dtype(dtype)} to a tensor: torch supports only "
                        f"{', '.join(sorted(str(np.dtype(n)) for n in _NUMPY_OF.values()))}") from None


def converted(a: GraphArray, dtype: np.dtype, copy: bool) -> GraphArray:
    """`np.asarray(a, dtype)` / `np.array(a)` / `a.astype(dtype)`: the same array when nothing changes and no copy
    is asked for, else a new one of the converted values."""
    if dtype == a.dtype:
        return GraphArray(a.tensor.clone(), a.name, dtype) if copy else a
    return GraphArray(a.tensor.to(torch_dtype(dtype)), a.name, dtype)
