"""Training-step methods staged wherever they are called from, not only from converted code.

`optimizer.step()` called while tracing would update the parameters once, now,
with the gradients of an earlier call. Converted code stages it (calls.py),
but the call often comes from library code that is not converted:
`GradScaler.step(optimizer)`, a Lightning-style helper, a user utility marked
`do_not_convert`. So the methods themselves are wrapped, once per class: while
a trace is running they record a node that calls the real method when the
graph runs (a `ta.py_function`); otherwise they are the method::

    Optimizer subclasses     step, zero_grad
    LRScheduler subclasses   step
    nn.Module                zero_grad
    GradScaler               step, update, unscale_  (and `scale` creates its
                             scale tensor outside the trace, as eager would)

`install()` wraps the classes that exist (at import, before user code creates
optimizers, whose LR schedulers keep a reference to the method) and is called
again at each trace for subclasses defined since. A wrapped `zero_grad` tells
the gradient tracker (tracing/grads.py) which `.grad`s are None afterwards.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import torch

from ..graph.walkers import iter_leaves
from ..tracing import grads
from ..tracing.context import current, outside_trace
from ..tracing.user_ops import label_of, py_function

try:
    from torch.optim.lr_scheduler import LRScheduler as _LRScheduler
except ImportError:  # torch < 2.0
    from torch.optim.lr_scheduler import _LRScheduler  # type: ignore[attr-defined,no-redef]

_STAGED = "_ta_staged"  # marks a wrapped function (and the original it wraps)


def stage_call(obj: Any, method: Callable, name: str, args: tuple, kwargs: dict) -> Any:
    """Record `method(obj, *args, **kwargs)` as a node of the current trace, run at every call of the graph."""
    if name == "zero_grad":
        set_to_none = kwargs.get("set_to_none", args[0] if args else True)
        grads.zeroed(list(_parameters(obj)), bool(set_to_none))
    label = f"{type(obj).__name__}.{name}"
    result = py_function(lambda *a: method(obj, *a, **kwargs), args, name=label)
    if name != "zero_grad":
        grads.python_ran()  # a step may replace `.grad` tensors (GradScaler.unscale_ rewrites them in place)
    return result


def _parameters(obj: Any) -> Any:
    if isinstance(obj, torch.optim.Optimizer):
        return (p for group in obj.param_groups for p in group["params"])
    if isinstance(obj, torch.nn.Module):
        return obj.parameters()
    return ()


def _staged(name: str, method: Callable) -> Callable:
    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        if current() is None:
            return method(self, *args, **kwargs)
        return stage_call(self, method, name, args, kwargs)

    setattr(wrapper, _STAGED, method)
    if getattr(method, "hooked", False):
        wrapper.hooked = True  # type: ignore[attr-defined]  # torch's profiling wrapper is inside
    return wrapper


def _scale_outside_trace(method: Callable) -> Callable:
    """`GradScaler.scale` makes its scale tensor on first use: a real tensor, made outside the trace."""
    @functools.wraps(method)
    def wrapper(self: Any, outputs: Any) -> Any:
        if current() is not None and self.is_enabled() and getattr(self, "_scale", None) is None:
            device = next((t.device for t in iter_leaves(outputs) if isinstance(t, torch.Tensor)),
                          torch.device("cpu"))
            with outside_trace():
                self._lazy_init_scale_growth_tracker(device)
        return method(self, outputs)

    setattr(wrapper, _STAGED, method)
    return wrapper


def _wrap(cls: type, name: str, make: Callable[[str, Callable], Callable] = _staged) -> None:
    method = cls.__dict__.get(name)
    if method is None or not callable(method) or hasattr(method, _STAGED):
        return
    if cls is not torch.optim.Optimizer and name == "step" and issubclass(cls, torch.optim.Optimizer) \
            and not getattr(method, "hooked", False):
        # Torch wraps `step` with its profiling and hook wrapper when the first instance is made; do it
        # now so that this wrapper stays outermost (hooks then run when the step runs, not while tracing).
        method = torch.optim.Optimizer.profile_hook_step(method)
        method.hooked = True  # type: ignore[attr-defined]
    setattr(cls, name, make(name, method))


def _subclasses(cls: type) -> list[type]:
    out, stack = [], [cls]
    while stack:
        c = stack.pop()
        out.append(c)
        stack.extend(c.__subclasses__())
    return out


_wrapped_count = -1


def install() -> None:
    """Wrap the staged methods of every optimizer, scheduler and scaler class defined so far (idempotent)."""
    global _wrapped_count
    optimizers = _subclasses(torch.optim.Optimizer)
    schedulers = _subclasses(_LRScheduler)
    if len(optimizers) + len(schedulers) == _wrapped_count:
        return
    for cls in optimizers:
        _wrap(cls, "step")
        _wrap(cls, "zero_grad")
    for cls in schedulers:
        _wrap(cls, "step")
    _wrap(torch.nn.Module, "zero_grad")
    for scaler in _scaler_classes():
        for name in ("step", "update", "unscale_"):
            _wrap(scaler, name)
        _wrap(scaler, "scale", lambda _name, m: _scale_outside_trace(m))
    _wrapped_count = len(optimizers) + len(schedulers)


def _scaler_classes() -> list[type]:
    classes = []
    try:
        from torch.amp.grad_scaler import GradScaler

        classes += _subclasses(GradScaler)
    except ImportError:
        pass
    return classes


def is_staged(f: Any) -> bool:
    """Whether bound method `f` is one of the staged methods (its call records a node while tracing)."""
    func = getattr(f, "__func__", None)
    return func is not None and hasattr(func, _STAGED)


__all__ = ["install", "is_staged", "label_of", "stage_call"]
