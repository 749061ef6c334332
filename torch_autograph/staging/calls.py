"""Calls made from converted code that must run when the graph runs, not while tracing.

Converted code stages the PyTorch training-step calls that would otherwise
run once, at trace time, with stale gradients::

    optimizer.zero_grad()   # Optimizer.zero_grad / Module.zero_grad
    loss.backward()         # recorded by the tracer as a node with effects
    optimizer.step()        # Optimizer.step
    scheduler.step()        # LRScheduler.step
    model.train()           # Module.train / Module.eval

Each becomes a `ta.py_function` node calling the method on the real object
when the graph runs (an `Op` with `Effect.RUNS_PYTHON`, which is how passes
and backends recognise it). A mode change also runs at once, so that the rest
of the trace sees the new mode; tracing/guards.py keeps the modes the call
entered with (the trace's guard) and restores them when the trace ends. With
`autograph=False` nothing is converted: an optimizer step attempted while
tracing raises instead of silently updating with stale gradients.
"""

from __future__ import annotations

import inspect
import types
from typing import Any

import torch

from .. import interop
from ..autograph import convert
from ..errors import OperatorNotAllowedInGraphError
from ..subtraces import cond, label_of, number_to_tensor, py_function
from ..tracing import GraphTensor, current, is_graph_value, is_symbolic, user_location
from .numpy_calls import numpy_conversion

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


_MODE_METHODS = (torch.nn.Module.train, torch.nn.Module.eval)


def stage_training_call(f: Any, args: tuple, kwargs: dict) -> Any:
    """Call override: `optimizer.step()` & co. from converted code become run-time nodes while tracing."""
    state = current()
    if state is None:
        return NotImplemented
    if getattr(f, "__func__", None) in _MODE_METHODS and isinstance(f.__self__, torch.nn.Module):
        return _stage_mode_change(state, f, args, kwargs)
    if not _is_staged_method(f):
        return NotImplemented
    if interop.is_staged(f):
        return NotImplemented  # the method stages itself (training.py), from here or from anywhere else
    owner = getattr(f, "__self__", None)
    if owner is not None:  # a class defined after the last trace started
        return interop.stage_call(owner, f.__func__, f.__name__, args, kwargs)
    fn = f if not kwargs else (lambda *a: f(*a, **kwargs))  # `optimizer.step` as an LR scheduler wrapped it
    return py_function(fn, args, Tout=None, name=label_of(f))


def stage_distributed_call(f: Any, args: tuple, kwargs: dict) -> Any:
    """Call override: `dist.barrier()` from converted code is a node run at every call; collectives of Python
    objects (`dist.all_gather_object`) are refused (they would run once, at trace time)."""
    state = current()
    if state is None:
        return NotImplemented
    try:
        staged = state.trace.hooks.converted_calls.get(f)
    except TypeError:  # an unhashable callable
        return NotImplemented
    return NotImplemented if staged is None else staged(*args, **kwargs)


def _stage_mode_change(state: Any, f: Any, args: tuple, kwargs: dict) -> Any:
    """`model.train()` / `model.eval()`: set the mode now, for the rest of the trace, and at every call."""
    if state.parent is not None:
        loc = user_location()
        raise OperatorNotAllowedInGraphError(
            f"{label_of(f)}() inside a tensor-dependent `if` or loop{' at ' + str(loc) if loc else ''}: the "
            f"train/eval mode of the code after it would depend on a value known only when the graph runs."
            f"{chr(10) + '    ' + loc.line if loc and loc.line else ''}\nFix: set the mode outside the `if` or "
            f"loop (e.g. at the start of the function).")
    state.trace.modules.modes.will_set(f.__self__)
    result = f(*args, **kwargs)
    fn = f if not kwargs else (lambda *a: f(*a, **kwargs))
    py_function(fn, args, Tout=None, name=label_of(f))
    return result


def call_module(module: Any, args: tuple, kwargs: dict) -> Any:
    """Call an nn.Module from converted code with the user-written `forward`s in it converted.

    `Module.__call__` (hooks, train/eval bookkeeping) runs as usual; every
    submodule whose `forward` is user code (not torch's) gets its converted
    form as an instance attribute for the duration of the call, so tensor
    `if`/`for` in a model's forward become graph control flow even when a
    torch container such as `nn.Sequential` calls it.
    """
    if not isinstance(module, torch.nn.Module) or current() is None:
        return NotImplemented
    swapped = []
    for m in module.modules():
        forward = type(m).forward
        if getattr(forward, "__module__", "").startswith("torch.") or "forward" in m.__dict__:
            continue
        converted = convert(types.MethodType(forward, m))
        if getattr(converted, "__func__", None) is not forward:
            m.__dict__["forward"] = converted
            swapped.append(m)
    if not swapped:
        return NotImplemented
    try:
        return module(*args, **kwargs)
    finally:
        for m in swapped:
            m.__dict__.pop("forward", None)


def branch_on_symbolic_bool(f: Any, args: tuple, kwargs: dict) -> Any:
    """Call override: a bool known only when the graph runs (`is_causal=q.size(2) > 1` where the size is
    symbolic) passed to a C function, which takes a Python bool only, becomes a graph `cond` calling it with
    True in one branch and False in the other."""
    if current() is None or not isinstance(f, _BUILTINS):
        return NotImplemented
    where = next((i for i, a in enumerate(args) if _symbolic_bool(a)), None)
    key = next((k for k, v in kwargs.items() if _symbolic_bool(v)), None)
    if where is None and key is None:
        return NotImplemented
    pred = args[where] if where is not None else kwargs[key]

    def call(answer: bool) -> Any:
        a = args[:where] + (answer,) + args[where + 1:] if where is not None else args
        kw = {**kwargs, key: answer} if where is None else kwargs
        again = branch_on_symbolic_bool(f, a, kw)  # another symbolic bool among the arguments
        return f(*a, **kw) if again is NotImplemented else again

    return cond(pred, lambda: call(True), lambda: call(False))


_BUILTINS = (types.BuiltinFunctionType, types.BuiltinMethodType, torch._ops.OpOverload, torch._ops.OpOverloadPacket)


def _symbolic_bool(x: Any) -> bool:
    return isinstance(x, torch.SymBool) and is_symbolic(x)


def pad_with_graph_value(f: Any, args: tuple, kwargs: dict) -> Any:
    """Call override: a constant `F.pad` of a tensor whose dims change in a loop (symbolic), or whose fill value
    is a graph value (a loop counter: a Python number eagerly), is a `torch.cat` of the tensor and constant
    blocks. torch's pad takes the value as a Python number, known only when the graph runs, and its shape
    checks pin a symbolic dim to the size it had while tracing. As eagerly, the value is cast to the tensor's
    dtype; negative pads (cropping) and other modes are left to torch."""
    if f is not torch.nn.functional.pad or current() is None:
        return NotImplemented
    try:
        bound = _PAD_SIGNATURE.bind(*args, **kwargs)
    except TypeError:
        return NotImplemented
    bound.apply_defaults()
    x, pad, mode, value = (bound.arguments[k] for k in ("input", "pad", "mode", "value"))
    if mode != "constant" or not isinstance(x, torch.Tensor) or not isinstance(pad, (tuple, list)) or \
            len(pad) % 2 or len(pad) > 2 * x.dim() or not all(_padding(p) for p in pad):
        return NotImplemented
    if isinstance(value, torch.Tensor) and (value._rg_unknown or value.raw_requires_grad()
                                            if isinstance(value, GraphTensor) else value.requires_grad):
        return NotImplemented  # torch refuses one that requires grad (a Python number is expected)
    symbolic_dims = any(isinstance(d, torch.SymInt) for d in x.shape + tuple(pad))
    if not symbolic_dims and not _graph_number(value):
        return NotImplemented
    if _graph_number(value):
        fill = value.to(x.dtype) if isinstance(value, torch.Tensor) else number_to_tensor(value, x._value)
    else:
        fill = torch.full((), 0 if value is None else value, dtype=x.dtype, device=x.device)
    out = x
    for k in range(len(pad) // 2):
        dim = x.dim() - 1 - k
        parts = []
        for size in pad[2 * k:2 * k + 2]:
            if isinstance(size, torch.SymInt):
                torch._check(size >= 0)  # eagerly a negative pad crops: when the graph runs, an error instead
            shape = list(out.shape)
            shape[dim] = size
            parts.append(fill.expand(shape) if isinstance(size, torch.SymInt) or size else None)
        out = torch.cat([p for p in (parts[0], out, parts[1]) if p is not None], dim)
    return out


def _padding(p: Any) -> bool:
    """A pad this override takes: a Python int >= 0, or a size known only when the graph runs (a difference of
    loop-grown lengths: `kv_length - mask.shape[-1]`). A run-time one that turns out negative fails in the
    constant block's `expand` when the graph runs, where eager torch would crop: an error, never another value."""
    return (type(p) is int and p >= 0) or (isinstance(p, torch.SymInt) and is_symbolic(p))


_PAD_SIGNATURE = inspect.Signature([inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=d)
                                    for n, d in (("input", inspect.Parameter.empty), ("pad", inspect.Parameter.empty),
                                                 ("mode", "constant"), ("value", None))])


def _graph_number(x: Any) -> bool:
    """A run-time number or a 0-d graph tensor (as a Python number, it would be read while tracing)."""
    if isinstance(x, torch.Tensor):
        return is_graph_value(x) and x.dim() == 0
    return is_graph_value(x) and isinstance(x, (torch.SymInt, torch.SymFloat, torch.SymBool))


# What `TorchStagingBackend.call` asks, in order, about a library callable converted code calls.
CALL_OVERRIDES = (call_module, stage_training_call, stage_distributed_call, branch_on_symbolic_bool, numpy_conversion,
                  pad_with_graph_value)
