"""What flows along a graph's edges: `Value`s (tensors, run-time Python numbers, lists) and source locations.

A `Value` is immutable metadata; the tensor it stands for exists only when
the graph runs. Printed form: `%linear: float32[None, 8] cpu`.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

import torch


class ValueKind(enum.Enum):
    """What a `Value` holds when the graph runs."""

    TENSOR = "tensor"
    SCALAR = "scalar"  # a Python number only known at run time, e.g. x.size(0) of a None dim
    LIST = "list"  # a Python list of tensors (dtype/shape/device describe the elements)


_SCALAR_NAMES = {torch.bool: "bool", torch.float64: "float"}


@dataclass(frozen=True, eq=False)
class Value:
    """A value produced in a graph: a placeholder, a capture or a node output.

    Attributes:
        name: unique within its graph, a valid Python identifier (printed `%name`).
        dtype: the tensor dtype (`torch.int64`, `torch.float64` or `torch.bool` for a SCALAR of type int, float
            or bool; the element dtype of a LIST, None while unknown).
        shape: a tuple with an int per dim known while tracing and a `torch.SymInt` per dim known only when
            the graph runs (printed by its symbol: `s0` for a dim of an input, `u0` for a size read from data,
            `2*s0` for one computed from them); None for a LIST whose elements are still unknown.
        device: where the tensor lives (None for SCALAR values).
        kind: TENSOR, SCALAR or LIST.
        example: what tracing computed with: a meta or fake tensor of this shape for a TENSOR, the
            `torch.SymInt` / `SymFloat` / `SymBool` standing for a SCALAR; None where not needed.

    Printed form: `%linear: float32[s0, 8] cpu`.
    """

    name: str
    dtype: torch.dtype
    shape: tuple | None
    device: torch.device | None
    kind: ValueKind = ValueKind.TENSOR
    example: Any = field(default=None, compare=False, repr=False)

    def type_str(self) -> str:
        if self.kind is ValueKind.SCALAR:
            return _SCALAR_NAMES.get(self.dtype, "int")
        if self.kind is ValueKind.LIST:
            if self.dtype is None:
                return "list[?]"
            return f"list[{Value(self.name, self.dtype, self.shape, self.device).type_str()}]"
        dt = str(self.dtype).replace("torch.", "")
        shape = "[?]" if self.shape is None else "[" + ", ".join(str(d) for d in self.shape) + "]"
        dev = f" {self.device}" if self.device is not None else ""
        return f"{dt}{shape}{dev}"

    def __repr__(self) -> str:
        return f"%{self.name}"


def shape_key(shape: tuple | None) -> tuple | None:
    """A hashable form of `shape`: ints as they are, symbolic sizes by their expression."""
    return None if shape is None else tuple(d if type(d) is int else str(d) for d in shape)


def is_static(shape: tuple | None) -> bool:
    """Whether every dim of `shape` is a plain int (known while tracing)."""
    return shape is not None and all(type(d) is int for d in shape)


@dataclass(frozen=True)
class SourceLocation:
    """The user's source line a node came from."""

    filename: str
    lineno: int
    function: str = ""
    line: str = ""

    def __str__(self) -> str:
        return f"{self.filename}:{self.lineno}"

    @property
    def short(self) -> str:
        return f"{self.filename.rsplit('/', 1)[-1]}:{self.lineno}"
