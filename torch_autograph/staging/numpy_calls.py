"""NumPy's own conversions of a NumPy array argument, from converted code: what they do eagerly.

The array argument is a `GraphArray` while tracing (tracing/arrays.py; torch's conversions of it are
interop/numpy_arrays.py's). `np.asarray(a)` is `a` itself unless a dtype changes it; `np.array(a)` copies. In
code AutoGraph does not convert, NumPy calls its `__array__`, which refuses at the user's line.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..tracing import GraphArray, converted, current


def _np_asarray(a: GraphArray, dtype: Any = None, order: Any = None, *, copy: bool | None = None,
                **kwargs: Any) -> Any:
    return converted(a, np.dtype(dtype) if dtype is not None else a.dtype, copy=bool(copy))


def _np_array(a: GraphArray, dtype: Any = None, *, copy: bool = True, **kwargs: Any) -> Any:
    return converted(a, np.dtype(dtype) if dtype is not None else a.dtype, copy=bool(copy))


_CONVERSIONS = {np.asarray: _np_asarray, np.array: _np_array, np.ascontiguousarray: _np_asarray}


def numpy_conversion(f: Any, args: tuple, kwargs: dict) -> Any:
    """Call override: `np.asarray` / `np.array` of a NumPy array argument."""
    if not args or type(args[0]) is not GraphArray or current() is None:
        return NotImplemented
    try:
        convert = _CONVERSIONS.get(f)
    except TypeError:  # an unhashable callable
        return NotImplemented
    return NotImplemented if convert is None else convert(*args, **kwargs)
