"""Runtime of converted `if`, `while`, `for` and ternaries.

Each operator first checks whether its condition / iterable is staged
(see `dispatch`). If not, it runs exactly like the Python statement; the fast
paths below avoid allocations and frame inspection because converted code
runs them on every iteration.
"""

from __future__ import annotations

import builtins
import copy
import types
from typing import Any, Callable, Mapping, Optional, Sequence

from torch_autograph.autograph.operators import dispatch
from torch_autograph.autograph.operators.lists import ElementWrittenList
from torch_autograph.autograph.operators.py_builtins import LazyIterable, LazyRange
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
            init_vars: tuple, names: Sequence[str], element_writes: Sequence[str] = ()) -> tuple:
    """`if cond: <true_fn> else: <false_fn>`; each branch maps the state to the new state.

    `false_fn` is None for an `if` without `else` (the state passes through).
    `element_writes`: see `_Carried`.
    """
    b = _registry.backend
    if b is None or type(cond) in _PLAIN or not b.is_staged(cond):
        if cond:
            return true_fn(*init_vars)
        return init_vars if false_fn is None else false_fn(*init_vars)
    false_fn = _identity if false_fn is None else false_fn
    origin = _caller_origin()
    c = _Carried.of(names, init_vars, element_writes)
    if c is None:
        return b.cond(cond, true_fn, false_fn, init_vars, names, origin)
    return c.out(b.cond(cond, c.fn(true_fn), c.fn(false_fn), c.vars, c.names, origin))


def if_exp(cond: Any, true_thunk: Callable[[], Any], false_thunk: Callable[[], Any]) -> Any:
    """`true if cond else false`, lazily."""
    b = _registry.backend
    if b is None or type(cond) in _PLAIN or not b.is_staged(cond):
        return true_thunk() if cond else false_thunk()
    return b.if_exp(cond, true_thunk, false_thunk, _caller_origin())


def while_stmt(test: Callable[..., Any], body: Callable[..., tuple], init_vars: tuple,
               names: Sequence[str], options: Optional[Mapping[str, Any]] = None,
               element_writes: Sequence[str] = ()) -> tuple:
    """`while test: body`. A condition that turns staged mid-loop hands the rest to the backend.
    `element_writes`: see `_Carried`."""
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
            origin = _caller_origin()
            c = _Carried.of(names, loop_vars, element_writes)
            if c is None:
                return b.while_loop(test, body, loop_vars, names, options or {}, origin)
            return c.out(b.while_loop(c.test(test), c.fn(body), c.vars, c.names, options or {}, origin))
        if not t:
            return loop_vars
        loop_vars = body(*loop_vars)


def for_stmt(iterable: Any, extra_test: Optional[Callable[..., Any]],
             body: Callable[..., tuple], init_vars: tuple, names: Sequence[str],
             options: Optional[Mapping[str, Any]] = None, element_writes: Sequence[str] = ()) -> tuple:
    """`for target in iterable: body`, stopping early when `extra_test(*vars)` is false.

    `extra_test` carries break/return flags. It is checked before fetching the
    next element, so the iterator is advanced exactly as often as in Python.
    `element_writes`: see `_Carried`.
    """
    b = _registry.backend
    if b is not None and type(iterable) not in _PLAIN and (
            isinstance(iterable, LazyIterable) or b.is_staged(iterable)):
        return _staged_for(b, iterable, extra_test, body, init_vars, names, options, element_writes,
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
            rest = _rest_of_range(it)
            if rest is not None:
                # The rest of a range is a range: one graph loop, whatever its length, instead of a guarded
                # copy of the body per remaining element.
                try:
                    return _staged_for(b, LazyRange(rest.start, rest.stop, rest.step), extra_test, body,
                                       loop_vars, names, options, element_writes, _caller_origin())
                except (TypeError, RuntimeError):
                    # The body needs its element as a Python int (`layers[i](x)`: a TypeError, or torch's
                    # guard on a data-dependent size, a RuntimeError): the graph loop's element is known only
                    # when the graph runs. Each remaining element is guarded instead (the failed loop trace
                    # left nothing behind: sub-traces restore the objects they change).
                    pass
            return _guarded_rest(b, it, ok, extra_test, body, loop_vars, names)
        if not ok:
            return loop_vars
        for target in it:
            loop_vars = body(target, *loop_vars)
            ok = extra_test(*loop_vars)
            break
        else:
            return loop_vars


_RANGE_ITERATOR = type(iter(range(0)))


def _rest_of_range(it: Any) -> Optional[range]:
    """The elements a range iterator has left, as a range (None for any other iterator).

    A range iterator pickles as (iter, (its range,), elements taken): that is its documented state.
    """
    if type(it) is not _RANGE_ITERATOR:
        return None
    _, (whole,), taken = it.__reduce__()
    return whole[taken:]


def _staged_for(b: dispatch.StagingBackend, iterable: Any, extra_test: Optional[Callable[..., Any]],
                body: Callable[..., tuple], init_vars: tuple, names: Sequence[str],
                options: Optional[Mapping[str, Any]], element_writes: Sequence[str], origin: Origin) -> tuple:
    """A `for` over a staged (or lazy) iterable: the backend's graph loop."""
    c = _Carried.of(names, init_vars, element_writes)
    if c is None:
        return b.for_loop(iterable, extra_test, body, init_vars, names, options or {}, origin)
    return c.out(b.for_loop(iterable, None if extra_test is None else c.test(extra_test), c.fn(body, 1),
                            c.vars, c.names, options or {}, origin))


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


class _Carried:
    """The state a staged statement carries when some entries are only element-written (`keys[i] = k`).

    Such an entry holding a list or dict is carried like any other state: the elements the loop or branch
    stores must come out of it, not stay in the Python object as values of one trace. Each generated function
    gets its own shallow copy of it (both branches of an `if` are traced from the same state), and the name
    is bound to the container the statement returns. Holding anything else (a tensor: `z[i] = v` is an
    in-place write the graph records on `z` itself) the entry passes through: each generated function gets
    its value, and what it returns for it is dropped.
    """

    def __init__(self, names: Sequence[str], vars_: tuple, element_writes: Sequence[str]) -> None:
        self.full = list(vars_)
        self.keep = [k for k, n in enumerate(names) if n not in element_writes or _is_container(vars_[k])]
        self.copied = {k for k, n in enumerate(names) if n in element_writes and _is_container(vars_[k])}
        self.names = tuple(names[k] for k in self.keep)
        self.vars = tuple(vars_[k] for k in self.keep)

    @classmethod
    def of(cls, names: Sequence[str], vars_: tuple, element_writes: Sequence[str]) -> Optional["_Carried"]:
        return cls(names, vars_, element_writes) if element_writes else None

    def _expand(self, carried: tuple) -> list:
        full = list(self.full)
        for k, v in zip(self.keep, carried):
            if k in self.copied:
                v = ElementWrittenList(v) if type(v) is list else copy.copy(v)
            full[k] = v
        return full

    def out(self, carried: tuple) -> tuple:
        """The state after the statement; a container comes back as the object it was, holding the new elements,
        so that every other reference to it sees them, as in Python."""
        full = list(self.full)
        for k, v in zip(self.keep, carried):
            full[k] = _write_back(self.full[k], v) if k in self.copied else v
        return tuple(full)

    def test(self, test: Callable[..., Any]) -> Callable[..., Any]:
        return lambda *carried: test(*self._expand(carried))

    def fn(self, fn: Callable[..., tuple], leading: int = 0) -> Callable[..., tuple]:
        """`fn` on the carried entries; `leading` arguments (a `for` target) come first, unchanged."""
        def narrowed(*args: Any) -> tuple:
            out = fn(*args[:leading], *self._expand(args[leading:]))
            return tuple(list(out[k]) if type(out[k]) is ElementWrittenList else out[k] for k in self.keep)
        return narrowed


def _write_back(original: Any, new: Any) -> Any:
    """Put the elements of `new` (what a staged statement made of `original`'s copy) into `original`; return it.

    The backend may hand back a list as a graph list (a branch merges lists that way): its elements are read
    back by index, the length being the original's (only elements were assigned, never appended or deleted).
    """
    if new is original:
        return original
    if isinstance(original, list):
        original[:] = new if isinstance(new, list) else [new[i] for i in range(len(original))]
    elif isinstance(original, dict):
        original.clear()
        original.update(new)
    else:  # a graph list: it takes the value after the statement
        dispatch.current_backend().assign_list(original, new)
    return original


def _is_container(value: Any) -> bool:
    """A list or dict, as Python or as a graph value (a graph list: a list the graph holds)."""
    return isinstance(value, (list, dict)) or dispatch.is_graph_list(value)


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
