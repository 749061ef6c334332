"""The hook between the operators and a staging backend ("is this a graph value?").

`autograph/` knows nothing about torch. The torch side registers exactly one
`StagingBackend` at import time with `register_backend`; every operator asks
it whether its condition / iterable / operand is a staged (graph) value:

- not staged -> the operator behaves exactly like the Python statement;
- staged -> the operator calls the backend method named below, passing
  thunks/functions so the backend can trace each branch or loop body as a
  sub-graph.

With no backend registered everything is plain Python.

State convention. Control-flow operators pass the statement's state as a
tuple `init_vars` with a parallel tuple of user-facing `names` (e.g.
`('i', 'x')`); functions take the values positionally and return a tuple of
the same length. Values may be:

- `Undefined(name)` (see `operators.variables`): the variable is unbound at
  that point (first assigned inside the statement). `is_undefined(v)` tests
  for it. In a loop this is how the backend learns which loop variables are
  undefined on entry (checked at run time to be set by the loop); after a branch it is how a variable
  defined on one side only shows up (use `control_flow.check_branch_outputs`
  for the error message).
- `UndefinedReturnValue()`: the function's return slot (`retval_`) before any
  `return` ran. Reads of it are always guarded by the `do_return` flag, so
  the backend may fill it with any value of the other branch's type (in a
  `cond`), or of the type the body gives it (in a loop, where it is
  UndefinedReturnValue on entry and a value after a `return` inside the
  body): unlike a user variable it needs no "loop ran at least once" check.
  Its name is generated (`retval_`, `retval__1`, ...): test the value's
  type, not the name.
- break / continue / return flags (`break_`, `continue_`, `do_return`) are
  ordinary state variables (Python bool, or staged once set under a staged
  condition). `while_stmt` folds them into `test_fn`; `for_stmt` passes them
  through `extra_test`.

`origin` is an `origin_info.Origin` naming the user's statement (file, line,
function, source line), computed only on the staged path.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Optional, Protocol, Sequence, runtime_checkable

from torch_autograph.autograph.pyct.origin_info import Origin

Vars = tuple


@runtime_checkable
class StagingBackend(Protocol):
    """What a graph backend implements so operators can stage control flow.

    Every method is called only when `is_staged` said True for the relevant
    value (or a lazy iterable wraps one). Each must return values with Python
    semantics where it can; it may raise the library's errors (naming
    `origin`).
    """

    def is_staged(self, value: Any) -> bool:
        """True if `value` is a graph value whose concrete value is unknown now.

        Must be cheap: it is called on every operator evaluation while tracing.
        """

    def call(self, f: Any, args: tuple, kwargs: dict) -> Any:
        """What calling library callable `f` from converted code does instead, or NotImplemented to call it.

        Optional (a backend without it stages no calls). Asked for every library callable converted code calls (e.g. the torch side calls an `nn.Module`'s
        converted forward and stages `optimizer.step()`); must be cheap when it declines.
        """

    def writes_in_place(self, value: Any) -> bool:
        """True if `value[key] = v` is an operation the graph records (a tensor), not Python state."""

    def is_list(self, value: Any) -> bool:
        """True if `value` is a list the graph holds (its elements written by index as a list's are)."""

    def assign_list(self, target: Any, value: Any) -> None:
        """Make graph list `target` hold what graph list `value` holds (an element write's result)."""

    def cond(self, pred: Any, true_fn: Callable[..., Vars], false_fn: Callable[..., Vars],
             init_vars: Vars, names: Sequence[str], origin: Origin) -> Vars:
        """Staged `if`: trace both `true_fn(*init_vars)` and `false_fn(*init_vars)`.

        Both return tuples of len(names); the result is the per-variable
        selection. Check outputs with `control_flow.check_branch_outputs`.
        """

    def while_loop(self, test_fn: Callable[..., Any], body_fn: Callable[..., Vars],
                   init_vars: Vars, names: Sequence[str], options: Mapping[str, Any],
                   origin: Origin) -> Vars:
        """Staged `while`: `test_fn(*vars)` -> staged bool; `body_fn(*vars)` -> vars.

        Also called mid-loop when a Python `while`'s condition (or a break /
        return flag folded into it) turns staged: `init_vars` are then the
        current values. `options`: 'maximum_iterations' (int or staged) and
        'shape_invariants' (dict var name -> shape), when the user set them.
        """

    def for_loop(self, iterable: Any, extra_test: Optional[Callable[..., Any]],
                 body_fn: Callable[..., Vars], init_vars: Vars, names: Sequence[str],
                 options: Mapping[str, Any], origin: Origin) -> Vars:
        """Staged `for`: iterate `iterable` (staged, or a LazyRange / LazyEnumerate / LazyZip).

        `body_fn(target, *vars)` -> vars. `extra_test(*vars)` (None when the
        loop has no break/return) is checked before each iteration; the loop
        stops when it is false.
        """

    def if_exp(self, pred: Any, true_thunk: Callable[[], Any], false_thunk: Callable[[], Any],
               origin: Origin) -> Any:
        """Staged ternary `a if pred else b`; both thunks may be traced."""

    def and_(self, left: Any, right_thunk: Callable[[], Any], origin: Origin) -> Any:
        """Staged `left and right` where `left` is staged (lazy right)."""

    def or_(self, left: Any, right_thunk: Callable[[], Any], origin: Origin) -> Any:
        """Staged `left or right` where `left` is staged (lazy right)."""

    def not_(self, value: Any, origin: Origin) -> Any:
        """Staged `not value`."""

    def truth(self, value: Any, origin: Origin) -> Any:
        """Staged `bool(value)`, for an `and`/`or` whose value only a test reads (`if a and b:`)."""

    def assert_(self, cond: Any, msg_thunk: Optional[Callable[[], Any]], origin: Origin) -> None:
        """Staged `assert cond, msg`: a run-time check (InvalidArgumentError on failure)."""

    def call_builtin(self, builtin: Callable, args: tuple, kwargs: Mapping[str, Any],
                     origin: Origin) -> Any:
        """A builtin (len, int, float, abs, min, max, sum, any, all, sorted,
        isinstance, range, enumerate, zip) with at least one staged argument or
        lazy iterable. `builtin` is the Python builtin object itself. Return
        NotImplemented to get the plain Python behaviour.
        """

    def list_append(self, target: Any, element: Any, origin: Origin) -> Any:
        """`target.append(element)` where target is a staged list; returns the new list."""

    def list_pop(self, target: Any, args: tuple, origin: Origin) -> tuple[Any, Any]:
        """`target.pop(*args)` on a staged list; returns (new list, element)."""

    def sequence_getitem(self, target: Any, index: Any, origin: Origin) -> Any:
        """`target[index]` of a Python list or tuple at a staged index: the element read at run time."""

    def list_insert(self, target: Any, index: Any, element: Any, origin: Origin) -> Any:
        """`target.insert(index, element)` on a staged list; returns the new list."""

    def list_delitem(self, target: Any, index: Any, origin: Origin) -> Any:
        """`del target[index]` on a staged list; returns the new list."""

    def list_extend(self, target: Any, items: Any, origin: Origin) -> Any:
        """`target.extend(items)` (or `target += items`) where target is staged; returns the new list.

        Return NotImplemented when `target` is not a staged list (e.g. a staged
        tensor under `+=`): the operator then does what Python would.
        """


class _Registry:
    """Holds the one registered backend (None: everything is plain Python).

    The one place where a lower layer is handed code from a higher one: AutoGraph never imports torch, so
    the torch side (staging/) registers the backend that stages its operators and calls, once, at import.
    """

    backend: Optional[StagingBackend] = None


_registry = _Registry()


def register_backend(backend: Optional[StagingBackend]) -> Optional[StagingBackend]:
    """Installs `backend` (None uninstalls); returns the previous one.

    The torch side calls this once at import. Tests install fakes and restore
    the previous backend afterwards.
    """
    previous = _registry.backend
    _registry.backend = backend
    return previous


def current_backend() -> Optional[StagingBackend]:
    """The registered backend, or None."""
    return _registry.backend


# Types that are never staged: checked before asking the backend so that
# plain-Python code pays one type lookup.
PLAIN_TYPES = frozenset({bool, int, float, str, type(None), list, tuple, dict, range, complex,
                         bytes, set, frozenset})


def is_staged(value: Any) -> bool:
    """True if a backend is registered and says `value` is staged."""
    backend = _registry.backend
    if backend is None or type(value) in PLAIN_TYPES:
        return False
    return backend.is_staged(value)


def is_graph_list(value: Any) -> bool:
    """True if a backend is registered and says `value` is a list the graph holds."""
    backend = _registry.backend
    return backend is not None and type(value) not in PLAIN_TYPES and backend.is_list(value)


def writes_in_place(value: Any) -> bool:
    """True if a backend is registered and says item stores into `value` are graph operations."""
    backend = _registry.backend
    return backend is not None and backend.writes_in_place(value)


def staged_any(values: Iterable[Any]) -> bool:
    backend = _registry.backend
    if backend is None:
        return False
    return any(type(v) not in PLAIN_TYPES and backend.is_staged(v) for v in values)


def caller_origin(depth: int = 2) -> Origin:
    """The user-facing origin of the generated code `depth` frames up.

    Only the staged path calls this (frame inspection is too slow for the
    plain-Python fast path).
    """
    import linecache
    import sys

    from torch_autograph.autograph.pyct import origin_info

    frame = sys._getframe(depth)
    code = frame.f_code
    origin = origin_info.lookup_origin(code.co_filename, frame.f_lineno)
    if origin is None:
        origin = Origin(code.co_filename, frame.f_lineno, code.co_name,
                        linecache.getline(code.co_filename, frame.f_lineno).strip())
    return origin
