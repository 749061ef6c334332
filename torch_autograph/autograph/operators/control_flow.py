"""Runtime of converted `if`, `while`, `for` and ternaries.

Each operator first checks whether its condition / iterable is staged
(see `dispatch`). If not, it runs exactly like the Python statement; the fast
paths below avoid allocations and frame inspection because converted code
runs them on every iteration.
"""

from __future__ import annotations

import builtins
import types
from typing import Any, Callable, Mapping, Optional, Sequence

from torch_autograph.autograph.operators import dispatch
from torch_autograph.autograph.operators.py_builtins import LazyIterable
from torch_autograph.autograph.operators.variables import Undefined, UndefinedReturnValue
from torch_autograph.autograph.pyct.origin_info import Origin

_registry = dispatch._registry
_PLAIN = dispatch.PLAIN_TYPES
_caller_origin = dispatch.caller_origin


# PLAIN_TYPES plus the builtin iterators a converted `for` commonly gets
# (enumerate/zip/map objects, container iterators, generators): never staged,
# and asking the backend would cost more than the rest of a small loop.
_PLAIN_OR_ITER = _PLAIN | frozenset(
    {enumerate, zip, map, filter, reversed, type(iter([])), type(iter(())), type(iter(range(0))),
     type(iter({})), type({}.keys()), type({}.values()), type({}.items()), types.GeneratorType})


def is_plain(value: Any) -> bool:
    """True unless `value` is staged (or a lazy iterable over staged values).

    Converted code tests a condition / iterable with this once and then runs
    the Python statement itself (the dual path); a staged value takes the
    functional form (`if_stmt`, `while_stmt`, `for_stmt`). Plain types,
    and everything when no backend is registered, are plain.
    """
    if type(value) in _PLAIN_OR_ITER:
        return True
    b = _registry.backend
    return b is None or not (isinstance(value, LazyIterable) or b.is_staged(value))


def plain_iter(iterable: Any) -> Any:
    """`iter(iterable)` when `is_plain(iterable)`, else None.

    The plain path of a `for` with break/return flags loops over this
    iterator, so that a flag turning staged can hand the remaining elements
    to `for_stmt`.
    """
    if type(iterable) in _PLAIN_OR_ITER:
        return _iter(iterable)
    b = _registry.backend
    if b is None or not (isinstance(iterable, LazyIterable) or b.is_staged(iterable)):
        return _iter(iterable)
    return None


_iter = builtins.iter


def if_stmt(cond: Any, true_fn: Callable[..., tuple], false_fn: Optional[Callable[..., tuple]],
            init_vars: tuple, names: Sequence[str]) -> tuple:
    """`if cond: <true_fn> else: <false_fn>`; each branch maps the state to the new state.

    `false_fn` is None for an `if` without `else` (the state passes through).
    """
    b = _registry.backend
    if b is None or type(cond) in _PLAIN or not b.is_staged(cond):
        if cond:
            return true_fn(*init_vars)
        return init_vars if false_fn is None else false_fn(*init_vars)
    return b.cond(cond, true_fn, _identity if false_fn is None else false_fn, init_vars, names,
                  _caller_origin())


def if_exp(cond: Any, true_thunk: Callable[[], Any], false_thunk: Callable[[], Any]) -> Any:
    """`true if cond else false`, lazily."""
    b = _registry.backend
    if b is None or type(cond) in _PLAIN or not b.is_staged(cond):
        return true_thunk() if cond else false_thunk()
    return b.if_exp(cond, true_thunk, false_thunk, _caller_origin())


def while_stmt(test: Callable[..., Any], body: Callable[..., tuple], init_vars: tuple,
               names: Sequence[str], options: Optional[Mapping[str, Any]] = None) -> tuple:
    """`while test: body`. A condition that turns staged mid-loop hands the rest to the backend."""
    loop_vars = init_vars
    b = _registry.backend
    if b is None:
        while test(*loop_vars):
            loop_vars = body(*loop_vars)
        return loop_vars
    while True:
        t = test(*loop_vars)
        if type(t) not in _PLAIN and b.is_staged(t):
            # The backend re-evaluates test_fn on these values while tracing.
            return b.while_loop(test, body, loop_vars, names, options or {}, _caller_origin())
        if not t:
            return loop_vars
        loop_vars = body(*loop_vars)


def for_stmt(iterable: Any, extra_test: Optional[Callable[..., Any]],
             body: Callable[..., tuple], init_vars: tuple, names: Sequence[str],
             options: Optional[Mapping[str, Any]] = None) -> tuple:
    """`for target in iterable: body`, stopping early when `extra_test(*vars)` is false.

    `extra_test` carries break/return flags. It is checked before fetching the
    next element, so the iterator is advanced exactly as often as in Python.
    """
    b = _registry.backend
    if b is not None and type(iterable) not in _PLAIN and (
            isinstance(iterable, LazyIterable) or b.is_staged(iterable)):
        return b.for_loop(iterable, extra_test, body, init_vars, names, options or {},
                          _caller_origin())
    loop_vars = init_vars
    if extra_test is None:
        for target in iterable:
            loop_vars = body(target, *loop_vars)
        return loop_vars
    if b is None:
        if not extra_test(*loop_vars):
            return loop_vars
        for target in iterable:
            loop_vars = body(target, *loop_vars)
            if not extra_test(*loop_vars):
                break
        return loop_vars
    it = iter(iterable)
    ok = extra_test(*loop_vars)
    while True:
        if type(ok) not in _PLAIN and b.is_staged(ok):
            return _guarded_rest(b, it, ok, extra_test, body, loop_vars, names)
        if not ok:
            return loop_vars
        for target in it:
            loop_vars = body(target, *loop_vars)
            ok = extra_test(*loop_vars)
            break
        else:
            return loop_vars


def _guarded_rest(b: dispatch.StagingBackend, it: Any, ok: Any, extra_test: Callable,
                  body: Callable, loop_vars: tuple, names: Sequence[str]) -> tuple:
    """Unrolled loop whose break/return flag became staged: guard each remaining iteration.

    Decision 3: every remaining element runs under `backend.cond(ok, body, identity)`.
    """
    origin = _caller_origin(3)
    for target in it:
        if type(ok) in _PLAIN or not b.is_staged(ok):
            if not ok:
                return loop_vars
            loop_vars = body(target, *loop_vars)
        else:
            def run_body(*vars_, _target=target):
                return body(_target, *vars_)

            loop_vars = b.cond(ok, run_body, _identity, loop_vars, names, origin)
        ok = extra_test(*loop_vars)
    return loop_vars


def _identity(*vars_: Any) -> tuple:
    return vars_


def check_branch_outputs(names: Sequence[str], true_out: Sequence[Any], false_out: Sequence[Any],
                         origin: Origin) -> None:
    """Raises the user-facing error for branch outputs a staged `if` cannot merge.

    Backends call this from `cond` after tracing both branches. A variable
    left `Undefined` on one side only (defined in one branch) or None on one
    side only is an error; `UndefinedReturnValue` is not (the `do_return`
    flag guards every read of it).

    Raises:
        ValueError: naming the variable, the branch and the user's file:line.
    """
    for name, t, f in zip(names, true_out, false_out):
        t_undef, f_undef = type(t) is Undefined, type(f) is Undefined
        if t_undef != f_undef:
            missing = "else" if f_undef else "main"
            raise ValueError(
                f"'{name}' must also be initialised in the {missing} branch of the `if` at "
                f"{origin} (`{origin.source_line}`): the condition is a graph value, so both "
                f"branches run and each must define '{name}'. Define '{name}' before the "
                f"`if` or in both branches.")
        if (t is None) != (f is None) and not (type(t) is UndefinedReturnValue
                                               or type(f) is UndefinedReturnValue):
            which = "main" if t is None else "else"
            raise ValueError(
                f"'{name}' is None at the end of the {which} branch of the `if` at {origin} "
                f"(`{origin.source_line}`); a graph `if` needs a value of the same type "
                "from both branches.")


def undefined_names(names: Sequence[str], values: Sequence[Any]) -> list[str]:
    """Names whose value is an `Undefined` placeholder (e.g. loop vars undefined on entry)."""
    return [n for n, v in zip(names, values) if type(v) is Undefined]


def loop_var_error(name: str, origin: Origin, reason: str) -> str:
    """A message for a staged loop variable problem, e.g. reason='is None at the end of the iteration'."""
    return (f"'{name}' {reason} in the loop at {origin} (`{origin.source_line}`); "
            "the loop condition is a graph value, so the variable must keep one type "
            "across iterations.")
