"""`try`/`except` around graph ops: a `try` node whose handlers run when the body fails as the graph runs.

The body of a converted `try` runs as Python while tracing (operators/exceptions.py): what it raises then
is caught by the Python `try` as written. When it finishes without raising, the ops it recorded may still
fail when the graph runs (`torch.linalg.cholesky` of a matrix that is not positive-definite): they are moved
into the `try` node's first sub-graph, each handler is traced from the state before the body into one more
sub-graph, and the backend runs them as a Python `try` catching the same exception classes::

    %out: float32[2, 2] = try(%a)  except=(LinAlgError,)   # demo.py:6
        graph try() { %cholesky = torch.linalg.cholesky(%a) ... return %cholesky }
        graph except0() { %zeros = torch.zeros(2, 2) ... return %zeros }

Every op of the body may raise, so each is kept (`Effect.RAISES`: never pruned, merged or folded).
Numbers computed from values defined before the `try` (sizes) stay before it. A value the body makes
and that is read after the `try` other than through the variables it assigns (one kept in a Python
object) does not exist when a handler ran: using it is refused at its line.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

from .. import nest
from ..graph import Effect, Graph, Node, OpKind, SourceLocation, TryOp, Value, ValueKind, control_op, unique_values
from ..graph.passes.dead_code import eliminate_dead_code
from ..tracing.context import current
from ..tracing.messages import warn_at_user_line
from ..tracing.symbols import same_dim
from ..tracing.trace import TraceState
from .branches import UNSET, Branch, Leaf, as_tensor_in, describe, leaf_kind, number_to_tensor, quoted, to_value, where
from .cond import SCALAR_DTYPES, _unset_in
from .raises import run_or_raise


class DeadHandlerWarning(UserWarning):
    """An `except` clause that cannot catch what its `try` body's graph ops raise as the graph runs."""


@dataclasses.dataclass
class TryToken:
    """Where a `try` body started: the trace, how many nodes its graph had, the state before the body."""

    state: TraceState
    start: int
    init_vars: tuple


def try_begin(init_vars: tuple) -> TryToken | None:
    state = current()
    return None if state is None else TryToken(state, len(state.graph.nodes), init_vars)


def try_end(token: TryToken, out_vars: tuple, names: Sequence[str], handlers: Sequence[tuple],
            has_else: bool, origin: SourceLocation | None) -> tuple:
    """The state after the `try` (see module docstring); `out_vars` when its body recorded no graph op.

    With `has_else`, the state is followed by whether the body succeeded: True, or a run-time bool that is
    False when a handler ran (the converted `else:` runs under an `if` on it).
    """
    if has_else:
        out_vars, names = out_vars + (True,), tuple(names) + ("<the try body succeeded>",)
        handlers = [(thunk, _failed(fn), reads, reraises) for thunk, fn, reads, reraises in handlers]
    state = token.state
    if current() is not state or len(state.graph.nodes) == token.start:
        return out_vars
    catches = tuple(_classes(thunk(), origin) for thunk, _, _, _ in handlers)
    label = f"the `except {' / '.join(_names(c) for c in catches)}`{where(origin)}"
    dead = next((("reads the exception it catches (`as ...`)" if reads else
                  "re-raises it with a bare `raise`") for _, _, reads, reraises in handlers if reads or reraises), None)
    if dead is not None:
        warn_at_user_line(DeadHandlerWarning(
            f"{label} does not run when the ops of its `try` body fail as the graph runs: it {dead}, which exists "
            f"only when the graph runs; catch it without reading it. (An exception the body raises while it is "
            f"traced is still caught.)"), origin)
        return out_vars
    # 1. Each handler, traced from the state before the body.
    branches, outs = [], []
    for i, (_, fn, _, _) in enumerate(handlers):
        hb = Branch(f"except{i}", state)
        out, _ = run_or_raise(hb, lambda fn=fn: tuple(fn(None, *token.init_vars)), lambda: UNSET)
        branches.append(hb)
        outs.append(out)
    # 2. One value per state variable for the body and each handler (numbers promoted where one is a tensor).
    leaves = nest.flatten(out_vars)
    per_handler = [nest.flatten(o) if o is not UNSET else [UNSET] * len(leaves) for o in outs]
    for o in outs:
        if o is not UNSET and nest.structure_signature(o) != nest.structure_signature(out_vars):
            raise TypeError(f"the variables after {label} have a different structure than after the `try` body")
    body_vals: list[Any] = []
    handler_vals: list[list[Any]] = [[] for _ in handlers]
    results: list[Any] = []
    outputs: list[Value] = []
    for k, a in enumerate(leaves):
        name = names[k] if len(names) == len(leaves) else f"output {k}"
        merged = _merge(state, branches, name, a, [h[k] for h in per_handler], label)
        if merged is None:
            results.append(a)
            continue
        va, vbs, out = merged
        body_vals.append(va)
        for hv, vb in zip(handler_vals, vbs):
            hv.append(vb)
        outputs.append(out)
        results.append(state.wrap(out, requires_grad=bool(getattr(a, "requires_grad", False)) or any(
            getattr(h[k], "requires_grad", False) for h in per_handler)))
    # 3. The body's ops become the node's first sub-graph.
    body = _body_graph(state, token.start, body_vals, label)
    for hb, hv in zip(branches, handler_vals):
        hb.graph.outputs = hv
        eliminate_dead_code(hb.graph)
    graphs = (body,) + tuple(hb.graph for hb in branches)
    lifted = unique_values([v for g in graphs for v in g.inputs])
    op = control_op(TryOp(catches), "try", [n for g in graphs for n in g.nodes])
    state.add_node(Node(op, tuple(lifted), {}, tuple(outputs), pattern=tuple(outputs), origin=origin,
                        subgraphs=graphs))
    return nest.pack_sequence_as(out_vars, results)


def _failed(fn: Any) -> Any:
    """A handler whose state ends with False (the body did not succeed)."""
    return lambda exc, *vals: tuple(fn(exc, *vals)) + (False,)


def _classes(caught: Any, origin: SourceLocation | None) -> tuple[type, ...]:
    classes = caught if isinstance(caught, tuple) else (caught,)
    if not all(isinstance(c, type) and issubclass(c, BaseException) for c in classes):
        raise TypeError(f"the `except`{where(origin)} names {caught!r}, not exception classes")
    return classes


def _names(classes: tuple[type, ...]) -> str:
    return ", ".join(c.__name__ for c in classes) if len(classes) == 1 else f"({', '.join(c.__name__ for c in classes)})"


def _merge(state: TraceState, branches: list[Branch], name: str, a: Any, bs: list[Any],
           label: str) -> tuple[Any, list[Any], Value] | None:
    """None for a Python value every path shares; else (body value, handler values, merged Value)."""
    ka, kbs = leaf_kind(a), [leaf_kind(b) for b in bs]
    python = (Leaf.PYSCALAR, Leaf.OBJECT, Leaf.UNSET)
    if ka in python and all(kb is Leaf.UNSET or (kb in python and type(b) is type(a) and (b is a or _eq(a, b)))
                            for b, kb in zip(bs, kbs)):
        return None
    if ka is Leaf.UNSET or Leaf.OBJECT in (ka, *kbs) or Leaf.LIST in (ka, *kbs):
        words = [describe(x) if x is not UNSET else "unassigned" for x in (a, *bs)]
        raise TypeError(f"{quoted(name)} is {words[0]} after the `try` body but {' / '.join(words[1:])} after "
                        f"{label}, which guards graph ops that fail only when the graph runs: both paths must give "
                        f"it a tensor or number of the same type.")
    like = a if ka is Leaf.TENSOR else next((b for b, kb in zip(bs, kbs) if kb is Leaf.TENSOR), None)
    if ka is Leaf.TENSOR:
        va = state.to_value(a)
    elif like is not None:  # a number after the body, a tensor after a handler: the body's becomes a tensor
        va = number_to_tensor(a, state.to_value(like), promoted=True)._value
    else:
        va = state.to_value(a)
    vbs = []
    for hb, b, kb in zip(branches, bs, kbs):
        if kb is Leaf.UNSET:
            vbs.append(_unset_in(hb, _meta(va)))
        elif isinstance(va, Value) and va.kind is ValueKind.TENSOR and kb is not Leaf.TENSOR:
            vbs.append(as_tensor_in(hb, b, va))
        else:
            vbs.append(to_value(hb, b))
    metas = [_meta(v) for v in (va, *vbs)]
    first = metas[0]
    for m in metas[1:]:
        if (m.kind, m.dtype, m.device, len(m.shape)) != (first.kind, first.dtype, first.device, len(first.shape)):
            raise TypeError(f"{quoted(name)} is {first.type_str()} after the `try` body but {m.type_str()} after "
                            f"{label}: both paths must give it the same type.")
    return va, vbs, _merged_value(state, name, metas)


def _eq(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - an object whose == is not a bool is not the same value
        return False


def _meta(v: Any) -> Value:
    if isinstance(v, Value):
        return v
    return Value("_", SCALAR_DTYPES[type(v)], (), None, ValueKind.SCALAR)


def _merged_value(state: TraceState, name: str, metas: list[Value]) -> Value:
    """The try node's output for values of the same type: a dim that differs is a fresh size symbol."""
    first = metas[0]
    if first.kind is not ValueKind.TENSOR:
        return Value(state.fresh_name(name), first.dtype, (), first.device, first.kind)
    shape = tuple(d if all(same_dim(d, m.shape[i]) for m in metas) else None for i, d in enumerate(first.shape))
    grad = any(getattr(m.example, "requires_grad", False) for m in metas)
    example = state.engine.example(shape, first.dtype, first.device, grad)
    out = Value(state.fresh_name(name), first.dtype, tuple(example.shape), first.device, ValueKind.TENSOR, example)
    for d, size in enumerate(out.shape):
        if shape[d] is None:
            state.symbols.output_dim(size, out, d)
    return out


def _hoistable(node: Node, inside: set[int]) -> bool:
    """A number computed from values made before the `try` (a size): it cannot fail, and stays before it."""
    return (not node.subgraphs and node.op.kind is not OpKind.CONTROL and node.op.pure and not node.stateful
            and all(v.kind is not ValueKind.TENSOR for v in node.outputs)
            and not any(id(v) in inside for v in node.input_values()))


def _body_graph(state: TraceState, start: int, outputs: list[Any], label: str) -> Graph:
    """The nodes recorded since `start` as the body sub-graph (marked as raising), leaving hoisted ones."""
    region = state.graph.nodes[start:]
    kept, moved, inside = [], [], set()
    for node in region:
        if _hoistable(node, inside):
            kept.append(node)
            continue
        moved.append(dataclasses.replace(node, op=dataclasses.replace(node.op, effects=node.op.effects | Effect.RAISES)))
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

