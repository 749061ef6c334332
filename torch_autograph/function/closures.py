"""Closures handed to staged calls: a graph of their own, run each time the call runs them.

`optimizer.step(closure)` is staged (interop/training.py): the step runs when the graph runs, with the real
tensors, and calls the closure there, a number of times its own Python decides on the losses (LBFGS evaluates
it up to `max_iter * 1.25` times, stopping on tolerance checks). The closure was defined by the traced code
and reads its graph values (`inp`, `tgt`, a value computed before the step), which do not exist outside the
trace. So it becomes a `Function` of its own: the graph values it reads (its closure cells, in lists, tuples
and dicts, and in the cells of functions it calls from its cells) are its arguments, the step node takes them
as inputs, and at run time the step is handed a closure that runs that Function on their real values. The
Function is traced now, from their types, so the step's result (the closure's loss, by torch's convention)
has a type; what the step's Python decides stays eager, exactly as eager decides it.
"""

from __future__ import annotations

import types
from typing import Any, Callable

import torch

from .. import nest
from ..graph import TensorSpec
from ..tracing import GraphTensor, Traced, outside_trace, user_location

_MAX_DEPTH = 3  # functions in the closure's cells (helpers it calls) are followed this deep


class StagedClosure:
    """A closure made a Function: `inputs`, the graph values it reads; `bind(real values)`, the closure the
    staged call gets when the graph runs; `result`, the TensorSpec (or None) of what it returns."""

    def __init__(self, fn: Callable, function_class: type) -> None:
        self.inputs: list[GraphTensor] = []
        make = _rebinder(fn, self.inputs, 0)
        name = getattr(fn, "__name__", "closure")

        def run(values: tuple) -> Any:
            return (fn if make is None else make(values))()

        run.__name__ = name
        self._function = function_class(run, autograph=False, name=name)
        specs = tuple(TensorSpec(tuple(d if type(d) is int else None for d in v.shape), v.dtype,
                                 device=v.device) for v in self.inputs)
        with outside_trace():
            cf = self._function.get_concrete_function(specs)
        out = cf.structured_outputs
        self.result = TensorSpec(out.shape, out.dtype, device=out.device) if isinstance(out, GraphTensor) else None

    def bind(self, values: tuple) -> Callable[[], Any]:
        function = self._function
        return lambda: function(tuple(values))


def _rebinder(fn: Any, inputs: list, depth: int) -> Callable[[tuple], Any] | None:
    """`make(values)`: `fn` with the graph values of its cells replaced by `values` (indices into `inputs`, where
    they are appended); None if it reads none."""
    cells = getattr(fn, "__closure__", None)
    if not isinstance(fn, types.FunctionType) or not cells or depth > _MAX_DEPTH:
        return None
    makers: list = []
    for cell in cells:
        try:
            x = cell.cell_contents
        except ValueError:  # an empty cell
            makers.append(None)
            continue
        makers.append(_content_maker(x, inputs, depth, fn))
    if all(m is None for m in makers):
        return None

    def make(values: tuple) -> Any:
        new_cells = tuple(cell if m is None else types.CellType(m(values)) for cell, m in zip(cells, makers))
        g = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, new_cells)
        g.__kwdefaults__ = fn.__kwdefaults__
        g.__dict__.update(fn.__dict__)
        return g

    return make


def _content_maker(x: Any, inputs: list, depth: int, fn: Any) -> Callable[[tuple], Any] | None:
    if isinstance(x, Traced):
        if not isinstance(x, GraphTensor):
            raise TypeError(f"{getattr(fn, '__qualname__', fn)} is passed to a call staged to run when the graph "
                            f"runs{_where()}, and reads a {type(x).__name__} made by the trace: only graph "
                            f"tensors (in lists, tuples and dicts) can be handed to it then")
        i = len(inputs)
        inputs.append(x)
        return lambda values: values[i]
    if isinstance(x, types.FunctionType):
        return _rebinder(x, inputs, depth + 1)
    if type(x) in (list, tuple, dict):
        leaves = nest.flatten(x)
        if not any(isinstance(v, Traced) for v in leaves):
            return None
        makers = [_content_maker(v, inputs, depth, fn) if isinstance(v, Traced) else None for v in leaves]
        return lambda values: nest.pack_sequence_as(
            x, [v if m is None else m(values) for v, m in zip(leaves, makers)])
    return None


def _where() -> str:
    loc = user_location()
    return f" ({loc})" if loc else ""


def is_closure_argument(x: Any) -> bool:
    """Whether a staged call's argument is a Python function the call may run (`optimizer.step(closure)`)."""
    return isinstance(x, types.FunctionType) and not isinstance(x, torch.nn.Module)
