"""`try`/`except` around graph ops: a `try` node whose handlers run when the body fails as the graph runs.

The body of a converted `try` runs as Python while tracing (operators/exceptions.py): what it raises then
is caught by the Python `try` as written. When it finishes without raising, the ops it recorded may still
fail when the graph runs (`torch.linalg.cholesky` of a matrix that is not positive-definite): they are moved
into the `try` node's first sub-graph, each handler is traced from the state before the body into one more
sub-graph (a variable the body rebinds between its ops: from its value at the op that raised, `at_raise.py`),
and the backend runs them as a Python `try` catching the same exception classes::

    %out: float32[2, 2] = try(%a)  except=(LinAlgError,)   # demo.py:6
        graph try() { %cholesky = torch.linalg.cholesky(%a) ... return %cholesky }
        graph except0() { %zeros = torch.zeros(2, 2) ... return %zeros }

Every op of the body may raise, so each is kept (`Effect.RAISES`: never pruned, merged or folded).
Handlers that catch only `NotImplementedError`, torch's error for an op without a kernel for its
arguments' device, dtype or layout, are no node where each op of the body has its kernel for the trace's
types (`raises.kernels_exist`): no call of the trace can reach them, and the body stays plain graph ops.
Numbers computed from values defined before the `try` (sizes) stay before it. A value the body makes
and that is read after the `try` other than through the variables it assigns (one kept in a Python
object) does not exist when a handler ran: using it is refused at its line.
"""

from __future__ import annotations

import ast
import dataclasses
import linecache
import sys
from typing import Any, Sequence

import torch

from .. import errors, nest
from ..graph import (
    Effect,
    Graph,
    Node,
    OpKind,
    SourceLocation,
    TryOp,
    Value,
    ValueKind,
    control_op,
    eliminate_dead_code,
    unique_values,
)
from ..tracing import GraphList, Scope, Traced, current, lists, same_dim, warn_at_user_line
from .at_raise import AtRaise, bindings_in
from .branches import (
    UNSET,
    Branch,
    Leaf,
    as_tensor_in,
    describe,
    leaf_kind,
    number_fits,
    number_to_tensor,
    quoted,
    structure_repr,
    to_value,
    where,
)
from .cond import SCALAR_DTYPES, _fill_unset, _unset_in
from .raises import kernels_exist, run_or_raise


class DeadHandlerWarning(UserWarning):
    """An `except` clause that cannot catch what its `try` body's graph ops raise as the graph runs."""


@dataclasses.dataclass
class TryToken:
    """Where a `try` body started: the trace, how many nodes its graph had, the state before the body."""

    state: Scope
    start: int
    init_vars: tuple
    lists: dict  # index -> the items of a Python list among init_vars, before the body
    frame: Any = None  # the frame of the converted code running the `try`
    # the names (`x`, `obj.attr`) the `finally:` clauses that started inside the body after graph ops rebind ->
    # (the user's line of the first, what the name held as it started) (`finally_starts`)
    finally_rebinds: dict = dataclasses.field(default_factory=dict)
    names: tuple = ()  # the state's names (`x`, `obj.attr`)
    # (node, what each state name is bound to as it was recorded), for every op recorded while the body runs
    seen: list = dataclasses.field(default_factory=list)
    _nested: dict = dataclasses.field(default_factory=dict)  # code object -> whether it runs a body of the `try`

    def note(self, node: Node) -> None:
        """`node` was recorded while the body runs (in its trace or a sub-trace): note the state's bindings."""
        if self.frame is None or not self.names:
            return
        frames, f, code = [], sys._getframe(1), self.frame.f_code
        while f is not None and f is not self.frame:
            c = f.f_code
            nested = self._nested.get(c)
            if nested is None:
                # a converted branch or loop body of the function running the `try` (not a comprehension)
                nested = self._nested[c] = not c.co_name.startswith("<") and _nested_in(c, code)
            if nested:
                frames.append(f)
            f = f.f_back
        if f is not None:
            self.seen.append((node, bindings_in(frames + [f], self.names)))


def try_begin(init_vars: tuple, frame: Any = None, names: Sequence[str] = ()) -> TryToken | None:
    state = current()
    if state is None:
        return None
    token = TryToken(state, len(state.graph.nodes), init_vars, {i: v[:] for i, v in enumerate(init_vars)
                                                                 if type(v) is list}, frame, names=tuple(names))
    state.open_tries.append(token)
    return token


def finally_starts(frame: Any, origin: Any) -> None:
    """A `finally:` running in `frame` starts, its own body over without raising. Inside the body of a staged
    `try` (of the same function, or of a branch or loop body of it), after graph ops that may fail as the graph
    runs: on that path it runs too, before the handler, so what it rebinds is not what the handler's path
    starts from (the state before the body). The names it rebinds are noted on that `try`."""
    state = current()
    outer, tokens = state, []
    while outer is not None:
        tokens += [t for t in outer.open_tries if t.frame is not None and _runs_in(frame, t.frame) and (
            outer is not state or len(outer.graph.nodes) > t.start)]
        outer = outer.parent
    if not tokens:
        return
    names = _rebound_by_finally(frame)
    if names:
        where_ = origin()
        for token in tokens:
            for name in names:
                token.finally_rebinds.setdefault(name, (where_, _value_in(frame, name)))


def _runs_in(frame: Any, outer: Any) -> bool:
    """Whether `frame` is `outer`, or runs a function defined inside `outer`'s (a converted branch or loop body)
    that `outer` called: a function it calls otherwise has names of its own."""
    code, f = outer.f_code, frame
    while f is not None and f is not outer:
        if not _nested_in(f.f_code, code):
            return False
        f = f.f_back
        while f is not None and f is not outer and not _nested_in(f.f_code, code):
            f = f.f_back  # (the library's frames between: the staged `if` or loop calling the body)
    return f is outer


def _nested_in(code: Any, outer: Any) -> bool:
    return any(c is code or (isinstance(c, type(outer)) and _nested_in(code, c)) for c in outer.co_consts)


def _rebound_by_finally(frame: Any) -> set[str]:
    """The names (`x`, `obj.attr`, `d['k']`) the `finally:` clause of the generated code that `frame` is
    starting (its first statement is on `frame.f_lineno`) assigns or deletes."""
    try:
        tree = ast.parse("".join(linecache.getlines(frame.f_code.co_filename)))
    except SyntaxError:
        return set()
    clause = next((n.finalbody for n in ast.walk(tree) if isinstance(n, ast.Try) and n.finalbody
                   and n.finalbody[0].lineno == frame.f_lineno), None)
    if clause is None:
        return set()
    names: set[str] = set()
    todo = list(clause)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue  # (a converted branch or loop body: what it gives back is assigned here)
        if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript)) and isinstance(node.ctx, (ast.Store, ast.Del)):
            names.add(node.id if isinstance(node, ast.Name) else ast.unparse(node))
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            continue
        todo.extend(ast.iter_child_nodes(node))
    return names


_UNKNOWN = object()


def _value_in(frame: Any, name: str) -> Any:
    """What the state name `name` (`x`, `obj.attr`) is bound to in `frame` now; `_UNKNOWN` if that is not known."""
    parts = name.split(".")
    if not all(p.isidentifier() for p in parts):
        return _UNKNOWN
    scope = {**frame.f_globals, **frame.f_locals}
    if parts[0] not in scope:
        return _UNKNOWN
    v = scope[parts[0]]
    for p in parts[1:]:
        d = getattr(v, "__dict__", None)
        if type(d) is not dict or p not in d:
            return _UNKNOWN
        v = d[p]
    return v


def _check_finally_rebinds(token: TryToken, names: Sequence[str], out_vars: tuple, label: str) -> None:
    """Refuse a state name that a `finally:` inside the body rebinds after graph ops it follows (see
    `finally_starts`): where those ops fail as the graph runs, the handler's path needs the value that `finally:`
    gave it, which the graph does not have (the handler's path starts from the state before the body). One
    the converted code only hands through it (the value it had as the clause started) needs nothing."""
    for name, after in zip(names, out_vars):
        origin, then = token.finally_rebinds.get(name, (None, None))
        if origin is not None and after is not UNSET and (then is _UNKNOWN or after is not then):
            raise TypeError(
                f"{quoted(name)} is rebound by the `finally:`{where(origin)} inside the `try` body of {label}: "
                f"when the ops that `finally:` follows fail as the graph runs, it runs before the handler, whose "
                f"path needs the value it gave {quoted(name)} there, which the graph does not have. Rebind "
                f"{quoted(name)} after that `try` statement instead.")


def close(token: TryToken) -> None:
    """The body of `token` traced; so are those inside it whose bodies raised while traced (never closed)."""
    tries = token.state.open_tries
    if any(t is token for t in tries):
        k = next(i for i, t in enumerate(tries) if t is token)
        for t in tries[k:]:
            t.frame = None  # (the frame holds the token: no cycle kept past the body)
            t._nested.clear()
        del tries[k:]


def try_end(token: TryToken, out_vars: tuple, names: Sequence[str], handlers: Sequence[tuple],
            has_else: bool, origin: SourceLocation | None, final: tuple | None = None) -> tuple:
    """The state after the `try` (see module docstring); `out_vars` when its body recorded no graph op.

    With `has_else`, the state is followed by whether the body succeeded: True, or a run-time bool that is
    False when a handler ran (the converted `else:` runs under an `if` on it). `final`: (the `finally:` clause
    as a function of the state, the state names it reads), whose effects the node runs when it raises.
    """
    if has_else:
        out_vars, names = out_vars + (True,), tuple(names) + ("<the try body succeeded>",)
        handlers = [(thunk, _failed(fn), reads, reraises) for thunk, fn, reads, reraises in handlers]
    state = token.state
    close(token)
    if current() is not state or len(state.graph.nodes) == token.start:
        return out_vars
    catches = tuple(_classes(thunk(), origin) for thunk, _, _, _ in handlers)
    label = f"the `except {' / '.join(_names(c) for c in catches)}`{where(origin)}"
    _check_finally_rebinds(token, names, out_vars, label)
    # A Python list the body changed in place: the handlers start from its items before the body.
    inits = list(token.init_vars)
    for i, items in token.lists.items():
        now = inits[i]
        if len(now) != len(items) or any(x is not y for x, y in zip(now, items)):
            inits[i] = list(items)
    label = f"the `except {' / '.join(_names(c) for c in catches)}`{where(origin)}"
    dead = next((("reads the exception it catches (`as ...`)" if reads else
                  "re-raises it with a bare `raise`") for _, _, reads, reraises in handlers if reads or reraises), None)
    if dead is not None:
        warn_at_user_line(DeadHandlerWarning(
            f"{label} does not run when the ops of its `try` body fail as the graph runs: it {dead}, which exists "
            f"only when the graph runs; catch it without reading it. (An exception the body raises while it is "
            f"traced is still caught.)"), origin)
        return out_vars
    if all(issubclass(c, NotImplementedError) for cs in catches for c in cs) and \
            kernels_exist(state.graph.nodes[token.start:]):
        return out_vars  # (the handlers catch only a missing kernel, and each op of the body has its kernel)
    # 1. Each handler, traced from the state before the body, but for the variables the body rebinds between
    # its ops: those are placeholders, bound as the graph runs to their values at the op that failed.
    at_raise, starts = AtRaise.plan(state, token.seen, token.start, names, inits,
                                    token.init_vars, [fn for _, fn, _, _ in handlers], label, out_vars)
    token.seen = []
    branches, outs = [], []
    for i, (_, fn, _, _) in enumerate(handlers):
        hb = Branch(f"except{i}", state, carries_objects=False, inputs=tuple(inits) + tuple(starts))
        before = {id(v): (v, v[:]) for v in (*inits, *out_vars) if type(v) is list}
        out, _ = run_or_raise(hb, lambda fn=fn: tuple(fn(None, *starts)), lambda: UNSET)
        # A Python list the handler changed in place keeps its items for the body's path; the handler's
        # path gets a list of its own (both become graph lists where they meet: `_merged_list`).
        changed = {}
        for key, (v, items) in before.items():
            if len(v) != len(items) or any(x is not y for x, y in zip(v, items)):
                changed[key] = v[:]
                v[:] = items
        if changed and out is not UNSET:
            out = tuple(list(changed[id(o)]) if type(o) is list and id(o) in changed else o for o in out)
        branches.append(hb)
        outs.append(out)
    at_raise.check_reads([hb.graph for hb in branches])
    # 2. One value per state variable for the body and each handler (numbers promoted where one is a tensor).
    # A variable one path leaves unassigned (UNSET) takes the structure the other gives it (a return slot).
    for o in outs:
        if o is not UNSET:
            out_vars = _fill_unset(out_vars, o)
    outs = [o if o is UNSET else _fill_unset(o, out_vars) for o in outs]
    leaves = _flat(out_vars)
    leaf_names = [n for n, v in zip(names, out_vars) for _ in _flat((v,))] if len(names) == len(out_vars) else []
    per_handler = [_flat(o) if o is not UNSET else [UNSET] * len(leaves) for o in outs]
    for o in outs:
        if o is not UNSET and _signature(o) != _signature(out_vars):
            raise TypeError(f"the variables after {label} have a different structure than after the `try` body:\n"
                            f"  try:    {structure_repr(out_vars)}\n  except: {structure_repr(o)}")
    body_vals: list[Any] = []
    handler_vals: list[list[Any]] = [[] for _ in handlers]
    results: list[Any] = []
    outputs: list[Value] = []
    for k, a in enumerate(leaves):
        name = leaf_names[k] if k < len(leaf_names) else f"output {k}"
        shared = _shared_python(a, [h[k] for h in per_handler])
        if shared is not None:
            results.append(shared[0])
            continue
        merged = _merge(state, branches, name, a, [h[k] for h in per_handler], label)
        va, vbs, out = merged
        body_vals.append(va)
        for hv, vb in zip(handler_vals, vbs):
            hv.append(vb)
        outputs.append(out)
        results.append(state.wrap(out, requires_grad=bool(getattr(a, "requires_grad", False)) or any(
            getattr(h[k], "requires_grad", False) for h in per_handler)))
    # 3. The effects of the `finally:` for when the node raises (from the state before the body).
    on_raise = _on_raise(state, final, names, inits, out_vars, outs, label) if final is not None else None
    # 4. The body's ops become the node's first sub-graph.
    body = _body_graph(state, token.start, body_vals, label)
    for hb, hv in zip(branches, handler_vals):
        hb.graph.outputs = hv
        eliminate_dead_code(hb.graph)
    graphs = (body,) + tuple(hb.graph for hb in branches) + ((on_raise,) if on_raise is not None else ())
    bound = at_raise.finish([hb.graph for hb in branches])
    placeholders = at_raise.placeholders()
    lifted = unique_values([v for g in graphs for v in g.inputs if id(v) not in placeholders] +
                           at_raise.outer_values(bound))
    op = control_op(TryOp(catches, on_raise is not None, bound), "try", [n for g in graphs for n in g.nodes])
    state.add_node(Node(op, tuple(lifted), {}, tuple(outputs), pattern=tuple(outputs), origin=origin,
                        subgraphs=graphs))
    return _packed(out_vars, results)


def _on_raise(state: Scope, final: tuple, names: Sequence[str], inits: list, out_vars: tuple, outs: list,
              label: str) -> Graph | None:
    """The effects of the `finally:` clause (writes, prints), traced from the state before the body, for when
    the node raises: None when it has none. Refused when they read a variable the body or a handler changes:
    its value where the exception was raised exists only while the graph runs."""
    fn, reads = final
    fb = Branch("finally", state)
    # The clause runs as Python after the `try` too: what this trace of it changes in Python lists and objects
    # is put back (its effects on them would be made twice).
    lists_before = [(v, v[:]) for v in inits if type(v) is list]
    watch = state.trace.python_state
    token = watch.token() if watch is not None else None
    try:
        fb.run(lambda: fn(*inits))
    finally:
        for v, items in lists_before:
            v[:] = items
        if token is not None:
            watch.restore_to(token)
    fb.graph.outputs = []
    eliminate_dead_code(fb.graph)
    # What outlives the call: a print or Python call, a write to a captured tensor (a Variable) or an input.
    outside = {id(v) for v, _ in state.root.graph.captures} | {id(v) for v in state.root.graph.inputs}
    effects = [n for n in fb.graph.nodes if n.op.effects & Effect.RUNS_PYTHON or (
        n.op.effects & Effect.WRITES_FIRST_ARG and n.args and isinstance(n.args[0], Value)
        and id(n.args[0]) in outside)]
    if not effects:
        return None
    needed: set[int] = set()
    for node in reversed(fb.graph.nodes):
        if node in effects or any(id(v) in needed for v in node.outputs):
            needed.update(id(v) for v in node.input_values())
            needed.update(id(v) for sub in node.subgraphs for v, _ in sub.captures)
    # A changed tensor counts where the effects read it; a changed Python value wherever the clause reads it.
    changed = [n for i, n in enumerate(names[:len(inits)]) if n in reads and (
        out_vars[i] is not inits[i] or any(o is not UNSET and o[i] is not inits[i] for o in outs))
        and (id(inits[i]._value) in needed if isinstance(inits[i], Traced) else True)]
    if changed:
        where_ = where(effects[0].origin)
        raise TypeError(f"the `finally:` of {label} changes state{where_} reading {quoted(changed[0])}, which its "
                        f"`try` body or handler assigns: when the `try` raises as the graph runs, the `finally:` "
                        f"must run with the value {quoted(changed[0])} had where the exception was raised, which "
                        f"the graph does not have. Make that change after the `try` statement, or from values "
                        f"set before it.")
    return fb.graph


def _flat(state_vars: tuple) -> list:
    """The leaves of the state: a Python list is one leaf (its length may differ between the paths)."""
    return [x for v in state_vars for x in ([v] if type(v) is list else nest.flatten(v))]


def _signature(state_vars: tuple) -> list:
    return ["list" if type(v) is list or isinstance(v, GraphList) else nest.structure_signature(v) for v in state_vars]


def _packed(state_vars: tuple, leaves: list) -> tuple:
    out, k = [], 0
    for v in state_vars:
        n = 1 if type(v) is list else len(nest.flatten(v))
        out.append(leaves[k] if type(v) is list else nest.pack_sequence_as(v, leaves[k:k + n]))
        k += n
    return tuple(out)


def _failed(fn: Any) -> Any:
    """A handler whose state ends with False (the body did not succeed)."""
    def run(exc: Any, *vals: Any) -> tuple:
        return tuple(fn(exc, *vals)) + (False,)

    run.__wrapped__ = fn
    return run


def _classes(caught: Any, origin: SourceLocation | None) -> tuple[type, ...]:
    classes = caught if isinstance(caught, tuple) else (caught,)
    if not all(isinstance(c, type) and issubclass(c, BaseException) for c in classes):
        raise TypeError(f"the `except`{where(origin)} names {caught!r}, not exception classes")
    return classes


def _names(classes: tuple[type, ...]) -> str:
    return ", ".join(c.__name__ for c in classes) if len(classes) == 1 else f"({', '.join(c.__name__ for c in classes)})"


def _shared_python(a: Any, bs: list[Any]) -> tuple[Any] | None:
    """(the value,) when every path that assigns the variable gives it the same Python value; the paths that
    leave it unassigned never read it (as for the two branches of a graph `if`)."""
    assigned = [x for x in (a, *bs) if x is not UNSET]
    if not assigned:
        return (a,)
    first = assigned[0]
    if any(leaf_kind(x) not in (Leaf.PYSCALAR, Leaf.OBJECT) for x in assigned):
        return None
    if all(type(x) is type(first) and (x is first or _eq(first, x)) for x in assigned):
        return (first,)
    return None


def _merge(state: Scope, branches: list[Branch], name: str, a: Any, bs: list[Any],
           label: str) -> tuple[Any, list[Any], Value]:
    """(body value, handler values, merged Value) of a variable the paths give graph values or differing
    Python values."""
    ka, kbs = leaf_kind(a), [leaf_kind(b) for b in bs]
    if ka is Leaf.UNSET and any(kb in (Leaf.TENSOR, Leaf.SCALAR, Leaf.PYSCALAR, Leaf.LIST) for kb in kbs):
        # Unassigned after the body, which no read after the `try` then needs (a return slot that the body's
        # path leaves empty, its `do_return` flag False): a stand-in of a handler's type, made in the body.
        k = next(k for k, kb in enumerate(kbs) if kb is not Leaf.UNSET)
        a = _placeholder_like(state, to_value(branches[k], bs[k]))
        ka = leaf_kind(a)
    if Leaf.LIST in (ka, *kbs) or (type(a) is list and any(type(b) is list and b is not a for b in bs)):
        # A list that is a graph list on one path (an inner graph loop made it one), or a Python list changed
        # in place by the body: graph lists on every path, holding each path's items.
        return _merged_list(state, branches, name, a, bs, label)
    if ka is Leaf.UNSET or Leaf.OBJECT in (ka, *kbs) or Leaf.LIST in (ka, *kbs):
        words = [describe(x) if x is not UNSET else "unassigned" for x in (a, *bs)]
        raise TypeError(f"{quoted(name)} is {words[0]} after the `try` body but {' / '.join(words[1:])} after "
                        f"{label}, which guards graph ops that fail only when the graph runs: both paths must give "
                        f"it a tensor or number of the same type.")
    tensor_in = next((i for i, kb in enumerate(kbs) if kb is Leaf.TENSOR), None)
    if ka is not Leaf.TENSOR and tensor_in is not None:
        # A number after the body, a tensor after a handler: the body's number becomes a tensor of its type.
        like = to_value(branches[tensor_in], bs[tensor_in])
        _check_number_fits(name, label, a, like)
        va = number_to_tensor(a, like, promoted=True)._value
    else:
        va = state.to_value(a)
    vbs = []
    for hb, b, kb in zip(branches, bs, kbs):
        if kb is Leaf.UNSET:
            vbs.append(_unset_in(hb, _meta(va)))
        elif isinstance(va, Value) and va.kind is ValueKind.TENSOR and kb is not Leaf.TENSOR:
            _check_number_fits(name, label, b, va)
            vbs.append(as_tensor_in(hb, b, va))
        else:
            try:
                vbs.append(to_value(hb, b))
            except errors.InaccessibleTensorError:
                raise TypeError(
                    f"{quoted(name)} after {label} is a run-time number made inside a tensor loop or `if` of the "
                    f"`try` body, which has ended where the handler's path meets the body's: the graph has no "
                    f"value for it there. Keep it in a tensor (`torch.as_tensor(...)`) before the loop or `if`, "
                    f"or assign it after the `try` statement.") from None
    metas = [_meta(v) for v in (va, *vbs)]
    first = metas[0]
    for m in metas[1:]:
        if (m.kind, m.dtype, m.device, len(m.shape)) != (first.kind, first.dtype, first.device, len(first.shape)):
            raise TypeError(f"{quoted(name)} is {first.type_str()} after the `try` body but {m.type_str()} after "
                            f"{label}: both paths must give it the same type.")
    return va, vbs, _merged_value(state, name, metas)


def _check_number_fits(name: str, label: str, number: Any, like: Value) -> None:
    """Refuse a number one path of the `try` gives where another gives a tensor it cannot become unchanged."""
    if not number_fits(number, like):
        raise TypeError(f"{quoted(name)} is a {like.dtype} tensor on one path of {label} but {describe(number)} on "
                        f"another: both paths must give it the same type (as a {like.dtype} tensor, the number "
                        f"would change value). Convert one of them (`float(...)`, `.to(...)`).")


def _merged_list(state: Scope, branches: list[Branch], name: str, a: Any, bs: list[Any],
                 label: str) -> tuple[Any, list[Any], Value]:
    """A graph list after the body and each handler: one list Value, its elements' type merged."""
    seen = [x for x in (a, *bs) if type(x) is list]
    like = next((x for x in seen if x), [])
    try:
        if type(a) is list:
            a = lists.new_list(a, like=like)
        bs = [hb.record(lambda b=b: lists.new_list(b, like=like)) if type(b) is list else b
              for hb, b in zip(branches, bs)]
    except TypeError as e:
        raise TypeError(f"{quoted(name)} is a list that differs between the `try` body and {label}, which guards "
                        f"graph ops that fail only when the graph runs: {e}. Only a list of tensors or Python "
                        f"numbers can; build a new list on each path instead.") from None
    if not all(b is UNSET or isinstance(b, GraphList) for b in bs) or not isinstance(a, GraphList):
        words = [describe(x) if x is not UNSET else "unassigned" for x in (a, *bs)]
        raise TypeError(f"{quoted(name)} is {words[0]} after the `try` body but {' / '.join(words[1:])} after "
                        f"{label}: both paths must give it a list.")
    va = state.to_value(a)
    vbs = [_unset_in(hb, va) if b is UNSET else to_value(hb, b) for hb, b in zip(branches, bs)]
    dtype, shape, device = va.dtype, va.shape, va.device
    for vb in vbs:
        if vb.dtype is not None:
            like = Value("_", dtype, shape, device, ValueKind.LIST) if dtype is not None else None
            dtype, shape, device = lists.merge_elements(like, vb, f"{quoted(name)} after {label}")
    return va, vbs, Value(state.fresh_name(name), dtype, shape, device, ValueKind.LIST)


def _placeholder_like(state: Scope, like: Any) -> Any:
    """A value of `like`'s type recorded in `state` (the body's part of the trace), for a path that never reads it."""
    if not isinstance(like, Value):
        return type(like)(0)
    if like.kind is ValueKind.SCALAR:
        return {torch.bool: False, torch.float64: 0.0}.get(like.dtype, 0)
    if like.kind is ValueKind.LIST:
        return lists.empty_like(like)
    # A size known only when the graph runs may be the handler's, which the body cannot read: 0.
    shape = tuple(0 if lists.input_size(d) is None else d for d in like.shape)
    return torch.zeros(shape, dtype=like.dtype, device=like.device)


def _eq(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - an object whose == is not a bool is not the same value
        return False


def _meta(v: Any) -> Value:
    if isinstance(v, Value):
        return v
    return Value("_", SCALAR_DTYPES[type(v)], (), None, ValueKind.SCALAR)


def _merged_value(state: Scope, name: str, metas: list[Value]) -> Value:
    """The try node's output for values of the same type: a dim that differs is a fresh size symbol."""
    first = metas[0]
    if first.kind is not ValueKind.TENSOR:
        return Value(state.fresh_name(name), first.dtype, (), first.device, first.kind)
    shape = tuple(d if all(same_dim(d, m.shape[i]) for m in metas) else None for i, d in enumerate(first.shape))
    grad = any(getattr(m.example, "requires_grad", False) for m in metas)
    example = state.trace.engine.example(shape, first.dtype, first.device, grad)
    out = Value(state.fresh_name(name), first.dtype, tuple(example.shape), first.device, ValueKind.TENSOR, example)
    for d, size in enumerate(out.shape):
        if shape[d] is None:
            state.trace.symbols.output_dim(size, out, d)
    return out


def _hoistable(node: Node, inside: set[int]) -> bool:
    """A number computed from values made before the `try` (a size): it cannot fail, and stays before it."""
    return (not node.subgraphs and node.op.kind is not OpKind.CONTROL and node.op.pure and not node.stateful
            and all(v.kind is not ValueKind.TENSOR for v in node.outputs)
            and not any(id(v) in inside for v in node.input_values()))


def _body_graph(state: Scope, start: int, outputs: list[Any], label: str) -> Graph:
    """The nodes recorded since `start` as the body sub-graph (marked as raising), leaving hoisted ones."""
    region = state.graph.nodes[start:]
    kept, moved, inside = [], [], set()
    for node in region:
        if _hoistable(node, inside):
            kept.append(node)
            continue
        node.op = dataclasses.replace(node.op, effects=node.op.effects | Effect.RAISES)  # (the same node: `at_raise`)
        moved.append(node)
        inside.update(id(v) for v in node.outputs)
    state.graph.nodes[start:] = kept
    g = Graph(state.fresh_name("try"))
    g.nodes = moved
    g.outputs = outputs
    g.inputs = [v for v in unique_values([v for n in moved for v in n.input_values()] + [o for o in outputs if isinstance(o, Value)])
                if id(v) not in inside]
    for v in (v for n in moved for v in n.outputs):
        state.hide(v, f"it is made inside the `try` body of {label}, and does not exist when the handler ran")
    return g

