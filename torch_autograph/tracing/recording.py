"""Recording: every torch call made while a function is traced becomes a `Node` of the current graph.

Two paths lead to `record`:

- `GraphTensor.__torch_function__` (and GraphList's): calls on graph values;
- `TracingMode`, a TorchFunctionMode active only while tracing, which also
  sees calls with no graph value at all: factories (`torch.zeros(n)`), random
  ops (`torch.randn`) and ops on real tensors the function closes over (module
  parameters, buffers), which become captures, passed by reference at every
  call. Metadata queries and value reads on real tensors (`p.shape`,
  `p.item()`) run at once: like any Python value, they are frozen into the trace.

`record` computes the outputs' metadata with `MetaEngine.infer` (torch's own
meta kernels), makes a `Value` per output and returns the objects user code
sees for them (`Scope.wrap`): GraphTensors, GraphLists, or symbolic
numbers for run-time Python numbers.
"""

from __future__ import annotations

import operator
from dataclasses import replace
from typing import Any, Callable, Iterator

import torch
from torch.overrides import TorchFunctionMode

from ..errors import OperatorNotAllowedInGraphError
from ..graph import Effect, Node, Op, OpKind, Value, ValueKind, autocast_state, iter_leaves
from ..op_facts import draws_nothing, traits_of
from . import decisions, numbers, promoted
from .classify import AUTOGRAD_META, BACKWARD_CALLS, INPLACE_OPERATORS, RUN_NOW, classify
from .context import Traced, current
from .locations import user_location
from .messages import leaked_tensor_error
from .meta import DataDependentValue, ListMeta, NeedsValue, TensorMeta
from .numbers import traced
from .retrace import Retrace
from .symbols import SYMBOLIC, ScalarMeta, constant_of, is_symbolic

_FunctionType = type(lambda: None)
_any_autocast = torch._C._is_any_autocast_enabled


class NeedsSizeError(OperatorNotAllowedInGraphError, Retrace):
    """An op needed the value of a size known only when the graph runs: trace again with the call's sizes behind
    the symbols (`Retrace`); where no call's sizes exist, the user's error."""

    def __init__(self, *args: Any) -> None:
        OperatorNotAllowedInGraphError.__init__(self, *args)
        self.reason = str(args[0]) if args else "a size decided by code"
        self.knowledge = {"backed": True}


def _contains_graph(obj: Any) -> bool:
    return any(isinstance(x, Traced) or (isinstance(x, SYMBOLIC) and is_symbolic(x)) for x in iter_leaves(obj))


def _traced_values(obj: Any) -> Iterator[Traced]:
    return (x for x in iter_leaves(obj) if isinstance(x, Traced))


# ----- recording ------------------------------------------------------------------------
def record(func: Callable, args: tuple, kwargs: dict) -> Any:
    """Record `func(*args, **kwargs)` into the current graph; return graph values for its outputs."""
    state = current()
    if state is None:
        for a in _traced_values((args, kwargs)):
            raise leaked_tensor_error(a)
        raise AssertionError("bug in torch_autograph: record() outside a trace")
    special = state.trace.hooks.special(func)  # collectives and the like (TraceHooks.special_calls)
    if special is not None:
        return special(func, args, kwargs)
    op, infer_fn, swap = classify(func)
    if swap:
        args = (args[1], args[0]) + tuple(args[2:])
    return _record(state, op, infer_fn, func, args, kwargs)


def record_inferred_by(infer_fn: Callable, func: Callable, args: tuple, kwargs: dict) -> Any:
    """Record `func(*args, **kwargs)` as `record` does, with the outputs' metadata from `infer_fn` (same arguments)
    instead of `func`'s own meta kernel: a special-call handler for torch functions whose kernels read sizes as
    plain ints (interop/rnn_cells.py)."""
    op, _, _ = classify(func)
    return _record(current(), op, infer_fn, func, args, kwargs)


def record_augmented(inplace_method: str, number: Any, other: Any) -> Any:
    """`n op= t` while `n` is a run-time number: the Python operator, remembering the in-place op it stands for
    (`Op.inplace`) in case re-typing makes `n` a tensor, where the same statement updates it in place."""
    state = current()
    if state is None:
        raise AssertionError("bug in torch_autograph: a traced number outside its trace")
    fn = INPLACE_OPERATORS[inplace_method]
    inplace = Op(OpKind.METHOD, inplace_method, inplace_method, effects=Effect.WRITES_FIRST_ARG)
    op = Op(OpKind.OPERATOR, fn, inplace_method.rstrip("_"), pure=True, inplace=inplace,
            traits=traits_of(fn))
    return _record(state, op, fn, fn, (number, other), {})


numbers.record_augmented = record_augmented


# Tensor methods that Python operators dispatch to (`x * 2` reaches __torch_function__ as `Tensor.mul`),
# recorded as the operator so that graphs and generated code read as the user's expression.
_METHOD_OPERATORS = {
    "add": operator.add, "sub": operator.sub, "mul": operator.mul, "div": operator.truediv,
    "matmul": operator.matmul, "lt": operator.lt, "le": operator.le, "gt": operator.gt, "ge": operator.ge,
    "eq": operator.eq, "ne": operator.ne, "neg": operator.neg, "abs": abs,
}
_OPERATOR_OPS = {name: Op(OpKind.OPERATOR, fn, name, pure=True, traits=traits_of(fn))
                 for name, fn in _METHOD_OPERATORS.items()}


def _as_operator(op: Op, args: tuple, kwargs: dict) -> Op:
    if op.kind is OpKind.METHOD and not kwargs and op.target in _OPERATOR_OPS and \
            len(args) == (1 if op.target in ("neg", "abs") else 2):
        return _OPERATOR_OPS[op.target]
    return op


def _record(state: Any, op: Op, infer_fn: Callable, func: Callable, args: tuple, kwargs: dict) -> Any:
    op = _as_operator(op, args, kwargs)
    vargs = state.to_value(tuple(args))
    vkwargs = state.to_value(kwargs) if kwargs else {}
    if "out" in vkwargs:
        op = replace(op, effects=op.effects | Effect.WRITES_OUT, pure=False)
    if vkwargs.get("inplace") is True:  # F.dropout(x, inplace=True), F.relu(x, inplace=True)
        op = replace(op, effects=op.effects | Effect.WRITES_FIRST_ARG, pure=False)
    if op.effects & Effect.RANDOM and draws_nothing(func, vargs, vkwargs):
        effects = op.effects & ~Effect.RANDOM
        op = replace(op, effects=effects, pure=effects is Effect.NONE and not op.runs_autograd)
    try:
        autograd_meta = AUTOGRAD_META.get(func) if type(func) is _FunctionType else None
        meta = autograd_meta(vargs, vkwargs) if autograd_meta is not None else state.trace.engine.infer(
            infer_fn, vargs, vkwargs)
    except DataDependentValue:
        loc = user_location()
        raise OperatorNotAllowedInGraphError(
            f"{op.name}() returns a Python value computed from tensor data, which is not known while tracing"
            f"{' at ' + str(loc) if loc else ''}.\nFix: use a tensor-returning op (e.g. torch.eq(...).all()) "
            f"so the result stays in the graph.") from None
    except NeedsValue as e:
        loc = user_location()
        code = f"\n    {loc.line}" if loc and loc.line else ""
        raise NeedsSizeError(
            f"{op.name}() needs the value of a size or number that is known only when the graph runs ({e})"
            f"{' at ' + str(loc) if loc else ''}.{code}\nFix: compute it from sizes known while tracing, or keep "
            f"the computation in tensor ops (e.g. masks and torch.where instead of a data-dependent size); in "
            f"code AutoGraph converts, an `if`/`while` on such a number becomes graph control flow.") from None
    except Exception as e:
        loc = user_location()
        if loc is not None and hasattr(e, "add_note"):
            e.add_note(f"while tracing {op.name} at {loc}")
            e.rejected_call = (op, func, vargs, vkwargs, loc)  # torch refused these arguments (subtraces/raises.py)
        raise
    number = _number_arithmetic(op, args)
    if number:  # its result stands for a Python number when its arguments do (promoted.py)
        op = Op(OpKind.FUNCTION, promoted.NumberOp(op.target), op.name)
    unknown_grad = torch.is_grad_enabled() and _reaches_unknown_grad(args, kwargs)
    outputs: list[Value] = []
    result, pattern = _wrap(meta, state, op, outputs, unknown_grad)
    if number and isinstance(result, Traced):
        result._maybe_number = True
    if not outputs and not op.stateful:
        return result  # metadata-only result (e.g. torch.result_type): nothing to run
    _append(state, op, vargs, vkwargs, outputs, pattern)
    if func in BACKWARD_CALLS and state.trace.hooks.after_backward is not None:
        roots = vargs[0] if isinstance(vargs[0], (list, tuple)) else [vargs[0]]
        state.trace.hooks.after_backward(state, list(roots), kwargs.get("inputs"))
    if op.kind is OpKind.OPERATOR and op.target is operator.setitem:
        return None
    return result


def record_with_meta(op: Op, args: tuple, kwargs: dict, meta: Any) -> Any:
    """Record an op whose output metadata the caller knows (e.g. `int(t)`, which has no meta kernel).

    `meta`: a TensorMeta, ScalarMeta or ListMeta, a tuple of them, or None for no result.
    """
    state = current()
    if state is None:
        raise AssertionError("bug in torch_autograph: record_with_meta() outside a trace")
    vargs = state.to_value(tuple(args))
    vkwargs = state.to_value(kwargs) if kwargs else {}
    outputs: list[Value] = []
    result, pattern = _wrap(meta, state, op, outputs, False)
    _append(state, op, vargs, vkwargs, outputs, pattern)
    return result


def record_op(op: Op, infer_fn: Callable, args: tuple, kwargs: dict) -> Any:
    """Record a node running `op` whose outputs are like those of `infer_fn(*args, **kwargs)` (shape inference)."""
    state = current()
    if state is None:
        raise AssertionError("bug in torch_autograph: record_op() outside a trace")
    return _record(state, op, infer_fn, infer_fn, args, kwargs)


def run_or_record(op: Op, args: tuple, kwargs: dict, meta: Any) -> Any:
    """`op.target(*args, **kwargs)` now outside a trace; inside one, a node with outputs like `meta` (no inference).

    The one place that decides between running a library helper (a Variable update, `ta.print`, a
    TensorArray write) at once and recording it to run at every call of the graph.
    """
    if current() is None:
        return op.target(*args, **kwargs)
    return record_with_meta(op, args, kwargs, meta)


def _append(state: Any, op: Op, vargs: tuple, vkwargs: dict, outputs: list[Value], pattern: Any) -> None:
    grad = torch.is_grad_enabled()
    autocast = None
    if _any_autocast() or state.trace.entry.autocast is not None:  # one C call when autocast is off
        now = autocast_state()
        # `with torch.autocast(...)` entered (or left) inside the function: the node runs under that.
        autocast = None if now == state.trace.entry.autocast else (now or ())
    state.add_node(Node(op, vargs, vkwargs, tuple(outputs), pattern=pattern, origin=user_location(),
                        grad_enabled=None if grad == state.trace.entry.grad else grad, autocast=autocast))


def _reaches_unknown_grad(args: tuple, kwargs: dict) -> bool:
    """Whether an argument's requires_grad is unknown while tracing (it depends on each call's tensors)."""
    for a in (*args, *kwargs.values()) if kwargs else args:
        if isinstance(a, Traced):
            if getattr(a, "_rg_unknown", False):
                return True
        elif isinstance(a, (list, tuple, dict)) and any(getattr(x, "_rg_unknown", False)
                                                        for x in _traced_values(a)):
            return True
    return False


def _wrap(meta: Any, state: Any, op: Op, outputs: list[Value], unknown_grad: bool) -> tuple[Any, Any]:
    """(graph values mirroring `meta`, unpacking pattern of Values with None for non-graph slots)."""
    if isinstance(meta, TensorMeta):
        shape = tuple(constant_of(d) for d in meta.example.shape)
        value = Value(state.fresh_name(op.name), meta.dtype, shape, meta.device, ValueKind.TENSOR, meta.example)
        outputs.append(value)
        for d, size in enumerate(shape):
            if isinstance(size, torch.SymInt):
                state.trace.symbols.output_dim(size, value, d)
        # Known when an argument known to require grad reaches it, or when it cannot require grad at all.
        unknown = unknown_grad and not meta.requires_grad and (meta.dtype.is_floating_point or meta.dtype.is_complex)
        return state.wrap(value, requires_grad=meta.requires_grad, unknown_grad=unknown), value
    if isinstance(meta, ScalarMeta):
        value = Value(state.fresh_name(op.name), meta.dtype, (), None, ValueKind.SCALAR, meta.example)
        outputs.append(value)
        return state.wrap(value), value
    if isinstance(meta, ListMeta):
        value = Value(state.fresh_name(op.name), meta.dtype, meta.shape, meta.device, ValueKind.LIST)
        outputs.append(value)
        return state.wrap(value), value
    if isinstance(meta, (list, tuple)) and not isinstance(meta, str):
        pairs = [_wrap(m, state, op, outputs, unknown_grad) for m in meta]
        items = [p[0] for p in pairs]
        return (type(meta)(*items) if hasattr(meta, "_fields") else type(meta)(items)), tuple(p[1] for p in pairs)
    return meta, None


# ----- how a graph value answers a torch call -----------------------------------------------------
# Methods answered from the graph value's metadata (sizes are ints, or SymInts where known only at run time).
_NATIVE_METHODS = frozenset({
    "size", "dim", "ndimension", "numel", "nelement", "element_size", "is_floating_point", "is_complex",
    "is_signed", "get_device", "has_names", "__hash__",
})
# Refused: the memory layout is no part of a graph value (inputs arrive laid out as they come, a backend lays
# out the rest its own way), so the example's would be a guess.
_LAYOUT_READS = frozenset({"stride", "is_contiguous", "storage_offset", "is_shared", "is_inference", "_is_view"})
LAYOUT_FIX = ("a graph tensor's memory layout (strides, storage offset, contiguity, shared memory, inference "
              "flag) is not part of the graph: a call's inputs may arrive laid out otherwise than the example "
              "traced; call `.contiguous()` where a layout is needed instead of testing for it")
# Attributes that are values computed from the tensor (recorded), not metadata.
_RECORDED_ATTRS = frozenset({"T", "mT", "H", "mH", "real", "imag", "data"})
# Autograd facts about the value when the graph runs, answered where the trace knows them.
_AUTOGRAD_ATTRS = frozenset({"requires_grad", "is_leaf", "grad_fn", "grad", "_base", "_version", "output_nr"})
_VALUE_READS = {
    "__bool__": "using a graph tensor as a Python bool", "__int__": "int() of a graph tensor",
    "__float__": "float() of a graph tensor", "__complex__": "complex() of a graph tensor",
    "__index__": "using a graph tensor as a Python index", "item": "x.item()", "tolist": "x.tolist()",
    "numpy": "x.numpy()", "__array__": "converting a graph tensor to a numpy array",
    "__iter__": "iterating over a graph tensor", "__contains__": "`in` on a graph tensor",
    "data_ptr": "x.data_ptr()", "untyped_storage": "x.untyped_storage()", "storage": "x.storage()",
    "__reduce_ex__": "pickling a graph tensor", "__deepcopy__": "copy.deepcopy of a graph tensor",
}
CONTROL_FLOW_FIX = (
    "let AutoGraph convert this code (the default with ta.function(autograph=True)) so that `if`/`while`/`for` "
    "over tensors become graph control flow, or use ta.cond / ta.while_loop; if the code is in a function "
    "AutoGraph did not convert (autograph=False, do_not_convert, or source not available), that is the cause")
CONTAINS_FIX = ("Python turns the result of `in` into a bool at once; write the test as a tensor, "
                "`(x == c).any()`, and branch on that (a converted `if` on a tensor becomes graph control flow)")
VALUE_FIX = ("the value is only known when the graph runs; keep the computation in torch ops, "
             "or pass the value in as a Python argument")


def handle_graph_call(func: Callable, args: tuple, kwargs: dict) -> Any:
    """A torch call with a graph value among its arguments: answered from metadata, refused, or recorded."""
    name = getattr(func, "__name__", "")
    first = args[0] if args else None
    if isinstance(first, Traced) and getattr(first, "_is_tensor", False):
        if first._maybe_number and func in _AUGMENTED_FUNCS and len(args) == 2 and not kwargs:
            return _augmented_number(_AUGMENTED_FUNCS[func], args)
        if name in _NATIVE_METHODS:
            return traced(_native(func, args, kwargs))  # a size known only later: a traced int
        if name == "__get__":
            attr = getattr(getattr(func, "__self__", None), "__name__", None)
            if attr in _AUTOGRAD_ATTRS:
                return first.autograd_fact(attr)
            if attr not in _RECORDED_ATTRS:
                return _native(func, args, kwargs)
        elif name in _LAYOUT_READS:
            raise first.not_allowed(f"x.{name}()", LAYOUT_FIX, lacks="layout")
        elif name in _VALUE_READS:
            taken, answer = (False, None) if args[1:] or kwargs else decisions.decide(current(), first, name)
            if taken:
                return answer
            fix = CONTROL_FLOW_FIX if name in ("__bool__", "__iter__") else CONTAINS_FIX if name == "__contains__" \
                else VALUE_FIX
            raise first.not_allowed(_VALUE_READS[name], fix, TypeError if name == "__iter__" else None)
        elif name in ("__repr__", "__str__"):
            return repr(first)
        elif name == "__format__":
            return first.__format__(*args[1:])
        elif name == "__len__":
            return len(first)
    return record(func, args, kwargs)


# `y -= 4` reaches __torch_function__ as `Tensor.sub_` (the C `__isub__` calls it): in-place methods by name.
_AUGMENTED_FUNCS = {getattr(torch.Tensor, method): dunder for dunder, method in promoted.AUGMENTED_METHODS.items()}
# Python operators that give a number from numbers: on values that stand for Python numbers, their results
# stand for numbers too (promoted.py).
_NUMBER_OPERATORS = frozenset({operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
                               operator.mod, operator.pow, operator.neg, operator.pos, abs, operator.and_,
                               operator.or_, operator.xor, operator.lshift, operator.rshift})


def _augmented_number(dunder: str, args: tuple) -> Any:
    """`y op= x` where `y` stands for a Python number on some path: rebinds or updates in place when it runs."""
    state = current()
    fn = promoted.Augmented(dunder)
    meta = state.trace.engine.infer(fn.function, state.to_value(tuple(args)), {})
    out = record_with_meta(Op(OpKind.FUNCTION, fn, fn.method.rstrip("_"), effects=Effect.WRITES_FIRST_ARG),
                           args, {}, meta)
    out._maybe_number = True
    return out


def _number_arithmetic(op: Op, args: tuple) -> bool:
    """Whether `op` on `args` is Python arithmetic on values that may all be Python numbers."""
    if op.kind is not OpKind.OPERATOR or op.target not in _NUMBER_OPERATORS:
        return False
    maybe = False
    for a in args:
        if getattr(a, "_maybe_number", False) is True:
            maybe = True
        elif isinstance(a, torch.Tensor):
            return False
    return maybe


def _native(func: Callable, args: tuple, kwargs: dict) -> Any:
    with torch._C.DisableTorchFunction():
        return func(*args, **kwargs)


# ----- the mode ---------------------------------------------------------------------------
class TracingMode(TorchFunctionMode):
    """Sends every torch call made while tracing to `record` (metadata reads on real tensors run at once)."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if name == "__set__" and getattr(getattr(func, "__self__", None), "__name__", None) == "grad" \
                and not isinstance(args[0], Traced):
            state = current()
            write = state.trace.hooks.write_grad if state is not None else None
            if write is not None:
                return write(state, args[0], args[1])  # `p.grad = g`: when the graph runs
        if _contains_graph(args) or _contains_graph(kwargs):
            return handle_graph_call(func, args, kwargs)
        if name == "__get__":
            owner = getattr(func, "__self__", None)
            attr = getattr(owner, "__name__", None)
            state = current()
            if attr == "grad" and state is not None and state.trace.hooks.read_grad is not None:
                return state.trace.hooks.read_grad(state, args[0])  # the gradient when the graph reaches this read
            if attr not in ("T", "mT", "H", "mH", "real", "imag", "data"):
                return func(*args, **kwargs)
        elif name in RUN_NOW:
            return func(*args, **kwargs)
        if current() is None:
            return func(*args, **kwargs)
        return record(func, args, kwargs)
