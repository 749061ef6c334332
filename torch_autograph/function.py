"""`ta.function`: Function (the trace cache) and ConcreteFunction (one traced graph).

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
  ran; a different grad mode. Every retrace records why (`trace_history()`).
"""

from __future__ import annotations

import functools
import inspect
import itertools
import logging
import threading
import traceback
import types
import warnings
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable

import torch

from . import nest
from . import signatures as sig
from .backends.torch_codegen import add_runtime_error_note, compile_graph
from .config import _config
from .graph import tracer
from .graph.graph import Graph, Value, ValueKind
from .graph.passes import eliminate_common_subexpressions, eliminate_dead_code, fold_constants
from .graph.tensor import GraphTensor
from .arguments import (bind_arguments, check_against_spec, collect_inputs, iter_type_leaves, placeholders_for,
                        rebuild_call, resolve_device)
from .signatures import Literal, Structure, TensorSpec
from . import variables

logger = logging.getLogger("torch_autograph")
_Tensor = torch.Tensor
_LITERALS = frozenset({int, float, bool, str, type(None)})
_is_grad_enabled = torch.is_grad_enabled
_trace_ids = itertools.count(1)


@dataclass(frozen=True)
class TraceEvent:
    """One trace of a Function: which one, for what signature, and why it was needed."""

    number: int
    signature: str
    reasons: tuple[str, ...]

    def __str__(self) -> str:
        return f"trace #{self.number} {self.signature}: " + "; ".join(self.reasons)


class _RetraceMonitor:
    """Counts calls and traces of one Python function, across every Function wrapping it."""

    __slots__ = ("calls", "traces", "trace_calls", "warned", "__weakref__")

    def __init__(self) -> None:
        self.calls = 0
        self.traces = 0
        self.trace_calls: list[tuple[int, TraceEvent]] = []  # (call number, event) of the last 5 traces
        self.warned = 0


_monitors: "weakref.WeakKeyDictionary[Any, _RetraceMonitor]" = weakref.WeakKeyDictionary()
_monitors_lock = threading.Lock()


def _monitor_for(fn: Any) -> _RetraceMonitor:
    key = getattr(fn, "__func__", fn)
    with _monitors_lock:
        try:
            m = _monitors.get(key)
            if m is None:
                m = _monitors[key] = _RetraceMonitor()
            return m
        except TypeError:
            return _RetraceMonitor()


# ----------------------------------------------------------------------------------------
class ConcreteFunction:
    """One traced graph of a Function, for one input signature. Never retraces.

    Attributes:
        graph: the `Graph`.
        name: e.g. `__inference_predict_3`.
        structured_input_signature: `(args, kwargs)` of TensorSpecs and literals.
        structured_outputs: the outputs as graph tensors, in the returned structure.
        captured_inputs: the real tensors the graph reads by reference.
    """

    def __init__(self, *, graph: Graph, fn: Callable, signature: inspect.Signature, arg_types: dict[str, Any],
                 result: Any, guards: tuple, function_name: str, grad: bool) -> None:
        self.graph = graph
        self._grad = grad
        self.name = f"__inference_{function_name}_{next(_trace_ids)}"
        self._fn = fn
        self._signature = signature
        self._arg_types = arg_types
        self._result = result
        self._guards = guards
        self._last_used = 0
        self._default_fn = fn  # the default backend's function (error notes; jit_compile="auto" runs it first)
        self._tier = None  # jit_compile="auto": the backends.inductor.Tiered compiling this function when hot
        single = isinstance(result, GraphTensor) or result is None
        template = nest.map_structure(lambda _: None, result) if not single else None
        self._pack = None if single else functools.partial(nest.pack_sequence_as, template)

    # ----- calling ------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        bound = bind_arguments(self._signature, args, kwargs, self.name)
        return self._call_bound(bound)

    def _call_bound(self, bound: dict[str, Any]) -> Any:
        flat: list[torch.Tensor] = []
        for name, value in bound.items():
            collect_inputs(self._arg_types[name], value, name, flat, self.name)
        try:
            out = self._fn(*flat)
        except Exception as e:
            _note_runtime_error(e, self)
            raise
        return out if self._pack is None else self._pack(out)

    def _install(self, fn: Callable) -> None:
        self._fn = fn  # one attribute store: the call paths read `cf._fn` once per call

    @property
    def jit_status(self) -> str | None:
        """jit_compile="auto" only (else None): "default" (counting calls on the default backend),
        "compiling" (inductor, in a background thread), "compiled" (inductor code in use), "kept default"
        (compiled, but timed slower than the default backend on a copy of the arguments: the default stays)
        or "failed" (stays on the default backend; one warning per Function said why)."""
        return None if self._tier is None else self._tier.status

    def wait_for_compile(self, timeout: float | None = None) -> bool:
        """jit_compile="auto": wait up to `timeout` s for a background inductor compile already started
        (by the `ta.config.set_jit_threshold` call); True when the compiled code is now the one called."""
        return self._tier is not None and self._tier.wait(timeout)

    def _guards_hold(self) -> bool:
        for ref, training in self._guards:
            m = ref()
            if m is None or m.training != training:
                return False
        return True

    # ----- inspection ---------------------------------------------------------------
    @property
    def inputs(self) -> list[Value]:
        """Placeholder values followed by capture values."""
        return list(self.graph.inputs) + [v for v, _ in self.graph.captures]

    @property
    def outputs(self) -> list[Value]:
        return [o for o in self.graph.outputs if isinstance(o, Value)]

    @property
    def captured_inputs(self) -> list[torch.Tensor]:
        return self.graph.capture_tensors

    @property
    def structured_outputs(self) -> Any:
        return self._result

    @property
    def structured_input_signature(self) -> tuple[tuple, dict]:
        args, kwargs = [], {}
        for p in self._signature.parameters.values():
            t = _public_type(self._arg_types[p.name])
            if p.kind is p.KEYWORD_ONLY:
                kwargs[p.name] = t
            elif p.kind is p.VAR_POSITIONAL:
                args.extend(t)
            elif p.kind is p.VAR_KEYWORD:
                kwargs.update(t)
            else:
                args.append(t)
        return tuple(args), kwargs

    @property
    def output_dtypes(self) -> Any:
        return nest.map_structure(lambda g: g.dtype if isinstance(g, GraphTensor) else None, self._result)

    @property
    def output_shapes(self) -> Any:
        return nest.map_structure(lambda g: g.shape if isinstance(g, GraphTensor) else None, self._result)

    def pretty_printed_signature(self) -> str:
        lines = ["Input Parameters:"]
        for p in self._signature.parameters.values():
            lines.append(f"  {p.name} ({p.kind.name}): {sig.describe(_public_type(self._arg_types[p.name]))}")
        lines.append("Output Type:")
        lines.append("  " + _describe_output(self._result))
        lines.append("Captures:")
        if self.graph.captures:
            lines += [f"  {id(t)}: {TensorSpec.from_tensor(t)!r}" for _, t in self.graph.captures]
        else:
            lines.append("  None")
        return "\n".join(lines)

    def __str__(self) -> str:
        return "ConcreteFunction " + self.pretty_printed_signature()

    def __repr__(self) -> str:
        return f"<ConcreteFunction {self.name} at {id(self):#x}>"


def _note_runtime_error(e: BaseException, cf: "ConcreteFunction") -> None:
    """Name the user line whose op failed while a graph ran (once per exception)."""
    add_runtime_error_note(e, cf._default_fn)


def _public_type(t: Any) -> Any:
    if isinstance(t, Structure):
        items = [_public_type(i) for i in t.items]
        if t.kind is dict:
            return dict(zip(t.keys, items))
        if t.kind in (list, tuple):
            return t.kind(items)
        return t
    return t


def _describe_output(result: Any) -> str:
    def leaf(x: Any) -> Any:
        if isinstance(x, GraphTensor):
            v = x._value
            return TensorSpec(v.shape, v.dtype, None, v.device)
        return Literal(x) if isinstance(x, (int, float, str, bool, type(None))) else x

    return repr(nest.map_structure(leaf, result))


# ----------------------------------------------------------------------------------------
class Function:
    """A Python function compiled to graphs, one per input signature.

    Create with `ta.function`. Calling it computes the trace type of the
    arguments, runs the matching ConcreteFunction's graph, and traces a new one
    when none matches. See the module docstring for how this differs from eager.
    """

    __autograph_do_not_convert__ = True

    def __init__(self, python_function: Callable, *, input_signature: Any = None, autograph: bool = True,
                 reduce_retracing: bool = False, jit_compile: bool | str = False, name: str | None = None,
                 max_traces: int | None = None, cuda_graphs: bool = False, freeze_captures: bool = False,
                 _instance: Any = None) -> None:
        if jit_compile not in (False, True, "auto"):
            raise ValueError(f"jit_compile must be False, True or 'auto', got {jit_compile!r}")
        if cuda_graphs not in (False, True):
            raise ValueError(f"cuda_graphs must be False or True, got {cuda_graphs!r}")
        if cuda_graphs and jit_compile == "auto":
            raise ValueError("cuda_graphs=True works with jit_compile=False or True, not 'auto': a tiered function "
                             "swaps its code while it runs, which would throw the captured graphs away")
        if freeze_captures not in (False, True):
            raise ValueError(f"freeze_captures must be False or True, got {freeze_captures!r}")
        if freeze_captures and not jit_compile:
            raise ValueError("freeze_captures=True folds captured tensors into inductor's code: it needs "
                             "jit_compile=True or 'auto'")
        self._jit_compile = jit_compile
        self._freeze_captures = freeze_captures
        self._cuda_graphs = cuda_graphs
        self._cuda_graphs_warnings: Any = None  # backends.cuda_graphs.FallbackWarnings, made at the first trace
        self._jit_warned = False
        self._python_function = python_function
        self._autograph = autograph
        self._reduce_retracing = reduce_retracing
        self._instance_ref = _instance
        self._name = name or getattr(python_function, "__name__", type(python_function).__name__)
        self._max_traces = max_traces
        self._signature = self._make_signature()
        self._input_signature = self._check_input_signature(input_signature)
        self._traces: "OrderedDict[int, ConcreteFunction]" = OrderedDict()
        self._by_key: dict[Any, list[ConcreteFunction]] = {}
        self._fast: dict[tuple, tuple[ConcreteFunction, tuple | None]] = {}
        self._mono: tuple | None = None  # (cf, grad mode, dtype, shape, device) of the last 1-tensor call
        self._history: list[TraceEvent] = []
        self._lock = threading.RLock()
        self._monitor = _monitor_for(python_function)
        self._bound: "weakref.WeakKeyDictionary[Any, Function]" = weakref.WeakKeyDictionary()
        self._target: Callable | None = None
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
        return len(self._history)

    def trace_history(self) -> list[TraceEvent]:
        """Every trace made so far, with the reason it was needed (which argument changed, from what to what)."""
        return list(self._history)

    @property
    def concrete_functions(self) -> list[ConcreteFunction]:
        return list(self._traces.values())

    def pretty_printed_concrete_signatures(self, verbose: bool = True) -> str:
        return "\n\n".join(cf.pretty_printed_signature() for cf in self._traces.values())

    # ----- descriptor: decorated methods trace per instance -----------------------------
    def __get__(self, instance: Any, owner: Any = None) -> Any:
        if instance is None or self._instance_ref is not None:
            return self
        try:
            bound = self._bound.get(instance)
        except TypeError:
            bound = None
        if bound is None:
            bound = Function(self._python_function, input_signature=self._input_signature_for_bound(),
                             autograph=self._autograph, reduce_retracing=self._reduce_retracing, name=self._name,
                             max_traces=self._max_traces, jit_compile=self._jit_compile,
                             cuda_graphs=self._cuda_graphs, freeze_captures=self._freeze_captures,
                             _instance=weakref.ref(instance))
            try:
                self._bound[instance] = bound
            except TypeError:
                pass
        return bound

    def _input_signature_for_bound(self) -> Any:
        return self._input_signature

    # ----- calling ------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # Fastest path: one tensor argument matching the most recently used trace (no key built).
        mono = self._mono
        if mono is not None and len(args) == 1 and not kwargs:
            a = args[0]
            cf, grad, dtype, shape, device = mono
            if (type(a) is _Tensor and a.dtype is dtype and a.shape == shape and a.device == device
                    and _is_grad_enabled() is grad and not _config.run_eagerly
                    and (not cf._guards or cf._guards_hold())):
                m = self._monitor
                m.calls = cf._last_used = m.calls + 1
                try:
                    out = cf._fn(a)
                except Exception as e:
                    _note_runtime_error(e, cf)
                    raise
                return out if cf._pack is None else cf._pack(out)
        if not kwargs and not _config.run_eagerly:
            key: list = [_is_grad_enabled()]
            for a in args:
                t = type(a)
                if t is _Tensor:
                    key.append((a.dtype, a.shape, a.device))
                elif t in _LITERALS:
                    key.append((t, a))
                else:
                    break
            else:
                entry = self._fast.get(tuple(key))
                if entry is not None:
                    cf, positions = entry
                    if not cf._guards or cf._guards_hold():
                        m = self._monitor
                        m.calls = cf._last_used = m.calls + 1
                        try:
                            out = cf._fn(*args) if positions is None else cf._fn(*[args[i] for i in positions])
                        except Exception as e:
                            _note_runtime_error(e, cf)
                            raise
                        return out if cf._pack is None else cf._pack(out)
        return self._call_slow(args, kwargs)

    def _call_slow(self, args: tuple, kwargs: dict) -> Any:
        if _config.run_eagerly:
            return self._eager_target()(*args, **kwargs)
        if tracer.current() is not None:
            # Called from inside another trace: inline our Python code into that graph.
            return self._traced_target()(*args, **kwargs)
        bound = bind_arguments(self._signature, args, kwargs, self._name)
        types_ = self._types_of(bound)
        key = (_is_grad_enabled(), types_)
        cf = self._find(key) or self._trace_for(key, bound)
        self._monitor.calls = cf._last_used = self._monitor.calls + 1
        if not kwargs:
            self._remember_fast(args, cf)
        return cf._call_bound(bound)

    def _remember_fast(self, args: tuple, cf: ConcreteFunction) -> None:
        key: list = [_is_grad_enabled()]
        positions = []
        for i, a in enumerate(args):
            t = type(a)
            if t is _Tensor:
                key.append((a.dtype, a.shape, a.device))
                positions.append(i)
            elif t in _LITERALS:
                key.append((t, a))
            else:
                return
        n_flat = sum(isinstance(x, TensorSpec) for x in iter_type_leaves(cf._arg_types.values()))
        if n_flat != len(positions) or id(cf) not in self._traces:
            return  # defaults hold tensors too (only the slow path binds them), or cf was just evicted
        self._fast[tuple(key)] = (cf, None if len(positions) == len(args) else tuple(positions))
        if len(args) == 1 and positions:
            a = args[0]
            self._mono = (cf, key[0], a.dtype, a.shape, a.device)

    def get_concrete_function(self, *args: Any, **kwargs: Any) -> ConcreteFunction:
        """The ConcreteFunction for these arguments (values or TensorSpecs), tracing it if needed."""
        if self._input_signature is not None and not args and not kwargs:
            args = tuple(self._input_signature)
        bound = bind_arguments(self._signature, args, kwargs, self._name)
        key = (_is_grad_enabled(), self._types_of(bound))
        return self._find(key) or self._trace_for(key, bound)

    # ----- the cache ----------------------------------------------------------------
    def _types_of(self, bound: dict[str, Any]) -> tuple:
        if self._input_signature is None:
            return tuple(resolve_device(sig.trace_type(v)) for v in bound.values())
        out = []
        names = list(bound)
        for i, name in enumerate(names):
            value = bound[name]
            if i < len(self._input_signature):
                out.append(check_against_spec(self._input_signature[i], value, name, self._name, self._signature))
            else:
                out.append(sig.trace_type(value))
        return tuple(out)

    def _find(self, key: tuple) -> ConcreteFunction | None:
        for cf in self._by_key.get(key, ()):
            if cf._guards_hold():
                self._traces.move_to_end(id(cf))
                return cf
        grad, types_ = key
        best = None
        for cf in self._traces.values():
            if cf._grad != grad or not cf._guards_hold():
                continue
            ct = tuple(cf._arg_types.values())
            if len(ct) == len(types_) and all(sig.is_subtype(a, b) for a, b in zip(types_, ct)):
                if best is None or sig.generality(ct) < sig.generality(tuple(best._arg_types.values())):
                    best = cf
        if best is not None:
            self._by_key.setdefault(key, []).append(best)
            self._traces.move_to_end(id(best))
        return best

    def _trace_for(self, key: tuple, bound: dict[str, Any]) -> ConcreteFunction:
        with self._lock:
            cf = self._find(key)
            if cf is not None:
                return cf
            grad, types_ = key
            if self._reduce_retracing:
                types_ = self._generalize(grad, types_)
            reasons = self._explain(grad, types_)
            cf = variables.trace_with_creation_rules(self, lambda: self._trace(grad, types_, bound))
            self._by_key.setdefault(key, []).append(cf)
            self._traces[id(cf)] = cf
            cf._last_used = self._monitor.calls + 1  # the newest trace is never the one evicted
            self._evict()
            self._fast = dict(self._fast)  # new dict: readers in other threads never see a resize
            self._mono = None
            self._record_trace(cf, reasons)
            return cf

    def _generalize(self, grad: bool, types_: tuple) -> tuple:
        for cf in reversed(self._traces.values()):
            if cf._grad != grad:
                continue
            ct = tuple(cf._arg_types.values())
            if len(ct) != len(types_):
                continue
            sup = [sig.common_supertype(a, b) for a, b in zip(types_, ct)]
            if all(s is not None for s in sup):
                return tuple(sup)
        return types_

    def _explain(self, grad: bool, types_: tuple) -> list[str]:
        if not self._traces:
            others = self._monitor.traces
            if others:  # e.g. ta.function(f) re-created in a loop, or another instance of a decorated method
                return [f"first call of a new Function for {self._name}; other Function objects wrapping the "
                        f"same Python function traced it {others} time{'s' if others > 1 else ''} before"]
            return ["first call"]
        last = next(reversed(self._traces.values()))
        reasons = []
        if last._grad != grad:
            reasons.append(f"grad mode {'enabled' if last._grad else 'disabled'} -> "
                           f"{'enabled' if grad else 'disabled'}")
        for name, old, new in zip(last._arg_types, last._arg_types.values(), types_):
            reasons += sig.diff(old, new, f"argument {name!r}")
        for ref, training in last._guards:
            m = ref()
            if m is not None and m.training != training:
                reasons.append(f"module {type(m).__name__} at {id(m):#x} switched "
                               f"{'train' if training else 'eval'} -> {'train' if m.training else 'eval'} mode")
        return reasons or ["no trace matched (evicted from the cache, or a new structure)"]

    def _evict(self) -> None:
        limit = self._max_traces or _config.max_traces
        while len(self._traces) > limit:
            victim = min(self._traces.values(), key=lambda c: c._last_used)
            del self._traces[id(victim)]
            for k in [k for k, cfs in self._by_key.items() if victim in cfs]:
                self._by_key[k] = [c for c in self._by_key[k] if c is not victim]
                if not self._by_key[k]:
                    del self._by_key[k]
            self._fast = {k: e for k, e in self._fast.items() if e[0] is not victim}
            self._mono = None

    def _record_trace(self, cf: ConcreteFunction, reasons: list[str]) -> None:
        event = TraceEvent(len(self._history) + 1, self._describe_types(cf), tuple(reasons))
        self._history.append(event)
        logger.info("Tracing %s, %s", self._name, event)
        m = self._monitor
        m.traces += 1
        m.trace_calls.append((m.calls, event))
        del m.trace_calls[:-5]
        recent = m.trace_calls[-5:]
        if len(recent) == 5 and m.calls - recent[0][0] < 10 and m.warned < 2:
            m.warned += 1
            window = max(m.calls - recent[0][0] + 1, len(recent))  # traces by get_concrete_function count too
            why = "\n".join(f"  - {e}" for _, e in recent)
            logger.warning(
                "%d out of the last %d calls to %s triggered retracing. Tracing is expensive; the reasons were:\n%s\n"
                "Common causes: (1) creating the ta.function repeatedly in a loop: define it once, outside; "
                "(2) tensors of changing shapes: pass reduce_retracing=True or an input_signature with None dims; "
                "(3) Python values or new objects as arguments: pass tensors instead.",
                5, window, self._python_function, why)

    def _describe_types(self, cf: ConcreteFunction) -> str:
        return "(" + ", ".join(f"{n}: {sig.describe(_public_type(t))}" for n, t in cf._arg_types.items()) + ")"

    # ----- tracing ------------------------------------------------------------------
    def _trace(self, grad: bool, types_: tuple, bound: dict[str, Any]) -> ConcreteFunction:
        names = list(bound)
        arg_types = dict(zip(names, types_))
        graph = Graph(self._name)
        target = self._traced_target()
        with torch.set_grad_enabled(grad), tracer.tracing(graph) as state:
            values = {n: placeholders_for(state, arg_types[n], bound[n], n) for n in names}
            args, kwargs = rebuild_call(self._signature, values)
            try:
                result = target(*args, **kwargs)
            except Exception as e:
                tracer.explain_trace_error(e, state)
                _add_user_frames(e)
                raise
            result = _finish_outputs(state, graph, result)
            guards = tracer.module_guards(state)
        fold_constants(graph)
        eliminate_common_subexpressions(graph)
        eliminate_dead_code(graph)
        graph.verify()
        return_tuple = not (isinstance(result, GraphTensor) or result is None)
        if self._jit_compile and self._jit_compile != "auto":
            from .backends import inductor

            fn = inductor.compile_graph(graph, return_tuple=return_tuple, grad=grad, freeze=self._freeze_captures)
        else:
            fn = compile_graph(graph, return_tuple=return_tuple)
        if self._cuda_graphs:  # capture the CUDA work once per input layout, replay it (backends/cuda_graphs.py)
            from .backends import cuda_graphs

            if self._cuda_graphs_warnings is None:
                self._cuda_graphs_warnings = cuda_graphs.FallbackWarnings(self._name)
            fn = cuda_graphs.wrap(graph, fn, grad=grad, warnings=self._cuda_graphs_warnings)
        cf = ConcreteFunction(graph=graph, fn=fn, signature=self._signature, arg_types=arg_types, result=result,
                              guards=guards, function_name=self._name, grad=grad)
        if self._jit_compile == "auto":  # tiered: default backend now, inductor in the background once hot
            from .backends import inductor

            cf._tier = inductor.Tiered(graph, fn, return_tuple=return_tuple, grad=grad,
                                       threshold=_config.jit_threshold, install=cf._install,
                                       on_fail=self._jit_fallback, freeze=self._freeze_captures)
            cf._fn = cf._tier.entry()
        return cf

    def _jit_fallback(self, reason: str) -> None:
        """jit_compile="auto" could not compile a graph with inductor: warn once per Function."""
        with _monitors_lock:  # the compile threads of several traces may fail at once
            if self._jit_warned:
                return
            self._jit_warned = True
        warnings.warn(f"ta.function {self._name}: jit_compile='auto' falls back to the default backend: "
                      f"{reason}", RuntimeWarning, stacklevel=2)

    def _make_signature(self) -> inspect.Signature:
        fn = self._python_function
        if isinstance(fn, torch.nn.Module):
            fn = fn.forward  # Module.__call__ only shows (*args, **kwargs)
        try:
            s = inspect.signature(fn)
        except (TypeError, ValueError) as e:
            raise TypeError(f"ta.function needs a callable with an inspectable signature, got {fn!r}: {e}") from None
        if self._instance_ref is not None:
            params = list(s.parameters.values())[1:]
            s = s.replace(parameters=params)
        return s

    def _check_input_signature(self, input_signature: Any) -> tuple | None:
        if input_signature is None:
            return None
        specs = tuple(input_signature)
        params = [p for p in self._signature.parameters.values()]
        if any(p.kind is p.VAR_KEYWORD for p in params):
            raise TypeError(f"{self._name}: input_signature cannot be used with **kwargs in the signature "
                            f"{self._signature}")
        positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        if len(specs) > len(positional) and not any(p.kind is p.VAR_POSITIONAL for p in params):
            raise TypeError(f"{self._name}: input_signature has {len(specs)} entries but the function takes "
                            f"{len(positional)} positional arguments {self._signature}")
        for p in positional[len(specs):]:
            if p.default is p.empty:
                raise TypeError(f"{self._name}: input_signature does not cover argument {p.name!r}, which has "
                                f"no default")
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
            from .autograph import converted_call

            module = fn
            return lambda *a, **k: converted_call(module, a, k)
        if self._autograph:
            fn = _autograph_convert(fn)
        return fn if inst is None else functools.partial(fn, inst)

    def __repr__(self) -> str:
        return f"<ta.Function {self._name} at {id(self):#x}>"


def _autograph_convert(fn: Callable) -> Callable:
    try:
        from .autograph import api
    except ImportError:
        return fn
    convert = getattr(api, "convert", None)
    return fn if convert is None else convert(fn)


def _finish_outputs(state: tracer.TraceState, graph: Graph, result: Any) -> Any:
    """Turn the traced result into graph outputs; returns the structured result of graph tensors."""

    def leaf(x: Any) -> Any:
        if isinstance(x, variables.Variable):
            x = x.read_value()  # a returned Variable gives a tensor with its value at the end of the call
        if isinstance(x, GraphTensor):
            x = state.to_graph_tensor(x)
            # A run-time Python number (e.g. x.size(0) of a None dim) comes back as a tensor, like a
            # trace-time one below, so the output type does not depend on how much shape was known.
            return torch.tensor(x) if x._value.kind is ValueKind.SCALAR else x
        if isinstance(x, torch.Tensor):
            return state.capture(x)
        if isinstance(x, (bool, int, float)):
            return torch.tensor(x)  # recorded by the tracing mode: Python scalars come back as tensors
        return x

    result = nest.map_structure(leaf, result)
    graph.outputs = [x._value if isinstance(x, GraphTensor) else x for x in nest.flatten(result)]
    if isinstance(result, GraphTensor) or result is None:
        graph.outputs = [result._value if result is not None else None]
    return result


def _add_user_frames(e: BaseException) -> None:
    """Attach an "in user code:" block with the user's frames to a trace-time error."""
    if getattr(e, "_ta_user_frames", False):
        return
    lines = ["in user code:"]
    for f in traceback.extract_tb(e.__traceback__):
        loc = tracer.map_generated(f.filename, f.lineno)
        if loc is not None:
            filename, lineno, name, line = loc.filename, loc.lineno, loc.function or f.name, loc.line
        elif f.filename.startswith(tracer._PACKAGE_DIR) or f.filename.startswith(tracer._TORCH_DIR) or \
                f.filename.startswith("<"):
            continue
        else:
            filename, lineno, name, line = f.filename, f.lineno, f.name, f.line
        lines.append(f'    File "{filename}", line {lineno}, in {name}')
        if line:
            lines.append(f"        {line}")
    if len(lines) == 1:
        return
    try:
        e.add_note("\n".join(lines))
        e._ta_user_frames = True
    except (AttributeError, TypeError):
        pass


# ----------------------------------------------------------------------------------------
def function(func: Callable | None = None, *, input_signature: Any = None, autograph: bool = True,
             reduce_retracing: bool = False, jit_compile: bool | str = False, name: str | None = None,
             max_traces: int | None = None, cuda_graphs: bool = False, freeze_captures: bool = False) -> Any:
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
            straight-line regions (backends/regions.py). Raises
            `errors.GraphLoweringError` for a graph or region inductor cannot
            compile; "auto" is tiered: each ConcreteFunction runs on the default
            backend first; at its `ta.config.set_jit_threshold` call (default
            100) a daemon thread compiles it with inductor, times both on a copy
            of the arguments and swaps the compiled code in only when faster
            (no call waits; `ConcreteFunction.wait_for_compile(timeout)` and
            `.jit_status` tell). A graph inductor cannot take stays on the
            default backend, with one warning per Function.
        freeze_captures: with jit_compile, a graph traced under no_grad has
            its captured tensors (weights) folded into the compiled code as
            constants, so inductor can pre-pack them for its GEMM kernels
            (several times faster for small Linear stacks). Each call checks
            the captures' version counters and data pointers: after an
            in-place update, optimizer step, `load_state_dict` or `p.data = t`
            the code is compiled again by reference. A write through
            `p.data` (`p.data.mul_(2)`) is not seen; use `with
            torch.no_grad(): p.mul_(2)` instead. Costs a packed copy of the
            weights; results equal eager to rounding, not bitwise.
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

    def wrap(f: Callable) -> Function:
        if isinstance(f, Function):
            f = f.python_function
        return Function(f, input_signature=input_signature, autograph=autograph,
                        reduce_retracing=reduce_retracing, jit_compile=jit_compile, name=name, max_traces=max_traces,
                        cuda_graphs=cuda_graphs, freeze_captures=freeze_captures)

    return wrap if func is None else wrap(func)
