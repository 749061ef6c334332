"""Training-step methods staged wherever they are called from, not only from converted code.

`optimizer.step()` called while tracing would update the parameters once, now,
with the gradients of an earlier call. Converted code stages it (calls.py),
but the call often comes from library code that is not converted:
`GradScaler.step(optimizer)`, a Lightning-style helper, a user utility marked
`do_not_convert`. So the methods themselves are replaced while a trace runs (the `PATCHES`
of this module, in interop/patches.py's table): called from the tracing
thread they record a node that calls the real method when the graph runs (a
`ta.py_function`); from any other thread they are the method::

    Optimizer subclasses     step, zero_grad
    LRScheduler subclasses   step
    nn.Module                zero_grad
    GradScaler               step, update, unscale_  (and `scale` creates its
                             scale tensor outside the trace, as eager would)

An LR scheduler keeps its optimizer's `step` as it was when the scheduler
was made (an instance attribute wrapping torch's method): converted code
stages that one at the call (staging/calls.py), and a step reaching torch's
step hooks from code that is not converted is staged by the trace's step
pre-hook (tracing/guards.py). A staged `zero_grad` tells the gradient
tracker (interop/grads.py) which `.grad`s are None afterwards.
"""

from __future__ import annotations

import functools
import types
from typing import Any, Callable

import torch

from ..graph import iter_leaves
from ..subtraces import label_of, py_function
from ..tracing import current, outside_trace
from .grads import python_ran, zeroed
from .patches import Patch

try:
    from torch.optim.lr_scheduler import LRScheduler as _LRScheduler
except ImportError:  # torch < 2.0
    from torch.optim.lr_scheduler import _LRScheduler  # type: ignore[attr-defined,no-redef]

_STAGED = "_ta_staged"  # marks a wrapped function (and the original it wraps)


def stage_call(obj: Any, method: Callable, name: str, args: tuple, kwargs: dict) -> Any:
    """Record `method(obj, *args, **kwargs)` as a node of the current trace, run at every call of the graph.

    A Python function among the arguments (`optimizer.step(closure)`) runs when the call runs, on real tensors:
    the trace's `staged_closure` hook makes it a graph of its own whose inputs (the graph values it reads) the
    node takes; an optimizer step then returns what the closure returns, as torch's optimizers do."""
    if name == "zero_grad":
        set_to_none = kwargs.get("set_to_none", args[0] if args else True)
        zeroed(list(_parameters(obj)), bool(set_to_none))
    label = f"{type(obj).__name__}.{name}"
    state = current()
    stage = state.trace.hooks.staged_closure if state is not None else None
    closures = {k: stage(v) for k, v in (*enumerate(args), *kwargs.items())
                if stage is not None and isinstance(v, types.FunctionType)}
    if closures:
        return _stage_with_closures(obj, method, name, label, args, kwargs, closures)
    result = py_function(lambda *a: method(obj, *a, **kwargs), args, Tout=None, name=label)
    if name != "zero_grad":
        python_ran()  # a step may replace `.grad` tensors (GradScaler.unscale_ rewrites them in place)
    return result


def _stage_with_closures(obj: Any, method: Callable, name: str, label: str, args: tuple, kwargs: dict,
                         closures: dict) -> Any:
    """`stage_call` where some arguments (`closures`: position or keyword -> its StagedClosure) are functions."""
    plain = [a for i, a in enumerate(args) if i not in closures]
    inputs = [v for c in closures.values() for v in c.inputs]
    counts = [len(c.inputs) for c in closures.values()]
    returns = isinstance(obj, torch.optim.Optimizer) and name == "step" and len(closures) == 1
    tout = next(iter(closures.values())).result if returns else None

    def run(*values: Any) -> Any:
        plain_values, rest = list(values[:len(plain)]), values[len(plain):]
        bound, start = {}, 0
        for (k, c), n in zip(closures.items(), counts):
            bound[k] = c.bind(tuple(rest[start:start + n]))
            start += n
        call_args = [bound[i] if i in bound else plain_values.pop(0) for i in range(len(args))]
        call_kwargs = {k: bound.get(k, v) for k, v in kwargs.items()}
        return method(obj, *call_args, **call_kwargs)

    result = py_function(run, tuple(plain) + tuple(inputs), Tout=tout, name=label)
    python_ran()  # the closure ran autograd (`loss.backward()`): the `.grad`s the graph reads changed
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


def _scale_outside_trace(_cls: type, _name: str, method: Callable) -> Callable:
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


def _hooked(cls: type, name: str, method: Callable) -> Callable:
    if cls is not torch.optim.Optimizer and name == "step" and issubclass(cls, torch.optim.Optimizer) \
            and not getattr(method, "hooked", False):
        # Torch wraps `step` with its profiling and hook wrapper when the first instance is made; do it
        # now so that this wrapper stays outermost (hooks then run when the step runs, not while tracing).
        method = torch.optim.Optimizer.profile_hook_step(method)
        method.hooked = True  # type: ignore[attr-defined]
    return method


def _defined(classes: list[type], *names: str) -> list[tuple[type, str]]:
    """(class, name) for each method `name` a class defines itself (not yet a staged wrapper)."""
    return [(c, n) for c in classes for n in names
            if callable(c.__dict__.get(n)) and not hasattr(c.__dict__[n], _STAGED)]


def _subclasses(cls: type) -> list[type]:
    out, stack = [], [cls]
    while stack:
        c = stack.pop()
        out.append(c)
        stack.extend(c.__subclasses__())
    return out


def _scaler_classes() -> list[type]:
    classes = []
    try:
        from torch.amp.grad_scaler import GradScaler

        classes += _subclasses(GradScaler)
    except ImportError:
        pass
    return classes


_WHY_STEP = ("called while tracing, it would update the parameters once, now, with the gradients of an earlier "
             "call; staged, it records a node that runs the real method at every call of the graph")
PATCHES = (
    Patch("torch.optim.Optimizer and its subclasses", ("step", "zero_grad"), _WHY_STEP,
          lambda: _defined(_subclasses(torch.optim.Optimizer), "step", "zero_grad"),
          lambda cls, name, method: _staged(name, _hooked(cls, name, method))),
    Patch("torch.optim.lr_scheduler.LRScheduler and its subclasses", ("step",),
          "a scheduler step at trace time would change the learning rate once, not at every call",
          lambda: _defined(_subclasses(_LRScheduler), "step"),
          lambda cls, name, method: _staged(name, method)),
    Patch("torch.nn.Module", ("zero_grad",), "the gradients it clears are those of the call the graph runs in",
          lambda: _defined([torch.nn.Module], "zero_grad"),
          lambda cls, name, method: _staged(name, method)),
    Patch("torch.amp.GradScaler and its subclasses", ("step", "update", "unscale_"),
          "each acts on the gradients and the scale of the call the graph runs in",
          lambda: _defined(_scaler_classes(), "step", "update", "unscale_"),
          lambda cls, name, method: _staged(name, method)),
    Patch("torch.amp.GradScaler and its subclasses", ("scale",),
          "its first call makes the scale tensor, which must be a real tensor made outside the trace",
          lambda: _defined(_scaler_classes(), "scale"), _scale_outside_trace),
)


def stage_trace_time_step(optimizer: Any, args: tuple, kwargs: dict) -> tuple[tuple, dict] | None:
    """A step that reached torch's step hooks while tracing: staged, and the body that runs now does nothing.

    That is an LR scheduler's wrapper of `optimizer.step` (an instance attribute holding torch's method)
    called from code AutoGraph does not convert. The step is recorded like the class's staged method; the
    (args, kwargs) returned hand torch's step body a copy of the optimizer without parameters. None where
    that cannot stand for the step: a closure (it would run now), or other step hooks (they would run now).
    """
    from torch.optim import optimizer as optim_module

    other_hooks = (len(optim_module._global_optimizer_pre_hooks) > 1 or optim_module._global_optimizer_post_hooks
                   or optimizer._optimizer_step_pre_hooks or optimizer._optimizer_step_post_hooks)
    if other_hooks or len(args) > 1 or kwargs.get("closure") is not None:
        return None
    staged = type(optimizer).__dict__.get("step")
    method = getattr(staged, _STAGED, None)
    if method is None:
        return None
    stage_call(optimizer, method, "step", (), {})
    empty = object.__new__(type(optimizer))
    empty.__dict__.update(optimizer.__dict__)
    empty.param_groups = []
    return (empty,), {}


def is_staged(f: Any) -> bool:
    """Whether bound method `f` is one of the staged methods (its call records a node while tracing)."""
    func = getattr(f, "__func__", None)
    return func is not None and hasattr(func, _STAGED)


__all__ = ["PATCHES", "is_staged", "label_of", "stage_call"]
