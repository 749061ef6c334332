"""Effects of a trace on Python objects that outlive the call, replayed after every call with its real values.

Eager code that writes `state["a"] = x * 2`, `log.append(x.sum())`, `rewards.clear()` or `obj.last = y`
changes objects the caller keeps. A trace runs that Python once, on graph tensors: without this module the
writes land in a copy (dict and list arguments are rebuilt around placeholders) or leave graph tensors in the
user's objects. Like torch._dynamo's side effects, what is replayed is the final state of each object the
trace changed (`old[:] = new`, `old.clear(); old.update(new)`, `setattr`), its graph values becoming extra
outputs of the graph; the structure (which keys, how many items) is part of the trace.

Two kinds of objects are followed:

- containers of the arguments (dicts and lists rebuilt around placeholders): found again by their path in the
  call's arguments, so each call updates the objects it was given;
- objects held by identity (the closure's and globals' lists, dicts and plain objects, and objects passed as
  arguments): snapshot before the trace and put back after it, so the trace leaves them as they were. What the
  trace read of such an object was fixed when it ran, so a changed object carries a guard: the entries it changed
  (a list: all its items) must hold at the start of a call what they held before the trace, or the Function
  traces again. A list the trace only appended
  to is replayed as `extend` and needs no guard, unless it was empty when traced (the trace may have
  cleared it first): a call must then find it empty, or trace again, which tells the two apart.
"""

from __future__ import annotations

import types
import weakref
from dataclasses import dataclass, field
from typing import Any

import torch

from ..errors import InaccessibleTensorError
from ..tracing import SYMBOLIC, GraphList, Traced, user_location
from .captures import MISSING as _MISSING
from .captures import Bindings
from .object_writes import assign as _assign
from .object_writes import at_path as _at_path
from .object_writes import contents_of as _contents
from .object_writes import resolve as _resolve
from .object_writes import update_entries as _update

_SCALARS = (int, float, bool, str, bytes, complex, type(None))
_NUMBER_OF = {torch.SymInt: int, torch.SymFloat: float, torch.SymBool: bool}
_MAX_DEPTH = 4  # containers nested deeper than this in a captured object are not followed
_MAX_OBJECTS = 256  # nor more than this many objects per trace (a captured model's whole tree would be too many)


class StateEffectError(TypeError):
    """A trace changed a Python object in a way that can not be replayed at every call."""


# ----- what a trace saw ---------------------------------------------------------------------------
@dataclass
class ObjectWatch:
    """The objects a trace may change, with their contents before it ran."""

    held: list = field(default_factory=list)  # (object, kind, contents) by identity
    arg_containers: list = field(default_factory=list)  # (trace-side container, path, contents)
    paths: dict = field(default_factory=dict)  # id(trace-side container) -> its path in the arguments
    # id(held object) -> (the held object it was found in, the step to it: `step_of`), for the objects found
    # inside another: the tensors read at each call are read along that path (an inner dict replaced is seen).
    parents: dict = field(default_factory=dict)
    _seen: set = field(default_factory=set)
    # How many objects were followed, apart from modules' trees (and what is in them): a large model's modules
    # use up their own budget, never that of the lists and dicts the function captures.
    _counts: dict = field(default_factory=lambda: {False: 0, True: 0})

    def hold(self, obj: Any, depth: int = 0, parent: tuple | None = None, in_module: bool = False) -> None:
        """Follow `obj` (and the containers inside it, and a module's submodules) by identity."""
        if depth > _MAX_DEPTH or id(obj) in self._seen:
            return
        kind = object_kind(obj)
        if kind is None:
            return
        in_module = in_module or kind == "module"
        if self._counts[in_module] >= _MAX_OBJECTS:
            return
        self._counts[in_module] += 1
        self._seen.add(id(obj))
        if parent is not None:
            self.parents[id(obj)] = parent
        contents = _contents(obj, kind)
        self.held.append((obj, kind, contents))
        for key, v in (enumerate(contents) if kind == "list" else contents):
            self.hold(v, depth + 1, (obj, step_of(kind, key)), in_module)
        if kind == "module":
            for name, m in obj._modules.items():
                self.hold(m, depth + 1, (obj, ("submodule", name)), True)

    def argument(self, container: Any, path: tuple) -> None:
        """Follow a container the trace built around placeholders for the argument at `path`."""
        kind = object_kind(container)
        if kind in ("list", "dict") and id(container) not in self.paths:
            self.paths[id(container)] = path
            self.arg_containers.append((container, path, _contents(container, kind)))

    # What the objects held each time they changed between two ops (effects_at_raise.py); None: not followed.
    checkpoints: Any = None

    def token(self) -> list:
        """What the followed objects hold now (compared by `check_unchanged`)."""
        return [_contents(obj, kind) for obj, kind, _ in self.held] + \
            [_contents(c, object_kind(c)) for c, _, _ in self.arg_containers]

    def initial(self) -> list:
        """What the followed objects held before the trace (a `token`)."""
        return [contents for _, _, contents in self.held] + [contents for _, _, contents in self.arg_containers]

    def same(self, k: int, a: list, b: list) -> bool:
        """Whether the `k`-th object of two tokens holds the same items."""
        kind = self.held[k][1] if k < len(self.held) else object_kind(self.arg_containers[k - len(self.held)][0])
        return _same_items(a, b, kind)

    def check_unchanged(self, token: list, carried: bool = True, inputs: frozenset = frozenset()) -> None:
        """Raise if a followed object changed since `token`: a tensor `if` or loop body changed it while it was
        traced, so the change would be replayed whichever branch runs, however many times the loop runs.
        `carried`: graph values put in place of entries are allowed (the staged `if` or loop carries them); not
        in an `except` clause run when the graph runs, which carries only its variables: entries set to one of
        the values it starts from (`inputs`: ids; the converted code's `d['l'] = <d['l'] before the body>`)."""
        objects = [(obj, kind) for obj, kind, _ in self.held] + [(c, object_kind(c)) for c, _, _ in self.arg_containers]
        for (obj, kind), before in zip(objects, token):
            now = _contents(obj, kind)
            if not _same_items(now, before, kind) and _replayed(now, before, kind) and \
                    not (carried and _staged_writes(now, before, kind)) and not _set_to(now, before, kind, inputs):
                loc = user_location()
                raise StateEffectError(
                    f"{_described(obj, now, before, kind)} that outlives the call is changed inside a tensor "
                    f"`if` or loop{'' if carried else ' (an `except` clause run when the graph runs)'}"
                    f"{f' ({loc})' if loc else ''}: the graph decides at run time whether (and how often) that "
                    f"code runs, and Python objects can only be updated after the call as a whole. Compute the "
                    f"new values in the branch or loop into local variables (tensors), and store them after it")

    def restore_to(self, token: list) -> None:
        """Put back what the followed objects held at `token` (a sub-trace whose Python effects run elsewhere)."""
        objects = [(obj, kind) for obj, kind, _ in self.held] + [(c, object_kind(c)) for c, _, _ in self.arg_containers]
        for (obj, kind), before in zip(objects, token):
            if not _same_items(_contents(obj, kind), before, kind):
                _assign(obj, kind, before)

    def restore(self) -> None:
        """Put back as they were before the trace the held objects it changed in a way replayed at each call
        (graph values written into them, items removed); additions of Python values stay, made once."""
        for obj, kind, contents in self.held:
            now = _contents(obj, kind)
            if not _same_items(now, contents, kind) and _replayed(now, contents, kind):
                _assign(obj, kind, contents)


def _described(obj: Any, now: list, before: list, kind: str) -> str:
    """`a dict`, or `the global 'g'` / `the nonlocal 'n'` (the names a trace rebound)."""
    if kind != "names":
        return f"a {type(obj).__name__}"
    old = dict(before)
    names = [k for k, v in now if old.get(k, _MISSING) is not v]
    return f"the {obj.what} {', '.join(repr(n) for n in names)}"


def object_kind(obj: Any) -> str | None:
    t = type(obj)
    if t is Bindings:
        return "names"
    if t is list:
        return "list"
    if t is dict:
        return "dict"
    if isinstance(obj, (Traced, torch.Tensor, type, types.ModuleType, types.FunctionType, types.MethodType,
                        types.BuiltinFunctionType, _SCALARS, tuple, frozenset, set)):
        return None
    if isinstance(obj, torch.nn.Module):
        return "module"  # its plain attributes (`self.running = ...`); parameters, buffers, submodules are staged
    if isinstance(obj, torch.optim.Optimizer) or _persistent(obj):
        return None  # their own state is staged (parameters, buffers, optimizer state) where it is tensors
    d = getattr(obj, "__dict__", None)
    return "attrs" if type(d) is dict and not callable(obj) else None


def _persistent(obj: Any) -> bool:
    """An object of this library (a Variable, an optimizer, a tape) or of torch (a GradScaler): made once by the
    first trace and kept, as TensorFlow keeps the Variables a first trace creates; its updates are staged."""
    if isinstance(obj, (Traced, *SYMBOLIC)):
        return False
    module = type(obj).__module__
    return module.startswith("torch_autograph.") or module.startswith("torch.")


def _absorb_created(watch: ObjectWatch) -> None:
    """Keys of held dicts and objects the trace set to objects of this library count as there before it."""
    for i, (obj, kind, before) in enumerate(watch.held):
        if kind == "list":
            continue
        old = dict(before)
        created = [(k, v) for k, v in _contents(obj, kind) if _persistent(v) and old.get(k, None) is not v]
        if created:
            old.update(created)
            watch.held[i] = (obj, kind, list(old.items()))


def step_of(kind: str, key: Any) -> tuple:
    """How an entry of an object of `kind` is reached: ("item", key) `x[key]`, ("attr", name) `vars(x)[name]`."""
    return ("item", key) if kind in ("list", "dict") else ("attr", key)


def _same_items(a: list, b: list, kind: str) -> bool:
    if len(a) != len(b):
        return False
    if kind == "list":
        return all(x is y for x, y in zip(a, b))
    return all(ka == kb and va is vb for (ka, va), (kb, vb) in zip(a, b))


def _replayed(now: list, before: list, kind: str) -> bool:
    """Whether a change is one replayed at every call: it stores graph values (a trace-time value would be
    wrong, or out of scope, after the call) or removes items (`clear`, `pop`, `del`: what the trace read of the
    object is then guarded). Additions of Python values (`traced.append(1)`, a counter) are made once, while
    tracing, as TensorFlow documents for Python side effects."""
    if kind == "list":
        if len(now) < len(before) or not _same_items(now[:len(before)], before, kind):
            return True
        return any(_holds_graph(v) for v in now[len(before):])
    old = dict(before)
    new = dict(now)
    if any(k not in new for k in old):
        return True
    return any(_holds_graph(v) for k, v in new.items() if old.get(k, _MISSING) is not v)


def _holds_graph(x: Any, depth: int = 0) -> bool:
    """A graph tensor or run-time number, or a list, tuple or dict holding one."""
    if isinstance(x, SYMBOLIC):  # (a run-time number the tracer made is Traced too)
        return True
    if isinstance(x, Traced):
        return isinstance(x, (torch.Tensor, GraphList))
    if depth < _MAX_DEPTH and type(x) in (list, tuple, torch.Size):
        return any(_holds_graph(v, depth + 1) for v in x)
    if depth < _MAX_DEPTH and type(x) is dict:
        return any(_holds_graph(v, depth + 1) for v in x.values())
    if depth < _MAX_DEPTH and object_kind(x) == "attrs":
        return any(_holds_graph(v, depth + 1) for v in vars(x).values())
    return False


def _set_to(now: list, before: list, kind: str, inputs: frozenset) -> bool:
    """Whether `now` differs from `before` only by entries set to objects among `inputs` (ids)."""
    if not inputs or kind == "list" or [k for k, _ in now] != [k for k, _ in before]:
        return False
    return all(v is w or id(v) in inputs for (_, v), (_, w) in zip(now, before))


def _staged_writes(now: list, before: list, kind: str) -> bool:
    """Whether `now` differs from `before` only by graph values (or lists of them) put in place of items: the
    staged loop and branch state of attributes and items does that, the graph carrying those values."""
    if len(now) != len(before):
        return False
    if kind != "list":
        if any(k != j for (k, _), (j, _) in zip(now, before)):
            return False
        now, before = [v for _, v in now], [v for _, v in before]
    return all(v is w or isinstance(v, Traced) or _holds_graph(v) for v, w in zip(now, before))


# ----- the plan replayed at every call (its item plans: object_writes.py) -----------------------------------


@dataclass(frozen=True)
class StateEffects:
    """The effects of one trace on Python objects: applied after each call, with the guard they need."""

    on_args: tuple  # (path, kind, item plans) per changed argument container
    # (object, kind, item plans, how) per changed held object; how: "extend" (a list the trace only appended to),
    # "replace" (the plans give all its contents), or the keys the trace removed (the plans give the entries it
    # set: the others keep what the caller put there between calls)
    on_held: tuple
    guard: tuple  # (object, kind, items or (key, value)s before the trace) that must hold at the start of a call
    n_outputs: int  # graph outputs at the end of the graph that are effect values
    on_results: tuple = ()  # (index among the results, plan) per returned object holding graph values

    def results(self, results: tuple, outs: tuple, bound: dict | None) -> tuple:
        """The call's results with each returned object the trace made rebuilt from this call's values."""
        results = list(results)
        for i, plan in self.on_results:
            results[i] = _resolve(plan, outs, bound)
        return tuple(results)

    def guard_holds(self) -> bool:
        """Whether each guarded entry holds what the trace could see of it (`_like`)."""
        return all(_entries_fit(obj, kind, checks) for obj, kind, checks in self.guard)

    def guard_reason(self) -> str:
        for obj, kind, checks in self.guard:
            if not _entries_fit(obj, kind, checks):
                obj = obj() if kind == "module" else obj
                name = type(obj).__name__
                if obj is None or kind == "list":
                    return f"a {name} the trace changed holds other contents than when it was traced"
                key = next((k for k, w in checks if not _fits(dict(_contents(obj, kind)).get(k, _MISSING), w)), None)
                at = f"{name}[{key!r}]" if kind == "dict" else f"{name}.{key}"
                return f"{at} holds other contents than when it was traced"
        return "a Python object the trace changed holds other contents than when it was traced"

    # The effects made before each op that may fail as the graph runs: (place of the first root op after them,
    # on_args, on_held, the effect outputs they read), and id(node) -> (node, its place) (effects_at_raise.py)
    at_raise: tuple = ()
    order: dict = field(default_factory=dict)
    inside: dict = field(default_factory=dict)  # id(node) -> the loops and `if`s that change objects in their bodies

    def apply(self, outs: tuple, bound: dict | None) -> None:
        """Write this call's values into the objects (all resolved before the first write)."""
        self.write(self.on_args, self.on_held, outs, bound)

    def write(self, on_args: tuple, on_held: tuple, outs: tuple, bound: dict | None) -> None:
        writes = []
        for path, kind, plans in on_args:
            if bound is None:
                continue  # (the fast path: no containers among the arguments)
            writes.append((_at_path(bound, path), kind, [_resolve(p, outs, bound) for p in plans], "replace"))
        for obj, kind, plans, how in on_held:
            if kind == "module":
                obj = obj()
                if obj is None:
                    continue  # (collected: nothing to write to)
            writes.append((obj, kind, [_resolve(p, outs, bound) for p in plans], how))
        for obj, kind, items, how in writes:
            if how == "extend":
                obj.extend(items)
            elif how == "replace":
                _assign(obj, kind, items)
            else:
                _update(obj, kind, items, how)


def _entries_fit(obj: Any, kind: str, checks: list) -> bool:
    if kind == "module":
        obj = obj()
        if obj is None:
            return False
    if kind == "list":
        now = _contents(obj, kind)
        return len(now) == len(checks) and all(_fits(v, w) for v, w in zip(now, checks))
    now = dict(_contents(obj, kind))
    return all(_fits(now.get(k, _MISSING), w) for k, w in checks)


def _like(w: Any, captured: set, kept: set, depth: int = 0) -> tuple:
    """What a call must find in place of `w`, an entry the trace changed: `w` itself where the graph reads it
    by reference (a captured tensor) or the write-back keeps it (`kept`: ids); otherwise what the trace could
    see of it. A Python scalar by value; another tensor of its type, dtype, shape, device and requires_grad (the
    graph reads the tensors of an entry at every call: state_reads.py); a list, tuple or dict the same of each
    item. So a container the trace itself replaces at every call (`self.cache = [h]`) needs no new trace."""
    t = type(w)
    if id(w) in kept or id(w) in captured or depth > _MAX_DEPTH:
        return ("is", w)
    if t in _SCALARS:
        return ("eq", w)
    if t is torch.Tensor:
        return ("tensor", w.dtype, tuple(w.shape), w.device, w.requires_grad)
    if t in (list, tuple):
        return ("seq", t, tuple(_like(x, captured, kept, depth + 1) for x in w))
    if t is dict:
        return ("dict", tuple((k, _like(x, captured, kept, depth + 1)) for k, x in w.items()))
    return ("is", w)


def _fits(v: Any, like: Any) -> bool:
    if type(like) is not tuple:  # (an entry the trace created: `_MISSING`)
        return v is like
    tag = like[0]
    if tag == "is":
        return v is like[1]
    if tag == "eq":
        return type(v) is type(like[1]) and v == like[1]
    if tag == "tensor":
        return type(v) is torch.Tensor and (v.dtype, tuple(v.shape), v.device, v.requires_grad) == like[1:]
    if tag == "seq":
        return type(v) is like[1] and len(v) == len(like[2]) and all(_fits(x, w) for x, w in zip(v, like[2]))
    return type(v) is dict and len(v) == len(like[1]) and all(
        k in v and _fits(v[k], w) for k, w in like[1])


def _guarded(now: list, before: list, kind: str, captured: set, kept: set) -> list:
    """What a call must find to run this trace (`_like` of each). A list: all its items (positions shift). A
    dict or object: the entries the trace changed whose old value it may have read — a Python value (read while
    tracing), a tensor the graph captured (read by reference: another tensor there would not be seen), a
    container; an old tensor the graph did not read, overwritten, needs no check."""
    if kind == "list":
        return [_like(w, captured, kept) for w in before]
    new, old = dict(now), dict(before)
    # An entry the trace created holding a graph tensor must still be missing: the trace may have tested for it
    # (`if "h" not in state`), and a call that finds it traces again, reading it then. (Not a list or an object
    # made there: it would be another one at each call, which the next trace would then guard by identity.)
    created = [(k, _MISSING) for k, v in now if k not in old and isinstance(v, (torch.Tensor, *SYMBOLIC))]
    return [(k, _like(w, captured, kept)) for k, w in before if new.get(k, _MISSING) is not w and
            (isinstance(w, _SCALARS) or id(w) in captured or not isinstance(w, torch.Tensor))] + created


def _entries_set(now: list, before: list) -> Any:
    """How a dict's or an object's change is written back: the keys it removed (a tuple; the entries it set
    are written, the others left as the caller has them), or "replace" where the order of its keys changed."""
    old = dict(before)
    kept = [k for k, _ in now if k in old]
    if kept != [k for k, _ in before if k in dict(now)] or any(k not in old for k, _ in now[:len(kept)]):
        return "replace"
    return tuple(k for k, _ in before if k not in dict(now))


def returned_objects(flat_results: list) -> list[tuple[int, Any]]:
    """(index, object) of the results that are objects holding graph values (a returned cache)."""
    return [(i, r) for i, r in enumerate(flat_results) if object_kind(r) == "attrs" and _holds_graph(r)]


def plan_effects(watch: ObjectWatch, to_output: Any, captured: set, results: list = ()) -> StateEffects | None:
    """The effects the finished trace made on the watched objects (held ones are restored here).

    `to_output(graph_tensor) -> int` makes a graph tensor an extra output of the graph and gives its index;
    `captured`: the ids of the real tensors the graph reads; `results`: `returned_objects` of the results.
    """
    _absorb_created(watch)
    if watch.checkpoints is not None:
        watch.checkpoints.at_end()
    finals = [_contents(obj, kind) for obj, kind, _ in watch.held]
    watch.restore()  # (after reading the final contents: the plan writes them at each call)
    held_ids = {id(obj) for obj, _, _ in watch.held}
    planner = _Planner(watch.paths, held_ids, to_output)
    now_args = [_contents(c, object_kind(c)) for c, _, _ in watch.arg_containers]
    on_args, on_held, guarded = _changes(watch, planner, finals, now_args)
    guard = []
    for ref, kind, now, before in guarded:  # (after planning: the objects the write-back keeps are known)
        checks = _guarded(now, before, kind, captured, planner.kept)
        if checks or kind == "list":  # (a list's checks are all its items: none is "must be empty")
            guard.append((ref, kind, checks))
    on_results = tuple((i, planner.value(r, 0)) for i, r in results)
    at_raise, marks = [], watch.checkpoints.marks if watch.checkpoints is not None else ()
    for seq, token in marks:  # (the objects' contents before the ops that may fail: effects_at_raise.py)
        held_now = token[:len(watch.held)] + [c for _, _, c in watch.held[len(token):]]
        try:
            a, h, _ = _changes(watch, planner, held_now, token[len(watch.held):])
        except InaccessibleTensorError:
            continue  # (a graph value of a sub-trace that failed and was traced again: no state of the program)
        at_raise.append((seq, tuple(a), tuple(h), frozenset(_plan_uses((a, h)))))
    if not any(a or h for _, a, h, _ in at_raise):
        at_raise = []  # (no object differs from before the call at any of them: a raise has nothing to apply)
    if not on_args and not on_held and not on_results and not at_raise and not planner.n_outputs:
        return None  # (else the graph outputs the planning added must be taken off each call's results)
    checkpoints = watch.checkpoints if at_raise else None
    return StateEffects(tuple(on_args), tuple(on_held), tuple(guard), planner.n_outputs, on_results,
                        tuple(at_raise), checkpoints.order if checkpoints else {}, checkpoints.inside if checkpoints else {})


def _changes(watch: ObjectWatch, planner: "_Planner", held_now: list, args_now: list) -> tuple[list, list, list]:
    """(on_args, on_held, the changed held objects to guard) for the objects holding `held_now`, `args_now`."""
    on_args = []
    for (container, path, before), now in zip(watch.arg_containers, args_now):
        kind = object_kind(container)
        if not _same_items(now, before, kind):
            on_args.append((path, kind, tuple(planner.item(kv, kind) for kv in now)))
    on_held, guarded = [], []
    for (obj, kind, before), now in zip(watch.held, held_now):
        if _same_items(now, before, kind) or not _replayed(now, before, kind):
            continue
        append_only = kind == "list" and len(now) > len(before) and _same_items(now[:len(before)], before, kind)
        how = "extend" if append_only else _entries_set(now, before) if kind != "list" else "replace"
        if append_only:
            items = now[len(before):]
        elif how == "replace":
            items = now
        else:
            old = dict(before)
            items = [(k, v) for k, v in now if old.get(k, _MISSING) is not v]
        # A module weakly: a trace must not keep alive the instance of the method it traced (which holds its
        # Function weakly).
        ref = weakref.ref(obj) if kind == "module" else obj
        on_held.append((ref, kind, tuple(planner.item(kv, kind) for kv in items), how))
        if not append_only or not before:
            # (A list empty when traced that the trace filled may have been cleared first: `extend` and
            # `replace` are the same here, and only a call that finds it empty may take it as either.)
            guarded.append((ref, kind, now, before))
    return on_args, on_held, guarded


class _Planner:
    def __init__(self, paths: dict, held_ids: set, to_output: Any) -> None:
        self.paths, self.held_ids, self.to_output = paths, held_ids, to_output
        self.n_outputs = 0
        self._outputs: dict[int, int] = {}
        self.kept: set[int] = set()  # ids of the objects the write-back stores as they were when traced

    def _kept(self, x: Any) -> tuple:
        self.kept.add(id(x))
        return ("obj", x)

    def item(self, kv: Any, kind: str) -> tuple:
        if kind == "list":
            return self.value(kv, 0)
        return ("item", kv[0], self.value(kv[1], 0))

    def value(self, x: Any, depth: int) -> tuple:
        if id(x) in self.paths:  # an argument's container, or a NumPy array argument (a stand-in while tracing)
            return ("arg", self.paths[id(x)])
        if isinstance(x, SYMBOLIC):  # a run-time number: the graph gives it back as a 0-d tensor
            number = next(py for sym, py in _NUMBER_OF.items() if isinstance(x, sym))
            return ("num", number, self.value(torch.tensor(x), depth)[1])
        if isinstance(x, GraphList):  # a list a tensor loop or branch grew: the graph gives back its items
            if id(x) not in self._outputs:
                self._outputs[id(x)] = self.to_output(x)
                self.n_outputs += 1
            return ("list", self._outputs[id(x)])
        if isinstance(x, Traced):
            if not isinstance(x, torch.Tensor):
                raise StateEffectError(f"a {type(x).__name__} made by the trace is stored in a Python object "
                                       f"that outlives the call{_where()}: only tensors, Python values and "
                                       f"containers of them can be written back after each call")
            if id(x) not in self._outputs:
                self._outputs[id(x)] = self.to_output(x)
                self.n_outputs += 1
            return ("out", self._outputs[id(x)])
        if id(x) in self.held_ids or isinstance(x, _SCALARS) or isinstance(x, torch.Tensor):
            return self._kept(x)
        t = type(x)
        if t in (list, tuple, torch.Size) or (isinstance(x, tuple) and hasattr(x, "_fields")):
            plans = [self.value(v, depth + 1) for v in x]
            if all(p[0] == "obj" for p in plans):
                return self._kept(x)
            if t not in (list, tuple, torch.Size):
                return ("new", lambda vs, t=t: t(*vs), (), plans)
            return ("new", t, (), plans)
        if t is dict:
            plans = [self.value(v, depth + 1) for v in x.values()]
            if all(p[0] == "obj" for p in plans):
                return self._kept(x)
            return ("new", dict, tuple(x.keys()), plans)
        if depth < _MAX_DEPTH and object_kind(x) == "attrs" and _holds_graph(x, depth):
            # An object the trace made (a cache) holding graph values: a shallow copy of it at every call, with
            # this call's values in place of the graph's (as each eager call makes its own).
            d = vars(x)
            return ("copy", x, tuple(d), [self.value(v, depth + 1) for v in d.values()])
        d = getattr(x, "__dict__", None)
        if type(d) is dict and any(isinstance(v, Traced) for v in d.values()):
            raise StateEffectError(f"a new {t.__name__} holding graph tensors is stored in a Python object "
                                   f"that outlives the call{_where()}: it can not be rebuilt at every call. "
                                   f"Store its tensors in a dict or a list, or return them")
        return self._kept(x)


def _where() -> str:
    loc = user_location()
    return f" ({loc})" if loc else ""


def _plan_uses(plans: Any) -> set[int]:
    """The effect outputs the (on_args, on_held) item plans read."""
    used: set[int] = set()
    on_args, on_held = plans
    for plan in [p for _, _, items in on_args for p in items] + [p for _, _, items, _ in on_held for p in items]:
        _uses(plan, used)
    return used


def _uses(plan: tuple, used: set[int]) -> None:
    tag = plan[0]
    if tag in ("out", "list"):
        used.add(plan[1])
    elif tag == "num":
        used.add(plan[2])
    elif tag == "item":
        _uses(plan[2], used)
    elif tag in ("new", "copy"):
        for p in plan[3]:
            _uses(p, used)
