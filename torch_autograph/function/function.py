"""`ta.function`: Function, the polymorphic callable that dispatches each call to a ConcreteFunction.

Semantics that differ from eager Python, as in TensorFlow's tf.function:

- The Python body runs only while tracing. Python side effects (print, list
  appends, attribute writes) happen once per trace, not once per call; use
  `ta.print`, in-place ops on captured tensors or Variables for per-call effects.
- Python values are frozen into the graph: globals, closure variables and
  attributes of objects are read at trace time. Changing them later does not
  retrace.
- A call retraces when an argument's trace type changes: a tensor's dtype,
  shape or device; a Python literal's type or value; a different object for
  any other argument; a different train()/eval() mode of a module the trace
  ran; a submodule, parameter or buffer of a module it read replaced
  (`m[0] = ...`, `load_state_dict(sd, assign=True)`, `del`; in-place updates
  are read by reference); a different grad mode. Every retrace records why
  (`trace_history()`).

The call path, top to bottom: `Function.__call__` builds a cheap key from
plain tensor and literal arguments and looks it up in the trace cache's
`fast` table; a miss binds the arguments, computes their trace types, finds
or traces a ConcreteFunction (`_find_or_trace`), and runs it. Every path ends
in `ConcreteFunction.run`.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import inspect
import threading
import types
import warnings
import weakref
from typing import Any, Callable

import torch

from .. import nest
from ..config import _config
from ..logs import echo
from ..staging import STAGING_HOOKS
from ..tracing import current
from . import signatures as sig
from .arguments import (
    bind_arguments,
    check_against_spec,
    iter_type_leaves,
    resolve_device,
)
from .closures import StagedClosure
from .concrete import ConcreteFunction
from .pipeline import BackendChoice, concrete_function
from .retracing import TraceEvent, explain, logger, monitors
from .signatures import TensorSpec
from .trace_cache import TraceCache
from .tracebacks import strip_internal_frames, user_facing

_Tensor = torch.Tensor
_LITERALS = frozenset({int, float, bool, str, type(None)})
_is_grad_enabled = torch.is_grad_enabled
_any_autocast = torch._C._is_any_autocast_enabled  # the fast paths serve traces made without autocast
HISTORY_LENGTH = 1000  # trace events kept per Function (the count covers every trace)


class Function:
    """A Python function compiled to graphs, one per input signature.

    Create with `ta.function`. Calling it computes the trace type of the
    arguments, runs the matching ConcreteFunction's graph, and traces a new one
    when none matches. See the module docstring for how this differs from eager.
    """

    __autograph_do_not_convert__ = True

    def __init__(self, python_function: Callable, *, input_signature: Any = None, autograph: bool = True,
                 reduce_retracing: bool = False, jit_compile: bool | str = False, name: str | None = None,
                 max_traces: int | None = None, cuda_graphs: bool = False, freeze_captures: bool | None = None,
                 _instance: Any = None) -> None:
        _check_options(jit_compile, cuda_graphs, freeze_captures)
        _check_callable(python_function)
        self._python_function = python_function
        self._autograph = autograph
        self._reduce_retracing = reduce_retracing
        self._instance_ref = _instance
        self._name = name or getattr(getattr(python_function, "func", python_function), "__name__",
                                     type(python_function).__name__)
        self._max_traces = max_traces
        self._options = dict(input_signature=input_signature, autograph=autograph, reduce_retracing=reduce_retracing,
                             jit_compile=jit_compile, name=name, max_traces=max_traces, cuda_graphs=cuda_graphs,
                             freeze_captures=freeze_captures)
        self._backend = BackendChoice(jit_compile=jit_compile, cuda_graphs=cuda_graphs,
                                      freeze_captures=freeze_captures, function_name=self._name,
                                      on_jit_fallback=self._jit_fallback)
        self._jit_warned = False
        self._signature = self._make_signature()
        self._input_signature = self._check_input_signature(input_signature)
        self._cache = TraceCache(lambda: self._max_traces or _config.max_traces)
        self._history: collections.deque[TraceEvent] = collections.deque(maxlen=HISTORY_LENGTH)
        self._tracing_count = 0
        self._monitor = monitors.for_function(python_function)
        self._bound: "weakref.WeakKeyDictionary[Any, Function]" = weakref.WeakKeyDictionary()
        self._bound_lock = threading.Lock()
        functools.update_wrapper(self, python_function, updated=())

    # ----- public properties ---------------------------------------------------------
    @property
    def python_function(self) -> Callable:
        return self._python_function

    @property
    def input_signature(self) -> tuple | None:
        return self._input_signature

    @property
    def name(self) -> str:
        return self._name

    def experimental_get_tracing_count(self) -> int:
        """How many traces this Function has made (evicted ones included)."""
        return self._tracing_count

    def trace_history(self) -> list[TraceEvent]:
        """The traces made so far (the last `HISTORY_LENGTH`), each with the reason it was needed: which
        argument changed, from what to what."""
        return list(self._history)

    @property
    def concrete_functions(self) -> list[ConcreteFunction]:
        return self._cache.concrete_functions

    def pretty_printed_concrete_signatures(self, verbose: bool = True) -> str:
        return "\n\n".join(cf.pretty_printed_signature() for cf in self._cache.concrete_functions)

    # ----- descriptor: decorated methods trace per instance -----------------------------
    def __get__(self, instance: Any, owner: Any = None) -> Any:
        if instance is None or self._instance_ref is not None:
            return self
        try:
            per_instance = self._bound.get(instance)
        except TypeError:  # not weak-referenceable: a Function of its own for each access
            return BoundFunction(self._for_instance(instance), instance)
        if per_instance is None:
            with self._bound_lock:
                per_instance = self._bound.get(instance)
                if per_instance is None:
                    per_instance = self._bound[instance] = self._for_instance(instance)
        return BoundFunction(per_instance, instance)

    def _for_instance(self, instance: Any) -> "Function":
        return Function(self._python_function, **self._options, _instance=weakref.ref(instance))

    # ----- calling ------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            if not kwargs and not _config.run_eagerly:
                cache = self._cache
                # Fastest path: one tensor argument matching the most recently used trace (no key built).
                mono = cache.mono
                if mono is not None and len(args) == 1:
                    a = args[0]
                    cf, grad, dtype, shape, device = mono
                    if (type(a) is _Tensor and a.dtype is dtype and a.shape == shape and a.device == device
                            and _is_grad_enabled() is grad and not _any_autocast()
                            and (not cf.guards or cf.guards_hold_outside_autocast())):
                        m = self._monitor
                        m.calls = cf.last_used = m.calls + 1
                        return cf.run(args)
                key = _fast_key(args)
                if key is not None:
                    entry = cache.fast.get(key)
                    if entry is not None:
                        cf, positions = entry
                        if not _any_autocast() and (not cf.guards or cf.guards_hold_outside_autocast()):
                            m = self._monitor
                            m.calls = cf.last_used = m.calls + 1
                            return cf.run(args if positions is None else [args[i] for i in positions])
            return self._call_slow(args, kwargs)
        except Exception as e:
            raise strip_internal_frames(e)

    def _call_slow(self, args: tuple, kwargs: dict) -> Any:
        if _config.run_eagerly:
            return self._eager_target()(*args, **kwargs)
        if current() is not None:
            # Called from inside another trace: inline our Python code into that graph.
            return self._traced_target()(*args, **kwargs)
        bound = bind_arguments(self._signature, args, kwargs, self._name)
        cf = self._find_or_trace(bound)
        m = self._monitor
        m.calls = cf.last_used = m.calls + 1  # the time of LRU eviction
        if not kwargs:
            self._remember_fast(args, cf)
        return cf.call_bound(bound, checked=True)

    def _remember_fast(self, args: tuple, cf: ConcreteFunction) -> None:
        key = _fast_key(args)
        if key is None or cf.checks_autograd or cf.decisions or cf.autocast is not None:
            return  # (the fast keys hold no requires_grad: such a trace is found by the checked path)
        positions = tuple(i for i, a in enumerate(args) if type(a) is _Tensor)
        n_flat = sum(isinstance(x, TensorSpec) for x in iter_type_leaves(cf.arg_types.values()))
        if n_flat != len(positions):
            return  # defaults hold tensors too (only the slow path binds them)
        mono = None
        if len(args) == 1 and positions:
            a = args[0]
            mono = (cf, key[0], a.dtype, a.shape, a.device)
        self._cache.remember_fast(key, cf, None if len(positions) == len(args) else positions, mono)

    def get_concrete_function(self, *args: Any, **kwargs: Any) -> ConcreteFunction:
        """The ConcreteFunction for these arguments (values or TensorSpecs), tracing it if needed."""
        try:
            if self._input_signature is not None and not args and not kwargs:
                args = tuple(self._input_signature)
            bound = bind_arguments(self._signature, args, kwargs, self._name)
            return self._find_or_trace(bound, with_values=not _all_specs(bound))
        except Exception as e:
            raise strip_internal_frames(e)

    # ----- the cache ----------------------------------------------------------------
    def _find_or_trace(self, bound: dict[str, Any], with_values: bool = True) -> ConcreteFunction:
        key = (_is_grad_enabled(), self._types_of(bound))
        values = bound if with_values else None
        cf, _ = self._cache.find(key, values)
        if cf is not None:
            return cf
        with self._cache.lock:  # one trace per signature, however many threads ask at once
            cf, broken = self._cache.find(key, values)
            if cf is not None:
                return cf
            grad, types_ = key
            if broken is not None and with_values:
                # A general trace assumed something about sizes that this call breaks: another general trace,
                # whose assumptions come from this call (e.g. one per parity of a size that tensor_split halves).
                types_ = broken.arg_types
            elif self._reduce_retracing:
                types_ = self._cache.generalize(grad, types_)
            reasons = explain(self._cache.latest(), grad, types_, list(bound), self._monitor.traces, self._name)
            if broken is not None:
                reasons = [f"{broken.reason}, which this call breaks"] + [
                    r for r in reasons if not r.startswith("no trace matched")]
            arg_types = dict(zip(bound, types_))
            cf = concrete_function(self._backend, self._traced_target(), self._name, self._signature, arg_types,
                                   bound, grad, owner=self, source=self._callable_and_self(), hooks=_HOOKS)
            self._cache.add(key, cf)
            self._tracing_count += 1
            event = TraceEvent(self._tracing_count, cf.describe_types(), tuple(reasons) + cf.notes)
            self._history.append(event)
            logger.info("Tracing %s, %s", self._name, event)
            echo(logger, f"tracing {self._name}, {event}", verbosity=2)
            self._monitor.traced(event, self._python_function)
            return cf

    def _types_of(self, bound: dict[str, Any]) -> tuple:
        if self._input_signature is None:
            return tuple(resolve_device(sig.trace_type(v)) for v in bound.values())
        out = []
        for i, (name, value) in enumerate(bound.items()):
            if i < len(self._input_signature):
                out.append(check_against_spec(self._input_signature[i], value, name, self._name, self._signature))
            else:
                out.append(sig.trace_type(value))
        return tuple(out)

    def _jit_fallback(self, reason: str) -> None:
        """jit_compile="auto" could not compile a graph with inductor: warn once per Function."""
        with self._bound_lock:  # the compile threads of several traces may fail at once
            if self._jit_warned:
                return
            self._jit_warned = True
        warnings.warn(f"ta.function {self._name}: jit_compile='auto' falls back to the default backend: "
                      f"{reason}", RuntimeWarning, stacklevel=2)

    # ----- what is traced -----------------------------------------------------------
    def _make_signature(self) -> inspect.Signature:
        fn = self._python_function
        if isinstance(fn, torch.nn.Module):
            fn = fn.forward  # Module.__call__ only shows (*args, **kwargs)
        try:
            s = inspect.signature(fn)
        except (TypeError, ValueError) as e:
            raise TypeError(f"ta.function needs a callable with an inspectable signature, got {fn!r}: {e}") from None
        if self._instance_ref is not None:
            s = s.replace(parameters=list(s.parameters.values())[1:])
        return s

    def _check_input_signature(self, input_signature: Any) -> tuple | None:
        if input_signature is None:
            return None
        if not isinstance(input_signature, (list, tuple)):
            raise TypeError(f"{self._name}: input_signature must be a list or tuple of ta.TensorSpec, one per "
                            f"argument, got {input_signature!r}: pass input_signature=[{input_signature!r}]")
        specs = tuple(input_signature)
        params = list(self._signature.parameters.values())
        try:
            _check_specs_cover(specs, params, self._name, self._signature)
        except TypeError:
            # A function defined in a class body is a method unless it is static: there the signature covers
            # the arguments after the instance, whatever that parameter is called (the instance's own Function,
            # made on attribute access, checks again without it).
            if self._instance_ref is not None or not _is_method_definition(self._python_function) or not params:
                raise
            _check_specs_cover(specs, params[1:], self._name, self._signature)
        for s in nest.flatten(specs):
            if not isinstance(s, TensorSpec):
                raise TypeError(f"{self._name}: input_signature must hold only ta.TensorSpec, got {s!r}")
        return specs

    def _callable_and_self(self) -> tuple[Callable, Any]:
        fn = self._python_function
        if self._instance_ref is not None:
            inst = self._instance_ref()
            if inst is None:
                raise ReferenceError(f"the instance {self._name} was bound to has been garbage-collected")
            return fn, inst
        if isinstance(fn, types.MethodType):
            return fn.__func__, fn.__self__
        return fn, None

    def _eager_target(self) -> Callable:
        fn, inst = self._callable_and_self()
        return fn if inst is None else types.MethodType(fn, inst)

    def _traced_target(self) -> Callable:
        fn, inst = self._callable_and_self()
        if self._autograph and isinstance(fn, torch.nn.Module):
            from ..autograph import converted_call

            module = fn
            return lambda *a, **k: converted_call(module, a, k)
        if self._autograph:
            from ..autograph import convert

            fn = convert(fn)
        return fn if inst is None else functools.partial(fn, inst)

    def __repr__(self) -> str:
        return f"<ta.Function {self._name} at {id(self):#x}>"


class BoundFunction:
    """A decorated method looked up on an instance: the instance's own Function, keeping the instance alive.

    Each instance traces separately (its Function is cached per instance, held
    weakly); this object holds the instance strongly, as a bound method does,
    so `Model().predict(x)` works even when nothing else refers to the model.
    Everything else (`get_concrete_function`, `trace_history`, ...) is the
    per-instance Function's.
    """

    __slots__ = ("_function", "_instance", "__weakref__")

    def __init__(self, function: Function, instance: Any) -> None:
        self._function = function
        self._instance = instance

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._function(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._function, name)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BoundFunction) and other._function is self._function

    def __hash__(self) -> int:
        return hash(self._function)

    def __repr__(self) -> str:
        return f"<bound ta.Function {self._function.name} of {type(self._instance).__name__} object>"


# The trace's plug-ins, with the one that needs this module: a closure handed to a staged call becomes a Function.
_HOOKS = dataclasses.replace(STAGING_HOOKS, staged_closure=lambda fn: StagedClosure(fn, Function))


def _fast_key(args: tuple) -> tuple | None:
    """The call-path key of plain tensor and literal arguments, or None for anything else."""
    key: list = [_is_grad_enabled()]
    for a in args:
        t = type(a)
        if t is _Tensor:
            key.append((a.dtype, a.shape, a.device))
        elif t in _LITERALS:
            key.append((t, a))
        else:
            return None
    return tuple(key)


def _all_specs(bound: dict[str, Any]) -> bool:
    """Whether the arguments are specs (get_concrete_function(TensorSpec...)), with no tensor to check sizes of."""
    return not any(isinstance(leaf, torch.Tensor) for leaf in nest.flatten(list(bound.values())))


def _is_method_definition(fn: Any) -> bool:
    """A plain function defined in a class body (decorated there): a method unless it is a staticmethod."""
    qualname = getattr(fn, "__qualname__", "")
    return isinstance(fn, types.FunctionType) and "." in qualname and qualname.rsplit(".", 2)[-2] != "<locals>"


def _check_specs_cover(specs: tuple, params: list, name: str, signature: inspect.Signature) -> None:
    """Raise TypeError unless `specs` fit the positional parameters `params` (the rest having defaults)."""
    if any(p.kind is p.VAR_KEYWORD for p in params):
        raise TypeError(f"{name}: input_signature cannot be used with **kwargs in the signature {signature}")
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(specs) > len(positional) and not any(p.kind is p.VAR_POSITIONAL for p in params):
        raise TypeError(f"{name}: input_signature has {len(specs)} entries but the function takes "
                        f"{len(positional)} positional arguments {signature}")
    for p in positional[len(specs):]:
        if p.default is p.empty:
            raise TypeError(f"{name}: input_signature does not cover argument {p.name!r}, which has no default")


def _check_callable(fn: Any) -> None:
    """A generator or coroutine function cannot be a graph: TypeError rather than a generator object."""
    kind = ("an async function" if inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn) else
            "a generator function" if inspect.isgeneratorfunction(fn) else None)
    if kind is not None:
        raise TypeError(f"ta.function cannot compile {getattr(fn, '__qualname__', fn)!r}: it is {kind}, and a graph "
                        "returns tensors, it cannot suspend. Call it from inside a ta.function instead (a generator "
                        "then runs while tracing), or make it a plain function.")


def _check_options(jit_compile: Any, cuda_graphs: Any, freeze_captures: Any) -> None:
    if jit_compile not in (False, True, "auto"):
        raise ValueError(f"jit_compile must be False, True or 'auto', got {jit_compile!r}")
    if cuda_graphs not in (False, True):
        raise ValueError(f"cuda_graphs must be False or True, got {cuda_graphs!r}")
    if cuda_graphs and jit_compile == "auto":
        raise ValueError("cuda_graphs=True works with jit_compile=False or True, not 'auto': a tiered function "
                         "swaps its code while it runs, which would throw the captured graphs away")
    if freeze_captures not in (None, False, True):
        raise ValueError(f"freeze_captures must be None, False or True, got {freeze_captures!r}")
    if freeze_captures and not jit_compile:
        raise ValueError("freeze_captures=True folds captured tensors into inductor's code: it needs "
                         "jit_compile=True or 'auto'")


# ----------------------------------------------------------------------------------------
@user_facing
def function(func: Callable | None = None, *, input_signature: Any = None, autograph: bool = True,
             reduce_retracing: bool = False, jit_compile: bool | str = False, name: str | None = None,
             max_traces: int | None = None, cuda_graphs: bool = False, freeze_captures: bool | None = None,
             experimental_relax_shapes: bool | None = None) -> Any:
    """Compile `func` into graphs: TensorFlow's `tf.function` for PyTorch.

    Works as `@ta.function`, `@ta.function(...)` and `ta.function(f)`, on
    functions, lambdas, methods (each instance gets its own traces) and
    callable objects.

    Args:
        func: the callable.
        input_signature: a sequence of `ta.TensorSpec` fixing the argument types:
            one trace only (per device); a call that does not fit raises TypeError.
        autograph: convert Python `if`/`while`/`for` over tensors into graph
            control flow (default True).
        reduce_retracing: on a new shape, trace a generalised signature with None
            dims instead of one per shape.
        jit_compile: True compiles each traced graph with inductor (lowered to
            torch.fx, compiled once per ConcreteFunction, called directly:
            no dynamo guards per call; gradients through AOT autograd).
            A graph with control flow fx cannot express (`while`, `assert`, a
            `cond` updating state) runs it as Python around compiled
            straight-line regions (backends/regions.py). A graph or region
            inductor cannot compile runs on the default backend, with one
            `errors.JitFallbackWarning` per trace at the user's line
            (`ta.config.set_jit_strict(True)` raises `errors.GraphLoweringError`
            instead); `cf.jit_status` / `cf.jit_report()` say which regions
            compiled, fell back or were too small to compile. "auto" is tiered: each ConcreteFunction runs on the default
            backend first; at its `ta.config.set_jit_threshold` call (default
            100) a daemon thread compiles it with inductor, times both on a copy
            of the arguments and swaps the compiled code in only when faster
            (no call waits; `ConcreteFunction.wait_for_compile(timeout)` and
            `.jit_status` tell). A graph inductor cannot take stays on the
            default backend, with one warning per Function.
        freeze_captures: with jit_compile, a graph traced under no_grad has
            its captured tensors (weights) folded into the compiled code as
            constants, so inductor can pre-pack them for its GEMM kernels
            (several times faster for small Linear stacks) and fold BatchNorm
            into mkldnn-packed convolutions. None (the default) freezes under
            jit_compile="auto", where the frozen code races the code by
            reference and then the default backend, and under True the
            graphs that convolve captured CPU tensors. Each call checks the
            captures' version counters (which their `.data` shares while they
            are frozen) and data pointers: after an in-place update, optimizer step,
            `load_state_dict`, `p.data = t` or `p.data.mul_(2)` the code is
            compiled again by reference, as after `w.numpy()` or a DLPack
            export of a capture (see backends/data_watch.py). Costs a packed
            copy of the weights; results
            equal eager to rounding, not bitwise.
        experimental_relax_shapes: TensorFlow's deprecated name of
            `reduce_retracing` (accepted with a DeprecationWarning).
        name: the name used in graphs and messages.
        max_traces: how many traces to keep (least recently used evicted).
        cuda_graphs: True captures each ConcreteFunction's CUDA work into a
            `torch.cuda.CUDAGraph` once per input layout (shapes, strides,
            dtypes, devices) and replays it: one launch per call instead of
            one per op. Arguments are copied into static buffers; outputs
            come back as new tensors (safe to keep); captured tensors are read
            by reference (in-place updates are seen); random ops draw fresh
            numbers at every replay. Composes with jit_compile=True (not
            "auto"). Runs uncaptured, with one warning per Function, when the
            graph has no CUDA work or when gradients are needed (an argument
            or captured tensor requires grad under grad mode); a graph with a
            GPU->CPU sync (`if`/`while` on a tensor, `.item()`), per-call
            Python (`ta.print`, `ta.py_function`), data-dependent shapes or
            CPU<->GPU copies raises `errors.GraphLoweringError` naming the
            node and line. See `backends/cuda_graphs.py`.

    What differs from eager Python: Python side effects run once per trace;
    Python values (globals, closures, attributes, literal arguments) are
    frozen into the graph; a change of tensor dtype/shape/device, of a literal
    argument, of an object argument, of a module's train/eval mode or of the
    grad mode retraces. `Function.trace_history()` says why each trace happened.
    """
    if experimental_relax_shapes is not None:
        warnings.warn("ta.function: experimental_relax_shapes is deprecated, use reduce_retracing instead",
                      DeprecationWarning, stacklevel=2)
        reduce_retracing = reduce_retracing or experimental_relax_shapes

    @user_facing
    def wrap(f: Callable) -> Any:
        if isinstance(f, (staticmethod, classmethod)):
            # Bound (or not) by the method object's own rule; the Function compiles what it wraps.
            return type(f)(wrap(f.__func__))
        if isinstance(f, (Function, BoundFunction)):
            f = f.python_function
        return Function(f, input_signature=input_signature, autograph=autograph,
                        reduce_retracing=reduce_retracing, jit_compile=jit_compile, name=name, max_traces=max_traces,
                        cuda_graphs=cuda_graphs, freeze_captures=freeze_captures)

    return wrap if func is None else wrap(func)
