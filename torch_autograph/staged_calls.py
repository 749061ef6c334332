"""Python calls that run when the graph runs: `ta.py_function` and staged `torch.optim` calls.

`ta.py_function(fn, inputs)` (TensorFlow's `tf.py_function`) records a
stateful node that calls `fn` with the run-time values of `inputs` at every
call of the graph, in program order. Converted code uses the same mechanism
for the PyTorch training-step calls that must not run while tracing::

    optimizer.zero_grad()   # Optimizer.zero_grad / Module.zero_grad
    loss.backward()         # recorded by the tracer as a stateful node
    optimizer.step()        # Optimizer.step
    scheduler.step()        # LRScheduler.step

Each becomes a node calling the method on the real object when the graph
runs. With `autograph=False` nothing is converted: an optimizer step attempted
while tracing raises instead of silently updating with stale gradients.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import torch

from .autograph.api import register_call_override
from .graph import tracer
from .graph.graph import Op, OpKind
from .graph.shape_inference import Meta
from .signatures import TensorSpec


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
    return torch.as_tensor(out, dtype=dtype)


def _metas(tout: Any) -> Any:
    if tout is None:
        return None
    if isinstance(tout, (list, tuple)):
        return tuple(_metas(t) for t in tout)
    device = torch.get_default_device()
    if isinstance(tout, TensorSpec):
        return Meta(tout.dtype, tout.shape, tout.device or device)
    if isinstance(tout, torch.dtype):
        return Meta(tout, None, device)
    raise TypeError(f"py_function: Tout must be None, a torch.dtype, a ta.TensorSpec or a list of them; got {tout!r}")


def _label(fn: Callable) -> str:
    owner = getattr(fn, "__self__", None)
    name = getattr(fn, "__name__", None) or type(fn).__name__
    if owner is None and getattr(fn, "_wrapped_by_lr_sched", False):
        return getattr(fn, "__qualname__", name)
    return f"{type(owner).__name__}.{name}" if owner is not None else name


def py_function(func: Callable, inp: Sequence[Any] = (), Tout: Any = None, name: str | None = None) -> Any:
    """Call `func(*inp)` eagerly at every call of the graph (TensorFlow's `tf.py_function`).

    Args:
        func: any Python callable; it receives real tensors (and the other
            values of `inp` as they are).
        inp: the arguments.
        Tout: None (no result), a `torch.dtype`, a `ta.TensorSpec` (dtype and
            shape), or a list of them; results are converted to these dtypes.
        name: shown in the graph.

    Outside a trace it simply calls `func`. Inside one it records a stateful
    node: never pruned, run in program order. The price, as in TensorFlow: the
    call is opaque Python (no shape inference, no fusion).
    """
    label = name or _label(func)
    if tracer.current() is None:
        return _convert_outputs(func(*inp), Tout)
    target = _PyFunction(func, Tout, label)
    return tracer.record_with_meta(Op(OpKind.FUNCTION, target, label, stateful=True), tuple(inp), {}, _metas(Tout))


# ----- PyTorch training-step calls made from converted code --------------------------------------
try:
    from torch.optim.lr_scheduler import LRScheduler as _LRScheduler
except ImportError:  # torch < 2.0
    from torch.optim.lr_scheduler import _LRScheduler  # type: ignore[attr-defined,no-redef]


def _is_staged_method(f: Any) -> bool:
    if getattr(f, "_wrapped_by_lr_sched", False):
        return True  # `optimizer.step` once an LR scheduler has wrapped it (an instance attribute)
    owner = getattr(f, "__self__", None)
    name = getattr(f, "__name__", "")
    if isinstance(owner, torch.optim.Optimizer):
        return name in ("step", "zero_grad")
    if isinstance(owner, _LRScheduler):
        return name == "step"
    if isinstance(owner, torch.nn.Module):
        return name == "zero_grad"
    return False


def stage_training_call(f: Any, args: tuple, kwargs: dict) -> Any:
    """Call override: `optimizer.step()` & co. from converted code become run-time nodes while tracing."""
    if tracer.current() is None or not _is_staged_method(f):
        return NotImplemented
    fn = f if not kwargs else (lambda *a: f(*a, **kwargs))
    return py_function(fn, args, name=_label(f))


def install() -> None:
    register_call_override(stage_training_call)
