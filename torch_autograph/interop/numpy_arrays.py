"""torch's NumPy-to-torch calls on a NumPy array argument while tracing: what they do eagerly, on the graph input.

The array argument is a `GraphArray` while tracing (tracing/arrays.py). Eagerly, `torch.from_numpy(a)` and
`torch.as_tensor(a)` / `torch.asarray(a)` without a conversion share the array's memory (an in-place update of
the tensor changes the caller's array: so does the graph, whose input is `torch.from_numpy` of the call's
array), `torch.tensor(a)` copies, and the tensor has the array's dtype (float64 stays float64). These torch
functions do not dispatch on `__torch_function__` for a non-tensor argument, so they are replaced while a trace
runs (`PATCHES`, in interop/torch_patches.py's table): called with a GraphArray from the tracing thread they give
its graph tensor; otherwise they are torch's own.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import torch

from ..tracing import GraphArray, current
from .patches import Patch


def _to(t: Any, dtype: Any, device: Any, copy: bool) -> Any:
    """`t` with `dtype` and `device` (None: kept); a new tensor where `copy`, else `t` itself when nothing changes."""
    dtype = t.dtype if dtype is None else dtype
    device = t.device if device is None else torch.device(device)
    if dtype == t.dtype and device == t.device:
        return t.clone() if copy else t  # (`t.to()` would give an alias: an update of it would reach the array)
    return t.to(dtype=dtype, device=device)


def _from_numpy(a: GraphArray) -> Any:
    return a.tensor


def _as_tensor(a: GraphArray, dtype: Any = None, device: Any = None) -> Any:
    return _to(a.tensor, dtype, device, copy=False)


def _asarray(a: GraphArray, *, dtype: Any = None, device: Any = None, copy: bool | None = None,
             requires_grad: bool = False) -> Any:
    t = _to(a.tensor, dtype, device, copy=bool(copy))
    return t.requires_grad_() if requires_grad else t


def _tensor(a: GraphArray, *, dtype: Any = None, device: Any = None, requires_grad: bool = False,
            pin_memory: bool = False) -> Any:
    t = _to(a.tensor, dtype, device, copy=True)
    return t.requires_grad_() if requires_grad else t


_CONVERSIONS = {"from_numpy": _from_numpy, "as_tensor": _as_tensor, "asarray": _asarray, "tensor": _tensor}


def _replacement(_owner: Any, name: str, original: Callable) -> Callable:
    convert = _CONVERSIONS[name]

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if args and type(args[0]) is GraphArray and current() is not None:
            return convert(*args, **kwargs)
        return original(*args, **kwargs)

    return wrapper


PATCHES = (
    Patch("torch", tuple(_CONVERSIONS),
          "a NumPy array argument is a stand-in while tracing (its values come with each call): these give its "
          "graph input, with the array's dtype, sharing or copying as they do eagerly",
          lambda: [(torch, n) for n in _CONVERSIONS], _replacement),
)
