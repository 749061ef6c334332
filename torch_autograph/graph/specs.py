"""`ta.TensorSpec`: the description of a tensor argument (shape with None wildcards, dtype, device)."""

from __future__ import annotations

import operator
from dataclasses import dataclass, field
from typing import Any

import torch

from .walkers import fits

_MAX_DIM = 2 ** 63 - 1


def _dim(d: Any, shape: Any) -> int | None:
    if d is None:
        return None
    if isinstance(d, bool):
        raise TypeError(f"TensorSpec shape {list(shape)} has the bool {d!r} as a dim; dims are ints or None")
    try:
        n = operator.index(d)  # ints and integer numpy scalars; 1.5 and "3" are refused, not truncated
    except TypeError:
        raise TypeError(f"TensorSpec shape {list(shape)} has the {type(d).__name__} {d!r} as a dim; dims are "
                        f"non-negative ints, or None for an unknown dim") from None
    if n < 0:
        raise ValueError(f"TensorSpec shape {list(shape)} has a negative dim {n}; use None for an unknown dim")
    if n > _MAX_DIM:
        raise ValueError(f"TensorSpec shape {list(shape)} has the dim {n}, larger than any tensor size (2**63 - 1)")
    return n


@dataclass(frozen=True)
class TensorSpec:
    """Describes a tensor argument: shape (None dims and None rank are wildcards) and dtype.

    Args:
        shape: a sequence of non-negative ints and None (unknown dims), or None for unknown rank.
        dtype: a `torch.dtype`.
        name: optional, used as the placeholder name in the graph.
        device: optional; None accepts any device (each device gets its own trace).

    Example: `ta.TensorSpec([None, 4], torch.float32)` accepts any batch of 4-vectors.
    """


    shape: tuple[int | None, ...] | None
    dtype: torch.dtype = torch.float32
    name: str | None = field(default=None, compare=False)
    device: torch.device | None = None

    def __init__(self, shape: Any, dtype: torch.dtype = torch.float32, name: str | None = None,
                 device: Any = None) -> None:
        if shape is not None:
            if isinstance(shape, int):
                raise TypeError(f"TensorSpec shape must be a sequence of ints and None, got the int {shape}")
            shape = tuple(_dim(d, shape) for d in shape)
        if not isinstance(dtype, torch.dtype):
            raise TypeError(f"TensorSpec dtype must be a torch.dtype, got {dtype!r}")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "dtype", dtype)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "device", None if device is None else torch.device(device))

    @classmethod
    def from_tensor(cls, t: torch.Tensor, name: str | None = None) -> "TensorSpec":
        return cls(tuple(t.shape), t.dtype, name, t.device)

    def __repr__(self) -> str:
        shape = "None" if self.shape is None else repr(self.shape)
        dev = f", device={str(self.device)!r}" if self.device is not None else ""
        return f"TensorSpec(shape={shape}, dtype={self.dtype}, name={self.name!r}{dev})"

    def is_compatible_with(self, t: Any) -> bool:
        """Whether tensor (or spec) `t` fits this spec: same dtype, a shape this one's wildcards admit, its device."""
        other = t if isinstance(t, TensorSpec) else TensorSpec.from_tensor(t)
        if other.dtype != self.dtype or (self.device is not None and other.device != self.device):
            return False
        return fits(other.shape, self.shape) if other.shape is not None else self.shape is None


class ArraySpec(TensorSpec):
    """The trace type of a NumPy array argument: a TensorSpec (the graph's input is `torch.from_numpy` of the
    array, sharing its memory) that is never equal to a tensor's, since the traced code sees an array
    (tracing/arrays.py) where a tensor argument gives a tensor."""

    def __repr__(self) -> str:
        return "NumPy array " + super().__repr__().replace("TensorSpec", "", 1)
