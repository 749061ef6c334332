"""GraphTensor, the symbolic tensor user code sees while tracing, and how calls on it are recorded.

It is not a `torch.Tensor`. Torch functions reach it through
`__torch_function__`; Python operators, indexing and tensor methods are
defined here and recorded as graph nodes by `record`. A TorchFunctionMode,
active only while tracing, sends the calls with no graph tensor at all to
`record` too: factories (`torch.zeros`), random ops (`torch.randn`) and ops on
real tensors the function closes over (module parameters, buffers), which
become captures, passed by reference at every call.

Metadata (`shape`, `dtype`, `device`, `dim()`, ...) is answered statically,
because modules such as `nn.BatchNorm1d` branch on it in Python. A dim that is
unknown while tracing is None in `x.shape`; `x.size(i)` gives a run-time value
usable in `view`, `reshape`, `zeros` and arithmetic. Metadata queries on real
tensors (`p.shape`, `p.dim()`) and value reads (`p.item()`, `bool(p)`) run at
once: like any Python value, they are frozen into the trace.
"""

from __future__ import annotations

import operator
import types
from dataclasses import replace
from typing import Any, Callable, Iterator

import torch
from torch.overrides import TorchFunctionMode

from ..errors import OperatorNotAllowedInGraphError
from ..graph import Effect, Node, Op, OpKind, Value, ValueKind, iter_values
from ..graph.walkers import iter_leaves
from .context import current
from .graph_shape import GraphShape
from .locations import user_location
from .messages import (autocast_error, autocast_state, holds_none, leaked_tensor_error, not_allowed,
                       unknown_dim_error, warn_grad_read)
from .shape_inference import SCALAR_OPERATORS, DataDependentValue, Meta, UnknownOutputCount, shape_inference


# Tensor attributes that are values computed from the tensor (recorded), not metadata.
_RECORDED_ATTRS = frozenset({"T", "mT", "H", "mH", "real", "imag", "data"})


class GraphTensor:
    """A tensor that exists only in the graph being traced."""

    __slots__ = ("_value", "_trace", "__weakref__")

    def __init__(self, value: Value, trace: Any) -> None:
        self._value = value
        self._trace = trace

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        return record(func, args, kwargs or {})

    # ----- static metadata -------------------------------------------------------------
    @property
    def shape(self) -> GraphShape | None:
        s = self._value.shape
        return None if s is None else GraphShape(s)

    @property
    def dtype(self) -> torch.dtype:
        return self._value.dtype

    @property
    def device(self) -> torch.device:
        return self._value.device

    @property
    def ndim(self) -> int:
        return self.dim()

    @property
    def is_cuda(self) -> bool:
        return self._value.device is not None and self._value.device.type == "cuda"

    @property
    def layout(self) -> torch.layout:
        return torch.strided

    def dim(self) -> int:
        s = self._value.shape
        if s is None:
            raise not_allowed(self, "asking for the rank of a tensor of unknown rank",
                                     "give the input a TensorSpec with a known rank")
        return len(s)

    ndimension = dim

    def size(self, dim: int | None = None) -> Any:
        s = self._value.shape
        if dim is None:
            if s is None:
                raise not_allowed(self, "x.size() of a tensor of unknown rank", "use x.size(i) per dim")
            return tuple(d if d is not None else record(torch.Tensor.size, (self, i), {})
                         for i, d in enumerate(s))
        if s is not None and -len(s) <= dim < len(s) and s[dim] is not None:
            return s[dim]
        return record(torch.Tensor.size, (self, dim), {})

    def numel(self) -> Any:
        s = self._value.shape
        if s is not None and None not in s:
            n = 1
            for d in s:
                n *= d
            return n
        return record(torch.Tensor.numel, (self,), {})

    nelement = numel

    def is_floating_point(self) -> bool:
        return self._value.dtype.is_floating_point

    def is_complex(self) -> bool:
        return self._value.dtype.is_complex

    def element_size(self) -> int:
        return torch.empty((), dtype=self._value.dtype, device="meta").element_size()

    def __len__(self) -> int:
        s = self._value.shape
        if s is None or not s or s[0] is None:
            what = "a scalar tensor" if s == () else "a tensor whose first dim is unknown"
            raise not_allowed(self, f"len() of {what}", "use x.size(0) (a run-time value) instead of len(x)",
                                     error=TypeError)
        return s[0]

    # ----- values Python would need now ------------------------------------------------
    def __bool__(self) -> bool:
        raise not_allowed(self, "using a graph tensor as a Python bool", _CONTROL_FLOW_FIX)

    def __iter__(self):
        raise not_allowed(self, "iterating over a graph tensor", _CONTROL_FLOW_FIX)

    def __int__(self) -> int:
        raise not_allowed(self, "int() of a graph tensor", "use x.to(torch.int64) to stay in the graph")

    def __float__(self) -> float:
        raise not_allowed(self, "float() of a graph tensor", "use x.to(torch.float32) to stay in the graph")

    def __index__(self) -> int:
        if self._value.kind is ValueKind.SCALAR and self._trace is not None:
            self._trace.root.refused_index = self._value  # torch's parser asks, then swallows our error
        raise not_allowed(self, "using a graph tensor as a Python index", _VALUE_FIX)

    def item(self) -> Any:
        raise not_allowed(self, "x.item()", _VALUE_FIX)

    def tolist(self) -> Any:
        raise not_allowed(self, "x.tolist()", _VALUE_FIX)

    def numpy(self) -> Any:
        raise not_allowed(self, "x.numpy()", _VALUE_FIX)

    def __array__(self, *args: Any) -> Any:
        raise not_allowed(self, "converting a graph tensor to a numpy array", _VALUE_FIX)

    # ----- indexing and in-place -----------------------------------------------------
    def __getitem__(self, idx: Any) -> Any:
        return record(torch.Tensor.__getitem__, (self, idx), {})

    def __setitem__(self, idx: Any, value: Any) -> None:
        record(torch.Tensor.__setitem__, (self, idx, value), {})

    def __getattr__(self, name: str) -> Any:
        attr = getattr(torch.Tensor, name, None)
        if attr is None or name.startswith("__"):
            raise AttributeError(f"'GraphTensor' object has no attribute {name!r} (a torch.Tensor has none either)")
        if name in _RECORDED_ATTRS:
            return record(attr.__get__, (self,), {})
        if callable(attr):
            return _BoundMethod(attr, self)
        raise not_allowed(self, f"reading x.{name}", f"{name} is not known while tracing", error=AttributeError)

    __hash__ = object.__hash__

    def __repr__(self) -> str:
        v = self._value
        shape = "<unknown>" if v.shape is None else tuple(v.shape)
        if v.kind is ValueKind.SCALAR:
            return f"GraphTensor({v.name!r}, run-time {v.type_str()})"
        return f"GraphTensor({v.name!r}, shape={shape}, dtype={v.dtype}, device={v.device})"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return format(repr(self), spec)


class _BoundMethod:
    """`x.view` on a graph tensor: records `torch.Tensor.view` when called."""

    __slots__ = ("_fn", "_self")

    def __init__(self, fn: Any, obj: GraphTensor) -> None:
        self._fn = fn
        self._self = obj

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return record(self._fn, (self._self,) + args, kwargs)

    def __repr__(self) -> str:
        return f"<graph method {self._fn.__name__} of {self._self!r}>"


_CONTROL_FLOW_FIX = (
    "let AutoGraph convert this code (the default with ta.function(autograph=True)) so that `if`/`while`/`for` "
    "over tensors become graph control flow, or use ta.cond / ta.while_loop; if the code is in a function "
    "AutoGraph did not convert (autograph=False, do_not_convert, or source not available), that is the cause")
_VALUE_FIX = ("the value is only known when the graph runs; keep the computation in torch ops, "
              "or pass the value in as a Python argument")


def _binary(name: str):
    dunder = getattr(torch.Tensor, name)

    def method(self, other):
        return record(dunder, (self, other), {})

    method.__name__ = name
    return method


_BINARY = [
    "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor", "lshift", "rshift",
]
for _op in _BINARY:
    for _name in (f"__{_op}__", f"__r{_op}__", f"__i{_op}__"):
        if hasattr(torch.Tensor, _name):
            setattr(GraphTensor, _name, _binary(_name))
for _name in ("__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__"):
    setattr(GraphTensor, _name, _binary(_name))


def _unary(name: str):
    dunder = getattr(torch.Tensor, name)

    def method(self):
        return record(dunder, (self,), {})

    method.__name__ = name
    return method


for _name in ("__neg__", "__pos__", "__invert__", "__abs__"):
    setattr(GraphTensor, _name, _unary(_name))



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
_any_autocast = torch._C._is_any_autocast_enabled
# Torch's callables are classified once each: a bounded set (torch's API and the library's helpers).
_CLASSIFY_CACHE_SIZE = 8192
_classify_cache: dict[Any, tuple[Op, Callable, bool]] = {}


def _autograd_grad_meta(args: tuple, kwargs: dict) -> tuple[Meta, ...]:
    inputs = kwargs["inputs"] if "inputs" in kwargs else args[1]
    inputs = (inputs,) if isinstance(inputs, Value) else tuple(inputs)
    return tuple(Meta(v.dtype, v.shape, v.device, v.kind) for v in inputs)


# Autograd entry points cannot run on meta tensors: their output metadata is known without shape
# inference. `backward` accumulates into `.grad` at run time: an effect on tensors it does not take as
# arguments, so it is kept, in order, and may write anything.
_AUTOGRAD_META: dict[Callable, Callable[[tuple, dict], Any]] = {
    torch.Tensor.backward: lambda args, kwargs: None,
    torch.autograd.backward: lambda args, kwargs: None,
    torch.autograd.grad: _autograd_grad_meta,
}
_BACKWARD_CALLS = frozenset({torch.Tensor.backward, torch.autograd.backward})


def _effects(name: str, func: Callable) -> Effect:
    """The effects of a torch callable, from its name (`add_` is in place, `randn` draws) and identity."""
    effects = Effect.NONE
    if name in _RANDOM:
        effects |= Effect.RANDOM
    if name.endswith("_") and not name.endswith("__"):
        effects |= Effect.WRITES_FIRST_ARG
    if func in _BACKWARD_CALLS:
        effects |= Effect.UNKNOWN
    return effects


def _op(kind: OpKind, target: Any, name: str, effects: Effect = Effect.NONE, func: Any = None) -> Op:
    autograd = func in _AUTOGRAD_META
    return Op(kind, target, name, effects=effects, pure=effects is Effect.NONE and not autograd,
              runs_autograd=autograd)


def _classify(func: Callable) -> tuple[Op, Callable, bool]:
    """(Op, function used for shape inference, swap the first two args) for a torch callable."""
    hit = _classify_cache.get(func)
    if hit is not None:
        return hit
    name = _DUNDER_ALIASES.get(func) or getattr(func, "__name__", "") or ""
    owner = getattr(func, "__objclass__", None) or getattr(func, "__self__", None)
    descriptor = getattr(func, "__self__", None) if name == "__get__" else None  # `x.T` is `Tensor.T.__get__(x)`
    if isinstance(descriptor, types.GetSetDescriptorType):
        attr = descriptor.__name__
        result = (_op(OpKind.GETATTR, attr, attr), func, False)
    elif name.startswith("__") and name.endswith("__"):
        core = name[2:-2]
        if core in _INPLACE_DUNDERS:
            method = _INPLACE_DUNDERS[core]
            result = (_op(OpKind.METHOD, method, method, Effect.WRITES_FIRST_ARG), getattr(torch.Tensor, method),
                      False)
        elif core in _DUNDER_OPS:
            fn = _DUNDER_OPS[core]
            effects = Effect.WRITES_FIRST_ARG if core == "setitem" else Effect.NONE
            result = (_op(OpKind.OPERATOR, fn, core, effects), fn, False)
        elif core.startswith("r") and core[1:] in _DUNDER_OPS:
            fn = _DUNDER_OPS[core[1:]]
            result = (_op(OpKind.OPERATOR, fn, core[1:]), fn, True)
        else:
            result = (_op(OpKind.METHOD, name, core), func, False)
    elif owner in (torch.Tensor, torch._C.TensorBase) or (
            isinstance(owner, type) and issubclass(owner, torch._C.TensorBase)):
        result = (_op(OpKind.METHOD, name, name.rstrip("_") or name, _effects(name, func)), func, False)
    else:
        result = (_op(OpKind.FUNCTION, func, name.rstrip("_") or "call", _effects(name, func), func), func, False)
    if len(_classify_cache) < _CLASSIFY_CACHE_SIZE:
        try:
            _classify_cache[func] = result
        except TypeError:
            pass
    return result


def _contains_graph(obj: Any) -> bool:
    return any(isinstance(x, GraphTensor) for x in iter_leaves(obj))


# ----- recording ------------------------------------------------------------------------
def record(func: Callable, args: tuple, kwargs: dict) -> Any:
    """Record `func(*args, **kwargs)` into the current graph; return graph tensors for its outputs."""
    state = current()
    if state is None:
        for a in _iter_graph_tensors((args, kwargs)):
            raise leaked_tensor_error(a)
        raise AssertionError("bug in torch_autograph: record() outside a trace")
    state.root.refused_index = None
    if _any_autocast() or state.root.entry_autocast is not None:  # one C call when autocast is off
        if autocast_state() != state.root.entry_autocast:
            raise autocast_error(state.root.entry_autocast)
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
            op, infer_fn = Op(OpKind.OPERATOR, fn, op.name, pure=True, inplace=op if inplace else None), fn
    if "out" in vkwargs:
        op = replace(op, effects=op.effects | Effect.WRITES_OUT, pure=False)
    if vkwargs.get("inplace") is True:  # F.dropout(x, inplace=True), F.relu(x, inplace=True)
        op = replace(op, effects=op.effects | Effect.WRITES_FIRST_ARG, pure=False)
    try:
        with torch._C.DisableTorchFunction():
            autograd_meta = _AUTOGRAD_META.get(func) if type(func) is _FunctionType else None
            meta = autograd_meta(vargs, vkwargs) if autograd_meta is not None else shape_inference.infer(
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
    state = current()
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


def run_or_record(op: Op, args: tuple, kwargs: dict, meta: Any) -> Any:
    """`op.target(*args, **kwargs)` now outside a trace; inside one, a node with outputs like `meta` (no inference).

    The one place that decides between running a library helper (a Variable update, `ta.print`, a
    TensorArray write) at once and recording it to run at every call of the graph.
    """
    if current() is None:
        return op.target(*args, **kwargs)
    return record_with_meta(op, args, kwargs, meta)


def call_python(fn: Callable, *args: Any) -> Any:
    """Record a call of a plain Python function on run-time Python numbers (e.g. `len(range(a, b))`)."""
    return record(fn, args, {})


def _values(obj: Any) -> list[Value]:
    return list(iter_values(obj))


def _iter_graph_tensors(obj: Any) -> Iterator[GraphTensor]:
    return (x for x in iter_leaves(obj) if isinstance(x, GraphTensor))


def _wrap(meta: Any, state: Any, op: Op, outputs: list[Value]) -> tuple[Any, Any]:
    """(graph tensors mirroring `meta`, unpacking pattern of Values with None for non-tensor slots)."""
    if isinstance(meta, Meta):
        value = Value(state.fresh_name(op.name), meta.dtype, meta.shape, meta.device, meta.kind, meta.stand_ins)
        outputs.append(value)
        return state.wrap(value), value
    if isinstance(meta, (list, tuple)) and not isinstance(meta, str):
        pairs = [_wrap(m, state, op, outputs) for m in meta]
        items = [p[0] for p in pairs]
        return type(meta)(items), tuple(p[1] for p in pairs)
    return meta, None


# ----- the mode ---------------------------------------------------------------------------
class TracingMode(TorchFunctionMode):
    """Sends every torch call made while tracing to `record` (metadata reads run at once)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if _contains_graph(args) or _contains_graph(kwargs):
            return record(func, args, kwargs)
        name = getattr(func, "__name__", "")
        if name == "__get__":
            owner = getattr(func, "__self__", None)
            attr = getattr(owner, "__name__", None)
            state = current()
            if attr == "grad" and state is not None:
                warn_grad_read(state, args[0])
            if attr not in ("T", "mT", "H", "mH", "real", "imag", "data"):
                return func(*args, **kwargs)
        elif name in _RUN_NOW:
            return func(*args, **kwargs)
        if current() is None:
            return func(*args, **kwargs)
        return record(func, args, kwargs)


