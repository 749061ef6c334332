"""What a run-time handler starts from: each variable as it was bound at the op that failed.

Eagerly, an `except` clause sees the variables as the body left them when the failing op raised: `y = y + 1`
then `y = y + torch.arange(3)[i]` failing leaves `y + 1` for the handler. The body runs once while traced,
so as each of its ops is recorded (at any depth: in a tensor `if` or loop of the body too) the `try`'s token
notes what each state variable is bound to then (`TryToken.note`, read from the frames of the converted code
running the body). A variable the handler reads whose binding changes from op to op gets a placeholder the
handler is traced from; the `try` node (`TryOp.at_raise`) says which value it is bound to at each op of the
body, and the backend binds it to the one of the op that raised.
"""

from __future__ import annotations

import dis
import inspect
import struct
from typing import Any, Callable, Sequence

import torch

from ..graph import Graph, Node, Value, ValueKind, walk_nodes
from ..tracing import GraphTensor, TraceState
from .branches import UNSET, describe, quoted, where

UNKNOWN = object()  # a binding the frames did not show (the name is not a plain variable or attribute)
_LOADS = frozenset({"LOAD_FAST", "LOAD_DEREF", "LOAD_CLOSURE", "LOAD_FAST_CHECK", "LOAD_NAME"})


def bindings_in(frames: list, names: Sequence[str]) -> tuple:
    """What each state name is bound to in the running body: `frames` innermost first, the converted branch and
    loop bodies nested in the `try`'s function (their parameters are the state), then that function's frame."""
    out = []
    for name in names:
        base, *attrs = name.split(".")
        v: Any = UNKNOWN
        if base.isidentifier() and all(a.isidentifier() for a in attrs):
            for k, f in enumerate(frames):
                code = f.f_code
                params = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
                if k == len(frames) - 1 or base in params:
                    v = f.f_locals.get(base, UNSET)
                    break
            for a in attrs:
                d = getattr(v, "__dict__", None)
                v = d.get(a, UNSET) if type(d) is dict else UNKNOWN
                if v is UNKNOWN:
                    break
        out.append(v)
    return tuple(out)


def reads_param(fn: Callable[..., Any], index: int) -> bool:
    """Whether the handler function (of `(exc, *state)`) may read its state parameter `index`: True unless its
    code never loads that name."""
    code = getattr(inspect.unwrap(fn), "__code__", None)
    if code is None or index + 1 >= code.co_argcount:
        return True
    name = code.co_varnames[index + 1]
    todo = [code]
    while todo:
        c = todo.pop()
        if any(ins.opname in _LOADS and ins.argval == name for ins in dis.get_instructions(c)):
            return True
        todo.extend(k for k in c.co_consts if inspect.iscode(k))
    return False


class AtRaise:
    """The placeholders a try's handlers are traced from in place of variables the body rebinds between ops."""

    def __init__(self, state: TraceState) -> None:
        self.state = state
        # per tracked variable: (placeholder Value, its GraphTensor, the values it may take (first: at the first
        # op), id(node) -> (node, index among them))
        self.tracked: list[tuple[Value, GraphTensor, tuple, dict]] = []

    @classmethod
    def plan(cls, state: TraceState, seen: list, body_nodes: list, names: Sequence[str], inits: list,
             originals: tuple, fns: Sequence[Callable[..., Any]], label: str) -> tuple["AtRaise", list]:
        """The tracked variables and the state the handlers start from (`inits` with placeholders). `originals`:
        the state as the body started (a Python list the body changed in place is the same list there)."""
        at = cls(state)
        inner = [n for n in body_nodes for n in (n, *_nested(n))]
        ids = {id(n) for n in inner}
        notes = {id(node): (node, vals) for node, vals in seen if id(node) in ids}
        starts = list(inits)
        for i, name in enumerate(names[:len(inits)]):
            first = inits[i]
            per_node = [(node, first if vals[i] is originals[i] else vals[i]) for node, vals in notes.values()]
            bound = [(node, v) for node, v in per_node if v is not UNKNOWN]
            if not bound or all(v is first for _, v in bound):
                continue
            if not any(reads_param(fn, i) for fn in fns):
                continue
            one = at._check(name, bound, label)
            if not isinstance(one, GraphTensor):
                starts[i] = one  # (one Python value at every op: `_check`)
                continue
            values: list[Any] = []  # (the Values, and Python numbers: a 0-dim tensor of the placeholder's type)
            index: dict[int, tuple[Node, int]] = {}
            for node, v in bound:
                x = v._value if isinstance(v, GraphTensor) else v
                k = next((k for k, y in enumerate(values) if y is x or (
                    not isinstance(y, Value) and not isinstance(x, Value) and type(y) is type(x) and y == x)), None)
                if k is None:
                    k = len(values)
                    values.append(x)
                index[id(node)] = (node, k)
            meta = one._value
            grad = any(getattr(v, "requires_grad", False) for _, v in bound)
            example = state.engine.example(tuple(meta.shape), meta.dtype, meta.device, grad)
            p = Value(state.fresh_name(f"{name.replace('.', '_')}_at_raise"), meta.dtype, tuple(meta.shape),
                      meta.device, ValueKind.TENSOR, example)
            state._defined.add(id(p))  # (readable by the handlers while they are traced)
            gt = state.wrap(p, requires_grad=grad)
            at.tracked.append((p, gt, tuple(values), index))
            starts[i] = gt
        return at, starts

    def _check(self, name: str, bound: list, label: str) -> Any:
        """The binding the placeholder stands for (a tensor among them, else the Python value); refused where one
        placeholder cannot: tensors of another type (dtype, device or shape) at different ops, different Python
        values, or a Python value with tensors but a number a 0-dim tensor of their type holds exactly."""
        tensors = [v for _, v in bound if isinstance(v, GraphTensor)]
        one = tensors[0] if tensors else bound[0][1]
        for node, v in bound:
            if v is one:
                continue
            if isinstance(v, GraphTensor):
                same = (v._value.dtype, v._value.device, tuple(v._value.shape)) == (
                    one._value.dtype, one._value.device, tuple(one._value.shape))
            elif tensors:
                same = type(v) in (int, float, bool) and not tuple(one._value.shape) and _exactly(v, one._value.dtype)
            else:
                same = type(v) is type(one) and _equal(v, one)
            if not same:
                was = "unassigned" if one is UNSET else describe(one)
                now = "unassigned" if v is UNSET else describe(v)
                raise TypeError(
                    f"{quoted(name)} is {now}{where(node.origin)}, an op of the `try` body of {label}, but "
                    f"{was} at another op of it: the handler, which reads {quoted(name)}, starts from the value it "
                    f"has at the op that fails as the graph runs, which may be either, and a graph gives a "
                    f"variable one type (tensors of one dtype and shape, or one Python value). Give "
                    f"{quoted(name)} the same type throughout the `try` body, or assign the new value to another "
                    f"variable.")
        return one

    def finish(self, handler_graphs: Sequence[Graph]) -> tuple:
        """The `TryOp.at_raise` entries of the placeholders the handlers read; the others are dropped."""
        read = {id(v) for g in handler_graphs for v in g.inputs}
        out = []
        for p, _, values, index in self.tracked:
            self.state._defined.discard(id(p))
            if id(p) in read:
                out.append((p, values, tuple(index.values())))
        return tuple(out)

    def outer_values(self, entries: tuple) -> list[Value]:
        """The values before the body that entries bind (arguments of the `try` node: kept alive until it)."""
        return [self.state.resolve(v) for _, values, _ in entries for v in values
                if isinstance(v, Value) and self.state.definer(v)]

    def placeholders(self) -> set[int]:
        return {id(p) for p, _, _, _ in self.tracked}


def _nested(node: Node) -> list[Node]:
    return [n for sub in node.subgraphs for n in walk_nodes(sub)]



def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except Exception:  # noqa: BLE001 - an object whose == is not a bool is another value
        return False


def _exactly(x: Any, dtype: Any) -> bool:
    """Whether a 0-dim tensor of `dtype` holds the Python number `x` exactly (worked out in Python: no op runs
    while tracing)."""
    if dtype is torch.bool:
        return type(x) is bool
    if not dtype.is_floating_point:
        info = torch.iinfo(dtype)
        return type(x) in (int, bool) and info.min <= x <= info.max
    code = {torch.float64: "d", torch.float32: "f", torch.float16: "e"}.get(dtype)
    try:
        return code is not None and struct.unpack(code, struct.pack(code, x))[0] == x
    except (OverflowError, struct.error):
        return False
