"""The metadata of `x[index]` when the index holds numbers known only when the graph runs.

Python-level `Tensor.__getitem__` needs plain ints: it refuses a `SymInt`,
and reads a 0-dim integer tensor with `.item()`, which fails on a fake
tensor. So on fake tensors the index is applied the way torch applies it,
one entry at a time, with the aten ops that take symbolic numbers: an int or
SymInt (or a 0-dim integer tensor, read as one) selects, a slice slices,
None inserts a dim, `...` skips dims, and tensors (masks, index tensors) are
collected into one advanced-indexing `aten.index` at the end. Only the
metadata is computed: the graph records the user's own `x[index]`.
"""

from __future__ import annotations

from typing import Any

import torch

from .symbols import undecided

_aten = torch.ops.aten


def _is_int_tensor_scalar(i: Any) -> bool:
    return isinstance(i, torch.Tensor) and i.dim() == 0 and not i.dtype.is_floating_point \
        and i.dtype is not torch.bool and not i.dtype.is_complex


def _consumed(index: tuple) -> int:
    """How many dims of the indexed tensor the entries of `index` consume (a mask: its own number of dims)."""
    n = 0
    for i in index:
        if i is None or i is Ellipsis or isinstance(i, bool):
            continue
        n += i.dim() if isinstance(i, torch.Tensor) and i.dtype is torch.bool else 1
    return n


def getitem_meta(x: torch.Tensor, index: Any) -> torch.Tensor:
    """`x[index]` computed entry by entry with ops that accept symbolic numbers (x is a fake or meta tensor)."""
    if not isinstance(index, tuple):
        index = (index,)
    index = tuple(torch.tensor(i) if isinstance(i, list) else i for i in index)
    out, dim = x, 0
    covered = x.dim() - _consumed(index)  # dims `...` stands for
    advanced: list[tuple[int, torch.Tensor]] = []
    for i in index:
        if i is Ellipsis:
            dim += covered
            continue
        if i is None:
            out = out.unsqueeze(dim)
            dim += 1
        elif isinstance(i, bool):
            out = out.unsqueeze(dim)
            if not i:
                out = _aten.slice.Tensor(out, dim, 0, 0)
            dim += 1
        elif isinstance(i, (int, torch.SymInt)) or _is_int_tensor_scalar(i):
            n = i.item() if isinstance(i, torch.Tensor) else i
            # An index no bound places (a loop counter) changes only the storage offset, never answered for a
            # graph value: select at 0, without torch's guard per bound check and fresh offset symbol.
            placed = not isinstance(n, torch.SymInt) or not undecided(n) or type(out.shape[dim]) is not int
            out = _aten.select.int(out, dim, n if placed or out.shape[dim] < 1 else 0)
        elif isinstance(i, slice):
            step = 1 if i.step is None else i.step
            out = _aten.slice.Tensor(out, dim, i.start, i.stop, step)
            dim += 1
        elif isinstance(i, torch.Tensor):
            advanced.append((dim, i))
            dim += i.dim() if i.dtype is torch.bool else 1
        else:
            raise IndexError(f"only integers, slices (`:`), ellipsis (`...`), None and long or byte tensors are "
                             f"valid indices (got {type(i).__name__})")
    if advanced:
        positions: list[Any] = [None] * out.dim()
        for d, t in advanced:
            if t.dtype is torch.bool:
                for k, part in enumerate(t.nonzero().unbind(1)):
                    positions[d + k] = part
            else:
                positions[d] = t
        while positions and positions[-1] is None:
            positions.pop()
        out = _aten.index.Tensor(out, positions)
    return out
