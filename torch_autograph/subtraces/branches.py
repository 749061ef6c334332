"""What `cond` and `while_loop` share: sub-graph tracing (`Branch`), the UNSET marker, value kinds and messages.

A branch or loop body is traced into a sub-graph by a `Branch`: it runs user
code in a sub-trace whose reads of enclosing values become sub-graph inputs.
"""

from __future__ import annotations

import enum
from typing import Any, Callable

import torch

from .. import errors, nest
from ..graph import Graph, Op, OpKind, SourceLocation, Trait, Value, ValueKind, is_static
from ..tracing import (
    SYMBOLIC,
    GraphList,
    GraphTensor,
    Scope,
    TensorMeta,
    Traced,
    constant_of,
    meta_example,
    promote_number,
    record_with_meta,
    reenter,
    subtrace,
)

SCALAR_DTYPES = {bool: torch.bool, int: torch.int64, float: torch.float64}


class Unset:
    """A branch or loop value that may be anything of the other side's type.

    Used for a function's return slot before a `return` ran (its reads are
    guarded) and for loop variables first assigned inside the loop.
    """

    _instance = None

    def __new__(cls) -> "Unset":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"


UNSET = Unset()


class Leaf(enum.Enum):
    """What a branch output or loop variable is, for merging the two sides of an `if` or a loop's iterations."""

    TENSOR = "tensor"
    LIST = "list"  # a graph list
    SCALAR = "scalar"  # a run-time number (a graph value)
    PYSCALAR = "pyscalar"  # a Python number (or a traced number whose value is known)
    UNSET = "unset"  # not assigned on this side
    OBJECT = "object"  # any other Python value: must be the same on both sides

    @property
    def is_number(self) -> bool:
        return self in (Leaf.SCALAR, Leaf.PYSCALAR)


def leaf_kind(x: Any) -> Leaf:
    """What a branch or loop value is (`Leaf`)."""
    if isinstance(x, GraphList):
        return Leaf.LIST
    if isinstance(x, torch.Tensor):
        return Leaf.TENSOR
    if isinstance(x, SYMBOLIC):
        return Leaf.SCALAR if isinstance(constant_of(x), SYMBOLIC) else Leaf.PYSCALAR
    if type(x) in SCALAR_DTYPES:
        return Leaf.PYSCALAR
    if x is UNSET:
        return Leaf.UNSET
    return Leaf.OBJECT


def describe(x: Any) -> str:
    if isinstance(x, Traced):
        return x._value.type_str()
    if isinstance(x, SYMBOLIC):
        return f"a run-time {type(x).__name__.replace('Traced', '').replace('Sym', '').lower()}"
    if isinstance(x, torch.Tensor):
        return f"tensor {str(x.dtype).replace('torch.', '')}{list(x.shape)}"
    return f"{type(x).__name__} {x!r}"


def quoted(name: str) -> str:
    """A variable as messages name it: `'x'`, or in words for the variables AutoGraph makes for `return`."""
    return errors.variable_in_words(name)


def where(origin: SourceLocation | None) -> str:
    if origin is None:
        return ""
    code = f" (`{origin.line}`)" if origin.line else ""
    return f" at {origin}{code}"


class Branch:
    """One traced sub-graph and the state that recorded it."""

    def __init__(self, name: str, outer: Scope, carries_objects: bool = True, inputs: tuple = ()) -> None:
        self.graph = Graph(outer.fresh_name(name))
        self.outer = outer
        # Whether the staged op carries the entries of Python objects it sets to graph values (an `if`, a loop:
        # staging/object_state.py), or refuses any change to them (an `except` clause) but setting one to a
        # value it starts from (`inputs`: the state the converted code puts back in its attributes and items)
        self.carries_objects = carries_objects
        self.inputs = frozenset(id(v) for v in inputs)
        self.lifted: set[int] = set()
        self.state: Scope | None = None

    def lift(self, v: Value) -> Value:
        """`v`, a value of the enclosing trace, read by this sub-graph: one of its inputs."""
        self.add_input(v)
        return v

    def add_input(self, v: Value) -> None:
        """Make `v` an input of this sub-graph (also after it was traced, e.g. a loop variable found later)."""
        if self.state is not None:
            self.state.add_input(v)
        elif id(v) not in self.lifted:
            self.graph.inputs.append(v)
        self.lifted.add(id(v))

    def run(self, fn: Callable[..., Any], *args: Any) -> Any:
        # A Python object that outlives the call changed while a branch or loop body was traced would be
        # changed whichever way the graph goes at run time: the root trace's watch refuses that.
        watch = self.outer.trace.python_state
        token = watch.token() if watch is not None else None
        try:
            if self.state is not None:
                with reenter(self.state):
                    out = fn(*args)
            else:
                with subtrace(self.graph, self.lift) as state:
                    self.state = state
                    out = fn(*args)
        except Exception as e:
            if self.state is not None:
                self.state.failed = e  # a value of this trace used later says so (messages.leaked_tensor_error)
            raise
        if token is not None:
            watch.check_unchanged(token, self.carries_objects, self.inputs)
        return out

    def record(self, fn: Callable[[], Any]) -> Any:
        """Record more ops into this (finished) branch, e.g. a conversion of its output."""
        return self.run(fn)


def to_value(branch: Branch, x: Any) -> Any:
    """A branch output as a graph output: a Value or a Python constant."""
    if isinstance(x, (Traced, torch.Tensor)) or isinstance(x, SYMBOLIC):
        return branch.record(lambda: branch.state.to_value(x))
    return x


def number_to_tensor(x: Any, like: Value, promoted: bool = False) -> GraphTensor:
    """`torch.tensor(x)` of `like`'s dtype and device for a Python number or run-time scalar, in the current trace.

    Recorded with `Op.converts_number`: re-typing tells this conversion, which
    the tracer inserted, from a user's `torch.tensor` call. `promoted`: a tensor `if` merges the number with a
    tensor, and the run-time tensor is remembered as standing for a number (promoted.py).
    """
    if promoted:
        op = Op(OpKind.FUNCTION, promote_number, "tensor", converts_number=True)
        return record_with_meta(op, (x, like.dtype, like.device), {},
                                TensorMeta(meta_example((), like.dtype), like.device))
    op = Op(OpKind.FUNCTION, torch.tensor, "tensor", pure=True, converts_number=True, traits=Trait.FRESH)
    return record_with_meta(op, (x,), {"dtype": like.dtype, "device": like.device},
                            TensorMeta(meta_example((), like.dtype), like.device))


def _kind_rank(dtype: torch.dtype) -> int:
    return 0 if dtype == torch.bool else 3 if dtype.is_complex else 2 if dtype.is_floating_point else 1


def number_fits(number: Any, like: Value) -> bool:
    """Whether a Python number or run-time number keeps its value as a tensor of `like`'s dtype: torch's kinds go
    bool, integer, floating, complex, and a number may only move up (an int into a float tensor, not a float into
    an int tensor: `1.5` would become `1`)."""
    number = getattr(number, "_value", number)  # a run-time number as the trace holds it: its Value
    dtype = number.dtype if isinstance(number, Value) else SCALAR_DTYPES.get(type(number))
    return dtype is None or like.dtype is None or _kind_rank(dtype) <= _kind_rank(like.dtype)


def as_tensor_in(branch: Branch, x: Any, like: Value) -> Value:
    """Convert a Python number or run-time scalar produced by `branch` to a tensor like `like`."""

    def make() -> Any:
        return number_to_tensor(x, like, promoted=True)

    return branch.record(make)._value


def value_type(v: Any) -> tuple:
    if isinstance(v, Value):
        return (v.kind, v.dtype, v.device)
    return (ValueKind.SCALAR, SCALAR_DTYPES[type(v)], None)


def type_words(t: tuple) -> str:
    kind, dtype, _ = t
    if kind is ValueKind.SCALAR:
        return f"Python type {_SCALAR_NAMES.get(dtype, 'int')}"
    return f"dtype {dtype}"


_SCALAR_NAMES = {torch.bool: "bool", torch.int64: "int", torch.float64: "float"}


def structure_repr(x: Any) -> str:
    return repr(nest.map_structure(lambda leaf: "Tensor" if isinstance(leaf, GraphTensor) else type(leaf).__name__,
                                   x))


def check_predicate(v: Value, what: str, origin: SourceLocation | None) -> None:
    if v.kind is ValueKind.TENSOR and is_static(v.shape):
        n = 1
        for d in v.shape:
            n *= d
        if n != 1:
            raise ValueError(f"condition of {what} expected a single-element tensor{where(origin)}, got "
                             f"{v.type_str()}: a tensor with {n} elements has no truth value. Reduce it first "
                             f"(e.g. `.any()` or `.all()`).")
