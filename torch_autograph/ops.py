"""Graph-aware functional ops: `ta.cond`, `ta.while_loop`, `ta.print`.

Each behaves like plain Python on plain values and eager tensors, and records
a graph node while tracing.
"""

from __future__ import annotations

import builtins
from typing import Any, Callable, Sequence

from .graph import control_flow, tracer
from .graph.graph import Op, OpKind
from .graph.tensor import GraphTensor


def cond(pred: Any, true_fn: Callable[[], Any], false_fn: Callable[[], Any]) -> Any:
    """`true_fn() if pred else false_fn()`; a graph `cond` when `pred` is a graph tensor.

    Both functions take no arguments and return the same structure with the
    same dtypes; only the taken branch runs when the graph runs, and autograd
    records exactly that path.
    """
    return control_flow.cond(pred, true_fn, false_fn)


def while_loop(cond: Callable[..., Any], body: Callable[..., Any], loop_vars: Sequence[Any],
               shape_invariants: Any = None, maximum_iterations: Any = None) -> Any:
    """`while cond(*vars): vars = body(*vars)`; a graph `while` when the condition is a graph value.

    While tracing, Python loop variables with a Python condition unroll like a
    Python loop; from the first graph-valued condition on, the rest of the
    loop is one graph `while` node.

    Args:
        cond: takes the loop variables, returns a bool (graph tensor or Python).
        body: takes the loop variables, returns their new values.
        loop_vars: a list or tuple of initial values.
        shape_invariants: None, or a sequence parallel to `loop_vars` whose
            entries are None (shape must not change) or a shape with None dims
            that may change between iterations.
        maximum_iterations: stop after this many iterations.

    Returns:
        The final values, as a list if `loop_vars` is a list, else a tuple.
    """
    invariants = None
    if shape_invariants is not None:
        invariants = {i: s for i, s in enumerate(shape_invariants) if s is not None}

    def body_tuple(*vals: Any) -> tuple:
        out = body(*vals)
        return tuple(out) if isinstance(out, (list, tuple)) else (out,)

    vals, done = tuple(loop_vars), 0
    if tracer.current() is not None and not isinstance(maximum_iterations, GraphTensor):
        # Python predicates run as Python (unrolled) until one turns out to be a graph value.
        while maximum_iterations is None or done < maximum_iterations:
            pred = cond(*vals)
            if isinstance(pred, GraphTensor):
                break
            if not pred:
                return list(vals) if isinstance(loop_vars, list) else vals
            vals, done = body_tuple(*vals), done + 1
        else:
            return list(vals) if isinstance(loop_vars, list) else vals
    limit = maximum_iterations if maximum_iterations is None or not done else maximum_iterations - done
    out = control_flow.while_loop(cond, body_tuple, vals, shape_invariants=invariants, maximum_iterations=limit)
    return list(out) if isinstance(loop_vars, list) else tuple(out)


def _print_now(*args: Any, **kwargs: Any) -> None:
    builtins.print(*args, **kwargs)


def print(*args: Any, **kwargs: Any) -> None:  # noqa: A001 - TensorFlow's name
    """`print` that runs every time the graph runs (Python's `print` runs only while tracing).

    Takes the same arguments as `print`; tensors print their values.
    """
    if tracer.current() is None:
        builtins.print(*args, **kwargs)
        return
    tracer.record_with_meta(Op(OpKind.FUNCTION, _print_now, "print", stateful=True), args, kwargs, None)
