"""How a corpus program declares its inputs: `case(fn, input, input, ...)`, and the helpers those inputs use.

Each ported file ends with a `CASES` tuple (ours, below the ported bodies):

    CASES = (
        case(while_one_var, 0, 1, 2, i32(0), i32(1), i32(2), jit=True),
        case(successive_while_loops, A(0, 1), A(i32(2), i32(1))),
    )

An input that is not an `A(...)` is the program's single argument. Every
input runs eagerly and through one `ta.function` per backend, in the order
given, so a trace is reused by the inputs of the same signature after it.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any, Callable

import torch

import torch_autograph as ta


class A(tuple):
    """The arguments of one call of a program taking several: `A(x, y)`."""

    def __new__(cls, *args: Any) -> "A":
        return super().__new__(cls, args)


@dataclasses.dataclass(frozen=True)
class Case:
    """One corpus program and the inputs it runs on.

    Attributes:
        fn: the program (a ported function, unchanged but for API spellings).
        inputs: one `A` per call.
        jit: also run it with `jit_compile=True` (inductor).
        name: the program's name in the listing (the function's, unless a
            file holds two programs over one function).
        build: `fn` builds the program (a module class): the eager and the
            graph run each call their own instance, built from the same seed,
            so state one run changes is not seen by the other.
        raises: eager raises on every input by design (the source tests that
            the converted function raises too).
        prints_while_tracing: the program calls Python's `print`, which a
            graph runs while tracing only (a documented difference: `ta.print`
            prints at every call): what it prints is not compared.
    """

    fn: Callable
    inputs: tuple
    jit: bool = False
    name: str = ""
    build: bool = False
    raises: bool = False
    prints_while_tracing: bool = False

    def program(self) -> Callable:
        """The callable to run: `fn`, or a new instance built from seed 0 where `build`."""
        if not self.build:
            return self.fn
        torch.manual_seed(0)
        return self.fn()


def case(fn: Callable, *inputs: Any, jit: bool = False, name: str | None = None, build: bool | None = None,
         raises: bool = False, prints_while_tracing: bool = False) -> Case:
    """A `Case` of `fn` on `inputs` (each an `A`, or the single argument itself); a class is built per run."""
    calls = tuple(i if isinstance(i, A) else A(i) for i in inputs)
    build = isinstance(fn, type) if build is None else build
    return Case(fn, calls, jit, name or fn.__name__, build, raises, prints_while_tracing)


def i32(x: Any) -> torch.Tensor:
    """TensorFlow's reference tests' `_int_tensor`: an int32 tensor."""
    return torch.tensor(x, dtype=torch.int32)


def t(x: Any) -> torch.Tensor:
    """`tf.constant(x)`: a tensor of the dtype Python's value implies (int64, float32, bool)."""
    return torch.tensor(x)


def fresh(value: Any) -> Any:
    """A copy of an input that a call may change: tensors cloned, Variables and containers rebuilt."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, ta.Variable):
        return ta.Variable(value.read_value().detach().clone())
    if isinstance(value, A):
        return A(*(fresh(v) for v in value))
    if isinstance(value, list):
        return [fresh(v) for v in value]
    if isinstance(value, dict):
        return {k: fresh(v) for k, v in value.items()}
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return tuple(fresh(v) for v in value)
    return value


def each(values: Any, *types: Callable) -> tuple:
    """Single-argument inputs: every value under every type (`each([0, 1], int, i32)`), grouped by type."""
    return tuple(ty(v) for ty in types for v in values)


def grid(*axes: Any) -> tuple:
    """Multi-argument inputs: every combination of the axes' values (`grid([0, 2], [i32(1)])`)."""
    return tuple(A(*p) for p in itertools.product(*axes))
