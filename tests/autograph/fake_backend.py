"""A torch-free staging backend for testing the operators' staged paths.

`Staged(v)` stands for a graph value: arithmetic and comparisons give new
`Staged` values, but `bool()`, `int()`, iteration and indexing raise, exactly
where a graph tensor could not give a concrete answer. `FakeBackend`
implements `StagingBackend` the way a graph backend would behave
observably: `cond` runs (traces) both branches and selects by value, loops
run their body in Python, and every staged result is `Staged` again.
"""

from __future__ import annotations

import collections
import contextlib
import operator
from typing import Any, Callable, Iterator

from torch_autograph.autograph.operators import LazyEnumerate, LazyRange, LazyZip, check_branch_outputs, dispatch
from torch_autograph.autograph.operators.variables import Undefined, UndefinedReturnValue
from torch_autograph.errors import OperatorNotAllowedInGraphError


class Staged:
    """A value known only when the (fake) graph runs."""

    __slots__ = ("v",)
    __hash__ = None  # == is element-wise, as for tensors

    def __init__(self, v: Any):
        self.v = v.v if isinstance(v, Staged) else v

    def __repr__(self) -> str:
        return f"Staged({self.v!r})"

    def __bool__(self):
        raise OperatorNotAllowedInGraphError(f"bool() of {self!r} while staging")

    def __index__(self):
        raise OperatorNotAllowedInGraphError(f"index of {self!r} while staging")

    __int__ = __float__ = __index__

    def __iter__(self):
        raise OperatorNotAllowedInGraphError(f"iterating {self!r} while staging")

    def __len__(self):
        raise OperatorNotAllowedInGraphError(f"len() of {self!r} while staging")

    def __getitem__(self, index):
        # Reading a staged list or tensor gives a staged element (a graph getitem).
        return Staged(self.v[unwrap(index)])


def _binary(op: Callable) -> tuple[Callable, Callable]:
    def forward(self, other):
        return Staged(op(self.v, unwrap(other)))

    def reverse(self, other):
        return Staged(op(unwrap(other), self.v))

    return forward, reverse


for _name, _op in [("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                   ("floordiv", operator.floordiv), ("mod", operator.mod),
                   ("truediv", operator.truediv), ("pow", operator.pow)]:
    _f, _r = _binary(_op)
    setattr(Staged, f"__{_name}__", _f)
    setattr(Staged, f"__r{_name}__", _r)
for _name, _op in [("lt", operator.lt), ("le", operator.le), ("gt", operator.gt),
                   ("ge", operator.ge), ("eq", operator.eq), ("ne", operator.ne)]:
    setattr(Staged, f"__{_name}__", _binary(_op)[0])
Staged.__neg__ = lambda self: Staged(-self.v)
Staged.__pos__ = lambda self: Staged(+self.v)
Staged.__abs__ = lambda self: Staged(abs(self.v))


def unwrap(x: Any) -> Any:
    """The concrete value(s) inside Staged values (recursively through tuples/lists)."""
    if isinstance(x, Staged):
        return x.v
    if type(x) in (tuple, list):
        return type(x)(unwrap(e) for e in x)
    return x


def _stage(x: Any) -> Any:
    """Graph outputs are graph values: plain scalars coming out of a staged op become Staged."""
    if isinstance(x, (bool, int, float)) and not isinstance(x, Staged):
        return Staged(x)
    return x


def _try(fn: Callable, *args: Any) -> tuple[bool, Any]:
    try:
        return True, fn(*args)
    except (ArithmeticError, IndexError, KeyError, ValueError) as e:
        # A traced branch that is not taken never fails at run time; anything
        # else (TypeError: a graph value used as a bool) is a real bug.
        return False, e


class FakeBackend:
    """Implements dispatch.StagingBackend over `Staged` values; counts calls per method."""

    def __init__(self) -> None:
        self.calls: collections.Counter = collections.Counter()
        self.origins: list = []

    def is_staged(self, value: Any) -> bool:
        return isinstance(value, Staged)

    def _truth(self, value: Any) -> bool:
        return bool(unwrap(value))

    def cond(self, pred, true_fn, false_fn, init_vars, names, origin):
        self.calls["cond"] += 1
        self.origins.append(origin)
        # A Python list a branch changes in place would be changed by both traces: like a graph
        # list, it becomes a staged value (trace again from the list as it was).
        lists = {i: v[:] for i, v in enumerate(init_vars) if type(v) is list}

        def changed() -> list:
            return [i for i, items in lists.items() if len(init_vars[i]) != len(items)
                    or any(a is not b for a, b in zip(init_vars[i], items))]

        ok_t, out_t = _try(true_fn, *init_vars)
        moved = changed()
        if not moved:
            ok_f, out_f = _try(false_fn, *init_vars)
            moved = changed()
        if moved:
            init_vars = list(init_vars)
            for i in moved:
                init_vars[i][:] = lists[i]
                init_vars[i] = Staged(list(lists[i]))
            ok_t, out_t = _try(true_fn, *init_vars)
            ok_f, out_f = _try(false_fn, *init_vars)
        taken_ok, taken = (ok_t, out_t) if self._truth(pred) else (ok_f, out_f)
        if not taken_ok:
            raise taken
        if ok_t and ok_f:
            check_branch_outputs(names, out_t, out_f, origin)
        return tuple(_stage(v) for v in taken)

    def while_loop(self, test_fn, body_fn, init_vars, names, options, origin):
        self.calls["while_loop"] += 1
        self.origins.append(origin)
        loop_vars = tuple(init_vars)
        limit = options.get("maximum_iterations")
        n = 0
        while self._truth(test_fn(*loop_vars)) and (limit is None or n < unwrap(limit)):
            loop_vars = tuple(body_fn(*loop_vars))
            n += 1
        return tuple(_stage(v) for v in loop_vars)

    def _elements(self, iterable: Any) -> Iterator:
        if isinstance(iterable, LazyRange):
            return iter(range(unwrap(iterable.start), unwrap(iterable.stop),
                              unwrap(iterable.step)))
        if isinstance(iterable, LazyEnumerate):
            return enumerate(self._elements(iterable.iterable), unwrap(iterable.start))
        if isinstance(iterable, LazyZip):
            return zip(*(self._elements(i) for i in iterable.iterables))
        if isinstance(iterable, Staged):
            return iter(iterable.v)
        return iter(iterable)

    def for_loop(self, iterable, extra_test, body_fn, init_vars, names, options, origin):
        self.calls["for_loop"] += 1
        self.origins.append(origin)
        loop_vars = tuple(init_vars)
        limit = options.get("maximum_iterations")
        for n, element in enumerate(self._elements(iterable)):
            if extra_test is not None and not self._truth(extra_test(*loop_vars)):
                break
            if limit is not None and n >= unwrap(limit):
                break
            target = tuple(_stage(e) for e in element) if isinstance(element, tuple) else \
                _stage(element)
            loop_vars = tuple(body_fn(target, *loop_vars))
        return tuple(_stage(v) for v in loop_vars)

    def if_exp(self, pred, true_thunk, false_thunk, origin):
        self.calls["if_exp"] += 1
        ok_t, t = _try(true_thunk)
        ok_f, f = _try(false_thunk)
        ok, v = (ok_t, t) if self._truth(pred) else (ok_f, f)
        if not ok:
            raise v
        return _stage(v)

    def and_(self, left, right_thunk, origin):
        self.calls["and_"] += 1
        return Staged(unwrap(left) and unwrap(right_thunk()))

    def or_(self, left, right_thunk, origin):
        self.calls["or_"] += 1
        return Staged(unwrap(left) or unwrap(right_thunk()))

    def truth(self, value, origin):
        self.calls["truth"] += 1
        return Staged(bool(unwrap(value)))

    def not_(self, value, origin):
        self.calls["not_"] += 1
        return Staged(not unwrap(value))

    def assert_(self, cond, msg_thunk, origin):
        self.calls["assert_"] += 1
        self.origins.append(origin)
        if not self._truth(cond):
            msg = msg_thunk() if msg_thunk is not None else "assertion failed"
            raise AssertionError(f"{msg} ({origin})")

    def call_builtin(self, builtin, args, kwargs, origin):
        self.calls[builtin.__name__] += 1
        if builtin is isinstance:
            return NotImplemented
        return _stage(builtin(*unwrap(args), **{k: unwrap(v) for k, v in kwargs.items()}))

    def list_append(self, target, element, origin):
        self.calls["list_append"] += 1
        return Staged(list(target.v) + [unwrap(element)])

    def list_extend(self, target, items, origin):
        self.calls["list_extend"] += 1
        if not isinstance(target.v, list):
            return NotImplemented
        return Staged(list(target.v) + [unwrap(x) for x in items])

    def sequence_getitem(self, target, index, origin):
        self.calls["sequence_getitem"] += 1
        return _stage(target[unwrap(index)])

    def writes_in_place(self, value):
        return False

    def list_insert(self, target, index, element, origin):
        self.calls["list_insert"] += 1
        items = list(target.v)
        items.insert(unwrap(index), unwrap(element))
        return Staged(items)

    def list_delitem(self, target, index, origin):
        self.calls["list_delitem"] += 1
        items = list(target.v)
        del items[unwrap(index)]
        return Staged(items)

    def list_pop(self, target, args, origin):
        self.calls["list_pop"] += 1
        items = list(target.v)
        element = items.pop(*unwrap(args))
        return Staged(items), _stage(element)


@contextlib.contextmanager
def installed(backend: Any = None) -> Iterator[FakeBackend]:
    """Registers a FakeBackend (or `backend`) for the duration of a with-block."""
    backend = FakeBackend() if backend is None else backend
    previous = dispatch.register_backend(backend)
    try:
        yield backend
    finally:
        dispatch.register_backend(previous)


__all__ = ["Staged", "FakeBackend", "installed", "unwrap", "Undefined", "UndefinedReturnValue"]
