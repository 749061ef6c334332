"""Graph-aware functional ops users call directly: `ta.cond`, `ta.while_loop`, `ta.print`, `ta.shape`, `ta.py_function`.

Each behaves like plain Python on plain values and eager tensors, and records
a graph node while tracing.
"""

from __future__ import annotations

import builtins
from typing import Any, Callable, Sequence

import torch

from ..graph import Effect, Op, OpKind, TensorSpec
from ..tracing import GraphTensor, TensorMeta, current, is_graph_value, run_or_record
from . import cond as cond_module
from . import while_loop as while_module


def cond(pred: Any, true_fn: Callable[[], Any], false_fn: Callable[[], Any]) -> Any:
    """`true_fn() if pred else false_fn()`; a graph `cond` when `pred` is a graph tensor.

    Both functions take no arguments and return the same structure with the
    same dtypes; only the taken branch runs when the graph runs, and autograd
    records exactly that path.
    """
    return cond_module.cond(pred, true_fn, false_fn)


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
    if current() is not None and not is_graph_value(maximum_iterations):
        # Python predicates run as Python (unrolled) until one turns out to be a graph value.
        while maximum_iterations is None or done < maximum_iterations:
            pred = cond(*vals)
            if is_graph_value(pred):
                break
            if not pred:
                return list(vals) if isinstance(loop_vars, list) else vals
            vals, done = body_tuple(*vals), done + 1
        else:
            return list(vals) if isinstance(loop_vars, list) else vals
    limit = maximum_iterations if maximum_iterations is None or not done else maximum_iterations - done
    out = while_module.while_loop(cond, body_tuple, vals, shape_invariants=invariants, maximum_iterations=limit)
    return list(out) if isinstance(loop_vars, list) else tuple(out)


def _print_now(*args: Any, **kwargs: Any) -> None:
    builtins.print(*map(_printed_value, args), **kwargs)


def _printed_value(a: Any) -> Any:
    """What `ta.print` shows for `a`: tensors by their values, without autograd's `grad_fn=<...>` / `requires_grad`."""
    if isinstance(a, torch.Tensor):
        return a.detach() if a.requires_grad else a
    if type(a) in (list, tuple):
        return type(a)(map(_printed_value, a))
    if type(a) is dict:
        return {k: _printed_value(v) for k, v in a.items()}
    return a


def print(*args: Any, **kwargs: Any) -> None:  # noqa: A001 - TensorFlow's name
    """`print` that runs every time the graph runs (Python's `print` runs only while tracing).

    Takes the same arguments as `print`; tensors print their values (without autograd's `grad_fn`, as a
    value), also inside lists, tuples and dicts.
    """
    run_or_record(Op(OpKind.FUNCTION, _print_now, "print", effects=Effect.RUNS_PYTHON), args, kwargs, None)


def shape(x: Any) -> tuple:
    """The shape of `x` as a tuple usable in `view`, `reshape`, `zeros`...

    Eagerly this is `tuple(x.shape)`. While tracing, known dims are ints and
    dims unknown until the graph runs (None in `x.shape`) are run-time values.
    """
    if isinstance(x, GraphTensor):
        return x.size()
    if isinstance(x, torch.Tensor):
        return tuple(x.shape)
    return tuple(torch.as_tensor(x).shape)


class _PyFunction:
    """The node target of a py_function: calls `fn` and converts its outputs to the declared dtypes."""

    __slots__ = ("fn", "tout", "label")

    def __init__(self, fn: Callable, tout: Any, label: str) -> None:
        self.fn = fn
        self.tout = tout
        self.label = label

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        out = self.fn(*args, **kwargs)
        return _convert_outputs(out, self.tout)

    def __repr__(self) -> str:
        return f"py_function[{self.label}]"


def _convert_outputs(out: Any, tout: Any) -> Any:
    if tout is None:
        return None
    if isinstance(tout, (list, tuple)):
        return tuple(_convert_outputs(o, t) for o, t in zip(out, tout))
    dtype = tout.dtype if isinstance(tout, TensorSpec) else tout
    result = torch.as_tensor(out, dtype=dtype)
    if isinstance(tout, TensorSpec) and not tout.is_compatible_with(result.to(tout.device or result.device)):
        from ..errors import InvalidArgumentError

        raise InvalidArgumentError(f"py_function returned a tensor of shape {tuple(result.shape)}, which does not fit "
                                   f"its Tout {tout!r}")
    return result


def _metas(tout: Any) -> Any:
    if tout is None:
        return None
    if isinstance(tout, (list, tuple)):
        return tuple(_metas(t) for t in tout)
    state = current()
    if isinstance(tout, torch.dtype):
        raise TypeError(f"py_function: Tout={tout} gives the dtype but not the shape, and a graph tensor needs its "
                        f"rank while tracing: pass ta.TensorSpec(shape, {tout}), with None for the sizes known only "
                        f"when it runs (e.g. ta.TensorSpec([None, 3], {tout}))")
    if isinstance(tout, TensorSpec):
        if tout.shape is None:
            raise TypeError(f"py_function: Tout {tout!r} leaves the rank unknown, but a graph tensor needs its rank: "
                            f"give the shape, with None for sizes known only when it runs (e.g. TensorSpec([None, 3]))")
        device = tout.device or state.trace.entry.device
        return TensorMeta(state.trace.engine.example(tout.shape, tout.dtype, device), device)
    raise TypeError(f"py_function: Tout must be None, a torch.dtype, a ta.TensorSpec or a list of them; got {tout!r}")


def label_of(fn: Callable) -> str:
    """How a Python callable is named in a graph: `SGD.step`, `fn`."""
    owner = getattr(fn, "__self__", None)
    name = getattr(fn, "__name__", None) or type(fn).__name__
    if owner is None and getattr(fn, "_wrapped_by_lr_sched", False):
        return getattr(fn, "__qualname__", name)
    return f"{type(owner).__name__}.{name}" if owner is not None else name


_REQUIRED: Any = object()


def py_function(func: Callable, inp: Sequence[Any] = (), Tout: Any = _REQUIRED, name: str | None = None) -> Any:
    """Call `func(*inp)` eagerly at every call of the graph (TensorFlow's `tf.py_function`).

    Args:
        func: any Python callable; it receives real tensors (and the other
            values of `inp` as they are).
        inp: the arguments.
        Tout: required: None or `[]` (no result: whatever `func` returns is
            dropped; `[]` gives back an empty list, as in TensorFlow), a
            `ta.TensorSpec` (dtype and shape), or a list of them; results are
            converted to these dtypes.
        name: shown in the graph.

    Outside a trace it simply calls `func`. Inside one it records a stateful
    node: never pruned, run in program order. The price, as in TensorFlow: the
    call is opaque Python (no shape inference, no fusion).
    """
    label = name or label_of(func)
    if Tout is _REQUIRED:
        raise TypeError(f"ta.py_function({label}, ...) needs Tout: the type of what {label} returns (a "
                        "ta.TensorSpec or a list of them), or Tout=None if it returns nothing: the graph must know "
                        "its outputs before it runs.")
    if isinstance(Tout, (list, tuple)) and not Tout:
        # TensorFlow's spelling of a call for its side effect only: it runs every call and gives back [].
        py_function(func, inp, None, name=label)
        return []
    target = _PyFunction(func, Tout, label)
    return run_or_record(Op(OpKind.FUNCTION, target, label, effects=Effect.RUNS_PYTHON), tuple(inp), {},
                         _metas(Tout) if current() is not None else None)
