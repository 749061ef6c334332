"""Tracing: record every torch call made while a function runs on graph tensors.

`tracing(graph)` makes a trace current (a ContextVar, so threads trace
independently) and activates a TorchFunctionMode for its duration only. Two
paths lead to `record`:

- `GraphTensor.__torch_function__`, operators and methods of graph tensors;
- the mode, which also sees calls with no graph tensor at all: factories
  (`torch.zeros`), random ops (`torch.randn`) and ops on real tensors the
  function closes over (module parameters, buffers). Real tensors become
  captures, passed by reference at every call.

Metadata queries on real tensors (`p.shape`, `p.dim()`) and value reads
(`p.item()`, `bool(p)`) run at once: like any Python value, they are frozen
into the trace.
"""

from __future__ import annotations

import contextvars
import itertools
import keyword
import operator
import os
import sys
import threading
import types
import weakref
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import torch
from torch.overrides import TorchFunctionMode

from ..errors import InaccessibleTensorError, OperatorNotAllowedInGraphError, TraceTimeValueWarning
from .graph import Graph, Node, Op, OpKind, SourceLocation, Value, ValueKind
from .shape_inference import SCALAR_OPERATORS, DataDependentValue, Meta, ShapeInference, UnknownOutputCount
from .tensor import GraphShape, GraphTensor, make_graph_tensor

_current: contextvars.ContextVar["TraceState | None"] = contextvars.ContextVar("torch_autograph_trace", default=None)
_shape_inference = ShapeInference()

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__))
_RESERVED = frozenset(keyword.kwlist) | {"torch", "operator", "math", "inf", "nan", "self", "None", "True", "False", "_", "abs", "slice"}

# A callback (filename, lineno) -> SourceLocation | None for generated code (AutoGraph's
# converted functions), registered by the layer that knows about them.
_origin_mappers: list[Callable[[str, int], SourceLocation | None]] = []


def register_origin_mapper(fn: Callable[[str, int], SourceLocation | None]) -> None:
    """Let generated code (e.g. AutoGraph output) report the user's line instead of its own."""
    if fn not in _origin_mappers:
        _origin_mappers.append(fn)


def map_generated(filename: str, lineno: int) -> SourceLocation | None:
    """The user's line for a line of generated code (AutoGraph output), if it is one."""
    for mapper in _origin_mappers:
        loc = mapper(filename, lineno)
        if loc is not None:
            return loc
    return None


def user_location(skip_packages: bool = True) -> SourceLocation | None:
    """The innermost frame of user code: outside torch_autograph and torch."""
    f = sys._getframe(1)
    while f is not None:
        filename = f.f_code.co_filename
        for mapper in _origin_mappers:
            loc = mapper(filename, f.f_lineno)
            if loc is not None:
                return loc
        if not (filename.startswith(_PACKAGE_DIR) or filename.startswith(_TORCH_DIR) or filename.startswith("<")):
            import linecache

            return SourceLocation(filename, f.f_lineno, f.f_code.co_name, linecache.getline(filename, f.f_lineno).strip())
        f = f.f_back
    return None


class TraceState:
    """Everything one trace accumulates; the current one lives in a ContextVar."""

    def __init__(self, graph: Graph, parent: "TraceState | None" = None) -> None:
        self.graph = graph
        self.parent = parent
        self.root: TraceState = parent.root if parent is not None else self
        self.entry_grad = torch.is_grad_enabled() if parent is None else parent.entry_grad
        # Read once per trace: torch.get_default_device() costs microseconds per call.
        self.default_device = torch.get_default_device() if parent is None else parent.default_device
        self.closed = False
        self._names: set[str] = set() if parent is None else self.root._names
        self._captures: dict[int, GraphTensor] = {}
        self.modules: dict[int, torch.nn.Module] = {}
        self.warned: set = set()  # (kind, user line) of warnings given once per trace
        # A run-time Python number whose __index__ torch's argument parser tried since the last recorded
        # op: if the trace then fails with a TypeError, that refusal is the likely cause.
        self.refused_index: Value | None = None
        # Sub-graph hook: how a value of an enclosing graph enters this one (control flow).
        self.lift_outer: Callable[[GraphTensor], GraphTensor] | None = None

    # ----- names ----------------------------------------------------------------------
    def fresh_name(self, base: str) -> str:
        base = "".join(c if c.isalnum() or c == "_" else "_" for c in base).strip("_") or "v"
        if base[0].isdigit():
            base = "v" + base
        name, i = base, 1
        while name in self._names or name in _RESERVED:
            name = f"{base}_{i}"
            i += 1
        self._names.add(name)
        return name

    # ----- values ---------------------------------------------------------------------
    def placeholder(self, name: str, dtype: torch.dtype, shape: tuple | None, device: torch.device | None,
                    kind: ValueKind = ValueKind.TENSOR) -> GraphTensor:
        value = Value(self.fresh_name(name), dtype, shape, device, kind)
        self.graph.inputs.append(value)
        return GraphTensor(value, self)

    def capture(self, t: torch.Tensor, name: str | None = None) -> GraphTensor:
        """The graph value standing for real tensor `t` (a module parameter, a closure tensor...)."""
        if self.parent is not None:
            outer = self.root.capture(t, name)
            return self.to_graph_tensor(outer)
        gt = self._captures.get(id(t))
        if gt is None:
            value = Value(self.fresh_name(name or self._capture_name(t)), t.dtype, tuple(t.shape), t.device)
            self.graph.captures.append((value, t))
            gt = GraphTensor(value, self)
            self._captures[id(t)] = gt
        return gt

    def _capture_name(self, t: torch.Tensor) -> str:
        """`linear_weight` for a parameter of a module that ran in this trace, else `param` / `const`."""
        for m in reversed(list(self.modules.values())):
            for pname, p in itertools.chain(m.named_parameters(recurse=False), m.named_buffers(recurse=False)):
                if p is t:
                    return f"{type(m).__name__.lower()}_{pname}"
        return "param" if isinstance(t, torch.nn.Parameter) else "const"

    def to_graph_tensor(self, g: GraphTensor) -> GraphTensor:
        """`g` as a value usable in this trace (lifting values of enclosing traces)."""
        if g._trace is self:
            return g
        state = self.parent
        while state is not None:
            if g._trace is state:
                if self.lift_outer is None:
                    raise AssertionError("bug in torch_autograph: a sub-trace without a lifting hook")
                return self.lift_outer(g)
            state = state.parent
        raise leaked_tensor_error(g)

    def to_value(self, obj: Any) -> Any:
        """Replace graph and real tensors in a nest of arguments by graph Values."""
        if isinstance(obj, GraphTensor):
            return self.to_graph_tensor(obj)._value
        if isinstance(obj, torch.Tensor):
            return self.capture(obj)._value
        if isinstance(obj, (list, tuple)):
            items = [self.to_value(x) for x in obj]
            if hasattr(obj, "_fields"):
                return type(obj)(*items)
            return type(obj)(items) if type(obj) in (list, tuple) else tuple(items)
        if isinstance(obj, dict):
            return {k: self.to_value(v) for k, v in obj.items()}
        if isinstance(obj, slice):
            return slice(self.to_value(obj.start), self.to_value(obj.stop), self.to_value(obj.step))
        if hasattr(obj, "__torch_function__") and hasattr(obj, "_ta_graph_value"):
            return self.to_value(obj._ta_graph_value())
        return obj


def current() -> TraceState | None:
    """The trace being recorded in this thread, if any."""
    return _current.get()




# ----- errors ---------------------------------------------------------------------------
def not_allowed(g: GraphTensor, what: str, fix: str, error: type = OperatorNotAllowedInGraphError) -> Exception:
    loc = user_location()
    where = f" at {loc}" if loc else ""
    code = f"\n    {loc.line}" if loc and loc.line else ""
    cls = error if error is not AttributeError else type("GraphAttributeError", (OperatorNotAllowedInGraphError, AttributeError), {})
    return cls(f"{what} is not allowed while tracing: the tensor %{g._value.name} "
               f"({g._value.type_str()}) has no value yet{where}.{code}\nFix: {fix}.")


def holds_none(args: tuple, kwargs: dict) -> bool:
    """None as a positional argument or inside a tuple/list argument: where a dim of `x.shape` may have gone."""
    return any(a is None for a in args) or any(
        any(b is None for b in a) for a in (*args, *kwargs.values()) if isinstance(a, (tuple, list)))


def unknown_dim_error(error: TypeError, fn_name: str, args: tuple, kwargs: dict) -> TypeError:
    """torch's complaint about a None size, explained: the None is most likely a dim unknown in this trace."""
    if getattr(error, "_ta_unknown_dims", False):
        return error
    loc = user_location()
    where = f" at {loc}" if loc else ""
    code = f"\n    {loc.line}" if loc and loc.line else ""
    shapes = [a for a in (*args, *kwargs.values()) if isinstance(a, GraphShape) and None in a]
    what = (f"the shape {tuple(shapes[0])} of a graph tensor, whose None dims are" if shapes else
            "None where a size goes: if it is x.shape[i], that dim is")
    explained = TypeError(f"{error}\n{fn_name}() was given {what} unknown in this trace{where}.{code}\n"
                          f"{_UNKNOWN_DIM_FIX}")
    explained._ta_unknown_dims = True
    return explained


_UNKNOWN_DIM_FIX = (
    "While tracing with a None dim in the input_signature (or with reduce_retracing=True), x.shape shows None "
    "for that dim, as in TensorFlow. Fix: use x.size(i), x.size() or ta.shape(x), which give run-time values "
    "usable as sizes and in arithmetic: torch.zeros(x.size()), torch.full((x.size(0), 3), v), "
    "x.reshape(x.size(0) * 3).")


def explain_trace_error(e: BaseException, state: TraceState) -> None:
    """Add a note to a TypeError that a dim unknown in the trace most likely caused.

    Two causes cannot be caught where they happen: `x.shape[0] * 3` fails in
    user code on None, and torch's argument parser rejects a run-time number
    as the first of varargs sizes (`torch.zeros(n, 2)`) in code AutoGraph did
    not convert, before any Python dispatch.
    """
    if not isinstance(e, TypeError) or getattr(e, "_ta_unknown_dims", False):
        return
    refused = state.refused_index
    if refused is not None:
        note = (f"torch's argument parser refused the run-time Python number %{refused.name} (a value such as "
                f"x.size(0), known only when the graph runs) where it needed a Python int. Converted code "
                f"(AutoGraph, the default) stages such calls; in code AutoGraph does not convert (autograph=False, "
                f"do_not_convert), pass the sizes as one tuple: torch.zeros((n, 2)), p.expand((n, 3)).")
    elif "NoneType" in str(e) and any(v.shape is None or None in v.shape for v in state.graph.inputs
                                      if v.kind is ValueKind.TENSOR):
        note = f"This trace has inputs with dims unknown until the graph runs. {_UNKNOWN_DIM_FIX}"
    else:
        return
    try:
        e.add_note(note)
        e._ta_unknown_dims = True
    except (AttributeError, TypeError):
        pass


def leaked_tensor_error(g: GraphTensor) -> InaccessibleTensorError:
    loc = user_location()
    where = f" (used at {loc})" if loc else ""
    owner = g._trace.graph.name if g._trace is not None else "?"
    return InaccessibleTensorError(
        f"{g!r} is out of scope and cannot be used here{where}: it was created while tracing {owner!r}, "
        f"which has ended. A graph tensor stored in a global, a list or an attribute is symbolic. "
        f"Return it from the function instead.")


# ----- classification of torch callables ------------------------------------------------
_DUNDER_OPS = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "truediv": operator.truediv,
    "floordiv": operator.floordiv, "mod": operator.mod, "pow": operator.pow, "matmul": operator.matmul,
    "and": operator.and_, "or": operator.or_, "xor": operator.xor, "lshift": operator.lshift,
    "rshift": operator.rshift, "lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge,
    "eq": operator.eq, "ne": operator.ne, "neg": operator.neg, "pos": operator.pos, "invert": operator.invert,
    "abs": abs, "getitem": operator.getitem, "setitem": operator.setitem,
}
_INPLACE_DUNDERS = {
    "iadd": "add_", "isub": "sub_", "imul": "mul_", "itruediv": "div_", "ifloordiv": "floor_divide_",
    "imod": "remainder_", "ipow": "pow_", "iand": "bitwise_and_", "ior": "bitwise_or_", "ixor": "bitwise_xor_",
    "ilshift": "bitwise_left_shift_", "irshift": "bitwise_right_shift_",
}
_SCALAR_INPLACE = {
    "add_": operator.add, "sub_": operator.sub, "mul_": operator.mul, "div_": operator.truediv,
    "floor_divide_": operator.floordiv, "remainder_": operator.mod, "pow_": operator.pow,
    "bitwise_and_": operator.and_, "bitwise_or_": operator.or_, "bitwise_xor_": operator.xor,
    "bitwise_left_shift_": operator.lshift, "bitwise_right_shift_": operator.rshift,
}
# Tensor dunders whose functions carry another name (`Tensor.__pow__.__name__ == "pow"`,
# `Tensor.__rtruediv__` is `__rdiv__`): classified by the operator they implement.
_DUNDER_ALIASES = {getattr(torch.Tensor, n): n for n in ("__pow__", "__ipow__", "__rtruediv__", "__itruediv__")}
# Tensor methods a Python operator on a run-time Python number records (`-n` is `Tensor.neg`).
_SCALAR_METHODS = {**SCALAR_OPERATORS, "positive": operator.pos}
_RANDOM = frozenset({
    "rand", "randn", "randint", "randperm", "rand_like", "randn_like", "randint_like", "bernoulli", "multinomial",
    "normal", "poisson", "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout",
    "gumbel_softmax", "rrelu", "uniform_", "normal_", "bernoulli_", "exponential_", "geometric_", "cauchy_",
    "log_normal_", "random_", "native_dropout",
})
# Calls on real tensors that read metadata or values: run now, frozen into the trace.
_RUN_NOW = frozenset({
    "dim", "size", "numel", "nelement", "ndimension", "is_floating_point", "is_complex", "element_size", "stride",
    "is_contiguous", "get_device", "item", "tolist", "numpy", "__bool__", "__int__", "__float__", "__index__",
    "__len__", "__iter__", "__repr__", "__format__", "__str__", "__hash__", "__reduce_ex__", "__array__",
    "data_ptr", "__deepcopy__", "storage", "untyped_storage", "is_nonzero", "equal", "allclose", "__contains__",
    "has_names", "is_signed", "type", "is_pinned", "is_shared", "__dlpack__", "__dlpack_device__", "_is_view",
    "is_set_to", "__array_wrap__", "__reversed__", "register_hook", "retain_grad", "requires_grad_",
    "_record_function_enter_new", "_record_function_exit", "_record_function_exit._RecordFunction",  # profiler ranges
})
_FunctionType = types.FunctionType
_classify_cache: dict[Any, tuple[Op, Callable, bool]] = {}


def _autograd_grad_meta(args: tuple, kwargs: dict) -> tuple[Meta, ...]:
    inputs = kwargs["inputs"] if "inputs" in kwargs else args[1]
    inputs = (inputs,) if isinstance(inputs, Value) else tuple(inputs)
    return tuple(Meta(v.dtype, v.shape, v.device, v.kind) for v in inputs)


# Autograd entry points cannot run on meta tensors: their output metadata is known without shape
# inference. `backward` accumulates into `.grad` at run time: stateful, never pruned, kept in order.
_AUTOGRAD_META: dict[Callable, Callable[[tuple, dict], Any]] = {
    torch.Tensor.backward: lambda args, kwargs: None,
    torch.autograd.backward: lambda args, kwargs: None,
    torch.autograd.grad: _autograd_grad_meta,
}
_STATEFUL_CALLS = frozenset({torch.Tensor.backward, torch.autograd.backward})


def _classify(func: Callable) -> tuple[Op, Callable, bool]:
    """(Op, function used for shape inference, swap the first two args) for a torch callable."""
    hit = _classify_cache.get(func)
    if hit is not None:
        return hit
    name = _DUNDER_ALIASES.get(func) or getattr(func, "__name__", "") or ""
    owner = getattr(func, "__objclass__", None) or getattr(func, "__self__", None)
    descriptor = getattr(func, "__self__", None) if name == "__get__" else None  # `x.T` is `Tensor.T.__get__(x)`
    if type(descriptor).__name__ == "getset_descriptor":
        attr = descriptor.__name__
        result = (Op(OpKind.GETATTR, attr, attr), func, False)
    elif name.startswith("__") and name.endswith("__"):
        core = name[2:-2]
        if core in _INPLACE_DUNDERS:
            method = _INPLACE_DUNDERS[core]
            result = (Op(OpKind.METHOD, method, method, stateful=True), getattr(torch.Tensor, method), False)
        elif core in _DUNDER_OPS:
            fn = _DUNDER_OPS[core]
            result = (Op(OpKind.OPERATOR, fn, core, stateful=core == "setitem"), fn, False)
        elif core.startswith("r") and core[1:] in _DUNDER_OPS:
            fn = _DUNDER_OPS[core[1:]]
            result = (Op(OpKind.OPERATOR, fn, core[1:]), fn, True)
        else:
            result = (Op(OpKind.METHOD, name, core), func, False)
    elif owner in (torch.Tensor, torch._C.TensorBase) or (
            isinstance(owner, type) and issubclass(owner, torch._C.TensorBase)):
        stateful = (name.endswith("_") and not name.endswith("__")) or name in _RANDOM
        result = (Op(OpKind.METHOD, name, name.rstrip("_") or name, stateful=stateful), func, False)
    else:
        stateful = name in _RANDOM or (name.endswith("_") and not name.endswith("__")) or func in _STATEFUL_CALLS
        result = (Op(OpKind.FUNCTION, func, name.rstrip("_") or "call", stateful=stateful), func, False)
    try:
        _classify_cache[func] = result
    except TypeError:
        pass
    return result


def _contains_graph(obj: Any) -> bool:
    if isinstance(obj, GraphTensor):
        return True
    if isinstance(obj, (list, tuple)):
        return any(_contains_graph(x) for x in obj)
    if isinstance(obj, dict):
        return any(_contains_graph(x) for x in obj.values())
    if isinstance(obj, slice):
        return _contains_graph((obj.start, obj.stop, obj.step))
    return False


# ----- recording ------------------------------------------------------------------------
def record(func: Callable, args: tuple, kwargs: dict) -> Any:
    """Record `func(*args, **kwargs)` into the current graph; return graph tensors for its outputs."""
    state = _current.get()
    if state is None:
        for a in _iter_graph_tensors((args, kwargs)):
            raise leaked_tensor_error(a)
        raise AssertionError("bug in torch_autograph: record() outside a trace")
    state.root.refused_index = None
    op, infer_fn, swap = _classify(func)
    if swap:
        args = (args[1], args[0]) + tuple(args[2:])
    vargs = state.to_value(tuple(args))
    vkwargs = state.to_value(kwargs) if kwargs else {}
    if op.kind is OpKind.OPERATOR and all(v.kind is ValueKind.SCALAR for v in _values(vargs)) and _values(vargs):
        pass  # Python-level arithmetic on run-time scalars: infer_fn is already the operator
    elif op.kind is OpKind.METHOD and isinstance(vargs[0], Value) and vargs[0].kind is ValueKind.SCALAR:
        # `i += 1` on a run-time Python number rebinds, as in Python: a plain operator, which
        # remembers the in-place op it stands for in case re-typing makes `i` a tensor.
        inplace = _SCALAR_INPLACE.get(op.target)
        fn = inplace or _SCALAR_METHODS.get(op.target)
        if fn is not None:
            op, infer_fn = Op(OpKind.OPERATOR, fn, op.name, inplace=op if inplace else None), fn
    if "out" in vkwargs:
        op = Op(op.kind, op.target, op.name, stateful=True)
    try:
        with torch._C.DisableTorchFunction():
            autograd_meta = _AUTOGRAD_META.get(func) if type(func) is _FunctionType else None
            meta = autograd_meta(vargs, vkwargs) if autograd_meta is not None else _shape_inference.infer(
                infer_fn, vargs, vkwargs, state.root.default_device)
    except DataDependentValue:
        loc = user_location()
        raise OperatorNotAllowedInGraphError(
            f"{op.name}() returns a Python value computed from tensor data, which is not known while tracing"
            f"{' at ' + str(loc) if loc else ''}.\nFix: use a tensor-returning op (e.g. torch.eq(...).all()) "
            f"so the result stays in the graph.") from None
    except UnknownOutputCount:
        loc = user_location()
        code = f"\n    {loc.line}" if loc and loc.line else ""
        raise OperatorNotAllowedInGraphError(
            f"{op.name}() returns a number of tensors that depends on a size unknown while tracing (a None dim of "
            f"the input_signature or reduce_retracing, or a run-time value such as x.size(0)), but a graph needs "
            f"that number when it is traced{' at ' + str(loc) if loc else ''}.{code}\nFix: give that dim a "
            f"static size, or use ops with a fixed number of results (indexing or narrow instead of split/chunk/"
            f"unbind over that dim, or a loop writing a ta.TensorArray).") from None
    except TypeError as e:
        if holds_none(args, kwargs):
            raise unknown_dim_error(e, op.name, args, kwargs) from None
        loc = user_location()
        if loc is not None:
            e.add_note(f"while tracing {op.name} at {loc}")
        raise
    except Exception as e:
        loc = user_location()
        if loc is not None and hasattr(e, "add_note"):
            e.add_note(f"while tracing {op.name} at {loc}")
        raise
    outputs: list[Value] = []
    result, pattern = _wrap(meta, state, op, outputs)
    if not outputs and not op.stateful:
        return result  # metadata-only result (e.g. torch.result_type): nothing to run
    grad = torch.is_grad_enabled()
    node = Node(op, vargs, vkwargs, tuple(outputs), pattern=pattern,
                origin=user_location(), grad_enabled=None if grad == state.entry_grad else grad)
    state.graph.nodes.append(node)
    if op.kind is OpKind.OPERATOR and op.target is operator.setitem:
        return None
    return result


def record_with_meta(op: Op, args: tuple, kwargs: dict, meta: Meta) -> GraphTensor:
    """Record an op whose output metadata the caller knows (e.g. `int(t)`, which has no meta kernel)."""
    state = _current.get()
    if state is None:
        raise AssertionError("bug in torch_autograph: record_with_meta() outside a trace")
    vargs = state.to_value(tuple(args))
    vkwargs = state.to_value(kwargs) if kwargs else {}
    outputs: list[Value] = []
    result, pattern = _wrap(meta, state, op, outputs)
    grad = torch.is_grad_enabled()
    state.graph.nodes.append(Node(op, vargs, vkwargs, tuple(outputs), pattern=pattern, origin=user_location(),
                                  grad_enabled=None if grad == state.entry_grad else grad))
    return result


def call_python(fn: Callable, *args: Any) -> Any:
    """Record a call of a plain Python function on run-time Python numbers (e.g. `len(range(a, b))`)."""
    return record(fn, args, {})


def _values(obj: Any) -> list[Value]:
    from .graph import iter_values

    return list(iter_values(obj))


def _iter_graph_tensors(obj: Any) -> Iterator[GraphTensor]:
    if isinstance(obj, GraphTensor):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            yield from _iter_graph_tensors(x)
    elif isinstance(obj, dict):
        for x in obj.values():
            yield from _iter_graph_tensors(x)


def _wrap(meta: Any, state: TraceState, op: Op, outputs: list[Value]) -> tuple[Any, Any]:
    """(graph tensors mirroring `meta`, unpacking pattern of Values with None for non-tensor slots)."""
    if isinstance(meta, Meta):
        value = Value(state.fresh_name(op.name), meta.dtype, meta.shape, meta.device, meta.kind, meta.stand_ins)
        outputs.append(value)
        return make_graph_tensor(value, state), value
    if isinstance(meta, (list, tuple)) and not isinstance(meta, str):
        pairs = [_wrap(m, state, op, outputs) for m in meta]
        items = [p[0] for p in pairs]
        return type(meta)(items), tuple(p[1] for p in pairs)
    return meta, None


# ----- the mode ---------------------------------------------------------------------------
class _TracingMode(TorchFunctionMode):
    """Sends every torch call made while tracing to `record` (metadata reads run at once)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if _contains_graph(args) or _contains_graph(kwargs):
            return record(func, args, kwargs)
        name = getattr(func, "__name__", "")
        if name == "__get__":
            owner = getattr(func, "__self__", None)
            attr = getattr(owner, "__name__", None)
            if attr == "grad" and _current.get() is not None:
                _warn_grad_read(args[0])
            if attr not in ("T", "mT", "H", "mH", "real", "imag", "data"):
                return func(*args, **kwargs)
        elif name in _RUN_NOW:
            return func(*args, **kwargs)
        if _current.get() is None:
            return func(*args, **kwargs)
        return record(func, args, kwargs)


def _warn_grad_read(t: torch.Tensor) -> None:
    """Reading `.grad` while tracing gives its trace-time value: say so once per trace and line."""
    state = _current.get()
    loc = user_location()
    key = ("grad", str(loc))
    if key in state.root.warned:
        return
    state.root.warned.add(key)
    import warnings

    warnings.warn(TraceTimeValueWarning(
        f"`.grad` of a {'parameter' if isinstance(t, torch.nn.Parameter) else 'tensor'} with shape "
        f"{tuple(t.shape)} was read while tracing{' at ' + str(loc) if loc else ''}: the graph uses the value it "
        f"had then ({'None' if t.grad is None else 'a tensor from before this call'}), not the gradient "
        f"computed when the graph runs. Code that reads gradients after `loss.backward()` in a traced step "
        f"(e.g. torch.nn.utils.clip_grad_norm_) must run at run time: wrap it in ta.py_function, or use "
        f"ta.GradientTape, whose gradients are graph values."), stacklevel=2)


# A global module hook tells a trace which modules ran, so their train()/eval() mode can
# guard the trace. It is installed only while some thread traces.
_hook_lock = threading.Lock()
_hook_users = 0
_hook_handle = None


def _module_pre_hook(module: torch.nn.Module, inputs: Any) -> None:
    state = _current.get()
    if state is not None:
        state.root.modules[id(module)] = module


_step_hook_handle = None


def _optimizer_step_pre_hook(optimizer: Any, args: Any, kwargs: Any) -> None:
    """An optimizer step while tracing would update parameters once, now, with stale gradients: refuse it."""
    if _current.get() is not None:
        loc = user_location()
        raise RuntimeError(
            f"{type(optimizer).__name__}.step() was called while tracing{' at ' + str(loc) if loc else ''}: it "
            f"would run once, now, with the gradients of an earlier call, instead of at every call of the graph. "
            f"Fix: let AutoGraph convert the function (ta.function(autograph=True), the default), which stages "
            f"optimizer.step() to run when the graph runs, or call ta.py_function(optimizer.step) instead.")


@contextmanager
def tracing(graph: Graph) -> Iterator[TraceState]:
    """Make `graph` the current trace of this thread; record torch calls into it."""
    global _hook_users, _hook_handle, _step_hook_handle
    state = TraceState(graph)
    token = _current.set(state)
    with _hook_lock:
        _hook_users += 1
        if _hook_handle is None:
            _hook_handle = torch.nn.modules.module.register_module_forward_pre_hook(_module_pre_hook)
            from torch.optim.optimizer import register_optimizer_step_pre_hook

            _step_hook_handle = register_optimizer_step_pre_hook(_optimizer_step_pre_hook)
    mode = _TracingMode()
    try:
        with mode:
            yield state
    finally:
        state.closed = True
        _current.reset(token)
        with _hook_lock:
            _hook_users -= 1
            if _hook_users == 0 and _hook_handle is not None:
                _hook_handle.remove()
                _hook_handle = None
                _step_hook_handle.remove()
                _step_hook_handle = None


@contextmanager
def subtrace(graph: Graph, lift_outer: Callable[[GraphTensor], GraphTensor]) -> Iterator[TraceState]:
    """Record into a sub-graph (a branch or loop body) of the current trace."""
    parent = _current.get()
    assert parent is not None, "bug in torch_autograph: subtrace outside a trace"
    graph.parent = parent.graph
    state = TraceState(graph, parent)
    state.lift_outer = lift_outer
    token = _current.set(state)
    try:
        yield state
    finally:
        state.closed = True
        _current.reset(token)


@contextmanager
def reenter(state: TraceState) -> Iterator[TraceState]:
    """Record into an existing sub-trace again (e.g. to convert a branch output after both branches ran)."""
    token = _current.set(state)
    try:
        yield state
    finally:
        _current.reset(token)


# torch modules whose forward never reads `self.training`: their mode cannot change a trace,
# so they need no per-call guard. Subclasses (user code) are always guarded.
_MODE_FREE_MODULES = frozenset(getattr(torch.nn, n) for n in (
    "Linear", "Bilinear", "Identity", "Flatten", "Unflatten", "Sequential", "ModuleList", "ModuleDict",
    "ReLU", "ReLU6", "LeakyReLU", "PReLU", "ELU", "SELU", "CELU", "GELU", "SiLU", "Mish", "Tanh", "Sigmoid",
    "Softplus", "Softsign", "Softmax", "LogSoftmax", "Hardtanh", "Hardswish", "Hardsigmoid", "Tanhshrink",
    "Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d",
    "LayerNorm", "GroupNorm", "Embedding", "MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d",
    "AvgPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
    "Upsample", "PixelShuffle", "ZeroPad2d", "ConstantPad1d", "ConstantPad2d",
) if hasattr(torch.nn, n))


def module_guards(state: TraceState) -> tuple[tuple[weakref.ref, bool], ...]:
    """(module, training flag) for every module that ran during the trace and may read its mode."""
    return tuple((weakref.ref(m), m.training) for m in state.modules.values()
                 if type(m) not in _MODE_FREE_MODULES)
