"""The compile pipeline of one trace: Python -> graph -> passes -> backend -> ConcreteFunction.

    trace(target, ...)      run the (converted) Python on graph tensors: a Graph
    optimize(graph)         constant folding, CSE, dead-code elimination; verify
    options.backend()       the Backend the Function's options select
    backend.compile(graph)  a Compiled callable, wrapped in a ConcreteFunction
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any, Callable

import torch

from .. import nest
from ..backends import Backend, CompileOptions, TorchBackend
from ..errors import InvalidArgumentError
from ..graph import (
    Graph,
    ValueKind,
    eliminate_common_subexpressions,
    eliminate_dead_code,
    fold_constants,
)
from ..staging import STAGING_HOOKS, map_origin
from ..state import (
    Checkpoints,
    ModuleStructure,
    ObjectWatch,
    ReadPlan,
    StateEffects,
    Variable,
    creation_rules,
    module_structure,
    plan_effects,
    plan_reads,
    returned_objects,
    roots_of,
    watch_captures,
)
from ..tracing import (
    SYMBOLIC,
    DecisionCheck,
    GraphArray,
    GraphTensor,
    Knowledge,
    NeedsSizeError,
    Retrace,
    Scope,
    Traced,
    TraceHooks,
    TraceRequest,
    data_dependent_error,
    is_symbolic,
    module_guards,
    refused,
    tracing,
    warn_at_user_line,
)
from .arguments import collect_inputs, placeholders_for, rebuild_call
from .concrete import ConcreteFunction
from .signatures import Identity, Structure
from .tracebacks import add_user_frames


@dataclass
class BackendChoice:
    """A Function's compile options, and the backend they select (made once, at the first trace)."""

    jit_compile: bool | str = False
    cuda_graphs: bool = False
    freeze_captures: bool | None = None  # None: "auto" freezes; True freezes convolutions on the CPU
    function_name: str = ""
    on_jit_fallback: Callable[[str], None] | None = None
    _backend: Backend | None = field(default=None, repr=False)

    def backend(self) -> Backend:
        if self._backend is None:
            self._backend = self._make()
        return self._backend

    def _make(self) -> Backend:
        if self.jit_compile == "auto":
            from ..backends import (
                TieredBackend,  # inductor's modules load only when jit is asked for
            )
            from ..config import get_jit_threshold

            backend: Backend = TieredBackend(get_jit_threshold(), self.on_jit_fallback or (lambda reason: None))
        elif self.jit_compile:
            from ..backends import InductorBackend

            backend = InductorBackend()
        else:
            backend = TorchBackend()
        if self.cuda_graphs:  # capture the CUDA work once per input layout, replay it
            from ..backends import CudaGraphsBackend, FallbackWarnings

            backend = CudaGraphsBackend(backend, FallbackWarnings(self.function_name,
                                                                  emit=warn_at_user_line))
        return backend


# The size that stands for a None dim when a trace from a signature alone (no call's tensor) must decide on it:
# a prime, unlikely to equal a static dim of the model (where broadcasting would specialise on it), and large
# enough for the kernels and pools of a conv net. Each decision taken on it is a guard checked at every call.
SPEC_HINT = 17


@dataclass(frozen=True)
class TraceResult:
    """What one trace gives.

    Attributes:
        graph: the recorded graph.
        result: the function's structured result, of graph tensors.
        guards: the module guards (train/eval modes) checked at every call.
        state: the finished trace (its notes, symbols, decisions).
        effects: its effects on Python objects, replayed after each call (None: none).
        structure: the guard on the modules it read (replaced ones trace again).
        reads: the tensors it read from Python objects, read at each call.
    """

    graph: Graph
    result: Any
    guards: tuple
    state: Scope
    effects: StateEffects | None
    structure: ModuleStructure | None
    reads: ReadPlan | None


def trace(target: Callable, name: str, signature: inspect.Signature, arg_types: dict[str, Any],
          bound: dict[str, Any], grad: bool, backed: bool = False, spec_hint: int | None = None,
          source: tuple = (), hooks: TraceHooks = STAGING_HOOKS) -> TraceResult:
    """Run `target` on placeholders for `arg_types`. `backed`: None dims are backed by the call's sizes, or
    by `spec_hint` where the argument is a TensorSpec alone. `source`: the Python function (and the instance
    it is bound to) whose captured lists, dicts and objects the trace may change."""
    graph = Graph(name)
    watch = ObjectWatch()
    watch.checkpoints = Checkpoints(watch)
    for obj in source[1:]:
        watch.hold(obj)
    if source:
        watch_captures(source[0], watch)
    request = TraceRequest(hooks, backed=backed, spec_hint=spec_hint, python_state=watch,
                           call_tensors=_call_tensors(arg_types, bound, name))
    try:
        with torch.set_grad_enabled(grad), tracing(graph, request) as state:
            values = {n: placeholders_for(state, arg_types[n], bound[n], n) for n in bound}
            for n in bound:
                _watch_argument(watch, arg_types[n], values[n], (n,))
            args, kwargs = rebuild_call(signature, values)
            try:
                result = target(*args, **kwargs)
            except Exception as e:
                ours = data_dependent_error(e, name, map_origin)
                if ours is not None:
                    raise ours from None  # torch's text names its own internals and a debugging doc
                add_user_frames(e)
                raise
            result = finish_outputs(state, graph, result)
            n_results = len(graph.outputs)

            def to_output(x: GraphTensor) -> int:
                graph.outputs.append(state.to_value(state.to_graph_tensor(x)))
                return len(graph.outputs) - 1 - n_results

            captured = {id(t) for _, t in graph.captures}
            reads = plan_reads(watch, captured)  # (before the watch restores the objects)
            effects = plan_effects(watch, to_output, captured - (reads.read_ids() if reads is not None else set()),
                                   returned_objects(graph.outputs[:n_results]))
            guards = module_guards(state)
            structure = module_structure(list(state.trace.modules.ran.values()), {id(t) for _, t in graph.captures},
                                         roots_of(source[0], source[1] if len(source) > 1 else None,
                                                  list(bound.values())) if source else list(bound.values()))
            graph.sizes = state.trace.symbols.input_sizes(graph.inputs)
    finally:
        watch.restore()  # a failed trace too leaves the caller's objects as they were
    return TraceResult(graph, result, guards, state, effects, structure, reads)


def _watch_argument(watch: ObjectWatch, t: Any, value: Any, path: tuple) -> None:
    """Follow the dicts and lists the placeholders of one argument were built into, and its held objects."""
    if isinstance(t, Structure) and type(value) in (list, dict):
        watch.argument(value, path)
        kids = value.items() if type(value) is dict else enumerate(value)
        types_ = dict(zip(t.keys, t.items))
        for k, child in kids:
            if k in types_:
                _watch_argument(watch, types_[k], child, path + (k,))
    elif isinstance(t, Identity):
        watch.hold(value)
    elif isinstance(value, GraphArray):
        watch.paths[id(value)] = path  # a container written back holding it gets the call's array there


def optimize(graph: Graph, grad: bool = False) -> None:
    """The graph passes, in order; each keeps `Graph.verify()` true. `grad`: traced under grad mode."""
    fold_constants(graph)
    eliminate_common_subexpressions(graph, differentiable=grad)
    eliminate_dead_code(graph)
    graph.verify()


_MAX_RETRACES = 3  # each piece of knowledge is learnt once: backed sizes, the singleton check


def concrete_function(choice: BackendChoice, target: Callable, name: str, signature: inspect.Signature,
                      arg_types: dict[str, Any], bound: dict[str, Any], grad: bool, owner: Any = None,
                      source: tuple = (), hooks: TraceHooks = STAGING_HOOKS) -> ConcreteFunction:
    """The whole pipeline for one trace. The one place a trace is done again with what an earlier attempt
    learnt (`Retrace`); each reason joins the trace's notes. `owner`: the Function (its Variables' rule)."""
    knowledge, learnt = Knowledge(), []
    first_error: Retrace | None = None
    for _ in range(_MAX_RETRACES + 1):
        # Traced from a signature alone (get_concrete_function, export, saved_model) and backed: SPEC_HINT stands
        # for the None dims; a call whose sizes break a decision traces again, an exported program checks it.
        spec_hint = SPEC_HINT if knowledge.backed and not _has_tensors(bound) else None
        try:
            with creation_rules(owner, knowledge.singleton_check) as created:
                traced = trace(target, name, signature, arg_types, bound, grad, backed=knowledge.backed,
                               spec_hint=spec_hint, source=source, hooks=hooks)
            if created():
                raise Retrace("the first trace created Variables: traced again, where creating one is an error",
                              singleton_check=True)
        except Retrace as again:
            if first_error is not None and spec_hint is not None:
                raise first_error from None  # what failed with the hint (a kernel larger than 17) is not the user's
            if all(getattr(knowledge, k) == v for k, v in again.knowledge.items()):
                raise  # nothing new to learn: the user's error
            if isinstance(again, NeedsSizeError):
                first_error = again
            knowledge, learnt = knowledge.learn(again.knowledge), learnt + [again]
            continue
        break
    else:
        raise AssertionError(f"bug in torch_autograph: {name} traced {_MAX_RETRACES + 1} times without settling")
    graph, result, state, effects = traced.graph, traced.result, traced.state, traced.effects
    state.trace.notes.extend(f"traced again: {again.reason.splitlines()[0]}" for again in learnt
                       if not isinstance(again, NeedsSizeError))
    if first_error is not None and spec_hint is not None:
        if _pinned(state, graph.inputs):
            # The decisions hold for the hint only (a number of results: `x.split(1)`): the signature's None
            # dims would be one size in disguise. Refused, as before.
            raise first_error
        state.trace.notes.append(f"traced from the signature alone, with {SPEC_HINT} standing for the None dims where "
                           f"code decided on them ({str(first_error).split(' (')[0]}); each decision is checked at "
                           f"every call")
    size_check = _with_grad_check(state.trace.symbols.guard_checker(graph.inputs), graph.inputs, state.trace.assumed.grad)
    size_check = _with_decisions(size_check, state, graph)
    graph.decisions = tuple(d.describe() for d in state.trace.assumed.decisions)
    optimize(graph, grad)
    # None: "auto" freezes (and times frozen against by reference); True freezes where it is sure to pay.
    freeze = choice.freeze_captures if choice.freeze_captures is not None else \
        (True if choice.jit_compile == "auto" else None)
    single = isinstance(result, GraphTensor) or result is None
    options = CompileOptions(return_tuple=not single or effects is not None, grad=grad, freeze_captures=freeze)
    # The tensors read from Python objects are inputs of the compiled graph (read at each call); `graph` keeps
    # them as captures, for export and inspection.
    run_graph, state_reads = traced.reads.lift(graph) if traced.reads is not None else (graph, None)
    compiled = choice.backend().compile(run_graph, options)
    if run_graph is not graph:
        graph.python_source = run_graph.python_source
    return ConcreteFunction(graph=graph, compiled=compiled, signature=signature, arg_types=arg_types, result=result,
                            guards=traced.guards, function_name=name, grad=grad, size_check=size_check,
                            notes=tuple(state.trace.notes), checks_autograd=bool(state.trace.assumed.grad),
                            decisions=graph.decisions,
                            autocast=state.trace.entry.autocast, effects=effects, structure=traced.structure,
                            reads=state_reads,
                            n_results=len(graph.outputs) - (effects.n_outputs if effects is not None else 0))


def _with_grad_check(size_check: Callable | None, inputs: list, assumed: dict[int, tuple[bool, bool]]) -> Any:
    """`size_check` extended with the `requires_grad`/`is_leaf` answers traced code read on its inputs."""
    if not assumed:
        return size_check
    checks = [(i, v.name, assumed[id(v)]) for i, v in enumerate(inputs) if id(v) in assumed]

    def check(flat: list) -> str | None:
        for i, name, (requires_grad, is_leaf) in checks:
            t = flat[i]
            if t.requires_grad != requires_grad or t.is_leaf != is_leaf:
                return f"{name}.requires_grad is {requires_grad} and {name}.is_leaf is {is_leaf}"
        return size_check(flat) if size_check is not None else None

    return check


def _with_decisions(size_check: Callable | None, state: Scope, graph: Graph) -> Any:
    """`size_check` extended with the value reads library code decided on (tracing/decisions.py): each call's
    values are computed before the graph runs, and a call that reads another breaks the trace."""
    if not state.trace.assumed.decisions:
        return size_check
    decided = DecisionCheck(state.trace.assumed.decisions, graph.inputs, graph.captures)

    def check(flat: list) -> str | None:
        broken = size_check(flat) if size_check is not None else None
        return broken if broken is not None else decided(flat)

    return check


def _call_tensors(arg_types: dict[str, Any], bound: dict[str, Any], name: str) -> tuple:
    """The call's tensor for each graph input, in order, where every input has one (none for a trace from a
    signature, or inside another trace)."""
    flat: list = []
    try:
        for n, value in bound.items():
            collect_inputs(arg_types[n], value, n, flat, name)
    except (TypeError, InvalidArgumentError):
        return ()
    if any(isinstance(t, Traced) for t in flat):
        return ()
    return tuple(flat)


def _pinned(state: Scope, inputs: list) -> bool:
    """Whether the size assumptions of a trace backed by SPEC_HINT hold for neither SPEC_HINT - 1 nor + 1 in
    the None dims: what it decided then fixes them to the hint."""
    check = state.trace.symbols.guard_checker(inputs)
    if check is None:
        return False

    def probe(size: int) -> list:
        return [torch.empty([size if type(d) is not int else d for d in v.shape], dtype=v.dtype, device="meta")
                if v.kind is ValueKind.TENSOR and v.shape is not None else None for v in inputs]

    return all(check(probe(n)) is not None for n in (SPEC_HINT - 1, SPEC_HINT + 1))


def _has_tensors(bound: dict[str, Any]) -> bool:
    return any(isinstance(leaf, torch.Tensor) for leaf in nest.flatten(list(bound.values())))


def finish_outputs(state: Scope, graph: Graph, result: Any) -> Any:
    """Turn the traced result into graph outputs; returns the structured result of graph tensors."""

    def leaf(x: Any) -> Any:
        if isinstance(x, GraphArray):
            raise refused(x, "returning it")  # eager returns the array: the graph returns tensors
        if isinstance(x, Variable):
            x = x.read_value()  # a returned Variable gives a tensor with its value at the end of the call
        if isinstance(x, GraphTensor):
            x = state.to_graph_tensor(x)
            return x
        if isinstance(x, torch.Tensor):
            return state.capture(x)
        if is_symbolic(x):
            # A run-time Python number (e.g. x.size(0) of a None dim) comes back as a tensor, like a
            # trace-time one below, so the output type does not depend on how much shape was known.
            return torch.tensor(x)
        if isinstance(x, (bool, int, float)) or isinstance(x, SYMBOLIC):
            return torch.tensor(x)  # recorded by the tracing mode: Python scalars come back as tensors
        if nest.unregistered_holder(x):
            raise TypeError(nest.unregistered_message(x, "the function's result"))
        return x

    result = nest.map_structure(leaf, result)
    graph.outputs = [state.to_value(x) if isinstance(x, Traced) else x for x in nest.flatten(result)]
    if isinstance(result, GraphTensor) or result is None:
        graph.outputs = [state.to_value(result) if result is not None else None]
    return result
