"""The staging backend: AutoGraph's operators meet the graph tracer here.

AutoGraph (`autograph/`, torch-free) asks "is this a graph value?" and, when
it is, calls the methods below; they build `cond` / `while` nodes with
`graph.control_flow`. Registered once when `torch_autograph` is imported.
"""

from __future__ import annotations

import builtins
import operator
from typing import Any, Callable, Mapping, Sequence

import torch

import types

from .autograph import convert, register_backend
from .autograph.api import register_builtin_call_override, register_call_override
from .autograph.operators.py_builtins import LazyEnumerate, LazyIterable, LazyRange, LazyZip
from .autograph.operators.control_flow import check_branch_outputs
from .autograph.operators.variables import Undefined, UndefinedReturnValue
from .autograph.pyct.origin_info import Origin, lookup_origin
from .graph import control_flow as cf
from .graph import lists
from .graph.lists import GraphList
from .graph import tracer
from .graph.graph import Op, OpKind, SourceLocation, ValueKind
from .graph.shape_inference import Meta
from .graph.tensor import GraphTensor


def _loc(origin: Origin | None) -> SourceLocation | None:
    if origin is None:
        return tracer.user_location()
    return SourceLocation(origin.filename, origin.lineno, origin.function_name, origin.source_line)


def _map_origin(filename: str, lineno: int) -> SourceLocation | None:
    o = lookup_origin(filename, lineno)
    return None if o is None else _loc(o)


def to_scalar(x: GraphTensor, kind: type = int) -> GraphTensor:
    """A run-time Python number read from a one-element graph tensor (`int(t)` when the graph runs)."""
    dtype = {int: torch.int64, float: torch.float64, bool: torch.bool}[kind]
    return tracer.record_with_meta(Op(OpKind.FUNCTION, kind, "item"), (x,), {},
                                   Meta(dtype, (), None, ValueKind.SCALAR))


def _unset_in(values: Sequence[Any]) -> tuple:
    return tuple(cf.UNSET if type(v) in (Undefined, UndefinedReturnValue) else v for v in values)


def _restore(values: Sequence[Any], like: Sequence[Any]) -> tuple:
    """UNSET back to the AutoGraph placeholder it stood for."""
    return tuple(l if v is cf.UNSET else v for v, l in zip(values, like))


class TorchStagingBackend:
    """Implements `autograph.StagingBackend` with graph `cond` / `while` nodes."""

    def is_staged(self, value: Any) -> bool:
        return isinstance(value, GraphTensor)

    # ----- if / ternary / and / or / not --------------------------------------------------
    def cond(self, pred: Any, true_fn: Callable[..., tuple], false_fn: Callable[..., tuple], init_vars: tuple,
             names: Sequence[str], origin: Origin) -> tuple:
        raw: dict[str, tuple] = {}
        # A Python list of tensors modified in a branch would be mutated by both traces: make it a graph list.
        init_vars = tuple(lists.new_list(v) if _is_tensor_list(v) else v for v in init_vars)

        def branch(fn: Callable, key: str) -> Callable[[], tuple]:
            def run() -> tuple:
                out = tuple(fn(*init_vars))
                raw[key] = out
                if key == "f":
                    check_branch_outputs(names, raw["t"], out, origin)
                return _unset_in(out)

            return run

        result = cf.cond(pred, branch(true_fn, "t"), branch(false_fn, "f"), names=tuple(names), origin=_loc(origin))
        return _restore(result, raw["t"]) if "t" in raw else result

    def if_exp(self, pred: Any, true_thunk: Callable[[], Any], false_thunk: Callable[[], Any], origin: Origin) -> Any:
        return cf.cond(pred, true_thunk, false_thunk, names=("<if expression>",), origin=_loc(origin))

    def and_(self, left: Any, right_thunk: Callable[[], Any], origin: Origin) -> Any:
        return cf.cond(left, right_thunk, lambda: left, names=("<and>",), origin=_loc(origin))

    def or_(self, left: Any, right_thunk: Callable[[], Any], origin: Origin) -> Any:
        return cf.cond(left, lambda: left, right_thunk, names=("<or>",), origin=_loc(origin))

    def not_(self, value: Any, origin: Origin) -> Any:
        if value._value.kind is ValueKind.SCALAR:
            return tracer.record_with_meta(Op(OpKind.OPERATOR, operator.not_, "not"), (value,), {},
                                           Meta(torch.bool, (), None, ValueKind.SCALAR))
        return torch.logical_not(value)

    def assert_(self, cond: Any, msg_thunk: Callable[[], Any] | None, origin: Origin) -> None:
        msg = msg_thunk() if msg_thunk is not None else None
        loc = _loc(origin)
        text = f"assertion failed: {msg}" if msg is not None else "assertion failed"
        code = f" (`{loc.line}`)" if loc and loc.line else ""
        cf.check(cond, f"{text}\n  at {loc}{code}", loc)

    # ----- loops ----------------------------------------------------------------------------
    def while_loop(self, test_fn: Callable[..., Any], body_fn: Callable[..., tuple], init_vars: tuple,
                   names: Sequence[str], options: Mapping[str, Any], origin: Origin) -> tuple:
        inits = _unset_in(init_vars)
        require = [i for i, v in enumerate(init_vars) if type(v) is Undefined]

        def test(*vals: Any) -> Any:
            return test_fn(*_restore(vals, init_vars))

        def body(*vals: Any) -> tuple:
            return _unset_in(body_fn(*_restore(vals, init_vars)))

        invariants = _invariants(options, names)
        out = cf.while_loop(test, body, inits, names=tuple(names), shape_invariants=invariants,
                            maximum_iterations=options.get("maximum_iterations"), origin=_loc(origin),
                            require_iteration=require)
        return tuple(out)

    def for_loop(self, iterable: Any, extra_test: Callable[..., Any] | None, body_fn: Callable[..., tuple],
                 init_vars: tuple, names: Sequence[str], options: Mapping[str, Any], origin: Origin) -> tuple:
        n, get = _iteration(iterable, _loc(origin))
        n_vars = len(init_vars)

        def test(k: Any, *vals: Any) -> Any:
            more = k < n
            if extra_test is None:
                return more
            extra = extra_test(*_restore(vals, init_vars))
            if isinstance(extra, GraphTensor) or isinstance(more, GraphTensor):
                if not isinstance(extra, GraphTensor):
                    return more if extra else False
                return _logical_and(more, extra)
            return more and extra

        def body(k: Any, *vals: Any) -> tuple:
            new = body_fn(get(k), *_restore(vals, init_vars))
            return (k + 1,) + _unset_in(new)

        require = [i + 1 for i, v in enumerate(init_vars) if type(v) is Undefined]
        invariants = {i + 1: s for i, s in _invariants(options, names).items()}
        out = cf.while_loop(test, body, (0,) + _unset_in(init_vars), names=("iteration",) + tuple(names),
                            shape_invariants=invariants, maximum_iterations=options.get("maximum_iterations"),
                            origin=_loc(origin), require_iteration=require)
        assert len(out) == n_vars + 1
        return tuple(out[1:])

    # ----- builtins and lists ------------------------------------------------------------
    def call_builtin(self, builtin: Callable, args: tuple, kwargs: Mapping[str, Any], origin: Origin) -> Any:
        handler = _BUILTINS.get(builtin)
        if handler is None:
            return NotImplemented
        return handler(*args, **kwargs)

    def list_append(self, target: Any, element: Any, origin: Origin) -> Any:
        return lists.append(target, element)

    def list_pop(self, target: Any, args: tuple, origin: Origin) -> tuple[Any, Any]:
        return lists.pop(target, *args)

    def list_extend(self, target: Any, items: Any, origin: Origin) -> Any:
        if not isinstance(target, GraphList):
            return NotImplemented  # a graph tensor under `+=`: its own operator
        if isinstance(items, GraphTensor):
            shape = items._value.shape
            if isinstance(items, GraphList) or not shape or shape[0] is None:
                raise TypeError(
                    f"cannot extend the graph list %{target._value.name} with {items!r} at {origin} "
                    f"(`{origin.source_line}`): how many elements it has is known only when the graph runs. "
                    "Append them one by one in a loop (`for t in items: lst.append(t)`), or extend with a "
                    "Python list of tensors.")
            items = items.unbind(0)  # the rows, as iterating the tensor gives them
        for item in items:
            target = lists.append(target, item)
        return target


def _is_scalar(x: Any) -> bool:
    return isinstance(x, GraphTensor) and x._value.kind is ValueKind.SCALAR


def _logical_and(a: Any, b: Any) -> Any:
    """`a and b` for loop conditions: Python `&` on run-time bools, logical_and on tensors."""
    if _is_scalar(a) and _is_scalar(b):
        return a & b
    if _is_scalar(a):
        a = torch.tensor(a)
    if _is_scalar(b):
        b = torch.tensor(b)
    return torch.logical_and(a, b)


def _invariants(options: Mapping[str, Any], names: Sequence[str]) -> dict[int, Any]:
    inv = options.get("shape_invariants") or {}
    out = {}
    for key, shape in (inv.items() if isinstance(inv, Mapping) else inv):
        if isinstance(key, str):
            if key in names:
                out[list(names).index(key)] = shape
    return out


def _is_tensor_list(v: Any) -> bool:
    return type(v) is list and all(isinstance(x, (GraphTensor, torch.Tensor)) and not isinstance(x, GraphList)
                                   for x in v)


def _length(x: Any) -> Any:
    """Static dim 0, or a run-time value."""
    if isinstance(x, GraphList):
        return lists.length(x)
    if isinstance(x, GraphTensor):
        if x.shape is None or len(x.shape) == 0:
            raise TypeError(f"iteration over a 0-d tensor {x!r}")
        return x.size(0)
    return len(x)


def _range_len(start: Any, stop: Any, step: Any) -> int:
    return len(range(start, stop, step))


def _iteration(iterable: Any, origin: SourceLocation | None) -> tuple[Any, Callable[[Any], Any]]:
    """(number of iterations, element getter) for a staged iterable."""
    if isinstance(iterable, LazyRange):
        start, stop, step = (to_scalar(v) if isinstance(v, GraphTensor) and v._value.kind is ValueKind.TENSOR
                             else v for v in (iterable.start, iterable.stop, iterable.step))
        n = tracer.call_python(_range_len, start, stop, step) if any(
            isinstance(v, GraphTensor) for v in (start, stop, step)) else _range_len(start, stop, step)
        plain = type(start) is int and type(step) is int and (start, step) == (0, 1)
        return n, (lambda k: k) if plain else (lambda k: start + k * step)
    if isinstance(iterable, LazyEnumerate):
        n, get = _iteration(iterable.iterable, origin)
        start = iterable.start
        return n, lambda k: (k + start if not (isinstance(start, int) and start == 0) else k, get(k))
    if isinstance(iterable, LazyZip):
        parts = [_iteration(it, origin) if isinstance(it, (GraphTensor, LazyIterable)) else _python_sequence(it, origin)
                 for it in iterable.iterables]
        n = parts[0][0]
        for m, _ in parts[1:]:
            n = builtins.min(n, m) if not (isinstance(n, GraphTensor) or isinstance(m, GraphTensor)) else \
                tracer.call_python(builtins.min, n, m)
        return n, lambda k: tuple(get(k) for _, get in parts)
    if isinstance(iterable, GraphTensor):
        return _length(iterable), lambda k: iterable[k]
    raise TypeError(f"cannot iterate over {iterable!r} in a graph loop{' at ' + str(origin) if origin else ''}")


def _python_sequence(it: Any, origin: SourceLocation | None) -> tuple[int, Callable[[Any], Any]]:
    """(length, element getter) of a Python iterable zipped with a graph one: read at a run-time index."""
    items = list(it)
    if items and all(isinstance(v, (GraphTensor, torch.Tensor)) for v in items):
        graph_list = lists.new_list(items)
        return len(items), lambda k: lists.getitem(graph_list, k)
    if all(type(v) in (bool, int, float) for v in items) and len({type(v) for v in items}) <= 1:
        constants = tuple(items)
        return len(items), lambda k: tracer.call_python(operator.getitem, constants, k)
    where = f" at {origin}" if origin else ""
    raise TypeError(f"cannot zip {type(it).__name__} {it!r} with a graph iterable{where}: only tensors or Python "
                    f"numbers of one type can be read at a run-time index. Make it a tensor.")


def _len(x: Any) -> Any:
    if isinstance(x, LazyRange):
        return _iteration(x, None)[0]
    if isinstance(x, GraphTensor) and x._value.kind is ValueKind.TENSOR and x.shape is not None and not x.shape:
        raise TypeError(f"len() of a 0-d tensor: len requires a non-scalar tensor, got %{x._value.name} of shape "
                        f"() at {tracer.user_location()}")
    return _length(x) if isinstance(x, GraphTensor) else NotImplemented


def _int(x: Any, *rest: Any) -> Any:
    if rest or not isinstance(x, GraphTensor):
        return NotImplemented
    return x if x._value.kind is ValueKind.SCALAR and x.dtype == torch.int64 else to_scalar(x, int)


def _float(x: Any) -> Any:
    if not isinstance(x, GraphTensor):
        return NotImplemented
    return to_scalar(x, float)


def _abs(x: Any) -> Any:
    return abs(x)


def _reduce(builtin: Callable, tensor_fn: Callable) -> Callable:
    """min/max/any/all over graph values with Python's results (value for value)."""

    def handler(*args: Any, **kwargs: Any) -> Any:
        if kwargs:
            return NotImplemented
        if len(args) == 1 and isinstance(args[0], GraphList):
            return _over_list(builtin, args[0])
        if len(args) == 1 and isinstance(args[0], GraphTensor):
            x = args[0]
            if x.shape is not None and len(x.shape) == 1:
                return tensor_fn(x)
            return NotImplemented
        items = list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else list(args)
        if builtin in (builtins.any, builtins.all) and len(args) == 1 and items:
            return _any_all(builtin, items)
        if builtin not in (builtins.min, builtins.max) or not items:
            return NotImplemented
        if not any(isinstance(v, GraphTensor) and v._value.kind is ValueKind.TENSOR for v in items):
            return tracer.call_python(builtin, *items)  # run-time Python numbers: Python's min/max
        pick = torch.minimum if builtin is builtins.min else torch.maximum
        out = items[0]
        for it in items[1:]:
            out = pick(*_as_tensors(out, it))
        return out

    return handler


def _over_list(builtin: Callable, lst: GraphList, *rest: Any) -> Any:
    """`builtin(lst, *rest)` on a graph list: Python's builtin on the run-time list of tensors."""
    v = lst._value
    if v.dtype is None:
        return NotImplemented
    meta = Meta(torch.bool, (), None, ValueKind.SCALAR) if builtin in (builtins.any, builtins.all) else \
        Meta(v.dtype, v.shape, v.device)
    return tracer.record_with_meta(Op(OpKind.FUNCTION, builtin, builtin.__name__), (lst, *rest), {}, meta)


def _any_all(builtin: Callable, items: list) -> Any:
    """any/all of a Python list holding graph values: one logical reduction of their truth values."""
    if not any(isinstance(v, GraphTensor) for v in items):
        return NotImplemented
    flags = [(v.reshape(()) if v._value.kind is ValueKind.TENSOR else torch.tensor(v)).bool()
             if isinstance(v, GraphTensor) else torch.tensor(bool(v)) for v in items]
    stacked = torch.stack(flags)
    return stacked.any() if builtin is builtins.any else stacked.all()


def _as_tensors(a: Any, b: Any) -> tuple[Any, Any]:
    """Both operands as tensors, Python numbers taking the dtype Python arithmetic would give."""
    def tensor_like(v: Any, other: Any) -> Any:
        if isinstance(v, GraphTensor) and v._value.kind is ValueKind.TENSOR:
            return v
        dtype = torch.result_type(other, v if not isinstance(v, GraphTensor) else 0)
        return torch.tensor(v, dtype=dtype, device=other.device)

    if not (isinstance(a, GraphTensor) and a._value.kind is ValueKind.TENSOR):
        return tensor_like(a, b), b
    return a, tensor_like(b, a)


def _sum(x: Any, start: Any = 0) -> Any:
    if isinstance(x, GraphList):
        return _over_list(builtins.sum, x, start)
    if isinstance(x, GraphTensor):
        return x.sum(0) + start if (x.shape is not None and len(x.shape) >= 1) else NotImplemented
    return NotImplemented


def _sorted(x: Any, *, key: Any = None, reverse: bool = False) -> Any:
    if key is not None or not isinstance(x, GraphTensor) or x.shape is None or len(x.shape) != 1:
        return NotImplemented
    # Python gives a list of 0-d tensors; so do we (a graph list when the length is only known at run time).
    values = torch.sort(x, descending=reverse, stable=True).values
    if x.shape[0] is not None:
        return list(values.unbind(0))
    return lists.from_rows(values)


def _isinstance(obj: Any, cls: Any) -> bool:
    if isinstance(obj, GraphTensor):
        classes = cls if isinstance(cls, tuple) else (cls,)
        return any(isinstance(c, type) and (issubclass(torch.Tensor, c) or issubclass(GraphTensor, c))
                   for c in classes)
    return NotImplemented


_BUILTINS: dict[Any, Callable] = {
    builtins.len: _len, builtins.int: _int, builtins.float: _float, builtins.abs: _abs,
    builtins.min: _reduce(builtins.min, lambda x: x.min()), builtins.max: _reduce(builtins.max, lambda x: x.max()),
    builtins.any: _reduce(builtins.any, lambda x: x.bool().any()),
    builtins.all: _reduce(builtins.all, lambda x: x.bool().all()),
    builtins.sum: _sum, builtins.sorted: _sorted, builtins.isinstance: _isinstance,
}


def call_module(module: Any, args: tuple, kwargs: dict) -> Any:
    """Call an nn.Module from converted code with the user-written `forward`s in it converted.

    `Module.__call__` (hooks, train/eval bookkeeping) runs as usual; every
    submodule whose `forward` is user code (not torch's) gets its converted
    form as an instance attribute for the duration of the call, so tensor
    `if`/`for` in a model's forward become graph control flow even when a
    torch container such as `nn.Sequential` calls it.
    """
    if not isinstance(module, torch.nn.Module) or tracer.current() is None:
        return NotImplemented
    swapped = []
    for m in module.modules():
        forward = type(m).forward
        if getattr(forward, "__module__", "").startswith("torch.") or "forward" in m.__dict__:
            continue
        converted = convert(types.MethodType(forward, m))
        if getattr(converted, "__func__", None) is not forward:
            m.__dict__["forward"] = converted
            swapped.append(m)
    if not swapped:
        return NotImplemented
    try:
        return module(*args, **kwargs)
    finally:
        for m in swapped:
            m.__dict__.pop("forward", None)


def call_torch_builtin(f: Any, args: tuple, kwargs: dict) -> Any:
    """Call a torch C function from converted code while tracing, staging what its parser would reject.

    torch's argument parser rejects a run-time Python number (`n = x.size(0)`
    of a dim unknown in the trace) as the first of varargs sizes
    (`torch.zeros(n, 2)`, `p.expand(n, 3)`) before any `__torch_function__`
    runs; such calls are recorded here directly. A TypeError from a torch call
    given None among its sizes gets an explanation: the None is most likely a
    dim of `x.shape` that is unknown in this trace.
    """
    if tracer.current() is None:
        return NotImplemented
    self_ = getattr(f, "__self__", None)
    if isinstance(self_, torch.Tensor):  # a method of a real tensor (a parameter, a closure tensor)
        target, target_args = getattr(torch.Tensor, f.__name__, None), (self_,) + args
    elif (getattr(f, "__module__", None) or "").startswith("torch"):
        target, target_args = f, args
    else:
        return NotImplemented
    if target is not None and (_holds_run_time_number(args) or _holds_run_time_number(kwargs.values())):
        return tracer.record(target, target_args, kwargs)
    try:
        return f(*args, **kwargs)
    except TypeError as e:
        if not tracer.holds_none(args, kwargs):
            raise
        raise tracer.unknown_dim_error(e, f.__name__, args, kwargs) from None


def _holds_run_time_number(items: Any) -> bool:
    for a in items:
        if type(a) in (tuple, list):
            if any(_is_scalar(b) for b in a):
                return True
        elif _is_scalar(a):
            return True
    return False


def install() -> None:
    register_backend(TorchStagingBackend())
    register_call_override(call_module)
    register_builtin_call_override(call_torch_builtin)
    tracer.register_origin_mapper(_map_origin)
