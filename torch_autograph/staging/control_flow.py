"""AutoGraph's operators meet the graph tracer here: `if`/`while`/`for`, `and`/`or`/`not`, `assert`, list appends.

AutoGraph (`autograph/`, torch-free) asks "is this a graph value?" and, when
it is, calls the methods of `TorchStagingBackend`; they build `cond` /
`while` nodes with `subtraces.cond` and `subtraces.while_loop`.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Mapping, Sequence

import torch

from ..autograph import Origin, Undefined, UndefinedReturnValue, check_branch_outputs, lookup_origin
from ..autograph import list_operators as python_lists
from ..errors import InaccessibleTensorError, OperatorNotAllowedInGraphError, StagedBranchError, TorchAutographError
from ..graph import SourceLocation
from ..subtraces import (
    UNSET,
    FirstAssignedInBranch,
    check_condition,
    close_try,
    finally_starts,
    quoted,
    raised_by_the_library,
    stage_cond,
    stage_while,
    try_begin,
    try_end,
)
from ..tracing import (
    GraphList,
    GraphTensor,
    Retrace,
    current,
    is_graph_value,
    is_library_file,
    lists,
    traced,
    user_location,
)
from .calls import CALL_OVERRIDES
from .iteration import is_scalar, iteration, python_sequence
from .object_state import Changed, Objects
from .python_builtins import BUILTINS, membership


def map_origin(filename: str, lineno: int) -> SourceLocation | None:
    """The user's line for a line of AutoGraph's generated code, if it is one (`TraceHooks.map_origin`)."""
    o = lookup_origin(filename, lineno)
    return None if o is None else location(o)


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

    _loop_bodies = 0  # graph loop bodies being traced now (an unset attribute read in one is not a raise)

    @contextmanager
    def _in_loop_body(self) -> Iterator[None]:
        self._loop_bodies += 1
        try:
            yield
        finally:
            self._loop_bodies -= 1

    def is_staged(self, value: Any) -> bool:
        return is_graph_value(value)

    def writes_in_place(self, value: Any) -> bool:
        return isinstance(value, torch.Tensor)

    def is_list(self, value: Any) -> bool:
        return isinstance(value, GraphList)

    def assign_list(self, target: Any, value: Any) -> None:
        target.assign(value)

    def call(self, f: Any, args: tuple, kwargs: dict) -> Any:
        """Library calls from converted code: modules, training-step and distributed calls (staging/calls.py)."""
        for override in CALL_OVERRIDES:
            result = override(f, args, kwargs)
            if result is not NotImplemented:
                return result
        return NotImplemented

    # ----- if / ternary / and / or / not --------------------------------------------------
    def cond(self, pred: Any, true_fn: Callable[..., tuple], false_fn: Callable[..., tuple], init_vars: tuple,
             names: Sequence[str], origin: Origin) -> tuple:
        objects = Objects.of((true_fn, false_fn), origin)
        if objects is None:
            return _changing_entries(names, None, self._cond_of_lists(pred, true_fn, false_fn, init_vars, names,
                                                                      origin))
        n = len(init_vars)

        def carrying(fn: Callable[..., tuple]) -> Callable[..., tuple]:
            def run(*args: Any) -> tuple:
                with objects.entered(args[n:]) as outputs:
                    out = tuple(fn(*args[:n]))
                    outputs.extend(out)
                    tail = objects.read()
                return out + tail
            return run

        return _changing_entries(names, objects, _carrying_objects(objects, lambda: self._cond_of_lists(
            pred, carrying(true_fn), carrying(false_fn), init_vars + tuple(objects.initial),
            tuple(names) + objects.names(), origin), n))

    def _cond_of_lists(self, pred: Any, true_fn: Callable[..., tuple], false_fn: Callable[..., tuple],
                       init_vars: tuple, names: Sequence[str], origin: Origin) -> tuple:
        # A Python list of tensors modified in a branch would be mutated by both traces: make it a graph list.
        init_vars = tuple(lists.new_list(v) if _is_tensor_list(v) else v for v in init_vars)
        try:
            return self._cond(pred, true_fn, false_fn, init_vars, names, origin)
        except _ListMutated as mutated:
            # Another Python list (of numbers) changed in place: the same, from its value before the branch.
            converted = list(init_vars)
            for i, items in mutated.snapshots.items():
                seen, init_vars[i][:] = init_vars[i][:], items
                converted[i] = _as_graph_list(init_vars[i], seen, names[i], origin)
            return self._cond(pred, true_fn, false_fn, tuple(converted), names, origin)

    def _cond(self, pred: Any, true_fn: Callable[..., tuple], false_fn: Callable[..., tuple], init_vars: tuple,
              names: Sequence[str], origin: Origin) -> tuple:
        raw: dict[str, tuple] = {}
        snapshots = {i: v[:] for i, v in enumerate(init_vars) if type(v) is list}

        # An attribute or key a graph loop's earlier iteration sets, unset in this trace of its body.
        undefined = self._loop_bodies > 0 and any(type(v) is Undefined for v in init_vars)

        def branch(fn: Callable, key: str) -> Callable[[], tuple]:
            def run() -> tuple:
                try:
                    out = tuple(fn(*init_vars))
                except (AttributeError, KeyError) as e:
                    # Reading it is a fact of tracing the loop body once for all iterations, not the user's raise.
                    if undefined and _raised_by_user_code(e):
                        raise _traced_branch_error(e, origin) from e
                    raise
                # A list of tensors made a graph list for this `if` and rebound by the branch to a new Python
                # list of tensors (`l = [a, b]`, `self.items = [...]`): a graph list too, as on the other path.
                out = tuple(lists.new_list(o) if isinstance(v, GraphList) and type(o) is list and _is_tensor_list(o)
                            else o for v, o in zip(init_vars, out))
                # Changed in place, or replaced by a graph list (an inner `if` or loop changed it).
                changed = {i: items for i, items in snapshots.items()
                           if _changed(init_vars[i], items) or isinstance(out[i], GraphList)}
                if changed:
                    raise _ListMutated(changed)
                raw[key] = out
                if key == "f" and "t" in raw:  # (a branch that raises has no outputs to check)
                    _check_branches(names, init_vars, raw["t"], out, origin)
                return _unset_in(out)

            return run

        result = _both_branches(origin, lambda: stage_cond(
            pred, branch(true_fn, "t"), branch(false_fn, "f"), names=tuple(names), origin=location(origin)))
        if result is UNSET:  # both branches raise: what follows never runs
            return init_vars
        return _restore(result, raw.get("t", raw.get("f", init_vars)))

    def if_exp(self, pred: Any, true_thunk: Callable[[], Any], false_thunk: Callable[[], Any], origin: Origin) -> Any:
        return _both_branches(origin, lambda: stage_cond(
            pred, true_thunk, false_thunk, names=("<if expression>",), origin=location(origin)))

    def and_(self, left: Any, right_thunk: Callable[[], Any], origin: Origin) -> Any:
        return _both_branches(origin, lambda: stage_cond(
            left, right_thunk, lambda: left, names=("<and>",), origin=location(origin)))

    def or_(self, left: Any, right_thunk: Callable[[], Any], origin: Origin) -> Any:
        return _both_branches(origin, lambda: stage_cond(
            left, lambda: left, right_thunk, names=("<or>",), origin=location(origin)))

    def truth(self, value: Any, origin: Origin) -> Any:
        if is_scalar(value):  # a run-time number: Python's truth of it
            return traced(value if isinstance(value, torch.SymBool) else value != 0)
        if isinstance(value, GraphTensor) and value.dim() > 0 and all(d == 1 for d in value.shape if type(d) is int) \
                and all(type(d) is int for d in value.shape):
            value = value.reshape(())  # `bool(t)` of any 1-element tensor, as Python allows
        if isinstance(value, GraphTensor) and value.dim() == 0 and value.dtype is not torch.bool:
            return value != 0
        return value  # a bool, or a tensor whose use as a condition is checked where it is used

    def not_(self, value: Any, origin: Origin) -> Any:
        if is_scalar(value):  # a run-time number: Python's `not`
            return traced(torch.sym_not(value) if isinstance(value, torch.SymBool) else value == 0)
        return torch.logical_not(value)

    def contains(self, element: Any, container: Any, origin: Origin) -> Any:
        return membership(element, container, location(origin))

    def assert_(self, cond: Any, msg_thunk: Callable[[], Any] | None, origin: Origin) -> None:
        msg = msg_thunk() if msg_thunk is not None else None
        loc = location(origin)
        text = f"assertion failed: {msg}" if msg is not None else "assertion failed"
        code = f" (`{loc.line}`)" if loc and loc.line else ""
        check_condition(cond, f"{text}\n  at {loc}{code}", loc)

    # ----- try / except -----------------------------------------------------------------------
    def own_error(self, e: BaseException) -> bool:
        """Whether `e`, raised while tracing, is this package's: the program's `except` and `finally` let it go on."""
        return raised_by_the_library(e, (FirstAssignedInBranch, Retrace))

    def try_over(self, token: Any) -> None:
        """The body of the `try` of `token` is over (it raised while traced, or its handlers were traced)."""
        if token is not None:
            close_try(token)

    def try_begin(self, init_vars: tuple, frame: Any = None, names: Sequence[str] = ()) -> tuple:
        return init_vars + (try_begin(init_vars, frame, names),)  # (handlers see AutoGraph's placeholders)

    def finally_starts(self, frame: Any) -> None:
        """A `finally:` of the converted code running in `frame` starts, its `try` body over without raising."""
        finally_starts(frame, lambda: map_origin(frame.f_code.co_filename, frame.f_lineno))

    def try_end(self, token: Any, out_vars: tuple, names: Sequence[str], catches: Sequence[tuple],
                has_else: bool, origin: Origin, unused_after: Sequence[str] = (),
                finally_body: tuple | None = None) -> tuple:
        """A `try` whose body recorded graph ops: a run-time handler node (subtraces/handlers.py)."""
        at = location(origin)
        before = token.init_vars if token is not None else out_vars
        wrapped = tuple((thunk, _unsetting(fn, lambda out: _check_try_paths(names, before, out_vars, out, at, unused_after)),
                         reads, reraises) for thunk, fn, reads, reraises in catches)
        final = None if finally_body is None else (finally_body[0], frozenset(finally_body[1]))
        result = try_end(token, _unset_in(out_vars), names, wrapped, has_else, at, final)
        return _restore(result, out_vars + (True,) if has_else else out_vars)

    # ----- loops ----------------------------------------------------------------------------
    def while_loop(self, test_fn: Callable[..., Any], body_fn: Callable[..., tuple], init_vars: tuple,
                   names: Sequence[str], options: Mapping[str, Any], origin: Origin) -> tuple:
        objects = Objects.of((test_fn, body_fn), origin)
        if objects is None:
            return _changing_entries(names, None, self._while_loop(test_fn, body_fn, init_vars, names, options,
                                                                   origin, None))
        return _changing_entries(names, objects, _carrying_objects(objects, lambda: self._while_loop(
            test_fn, body_fn, init_vars, names, options, origin, objects), len(init_vars)))

    def _while_loop(self, test_fn: Callable[..., Any], body_fn: Callable[..., tuple], init_vars: tuple,
                    names: Sequence[str], options: Mapping[str, Any], origin: Origin, objects: Objects | None) -> tuple:
        n = len(init_vars)
        inits = _unset_in(init_vars) + (tuple(objects.initial) if objects else ())
        unused = options.get("unused_after", ())  # (what the converter knows no code after the loop reads)
        require = [i for i, v in enumerate(init_vars) if type(v) is Undefined and names[i] not in unused]

        def test(*vals: Any) -> Any:
            with _entered(objects, vals[n:], detect=False):
                return test_fn(*_restore(vals[:n], init_vars))

        def body(*vals: Any) -> tuple:
            with _entered(objects, vals[n:]) as outputs:
                with _defined_before_loop(init_vars, names, origin), self._in_loop_body():
                    out = _unset_in(body_fn(*_restore(vals[:n], init_vars)))
                outputs.extend(out)
                return out + (objects.read() if objects else ())

        invariants = _invariants(options, names)
        all_names = tuple(names) + (objects.names() if objects else ())
        out = stage_while(test, body, inits, names=all_names, shape_invariants=invariants,
                            maximum_iterations=options.get("maximum_iterations"), origin=location(origin),
                            require_iteration=require)
        return tuple(out)

    def for_loop(self, iterable: Any, extra_test: Callable[..., Any] | None, body_fn: Callable[..., tuple],
                 init_vars: tuple, names: Sequence[str], options: Mapping[str, Any], origin: Origin) -> tuple:
        fns = (body_fn,) if extra_test is None else (extra_test, body_fn)
        objects = Objects.of(fns, origin)
        if objects is None:
            return _changing_entries(names, None, self._for_loop(iterable, extra_test, body_fn, init_vars, names,
                                                                 options, origin, None))
        return _changing_entries(names, objects, _carrying_objects(objects, lambda: self._for_loop(
            iterable, extra_test, body_fn, init_vars, names, options, origin, objects), len(init_vars)))

    def _for_loop(self, iterable: Any, extra_test: Callable[..., Any] | None, body_fn: Callable[..., tuple],
                  init_vars: tuple, names: Sequence[str], options: Mapping[str, Any], origin: Origin,
                  objects: Objects | None) -> tuple:
        n, get = iteration(iterable, location(origin))
        n_vars = len(init_vars)
        carried = tuple(objects.initial) if objects else ()

        def test(k: Any, *vals: Any) -> Any:
            more = k < n
            if extra_test is None:
                return more
            with _entered(objects, vals[n_vars:], detect=False):
                extra = extra_test(*_restore(vals[:n_vars], init_vars))
            if is_graph_value(extra) or is_graph_value(more):
                if not is_graph_value(extra):
                    return more if extra else False
                return _logical_and(more, extra)
            return more and extra

        def body(k: Any, *vals: Any) -> tuple:
            with _entered(objects, vals[n_vars:]) as outputs:
                with _defined_before_loop(init_vars, names, origin), self._in_loop_body():
                    new = _unset_in(body_fn(get(k), *_restore(vals[:n_vars], init_vars)))
                outputs.extend(new)
                return (k + 1,) + new + (objects.read() if objects else ())

        unused = options.get("unused_after", ())
        require = [i + 1 for i, v in enumerate(init_vars) if type(v) is Undefined and names[i] not in unused]
        invariants = {i + 1: s for i, s in _invariants(options, names).items()}
        all_names = ("iteration",) + tuple(names) + (objects.names() if objects else ())
        out = stage_while(test, body, (0,) + _unset_in(init_vars) + carried, names=all_names,
                            shape_invariants=invariants, maximum_iterations=options.get("maximum_iterations"),
                            origin=location(origin), require_iteration=require, trip_count=n)
        assert len(out) == n_vars + 1 + len(carried)
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

    def sequence_getitem(self, target: Any, index: Any, origin: Origin) -> Any:
        return python_sequence(target, location(origin), "getitem")[1](index)

    def list_insert(self, target: Any, index: Any, element: Any, origin: Origin) -> Any:
        return lists.insert(target, index, element)

    def list_delitem(self, target: Any, index: Any, origin: Origin) -> Any:
        return lists.delitem(target, index)

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


def _changing_entries(names: Sequence[str], objects: Objects | None, out: tuple) -> tuple:
    """`out`, the state after a loop or `if`; one of the trace (not a branch or loop body) that changes entries of
    Python objects (`obj.x`, `d['k']` among its state, or carried `objects`) is noted on the trace's watch
    (state/effects_at_raise.py: eagerly, changes made in it before an op in it fails stay)."""
    if objects is None and not any("." in n or "[" in n for n in names):
        return out
    state = current()
    watch = state.trace.python_state if state is not None and state.parent is None else None
    if watch is not None and watch.checkpoints is not None:
        watch.checkpoints.changes_inside()
    return out


def _carrying_objects(objects: Objects, run: Callable[[], tuple], n: int) -> tuple:
    """`run()` (a loop or `if` whose results end with the entries `objects` carries), traced again while its
    sub-traces change entries it does not carry yet; the carried entries take its results."""
    for _ in range(32):
        try:
            out = run()
        except Changed as e:
            if e.owner is not objects:
                raise
            objects.carry(e.slots)
            continue
        objects.store(out[n:])
        return tuple(out[:n])
    raise AssertionError("bug in torch_autograph: the Python objects a loop or `if` carries did not settle")


@contextmanager
def _entered(objects: Objects | None, values: Sequence[Any], detect: bool = True) -> Iterator[list]:
    if objects is None:
        yield []
    else:
        with objects.entered(values, detect) as outputs:
            yield outputs


@contextmanager
def _defined_before_loop(init_vars: tuple, names: Sequence[str], origin: Origin) -> Iterator[None]:
    """A variable first assigned in a graph loop and read in it where it may be unassigned: say so at the loop.

    Both branches of a graph `if` in the body are traced, so a read on the path that does not assign it
    (`if i == 0: a = 1 else: a = a + 1`) fails while tracing, whichever path runs first. As TensorFlow, the
    variable must then be given a value before the loop.
    """
    try:
        yield
    except UnboundLocalError as e:
        unset = [n for n, v in zip(names, init_vars) if type(v) is Undefined and f"'{n}'" in str(e)]
        if not unset:
            raise
        raise ValueError(
            f"'{unset[0]}' must be defined before the loop at {origin} (`{origin.source_line}`): it is first "
            f"assigned inside the loop, and the loop body reads it on a path where it is not assigned yet "
            f"({e}). The loop's condition is a graph value, so its body is traced once for all iterations, "
            f"with both branches of each graph `if`; give '{unset[0]}' an initial value before the loop.") from None


def _unsetting(fn: Callable[..., tuple], check: Callable[[tuple], None]) -> Callable[..., tuple]:
    """A handler whose outputs have UNSET for AutoGraph's placeholders, `check`ed first."""
    def run(exc: Any, *vals: Any) -> tuple:
        out = tuple(fn(exc, *vals))
        check(out)
        return _unset_in(out)

    run.__wrapped__ = fn  # (what the handler reads: subtraces/at_raise.py)
    return run


def _check_try_paths(names: Sequence[str], before: Sequence[Any], body: Sequence[Any], handler: Sequence[Any],
                     origin: SourceLocation | None, unused_after: Sequence[str]) -> None:
    """A variable undefined before a staged `try` that the body defines and a handler does not (or the reverse),
    read after the `try`: either path may run when the graph runs, so, as for the branches of a graph `if`, it
    is `FirstAssignedInBranch` (an enclosing graph loop first assigning it gives it a placeholder). Read only
    by the `else:` (which runs only on the body's path), it needs nothing."""
    for name, b, t, h in zip(names, before, body, handler):
        if name in unused_after or type(b) is not Undefined or (type(t) is Undefined) == (type(h) is Undefined):
            continue
        missing, defined = ("`try` body", h) if type(t) is Undefined else ("`except`", t)
        code = f" (`{origin.line}`)" if origin is not None and origin.line else ""
        raise FirstAssignedInBranch(
            f"'{name}' must also be initialised in the {missing} of the `try` whose `except` is at {origin}{code}: "
            f"its body's graph ops may fail when the graph runs, so the body or the handler may be the path taken, "
            f"and each must define '{name}'. Define '{name}' before the `try` or on both paths.",
            name, _example_of(defined))


def _check_branches(names: Sequence[str], before: tuple, true_out: tuple, false_out: tuple, origin: Origin) -> None:
    """`check_branch_outputs`; a variable undefined before the `if` and defined in one branch only is
    `FirstAssignedInBranch`, which an enclosing graph loop first assigning it resolves."""
    try:
        check_branch_outputs(names, true_out, false_out, origin)
    except ValueError as e:
        for name, b, t, f in zip(names, before, true_out, false_out):
            if type(b) is Undefined and (type(t) is Undefined) != (type(f) is Undefined) and f"'{name}'" in str(e):
                defined = f if type(t) is Undefined else t
                raise FirstAssignedInBranch(str(e), name, _example_of(defined)) from None
        raise


def _example_of(v: Any) -> Any:
    """What a placeholder of `v`'s type is made from: its graph Value, or a Python number of its kind."""
    if isinstance(v, (GraphTensor, GraphList)):
        return v._value
    if is_scalar(v):
        return {torch.SymBool: False, torch.SymFloat: 0.0}.get(next(t for t in (torch.SymBool, torch.SymFloat,
                                                                               torch.SymInt) if isinstance(v, t)), 0)
    return v


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


def _both_branches(origin: Origin, trace: Callable[[], Any]) -> Any:
    """An exception raised by user code while tracing the branches of a graph `if`: say why, at its line.

    Both branches of a graph `if` are traced. What the user's code raises in one of them is raised when the
    graph runs and takes that branch (subtraces/raises.py); what reaches here was not staged: a RecursionError
    is a recursion whose base case depends on a graph value; any other exception raised by the user's code
    (not by torch or this library) becomes StagedBranchError, which a user's `except` meant for the taken
    branch does not catch.
    """
    try:
        return trace()
    except RecursionError:
        raise OperatorNotAllowedInGraphError(
            f"maximum recursion depth exceeded while tracing the branches of the `if` at {origin} "
            f"(`{origin.source_line}`): its condition is a graph value, so both branches are traced, and a "
            "recursive call in a branch recurses without end while tracing. Stop the recursion on a Python value "
            "(e.g. a depth argument), or write it as a loop.") from None
    except (TorchAutographError, OperatorNotAllowedInGraphError, InaccessibleTensorError, _ListMutated, Changed):
        raise
    except Exception as e:
        if not _raised_by_user_code(e):
            raise
        raise _traced_branch_error(e, origin) from e


def _traced_branch_error(e: BaseException, origin: Origin) -> StagedBranchError:
    return StagedBranchError(
        f"{type(e).__name__}: {e} was raised while tracing a branch of the `if` at {origin} "
        f"(`{origin.source_line}`): its condition is a graph value, so both branches are traced and the "
        "exception is raised whichever branch runs. Raise on a Python condition, use `assert` for a check "
        "when the graph runs, or catch the exception inside the branch.")


_SUBSCRIPTS = os.path.realpath(python_lists.__file__)


def _raised_by_user_code(e: BaseException) -> bool:
    """Whether the last frame `e` was raised in, not counting the converted code's subscript operators
    (`ag__.get_item(d, k)` raises the KeyError of the user's `d[k]`), is the user's."""
    tb, last = e.__traceback__, None
    while tb is not None:
        if os.path.realpath(tb.tb_frame.f_code.co_filename) != _SUBSCRIPTS:
            last = tb
        tb = tb.tb_next
    if last is None:
        return False
    filename = last.tb_frame.f_code.co_filename
    return map_origin(filename, last.tb_lineno) is not None or not is_library_file(filename)


class _ListMutated(Exception):
    """A branch changed a Python list of the `if`'s state in place: {index: its items before}."""

    def __init__(self, snapshots: dict[int, list]) -> None:
        self.snapshots = snapshots


def _changed(items: list, before: list) -> bool:
    return len(items) != len(before) or any(a is not b for a, b in zip(items, before))


def _as_graph_list(items: list, seen: list, name: str, origin: Origin) -> GraphList:
    """`items` as a graph list; `seen`, what a branch left in it, gives an empty list its element type."""
    try:
        return lists.new_list(items, like=seen)
    except TypeError as e:
        raise TypeError(f"{quoted(name)} is a Python list changed in place in a branch of the `if` at {origin} "
                        f"(`{origin.source_line}`), whose condition is a graph value: {e}. Only a list of "
                        "tensors or Python numbers can change in a graph `if`; build a new list in each branch "
                        "instead.") from None


def _is_tensor_list(v: Any) -> bool:
    # Not an empty list: a branch that fills it says what it holds (see `_ListMutated`).
    return type(v) is list and bool(v) and all(isinstance(x, torch.Tensor) for x in v)
