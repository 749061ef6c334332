"""ConcreteFunction: one traced graph of a Function, for one input signature, compiled by one backend."""

from __future__ import annotations

import functools
import inspect
import itertools
from typing import Any, Callable

import torch
from torch.autograd import profiler as _profiler

from .. import config, nest
from ..backends import Compiled, add_runtime_error_note, to_fx
from ..errors import GraphLoweringError, InvalidArgumentError
from ..graph import Graph, TensorSpec, Value, autocast_state
from ..state import ModuleStructure, StateEffects, StateReads, apply_at_raise
from ..tracing import GraphTensor
from . import signatures as sig
from .arguments import bind_arguments, call_arguments, collect_inputs
from .signatures import Literal, Structure
from .tracebacks import strip_internal_frames, user_facing

_trace_ids = itertools.count(1)
_any_autocast = torch._C._is_any_autocast_enabled


class ConcreteFunction:
    """One traced graph of a Function, for one input signature. Never retraces.

    Attributes:
        graph: the `Graph`.
        name: e.g. `__inference_predict_3`.
        structured_input_signature: `(args, kwargs)` of TensorSpecs and literals.
        structured_outputs: the outputs as graph tensors, in the returned structure.
        captured_inputs: the real tensors the graph reads by reference.
        arg_types: trace type per bound argument name; `grad`: the grad mode it was traced under;
        guards: (module weakref, training flag) pairs checked at every call.
    """

    def __init__(self, *, graph: Graph, compiled: Compiled, signature: inspect.Signature, arg_types: dict[str, Any],
                 result: Any, guards: tuple, function_name: str, grad: bool,
                 size_check: Callable[[list], str | None] | None = None, notes: tuple = (),
                 checks_autograd: bool = False, autocast: tuple | None = None, decisions: tuple = (),
                 effects: StateEffects | None = None, n_results: int = 0,
                 structure: ModuleStructure | None = None, reads: StateReads | None = None) -> None:
        self.graph = graph
        # What tracing assumed about the sizes of None dims (and `checks_autograd`: about the inputs'
        # requires_grad / is_leaf), checked per call.
        self.size_check = size_check
        self.checks_autograd = checks_autograd
        # The value reads library code decided on while tracing, checked per call with the sizes (`size_check`).
        self.decisions = decisions
        self.autocast = autocast  # the autocast regions in force around the call it was traced for
        self.notes = notes  # what the trace decided by itself (e.g. a loop variable made symbolic)
        self.grad = grad
        self.name = f"__inference_{function_name}_{next(_trace_ids)}"
        self.profile_name = f"{function_name} ({self.name})"  # its range in a torch.profiler trace
        self.arg_types = arg_types
        # What the call path checks before running it: the modes of the modules it ran, the entries of the modules
        # it read (`structure`: no submodule, parameter or buffer replaced), and (`effects.guard`) the Python
        # objects it changed holding what they held when it was traced. Truthy when any.
        self.module_guards = guards
        self.effects = effects
        self.structure = structure
        # The tensors it reads from Python objects at every call (inputs after the arguments'), and whether the
        # objects hold tensors of the traced types.
        self.reads = reads
        self.guards = guards + ((effects,) if effects is not None and effects.guard else ()) + \
            ((structure,) if structure is not None else ()) + ((reads,) if reads is not None else ())
        self.last_used = 0
        # `guards_hold()` for a caller that found no autocast region around the call (the fast call paths): in the
        # common case, the one generated expression of the module guard.
        self.guards_hold_outside_autocast = structure.holds if structure is not None and \
            self.guards == (structure,) and autocast is None else self.guards_hold
        self._compiled = compiled
        self._fn = compiled.fn  # the call path reads this one slot; a tiering backend replaces it
        compiled.subscribe(self._install)
        self._signature = signature
        self._result = result
        single = isinstance(result, GraphTensor) or result is None
        # The traced structure itself is the template: a structure with None for its leaves is not always the
        # same structure (a transformers ModelOutput drops the keys whose value is None).
        self._pack = None if single else functools.partial(nest.pack_sequence_as, nest.flatten_spec(result)[1])
        self._n_results = n_results  # with effects: the graph's outputs before the effect values

    # ----- calling ------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return self.call_bound(self._bind_call(args, kwargs))
        except Exception as e:
            raise strip_internal_frames(e)

    def _bind_call(self, args: tuple, kwargs: dict) -> dict[str, Any]:
        """Bind a call; the literals it was traced with may be left out, as in TensorFlow (`square(t)` for
        `pow.get_concrete_function(a=spec, b=2)`), and a literal passed again must equal the traced one."""
        try:
            return bind_arguments(self._signature, args, kwargs, self.name)
        except TypeError:
            params = self._signature.parameters.values()
            literals = {p.name: self.arg_types[p.name].value for p in params
                        if isinstance(self.arg_types.get(p.name), Literal) and p.name not in kwargs
                        and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
            if not literals:
                raise
            reduced = self._signature.replace(parameters=[p for p in params if p.name not in literals])
            try:
                bound = bind_arguments(reduced, args, kwargs, self.name)
            except TypeError as e:
                raise TypeError(f"{e} (the literals it was traced with, {literals}, may be left out)") from None
            return {p.name: literals[p.name] if p.name in literals else bound[p.name] for p in params}

    def call_bound(self, bound: dict[str, Any], checked: bool = False) -> Any:
        flat = self.flat_inputs(bound)
        if self.size_check is not None and not checked:
            broken = self.size_check(flat)
            if broken is not None:
                raise InvalidArgumentError(f"{self.name} was traced assuming {broken}, which these arguments break "
                                           f"(sizes known only when it runs met an assumption made while tracing); "
                                           f"call the Function, which traces again for them")
        if self.reads is not None and not checked and not self.reads.holds():
            raise InvalidArgumentError(f"{self.name} reads a tensor kept in a Python object at every call, and "
                                       f"{self.reads.reason()}; call the Function, which traces again for it")
        return self.run(flat, bound)

    def flat_inputs(self, bound: dict[str, Any]) -> list[torch.Tensor]:
        """The tensor leaves of the bound arguments, in placeholder order (checked against the trace types)."""
        flat: list[torch.Tensor] = []
        for name, value in bound.items():
            collect_inputs(self.arg_types[name], value, name, flat, self.name)
        return flat

    def sizes_break(self, bound: dict[str, Any]) -> str | None:
        """Why `bound` does not fit this trace (a size its trace types or its size assumptions rule out), or None."""
        try:
            flat = self.flat_inputs(bound)
            return None if self.size_check is None else self.size_check(flat)
        except (TypeError, InvalidArgumentError) as e:
            return str(e)

    def run(self, flat: Any, bound: dict | None = None) -> Any:
        """Run the graph on its flat tensor inputs; the one epilogue every call path shares. `bound`: the call's
        arguments, where the trace changed containers among them (None on the fast path: it has none)."""
        if self.reads is not None:
            flat = self.reads.extend(flat)
        try:
            # One module attribute read when no profiler runs: the per-call cost of the ranges below.
            out = self._fn(*flat) if not _profiler._is_profiler_enabled else self._run_profiled(flat)
        except Exception as e:
            self.note_runtime_error(e)
            if self.effects is not None and self.effects.at_raise:
                # The effects on Python objects made before the op that failed stay, as eagerly.
                apply_at_raise(self.effects, e, self.graph.outputs, self._n_results, bound)
            raise
        if self.effects is not None:
            return self._write_back(out, bound)
        return out if self._pack is None else self._pack(out)

    def _write_back(self, out: tuple, bound: dict | None) -> Any:
        """Apply the trace's effects on Python objects with this call's values; the result without them."""
        n = self._n_results
        effects = self.effects
        effects.apply(out[n:], bound)
        results = effects.results(out[:n], out[n:], bound) if effects.on_results else out[:n]
        if self._pack is None:
            return results[0]
        return self._pack(results)

    def _run_profiled(self, flat: Any) -> Any:
        """A call while `torch.profiler` records: one range named after the function and this trace, and with
        `ta.config.profile_user_lines` one range per user line inside it (default backend code only)."""
        fn = self._fn
        if config.profile_user_lines and fn is self._compiled.default_fn:
            fn = self._compiled.line_profiled() or fn
        with _profiler.record_function(self.profile_name):
            try:
                return fn(*flat)
            except Exception as e:
                if fn is not self._fn:
                    add_runtime_error_note(e, fn)
                raise

    def note_runtime_error(self, e: BaseException) -> None:
        """Name the user line whose op failed while the graph ran (once per exception)."""
        add_runtime_error_note(e, self._compiled.default_fn)

    def _install(self, fn: Callable[..., Any]) -> None:
        self._fn = fn  # one attribute store: the call paths read `cf._fn` once per call

    def guards_hold(self) -> bool:
        """Whether the modes of the modules it ran, and the autocast around the call, are those it was traced
        under, and the modules it read hold the same submodules, parameters and buffers."""
        structure = self.structure
        if structure is not None and not structure.holds():
            return False
        if self.autocast is not None or _any_autocast():
            if autocast_state() != self.autocast:
                return False
        effects = self.effects
        if effects is not None and effects.guard and not effects.guard_holds():
            return False
        reads = self.reads
        if reads is not None and not reads.holds():
            return False
        for ref, training in self.module_guards:
            m = ref()
            if m is None or m.training != training:
                return False
        return True

    # ----- compilation ----------------------------------------------------------------
    @property
    def jit_status(self) -> str:
        """Which code runs: "off" (jit_compile=False: the default backend); with jit_compile=True "compiled"
        (inductor, for at least one region), "below threshold" (no region large enough to compile: the default
        backend's code), "fell back" (inductor refused a region, which runs on the default backend: one warning
        said why), "not called yet" (compiled at the first call), `jit_report()` per region; or with
        jit_compile="auto" "default" (counting calls on the default backend), "compiling" (inductor, in a
        background thread), "compiled", "kept default" (compiled, but not faster than the default backend on the
        caller's first calls after the compile, or nothing worth compiling) or "failed" (stays on the default
        backend; one warning said why)."""
        return self._compiled.status

    def jit_report(self) -> str:
        """What jit_compile did with this trace, one line per region: jit_compile=True: compiled (with the time
        spent in inductor), below the compile threshold (the default backend's code), or fell back to the default
        backend (with inductor's reason); jit_compile="auto": which code runs and the timings that decided it."""
        lines = getattr(self._compiled, "report_lines", None)
        report = getattr(self._compiled, "report", None)
        if lines is not None:
            return "\n".join(lines())
        if report is not None:
            return "\n".join(report.lines())
        return f"graph {self.graph.name}: jit_compile off (the default backend)"

    def wait_for_compile(self, timeout: float | None = None) -> bool:
        """jit_compile="auto": wait up to `timeout` s for a background inductor compile already started
        (by the `ta.config.set_jit_threshold` call); True when the compiled code is now the one called."""
        return self._compiled.wait(timeout)

    def to_fx(self) -> torch.fx.GraphModule:
        """The graph as a `torch.fx.GraphModule` (captures as buffers/parameters, `cond` as `torch.cond`).

        Raises:
            GraphLoweringError: a construct fx cannot express (a `while` loop, a run-time check, a `cond`
                whose branches update state), naming the node and the user's line.
        """
        if self.graph.decisions:
            raise GraphLoweringError(f"cannot lower graph {self.graph.name} to fx: it holds a decision library "
                                     f"code took on the traced call's values ({self.graph.decisions[0]}), which "
                                     f"the GraphModule could not check when it runs")
        return to_fx(self.graph)

    @user_facing
    def export(self, *example_args: Any, strict: bool = False, flat: bool = False, **example_kwargs: Any) -> Any:
        """The graph as a `torch.export.ExportedProgram`: `cond` as `torch.cond`, loops as `torch.while_loop`,
        asserts as `torch._assert_async`, captured tensors as parameters and buffers (updated ones mutated),
        the signature's None dims as `torch.export.Dim`s.

        The program takes and returns the function's own structures, as `torch.export` of the function would:
        `ep.module()(x)` returns what `f(x)` returns (a tensor, a tuple, a dict, a namedtuple...; run-time
        Python numbers as 0-d tensors, Python constants as they were traced). Its inputs are the arguments
        that hold tensors; those traced as Python values are fixed to the traced values. With `flat=True` it
        takes the flat tensor inputs (the tensors of the arguments, in order) and returns a tuple of the
        tensor outputs (constants left out), as ONNX needs. `example_args` are optional: by default zeros of
        the signature's shapes are traced.

        Raises:
            GraphLoweringError: what an exported program cannot hold (`ta.py_function`, `ta.print`, autograd
                inside the graph, a list grown by a `while` loop of unknown length), naming the node and the
                user's line; or torch.export failing on the code of one line.
        """
        from ..exporting import export_graph
        from .export_structured import structured_interface

        example = bound = None
        if example_args or example_kwargs:
            bound = bind_arguments(self._signature, example_args, example_kwargs, self.name)
            example = self.flat_inputs(bound)
        interface = None if flat else structured_interface(self, bound)
        return export_graph(self.graph, example, strict=strict, autocast=self.autocast, interface=interface)

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
        args, kwargs = call_arguments(self._signature, {name: public_type(self.arg_types[name])
                                                        for name in self._signature.parameters})
        return tuple(args), kwargs

    @property
    def output_dtypes(self) -> Any:
        return nest.map_structure(lambda g: g.dtype if isinstance(g, GraphTensor) else None, self._result)

    @property
    def output_shapes(self) -> Any:
        return nest.map_structure(lambda g: g.shape if isinstance(g, GraphTensor) else None, self._result)

    def describe_types(self) -> str:
        return "(" + ", ".join(f"{n}: {sig.describe(public_type(t))}" for n, t in self.arg_types.items()) + ")"

    def pretty_printed_signature(self) -> str:
        lines = ["Input Parameters:"]
        for p in self._signature.parameters.values():
            lines.append(f"  {p.name} ({p.kind.name}): {sig.describe(public_type(self.arg_types[p.name]))}")
        lines.append("Output Type:")
        lines.append("  " + _describe_output(self._result))
        lines.append("Captures:")
        if self.graph.captures:
            lines += [f"  %{v.name}: {TensorSpec.from_tensor(t)!r}" for v, t in self.graph.captures]
        else:
            lines.append("  None")
        return "\n".join(lines)

    def __str__(self) -> str:
        return "ConcreteFunction " + self.pretty_printed_signature()

    def __repr__(self) -> str:
        return f"<ConcreteFunction {self.name} at {id(self):#x}>"


def public_type(t: Any) -> Any:
    """A trace type as users see it: structures as the list/tuple/dict they stand for."""
    if isinstance(t, Structure):
        items = [public_type(i) for i in t.items]
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
            return TensorSpec(tuple(d if type(d) is int else None for d in v.shape), v.dtype, None, v.device)
        return Literal(x) if isinstance(x, (int, float, str, bool, type(None))) else x

    return repr(nest.map_structure(leaf, result))
