"""One trace by scope: a `Trace` for the whole trace, a `Scope` per graph being recorded.

`tracing(graph, request)` makes the root `Scope` of a new `Trace` current (a
ContextVar, so threads trace independently) and activates the tracing
TorchFunctionMode for its duration only. The `Trace` is built whole from the
request and holds what belongs to the whole trace (entry state, symbols,
names, modules, notes, the call's assumptions, plug-in state). Control flow
records its branches and loop bodies into sub-scopes (`subtrace`), which
share their `trace` and whose reads of values of enclosing scopes are lifted
in through a hook (`lift_outer`).
"""

from __future__ import annotations

import dataclasses
import itertools
import keyword
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import torch

from ..errors import InaccessibleTensorError
from ..graph import CheckOp, Effect, Graph, Node, Op, OpKind, Value, ValueKind, autocast_state, map_nest
from ..naming import Namer, identifier
from .context import Traced, activate, current
from .guards import TracedModules
from .hooks import NO_REQUEST, ObjectTracker, TraceHooks, TraceRequest
from .lists import GraphList
from .locations import user_location
from .messages import hidden_value_error, leaked_tensor_error
from .meta import MetaEngine, meta_example
from .numbers import traced
from .recording import TracingMode
from .symbols import SYMBOLIC, SymbolTable, constant_of
from .tensor import GraphTensor

_RESERVED = frozenset(keyword.kwlist) | {"torch", "operator", "math", "inf", "nan", "self", "None", "True", "False",
                                         "_", "abs", "slice",
                                         # functions that size expressions call in generated code
                                         "max", "min", "int", "float", "bool", "round", "pow"}



def _may_fail(node: Node) -> bool:
    """Whether `node` may fail as the graph runs: not a pure computation of numbers (a size), which a `try` keeps
    before its body."""
    return bool(node.subgraphs) or node.op.kind is OpKind.CONTROL or not node.op.pure or \
        any(v.kind is not ValueKind.SCALAR for v in node.outputs)


@dataclass(frozen=True)
class CallEntry:
    """The call's state when the trace began: grad mode, autocast, torch's default device (read once: it costs
    microseconds per call)."""

    grad: bool
    autocast: tuple | None
    device: torch.device


class CallAssumptions:
    """What a trace took from the call beyond its types, each a guard of the trace.

    Attributes:
        call_inputs: id(input Value) -> the call's tensor (empty for a trace from a signature alone), paired as
            the placeholders are made.
        decisions: the value reads library code decided on those tensors (tracing/decisions.py).
        grad: id(input Value) -> the (requires_grad, is_leaf) of the call's tensor that traced code read.
    """

    def __init__(self, call_tensors: tuple) -> None:
        self._call_tensors = call_tensors
        self.call_inputs: dict[int, torch.Tensor] = {}
        self.decisions: list = []
        self.grad: dict[int, tuple[bool, bool]] = {}

    def pair(self, value: Value, index: int) -> None:
        """The `index`-th graph input `value` stands for the call's `index`-th tensor, if there is one."""
        if index < len(self._call_tensors):
            self.call_inputs[id(value)] = self._call_tensors[index]


class Trace:
    """What one root trace accumulates across all its graphs, built whole from its `TraceRequest`.

    Attributes:
        request: what it was asked to do (plug-ins, backed sizes, spec hint, the call's tensors).
        root: the scope of its top-level graph.
        entry: the call's grad mode, autocast and default device when it began.
        symbols, engine: run-time sizes and numbers (symbols.py), output metadata (meta.py).
        namer: the names of the values of all its graphs.
        modules: the modules that ran, those running, their modes (guards.py).
        notes: what it decided by itself (a loop variable made symbolic), for its history.
        assumed: what it took from the call beyond its types (guards).
        python_state: the Python objects it may change, checked around each sub-trace (None once it ended).
        grads: what the `.grad` plug-ins keep (`TraceHooks.grads_state`).
        captures: id(real tensor) -> the graph tensor capturing it.
    """

    def __init__(self, request: TraceRequest, root: "Scope") -> None:
        # (without the Python objects it follows: `python_state` lets go of them when the trace ends)
        self.request = dataclasses.replace(request, python_state=None)
        self.root = root
        self.entry = CallEntry(torch.is_grad_enabled(), autocast_state(), torch.get_default_device())
        self.symbols = SymbolTable()
        self.engine = MetaEngine(self.symbols, self.entry.device)
        self.namer = Namer(_RESERVED)
        self.modules = TracedModules()
        self.notes: list[str] = []
        self.assumed = CallAssumptions(request.call_tensors)
        self.python_state: ObjectTracker | None = request.python_state
        hooks = request.hooks
        self.grads: Any = hooks.grads_state() if hooks.grads_state is not None else None
        self.captures: dict[int, GraphTensor] = {}

    @property
    def hooks(self) -> TraceHooks:
        """The plug-ins it runs with."""
        return self.request.hooks


class Scope:
    """One graph being recorded (the top level, a branch, a loop body) and what it defines; the current one lives
    in a ContextVar. Everything that belongs to the whole trace is on `trace`."""

    def __init__(self, graph: Graph, parent: "Scope | None" = None, request: TraceRequest = NO_REQUEST,
                 lift_outer: Callable[[Value], Value] | None = None) -> None:
        self.graph = graph
        self.parent = parent
        self.trace: Trace = parent.trace if parent is not None else Trace(request, self)
        self.closed = False
        self.failed: BaseException | None = None  # what a sub-trace raised (its values may leak through an `except`)
        self.sym_values: dict[Any, Value] = {}  # expression -> the Value computing it in this graph
        self.size_values: dict[Any, Value] = {}  # size symbol -> the `x.size(d)` Value reading it here
        self._defined: set[int] = set()  # ids of this graph's inputs, captures and node outputs
        self._hidden: dict[int, tuple[Value, str]] = {}  # values no longer readable here, and why (`hide`)
        self.augmented_symbols: set = set()  # symbols of numbers `n` of an `n op= m` traced here (numbers.py)
        self._checking = False  # adding the check nodes of run-time size assumptions
        # Sub-graph hook: how a value of an enclosing graph enters this one (control flow).
        self.lift_outer = lift_outer
        # The `try` bodies being traced in this graph whose failure a handler node catches (subtraces/handlers).
        self.open_tries: list = []

    @property
    def root(self) -> "Scope":
        """The scope of the trace's top-level graph."""
        return self.trace.root

    # ----- names ----------------------------------------------------------------------
    def fresh_name(self, base: str) -> str:
        """A name for a value of this trace (unique among all its graphs), derived from `base`."""
        return self.trace.namer.new_symbol(identifier(base))

    # ----- values ---------------------------------------------------------------------
    def placeholder(self, name: str, dtype: torch.dtype, shape: tuple, device: torch.device | None,
                    hints: tuple | None = None, requires_grad: bool | None = None,
                    grad_hint: tuple[bool, bool] | None = None) -> GraphTensor:
        """A graph input. None dims of `shape` become size symbols: unbacked (any size) unless this trace is
        `backed`, where they are backed by `hints` (the call's sizes) so that library code may decide on them.

        `requires_grad` None: it depends on each call's tensor. Reading it while tracing is then an error,
        unless `grad_hint` gives the call's tensor's (requires_grad, is_leaf): the answer is that, and the
        trace is kept for the calls whose tensor agrees (`grad_assumptions`).
        """
        name = self.fresh_name(name)
        if all(d is not None for d in shape):
            example = meta_example(tuple(shape), dtype, requires_grad=bool(requires_grad))
            value = Value(name, dtype, tuple(shape), device, ValueKind.TENSOR, example)
        else:
            syms = {d: self.trace.symbols.input_symbol(name, d, None if hints is None or not self.trace.request.backed else hints[d])
                    for d, size in enumerate(shape) if size is None}
            sizes = tuple(syms.get(d, size) for d, size in enumerate(shape))
            example = self.trace.engine.example(sizes, dtype, device, requires_grad=bool(requires_grad))
            value = Value(name, dtype, sizes, device, ValueKind.TENSOR, example)
            for d, sym in syms.items():
                self.trace.symbols.bind_input(sym, value, d)
        self.add_input(value)
        gt = GraphTensor(value, self, requires_grad=bool(requires_grad), origin="input",
                         unknown_grad=requires_grad is None)
        if grad_hint is not None:
            gt._grad_hint = (id(value), *grad_hint)
        return gt

    def wrap(self, value: Value, requires_grad: bool = False, unknown_grad: bool = False,
             origin: str = "node") -> Any:
        """The object user code sees for `value`: a GraphTensor, a GraphList, or a traced number."""
        if value.kind is ValueKind.TENSOR:
            return GraphTensor(value, self, requires_grad=requires_grad, origin=origin, unknown_grad=unknown_grad)
        if value.kind is ValueKind.LIST:
            return GraphList(value, self)
        example = value.example
        if not isinstance(example, SYMBOLIC):
            example = self.trace.symbols.from_value(value)  # a number this node makes: a symbol of its own
        elif self.trace.symbols.needs_source(example):
            self.trace.symbols.bind_value(example, value)  # a fresh symbol torch made (a fake `.item()`)
        else:
            self.sym_values.setdefault(self.trace.symbols.env.replace(example.node.expr), value)
        return traced(example)

    def capture(self, t: torch.Tensor, name: str | None = None) -> GraphTensor:
        """The graph value standing for real tensor `t` (a module parameter, a closure tensor...).

        A graph tensor is returned as a value of this trace (lifted from an enclosing one if need be).
        """
        if isinstance(t, GraphTensor):
            return self.to_graph_tensor(t)
        if self.parent is not None:
            return self.to_graph_tensor(self.root.capture(t, name))
        gt = self.trace.captures.get(id(t))
        if gt is None:
            example = meta_example(tuple(t.shape), t.dtype, tuple(t.stride()), t.requires_grad)
            value = Value(self.fresh_name(name or self._capture_name(t)), t.dtype, tuple(t.shape), t.device,
                          ValueKind.TENSOR, example)
            self.graph.captures.append((value, t))
            self._defined.add(id(value))
            gt = GraphTensor(value, self, requires_grad=t.requires_grad, origin="capture")
            self.trace.captures[id(t)] = gt
        return gt

    def _capture_name(self, t: torch.Tensor) -> str:
        """`linear_weight` for a parameter of a module that ran in this trace, else `param` / `const`."""
        for m in reversed(list(self.trace.modules.ran.values())):
            for pname, p in itertools.chain(m.named_parameters(recurse=False), m.named_buffers(recurse=False)):
                if p is t:
                    return f"{type(m).__name__.lower()}_{pname}"
        return "param" if isinstance(t, torch.nn.Parameter) else "const"

    def record_size(self, value: Value, dim: int) -> Value:
        """A node reading `value.size(dim)` into this trace's graph: the run-time value of a size symbol."""
        example = value.shape[dim] if isinstance(value.shape[dim], torch.SymInt) else None
        out = Value(self.fresh_name(f"{value.name}_size{dim}"), torch.int64, (), None, ValueKind.SCALAR, example)
        self.add_node(Node(Op(OpKind.METHOD, "size", "size", pure=True), (value, dim), {}, (out,), pattern=out))
        return out

    def add_node(self, node: Node) -> None:
        """Append `node` to this trace's graph (the one way nodes are added while tracing).

        A node recorded without a user line (a size expression, a loop counter) gets the line being run, and
        every node the path of the module running it, so that pictures and messages can place it.
        """
        if node.origin is None:
            node.origin = user_location()
        if not node.op.effects & Effect.RAISES and _may_fail(node) and self._in_try_body():
            # In a branch or loop body inside a `try` body: its failure is what runs the handler, as eagerly,
            # so it is never pruned, even where nothing reads it (the `try` body's own nodes: handlers.py).
            node.op = dataclasses.replace(node.op, effects=node.op.effects | Effect.RAISES)
        if node.scope is None and self.trace.modules.stack:
            node.scope = self.trace.modules.stack[-1][1]
        self.graph.nodes.append(node)
        self._defined.update(id(v) for v in node.outputs)
        if self.parent is None and getattr(self.trace.python_state, "checkpoints", None) is not None:
            self.trace.python_state.checkpoints.at_node(node, current() is self)  # (state/effects_at_raise.py)
        state: Scope | None = self
        while state is not None:  # the `try` bodies it is recorded in note the bindings it runs under
            for token in state.open_tries:
                token.note(node)
            state = state.parent
        if self.trace.symbols.active and not self._checking:
            self._check_runtime_asserts()

    def _in_try_body(self) -> bool:
        """Whether this sub-trace records inside a `try` body of an enclosing trace."""
        outer = self.parent
        while outer is not None:
            if outer.open_tries:
                return True
            outer = outer.parent
        return False

    def _check_runtime_asserts(self) -> None:
        """Check nodes for what torch assumed, while recording, about sizes known only when the graph runs.

        `x[mask] + z` makes torch assume the mask's count equals `z`'s length (else it would broadcast) and
        compute every later size from that: the graph must check it where the count exists.
        """
        new = self.trace.symbols.new_runtime_asserts()
        if not new:
            return
        self._checking = True
        try:
            loc = user_location()
            for ra in new:
                cond = self.trace.symbols.assert_value(ra.expr, self)
                if cond is None:
                    continue  # about symbols torch made inside a kernel and never showed: nothing reads them
                what = self.trace.symbols.describe(ra.expr, self)
                message = (f"the graph was traced assuming {what}{f' at {loc}' if loc else ''}, which this call "
                           f"breaks (eager code might broadcast or take another path there); make the sizes "
                           f"explicit (expand, reshape, or a fixed-length slice) so that the program does not "
                           f"depend on it")
                check = CheckOp(message, label=f"assumed {what}")
                self.add_node(Node(Op(OpKind.CONTROL, check, "check", effects=Effect.RAISES), (cond,), {}, (),
                                   origin=loc))
        finally:
            self._checking = False

    def add_input(self, value: Value) -> None:
        """Make `value` an input of this trace's graph (a placeholder, or a sub-graph's read of an outer value)."""
        if id(value) not in self._defined:
            self.graph.inputs.append(value)
            self._defined.add(id(value))
            if self.parent is None:
                self.trace.assumed.pair(value, len(self.graph.inputs) - 1)

    def refresh_defined(self) -> None:
        """Recompute which values this graph has (after re-typing replaced some of them)."""
        g = self.graph
        self._defined = {id(v) for v in g.inputs} | {id(v) for v, _ in g.captures} | {
            id(v) for n in g.nodes for v in n.outputs}

    def definer(self, value: Value) -> "Scope | None":
        """The nearest trace (this one or an enclosing one) whose graph has `value`, or None."""
        state = self
        while state is not None:
            if id(value) in state._defined:
                return state
            state = state.parent
        return None

    def resolve(self, value: Value) -> Value:
        """`value` as a value of this trace: lifted in from the enclosing trace that has it."""
        owner = self.definer(value)
        if owner is None:  # a value of a loop body or branch that has ended, still held somewhere
            raise InaccessibleTensorError(f"%{value.name} belongs to a sub-graph that has ended: it is not visible here")
        return self.lift_value(value, owner)

    # ----- values of enclosing traces ------------------------------------------------------
    def lift_value(self, v: Value, owner: "Scope") -> Value:
        """`v`, a value of trace `owner` (this one or an enclosing one), as a value of this trace."""
        if owner is self:
            return v
        state = self.parent
        while state is not None:
            if owner is state:
                if self.lift_outer is None:
                    raise AssertionError("bug in torch_autograph: a sub-trace without a lifting hook")
                return self.lift_outer(self.parent.lift_value(v, owner))
            state = state.parent
        raise AssertionError(f"bug in torch_autograph: %{v.name} belongs to no enclosing trace")

    def _owns(self, other: "Scope") -> bool:
        state = self
        while state is not None:
            if state is other:
                return True
            state = state.parent
        return False

    def hide(self, value: Value, why: str) -> None:
        """Refuse `value` from now on, saying `why` (a value a `try` body made, which a handler's path lacks)."""
        self._defined.discard(id(value))
        self._hidden[id(value)] = (value, why)

    def to_graph_tensor(self, g: Any) -> Any:
        """`g` (a GraphTensor or GraphList) as a value usable in this trace (lifting values of enclosing traces)."""
        if g._trace is self:
            if self._hidden and id(g._value) in self._hidden:
                raise hidden_value_error(g, self._hidden[id(g._value)][1])
            return g
        if g._trace is None or not self._owns(g._trace):
            raise leaked_tensor_error(g)
        value = self.lift_value(g._value, g._trace)
        if isinstance(g, GraphTensor):
            lifted = GraphTensor(value, self, requires_grad=g.raw_requires_grad(), origin=g._origin,
                                 unknown_grad=g._rg_unknown)
            lifted._grad_hint = g._grad_hint
            return lifted
        return GraphList(value, self)

    def to_value(self, obj: Any) -> Any:
        """Replace graph values, real tensors and symbolic numbers in a nest of arguments by graph Values."""
        return map_nest(self._leaf_value, obj)

    def _leaf_value(self, x: Any) -> Any:
        if isinstance(x, Traced):
            return self.to_graph_tensor(x)._value
        if isinstance(x, torch.Tensor):
            return self.capture(x)._value
        if isinstance(x, SYMBOLIC):
            x = constant_of(x)
            return self.trace.symbols.value_of(x, self) if isinstance(x, SYMBOLIC) else x
        if hasattr(x, "_ta_graph_value"):  # a Variable: the tensor it stands for
            return self.to_value(x._ta_graph_value())
        return x


@contextmanager
def tracing(graph: Graph, request: TraceRequest = NO_REQUEST) -> Iterator[Scope]:
    """Make `graph` the current trace of this thread; record torch calls into it as `request` asks (its plug-ins,
    its sizes, the Python objects it follows)."""
    state = Scope(graph, request=request)
    try:
        with ExitStack() as stack:
            for around in request.hooks.around_trace:
                stack.enter_context(around())
            stack.enter_context(activate(state))
            stack.enter_context(TracingMode())
            yield state
    finally:
        state.closed = True
        state.trace.python_state = None  # the objects it followed may be collected now (graph tensors hold the trace)
        state.trace.modules.modes.restore()


@contextmanager
def subtrace(graph: Graph, lift_outer: Callable[[Value], Value]) -> Iterator[Scope]:
    """Record into a sub-graph (a branch or loop body) of the current trace."""
    parent = current()
    assert parent is not None, "bug in torch_autograph: subtrace outside a trace"
    graph.parent = parent.graph
    state = Scope(graph, parent, lift_outer=lift_outer)
    try:
        with activate(state):
            yield state
    finally:
        state.closed = True


@contextmanager
def reenter(state: Scope) -> Iterator[Scope]:
    """Record into an existing sub-trace again (e.g. to convert a branch output after both branches ran)."""
    with activate(state):
        yield state
