"""What exported code calls besides torch ops: graph lists as tensors, run-time numbers as 0-d tensors.

`torch.export` traces these functions into the program like any other torch
code, so none of them survives in the saved artifact: what is saved is the aten
ops they run.

A graph list (a Python list of tensors at run time, TensorArray included) is a
pair `(buffer, length)`: `buffer` holds `capacity` rows of the element shape,
`length` (an int64 0-d tensor) how many of them are the list. `torch.while_loop`
needs its carried tensors to keep their shapes, so a list that a loop appends to
gets its rows reserved before the loop (`reserve`), from the loop's number of
iterations; appending past the capacity is a run-time check, never a silent write
elsewhere.
"""

from __future__ import annotations

from typing import Any

import torch

ListPair = tuple  # (buffer: Tensor[capacity, *element], length: int64 0-d tensor)


# ----- run-time numbers ---------------------------------------------------------------------------
def scalar(value: Any, dtype: torch.dtype) -> torch.Tensor:
    """A run-time Python number (a SymInt while exporting, or a constant) as a 0-d tensor of `dtype`."""
    if isinstance(value, torch.Tensor):
        return value.reshape(()).to(dtype)
    return torch.scalar_tensor(value, dtype=dtype)


def number(t: Any) -> Any:
    """A 0-d tensor standing for a run-time Python number, as the number an op taking Python numbers wants."""
    return t.item() if isinstance(t, torch.Tensor) else t


def maximum(*args: Any) -> torch.Tensor:
    out = _as_tensor(args[0], args)
    for a in args[1:]:
        out = torch.maximum(out, _as_tensor(a, args))
    return out


def minimum(*args: Any) -> torch.Tensor:
    out = _as_tensor(args[0], args)
    for a in args[1:]:
        out = torch.minimum(out, _as_tensor(a, args))
    return out


def where(cond: Any, a: Any, b: Any) -> torch.Tensor:
    """`a if cond else b` of run-time numbers (a sympy Piecewise, printed as a conditional expression)."""
    return torch.where(_as_tensor(cond, (a, b)).bool(), _as_tensor(a, (a, b)), _as_tensor(b, (a, b)))


def logical_not(a: Any) -> torch.Tensor:
    return torch.logical_not(_as_tensor(a, (a,)))


def logical_and(*args: Any) -> torch.Tensor:
    out = _as_tensor(args[0], args).bool()
    for a in args[1:]:
        out = torch.logical_and(out, _as_tensor(a, args).bool())
    return out


def logical_or(*args: Any) -> torch.Tensor:
    out = _as_tensor(args[0], args).bool()
    for a in args[1:]:
        out = torch.logical_or(out, _as_tensor(a, args).bool())
    return out


def floor(a: Any) -> torch.Tensor:
    return torch.floor(_as_tensor(a, (a,)))


def ceil(a: Any) -> torch.Tensor:
    return torch.ceil(_as_tensor(a, (a,)))


def absolute(a: Any) -> torch.Tensor:
    return torch.abs(_as_tensor(a, (a,)))


def _as_tensor(x: Any, among: tuple) -> torch.Tensor:
    if isinstance(x, torch.Tensor):
        return x
    like = next((a for a in among if isinstance(a, torch.Tensor)), None)
    device = like.device if like is not None else None
    dtype = torch.bool if isinstance(x, bool) else torch.int64 if isinstance(x, int) else torch.float64
    return torch.scalar_tensor(x, dtype=dtype, device=device)


# ----- graph lists ---------------------------------------------------------------------------------
def list_new(items: list, shape: tuple, dtype: torch.dtype, device: Any) -> ListPair:
    """A list holding `items`, with no spare capacity."""
    if items:
        buf = torch.stack([t.to(dtype) for t in items])
    else:
        buf = torch.zeros((0, *shape), dtype=dtype, device=device)
    return buf, torch.scalar_tensor(len(items), dtype=torch.int64, device=buf.device)


def list_sized(size: Any, shape: tuple, dtype: torch.dtype, device: Any) -> ListPair:
    """A TensorArray of `size` unwritten elements (read as zeros, as the default backend reads them)."""
    n = number(size)
    return torch.zeros((n, *shape), dtype=dtype, device=device), scalar(size, torch.int64)


def list_from_rows(t: torch.Tensor) -> ListPair:
    return t.clone(), torch.scalar_tensor(t.size(0), dtype=torch.int64, device=t.device)


def reserve(lst: ListPair, extra: Any) -> ListPair:
    """The same list with at least `extra` more rows of capacity (zeros)."""
    buf, n = lst
    k = int(extra) if not isinstance(extra, torch.Tensor) else extra.clamp_min(0).item()
    if isinstance(k, int) and k <= 0:
        return buf, n
    pad = torch.zeros((k, *buf.shape[1:]), dtype=buf.dtype, device=buf.device)
    return torch.cat([buf, pad]), n


def reserve_index(lst: ListPair, index: Any) -> ListPair:
    """The same list with capacity for a write at `index`."""
    buf, _ = lst
    return reserve(lst, scalar(index, torch.int64) + 1 - buf.size(0))


def append(lst: ListPair, item: torch.Tensor) -> ListPair:
    buf, n = lst
    torch._assert_async(n < buf.size(0), "bug in torch_autograph: an exported list was appended past the "
                                         "capacity reserved for it")
    return _put(buf, n, item), n + 1


def write(lst: ListPair, index: Any, item: torch.Tensor, dynamic: bool) -> ListPair:
    """TensorArray.write: the element at `index` replaced; a dynamic array grows to hold it."""
    buf, n = lst
    i = scalar(index, torch.int64)
    torch._assert_async(i >= 0, "Tried to write to a negative index of a TensorArray")
    if dynamic:
        torch._assert_async(i < buf.size(0), "TensorArray written past the capacity the exported program "
                                             "reserved for it (one element per loop iteration)")
        return _put(buf, i, item), torch.maximum(n, i + 1)
    torch._assert_async(i < n, "Tried to write past the end of a TensorArray that is not resizeable")
    return _put(buf, i, item), n


def _put(buf: torch.Tensor, i: torch.Tensor, item: torch.Tensor) -> torch.Tensor:
    return buf.index_put((i.reshape(1),), item.to(buf.dtype).unsqueeze(0))


def get(lst: ListPair, index: Any) -> torch.Tensor:
    """`lst[index]` (negative indices count from the end)."""
    buf, n = lst
    i = scalar(index, torch.int64)
    i = torch.where(i < 0, i + n, i)
    torch._assert_async((i >= 0) & (i < n), "list index out of range")
    return buf.index_select(0, i.reshape(1)).squeeze(0)


def pop(lst: ListPair) -> tuple[ListPair, torch.Tensor]:
    """`lst.pop()`: the list without its last element, and that element."""
    buf, n = lst
    torch._assert_async(n > 0, "pop from empty list")
    last = n - 1
    return (buf, last), buf.index_select(0, last.reshape(1)).squeeze(0)


def length(lst: ListPair) -> torch.Tensor:
    return lst[1]


def items(lst: ListPair) -> torch.Tensor:
    """The list's elements stacked along a new dim 0 (its first `length` rows)."""
    buf, n = lst
    k = n.item()
    torch._check_is_size(k)
    torch._check(k <= buf.size(0))
    return buf.narrow(0, 0, k)


def stack(lst: ListPair, dim: int = 0, nonempty: bool = False) -> torch.Tensor:
    """`torch.stack(lst, dim)` (`nonempty`: fail on an empty list as torch.stack does; TensorArray.stack
    gives an empty tensor)."""
    if nonempty:
        torch._assert_async(lst[1] > 0, "stack expects a non-empty TensorList")
    return items(lst).movedim(0, dim) if dim else items(lst)


def cat(lst: ListPair, dim: int = 0, nonempty: bool = False) -> torch.Tensor:
    if nonempty:
        torch._assert_async(lst[1] > 0, "torch.cat(): expected a non-empty list of Tensors")
    rows = items(lst)
    d = dim if dim >= 0 else dim + rows.dim() - 1
    return rows.movedim(0, d).flatten(d, d + 1)


def gather(lst: ListPair, indices: torch.Tensor) -> torch.Tensor:
    buf, n = lst
    torch._assert_async(((indices >= 0) & (indices < n)).all(), "TensorArray.gather: index out of range")
    return buf.index_select(0, indices.reshape(-1))
