"""AutoGraph's operators meet the graph tracer here: `if`/`while`/`for`, `and`/`or`/`not`, `assert`, list appends.

AutoGraph (`autograph/`, torch-free) asks "is this a graph value?" and, when
it is, calls the methods of `TorchStagingBackend`; they build `cond` /
`while` nodes with `tracing.cond` and `tracing.while_loop`.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import torch

from ..autograph.operators.control_flow import check_branch_outputs
from ..autograph.operators.variables import Undefined, UndefinedReturnValue
from ..autograph.pyct.origin_info import Origin
from ..graph import SourceLocation
from ..tracing import cond as cond_module
from ..tracing import lists
from ..tracing import while_loop as while_module
from ..tracing.branches import UNSET
from ..tracing.lists import GraphList
from ..tracing.locations import user_location
from ..tracing.numbers import traced
from ..tracing.symbols import is_graph_value
from ..tracing.tensor import GraphTensor
from .python_builtins import BUILTINS
from .iteration import is_scalar, iteration

def location(origin: Origin | None) -> SourceLocation | None:
    if origin is None:
        return user_location()
    return SourceLocation(origin.filename, origin.lineno, origin.function_name, origin.source_line)


def _unset_in(values: Sequence[Any]) -> tuple:
    return tuple(UNSET if type(v) in (Undefined, UndefinedReturnValue) else v for v in values)


def _restore(values: Sequence[Any], like: Sequence[Any]) -> tuple:
    """UNSET back to the AutoGraph placeholder it stood for."""
    return tuple(l if v is UNSET else v for v, l in zip(values, like))


class TorchStagingBackend:
    """Implements `autograph.StagingBackend` with graph `cond` / `while` nodes."""

    def is_staged(self, value: Any) -> bool:
        return is_graph_value(value)

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

        result = cond_module.cond(pred, branch(true_fn, "t"), branch(false_fn, "f"), names=tuple(names), origin=location(origin))
        return _restore(result, raw["t"]) if "t" in raw else result

    def if_exp(self, pred: Any, true_thunk: Callable[[], Any], false_thunk: Callable[[], Any], origin: Origin) -> Any:
        return cond_module.cond(pred, true_thunk, false_thunk, names=("<if expression>",), origin=location(origin))

    def and_(self, left: Any, right_thunk: Callable[[], Any], origin: Origin) -> Any:
        return cond_module.cond(left, right_thunk, lambda: left, names=("<and>",), origin=location(origin))

    def or_(self, left: Any, right_thunk: Callable[[], Any], origin: Origin) -> Any:
        return cond_module.cond(left, lambda: left, right_thunk, names=("<or>",), origin=location(origin))

    def not_(self, value: Any, origin: Origin) -> Any:
        if is_scalar(value):  # a run-time number: Python's `not`
            return traced(torch.sym_not(value) if isinstance(value, torch.SymBool) else value == 0)
        return torch.logical_not(value)

    def assert_(self, cond: Any, msg_thunk: Callable[[], Any] | None, origin: Origin) -> None:
        msg = msg_thunk() if msg_thunk is not None else None
        loc = location(origin)
        text = f"assertion failed: {msg}" if msg is not None else "assertion failed"
        code = f" (`{loc.line}`)" if loc and loc.line else ""
        cond_module.check(cond, f"{text}\n  at {loc}{code}", loc)

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
        out = while_module.while_loop(test, body, inits, names=tuple(names), shape_invariants=invariants,
                            maximum_iterations=options.get("maximum_iterations"), origin=location(origin),
                            require_iteration=require)
        return tuple(out)

    def for_loop(self, iterable: Any, extra_test: Callable[..., Any] | None, body_fn: Callable[..., tuple],
                 init_vars: tuple, names: Sequence[str], options: Mapping[str, Any], origin: Origin) -> tuple:
        n, get = iteration(iterable, location(origin))
        n_vars = len(init_vars)

        def test(k: Any, *vals: Any) -> Any:
            more = k < n
            if extra_test is None:
                return more
            extra = extra_test(*_restore(vals, init_vars))
            if is_graph_value(extra) or is_graph_value(more):
                if not is_graph_value(extra):
                    return more if extra else False
                return _logical_and(more, extra)
            return more and extra

        def body(k: Any, *vals: Any) -> tuple:
            new = body_fn(get(k), *_restore(vals, init_vars))
            return (k + 1,) + _unset_in(new)

        require = [i + 1 for i, v in enumerate(init_vars) if type(v) is Undefined]
        invariants = {i + 1: s for i, s in _invariants(options, names).items()}
        out = while_module.while_loop(test, body, (0,) + _unset_in(init_vars), names=("iteration",) + tuple(names),
                            shape_invariants=invariants, maximum_iterations=options.get("maximum_iterations"),
                            origin=location(origin), require_iteration=require, trip_count=n)
        assert len(out) == n_vars + 1
        return tuple(out[1:])

    # ----- builtins and lists ------------------------------------------------------------
    def call_builtin(self, builtin: Callable, args: tuple, kwargs: Mapping[str, Any], origin: Origin) -> Any:
        handler = BUILTINS.get(builtin)
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
        if isinstance(items, (GraphTensor, GraphList)):
            shape = items._value.shape
            if isinstance(items, GraphList) or not shape or type(shape[0]) is not int:
                raise TypeError(
                    f"cannot extend the graph list %{target._value.name} with {items!r} at {origin} "
                    f"(`{origin.source_line}`): how many elements it has is known only when the graph runs. "
                    "Append them one by one in a loop (`for t in items: lst.append(t)`), or extend with a "
                    "Python list of tensors.")
            items = items.unbind(0)  # the rows, as iterating the tensor gives them
        for item in items:
            target = lists.append(target, item)
        return target


def _logical_and(a: Any, b: Any) -> Any:
    """`a and b` for loop conditions: Python `&` on run-time bools, logical_and on tensors."""
    if is_scalar(a) and is_scalar(b):
        return a & b
    if is_scalar(a):
        a = torch.tensor(a)
    if is_scalar(b):
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
    return type(v) is list and all(isinstance(x, torch.Tensor) for x in v)
