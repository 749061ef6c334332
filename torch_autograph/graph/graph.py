"""The graph IR: a `Graph` of `Node`s producing `Value`s, printable as readable SSA.

A traced function becomes one `Graph`::

    graph double_plus(x: float32[None, 4] cpu) {
      captures:
        %linear_weight: float32[8, 4] cpu
      %linear: float32[None, 8] = torch.nn.functional.linear(%x, %linear_weight)  # demo.py:7
      %mul: float32[None, 8] = %linear * 2                                       # demo.py:8
      return %mul
    }

Values are immutable metadata (name, dtype, shape, device); nodes are the
operations in program order. Program order matters: in-place ops, random ops
and other nodes with effects run in the order they were recorded, and
backends must emit nodes in `graph.nodes` order.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import torch

from ..errors import GraphInvariantError
from . import dot
from .ops import Op
from .printing import format_graph
from .values import SourceLocation, Value
from .walkers import iter_values


@dataclass(eq=False)
class Node:
    """One operation in program order.

    Attributes:
        op: what it does.
        args, kwargs: arguments; any nesting of tuples/lists/dicts/slices whose
            leaves are `Value`s or Python constants.
        outputs: the values it defines, in order.
        pattern: how the call's result binds to `outputs`: the single Value, or
            nested tuples of Values (None for a non-tensor slot) for results
            that are unpacked (`a, b = torch.split(...)`); None for no result.
        origin: the user line that called the op.
        grad_enabled: None to run under the caller's grad mode, or the mode the
            user set explicitly around this op (`with torch.no_grad():`).
        autocast: None to run under the caller's autocast, or the autocast
            regions the user entered around this op inside the function, as
            `((device type, dtype), ...)` (`()`: autocast off).
        subgraphs: sub-graphs of a CONTROL node.
        scope: the path of the `nn.Module` whose forward ran the op (`Sequential.0`,
            `GPT.blocks.0.attn`: the outermost module's class, then attribute names),
            None outside any module; pictures group nodes by it.

    Printed form: `%mul: float32[3] = %x * 2  # demo.py:4`.
    """

    op: Op
    args: tuple
    kwargs: dict
    outputs: tuple[Value, ...]
    pattern: Any = None
    origin: SourceLocation | None = None
    grad_enabled: bool | None = None
    subgraphs: tuple["Graph", ...] = ()
    autocast: tuple | None = None
    scope: str | None = None

    @property
    def name(self) -> str:
        return self.outputs[0].name if self.outputs else f"{self.op.name}_{id(self):x}"

    @property
    def stateful(self) -> bool:
        return self.op.stateful

    def input_values(self) -> Iterator[Value]:
        """Every Value among args and kwargs, depth first."""
        yield from iter_values((self.args, self.kwargs))


def _check(holds: bool, message: Callable[[], str]) -> None:
    """A graph invariant: an error (not an `assert`, which `python -O` removes) when it does not hold."""
    if not holds:
        raise GraphInvariantError(f"bug in torch_autograph: {message()}")


@dataclass(eq=False)
class Graph:
    """A traced function: inputs, captures, nodes in program order, outputs.

    Attributes:
        name: the function's name.
        inputs: one placeholder Value per tensor leaf of the arguments.
        captures: (Value, tensor) for every real tensor the trace used
            (module parameters, buffers, closure tensors); passed by reference.
        nodes: operations in program order.
        outputs: the flat outputs: Values, or Python constants (None, str).
        parent: the enclosing graph of a control-flow sub-graph.
        python_source: the backend's generated code, once compiled.
        sizes: where each size symbol of the inputs' types comes from
            (`{"u0": "x.size(0)"}`), printed under the signature.
        decisions: the value reads library code decided on while tracing (`bool(t)` was True at a line): the
            graph is right only for calls that give the same answers, which the Function checks before it runs
            the graph; a program exported from it could not, so exporting refuses it.
    """

    name: str
    inputs: list[Value] = field(default_factory=list)
    captures: list[tuple[Value, torch.Tensor]] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    outputs: list[Any] = field(default_factory=list)
    parent: "Graph | None" = None
    python_source: str | None = None
    sizes: dict[str, str] = field(default_factory=dict)
    decisions: tuple[str, ...] = ()

    def get_operations(self) -> list[Node]:
        """The nodes in program order (TensorFlow's `Graph.get_operations`)."""
        return list(self.nodes)

    @property
    def capture_tensors(self) -> list[torch.Tensor]:
        return [t for _, t in self.captures]

    def verify(self) -> None:
        """Check the invariants every pass and backend relies on.

        Raises:
            GraphInvariantError: (a bug in torch_autograph) naming the broken invariant.
        """
        defined: set[int] = set()
        names: set[str] = set()

        def define(v: Value, where: str) -> None:
            _check(isinstance(v, Value), lambda: f"{where} defines a non-Value {v!r}")
            _check(v.name.isidentifier(), lambda: f"value name {v.name!r} is not an identifier")
            _check(v.name not in names, lambda: f"duplicate value name %{v.name} in graph {self.name}")
            names.add(v.name)
            defined.add(id(v))

        for v in self.inputs:
            define(v, "input")
        for v, t in self.captures:
            _check(isinstance(t, torch.Tensor), lambda: f"capture %{v.name} is not a tensor")
            define(v, "capture")
        for node in self.nodes:
            for v in node.input_values():
                _check(id(v) in defined, lambda: f"%{v.name} used by {node.op.name} before it is defined\n{self}")
            for sub in node.subgraphs:
                sub.verify()
            for v in node.outputs:
                define(v, node.op.name)
        for v in iter_values(self.outputs):
            _check(id(v) in defined, lambda: f"output %{v.name} is not defined\n{self}")

    def __str__(self) -> str:
        return "\n".join(format_graph(self))

    def to_dot(self) -> str:
        """The graph as DOT text for Graphviz (no dependency): one node per op, sub-graphs as clusters."""
        return dot.to_dot(self)

    def render(self, path: str | os.PathLike, format: str | None = None) -> str:  # noqa: A002 - dot's word
        """Draw the graph to `path` (SVG, PNG, PDF... by suffix or `format`) with Graphviz's `dot` program.

        Raises:
            GraphvizNotFoundError: `dot` is not installed; the message says how to install it.
        """
        return dot.render(self, path, format)

    def format_lines(self, indent: str = "") -> list[str]:
        return format_graph(self, indent)
