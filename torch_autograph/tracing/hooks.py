"""What a trace runs with: the plug-ins (`TraceHooks`) and the request a root trace starts from (`TraceRequest`),
frozen objects handed to `tracing(graph, request)` and kept on the root trace.

The tracer records torch calls; a few kinds of call are recorded their own way
by layers above it (torch.distributed collectives by interop/), generated code
reports the user's lines through a mapper that only the layer generating it
knows (staging/, for AutoGraph), and torch is patched while a trace runs
(interop/patches.py). Nothing registers itself anywhere: whoever starts a
trace says what it runs with::

    hooks = TraceHooks(special_calls={dist.all_reduce: record_collective},
                       special_kinds=((is_functional_collective, record_functional),),
                       around_trace=(patches.while_tracing,), map_origin=map_origin)
    with tracing(graph, TraceRequest(hooks)) as state:
        ...                          # state.trace.hooks is `hooks`

`TraceHooks()` (no plug-ins) traces plain torch code.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Callable, ContextManager, Mapping, Protocol

from ..graph import SourceLocation

Handler = Callable[[Any, tuple, dict], Any]  # handler(func, args, kwargs) -> graph values, like `record`
OriginMapper = Callable[[str, int], "SourceLocation | None"]

_EMPTY: Mapping[Any, Any] = MappingProxyType({})


@dataclass(frozen=True, eq=False)
class TraceHooks:
    """What a trace runs with besides the tracer itself.

    Attributes:
        special_calls: callables recorded by their own handler instead of `record`'s (collectives).
        special_kinds: (test, handler) pairs for callables made later than the table (ops of a namespace).
        converted_calls: callables that converted code calls which never reach `__torch_function__`
            (`dist.barrier`), each to the callable to run instead while tracing.
        around_trace: context-manager factories entered around every root trace (torch patches, hooks).
        map_origin: (filename, lineno) of generated code -> the user's SourceLocation, or None.
        trace_time_step: (optimizer, args, kwargs) of an optimizer step that reached torch's step hooks
            while tracing -> the (args, kwargs) torch's step body then runs with, after staging the step;
            None (or no hook): the step is refused.
        read_grad, write_grad, after_backward: `.grad` as a graph value (interop/grads.py): `read_grad(state, t)`
            is what `t.grad` stands for at this point of the traced program, `write_grad(state, t, g)` records
            `t.grad = g`, `after_backward(state, roots, inputs)` follows a staged backward from `roots`; None (no
            plug-in): `.grad` is the attribute as it is while tracing.
        staged_closure: a Python function handed to a staged call (`optimizer.step(closure)`), which the call
            runs when the graph runs -> an object with `inputs` (the graph values the function reads), `bind(real
            values)` (the function to hand the call then) and `result` (the TensorSpec of what it returns, or
            None); None (or no hook): the function is handed over as it is.
        grads_state: makes what the `.grad` plug-ins keep per root trace (`state.trace.grads`), when it starts.
    """

    special_calls: Mapping[Any, Handler] = field(default_factory=lambda: _EMPTY)
    special_kinds: tuple[tuple[Callable[[Any], bool], Handler], ...] = ()
    converted_calls: Mapping[Callable, Callable] = field(default_factory=lambda: _EMPTY)
    around_trace: tuple[Callable[[], ContextManager], ...] = ()
    map_origin: OriginMapper | None = None
    trace_time_step: Callable[[Any, tuple, dict], "tuple[tuple, dict] | None"] | None = None
    staged_closure: Callable[[Callable], Any] | None = None
    read_grad: Callable[[Any, Any], Any] | None = None
    write_grad: Callable[[Any, Any, Any], None] | None = None
    after_backward: Callable[[Any, list, Any], None] | None = None
    grads_state: Callable[[], Any] | None = None
    # func -> its handler or None; owned by these hooks and bounded.
    _special_cache: dict = field(default_factory=dict, repr=False, compare=False)

    def special(self, func: Any) -> Handler | None:
        """The handler that records `func` its own way, if any."""
        cache = self._special_cache
        try:
            hit = cache.get(func, cache)
        except TypeError:  # an unhashable callable
            return None
        if hit is cache:
            hit = self.special_calls.get(func) or next((h for test, h in self.special_kinds if test(func)), None)
            if len(cache) < 8192:
                cache[func] = hit
        return hit


NO_HOOKS = TraceHooks()


class ObjectTracker(Protocol):
    """The Python objects a trace may change (state/python_state.ObjectWatch), as the tracer sees it: its
    `checkpoints` note each node recorded (the state of the objects where an op may fail as the graph runs)."""

    checkpoints: Any


@dataclass(frozen=True, eq=False)
class TraceRequest:
    """What a root trace is asked to do, given whole when it starts (nothing is set on a trace afterwards).

    Attributes:
        hooks: the plug-ins it runs with.
        backed: None dims of the inputs are backed by the call's sizes (library code may decide on them), else
            unbacked: any size.
        spec_hint: traced from a signature alone but backed: the size standing for each None dim.
        python_state: the Python objects the trace may change, checked around each sub-trace (None: not
            followed).
        call_tensors: the call's tensor for each graph input, in order (empty for a trace from a signature
            alone): the values library code decides on (tracing/decisions.py).
    """

    hooks: TraceHooks = NO_HOOKS
    backed: bool = False
    spec_hint: int | None = None
    python_state: ObjectTracker | None = None
    call_tensors: tuple = ()


NO_REQUEST = TraceRequest()
