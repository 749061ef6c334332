"""What a run-time handler starts from: each variable as it was bound at the op that failed.

Eagerly, an `except` clause sees the variables as the body left them when the failing op raised: `y = y + 1`
then `y = y + torch.arange(3)[i]` failing leaves `y + 1` for the handler. The body runs once while traced,
so as each of its ops is recorded (at any depth: in a tensor `if` or loop of the body too) the `try`'s token
notes what each state variable is bound to then (`TryToken.note`, read from the frames of the converted code
running the body). A variable the handler reads whose binding changes from op to op gets a placeholder the
handler is traced from; the `try` node (`TryOp.at_raise`) says which value it is bound to at each op of the
body, and the backend binds it to the one of the op that raised (torch_codegen: from the line the exception
left the generated function at).

Only ops that may fail count (not arithmetic on tensors of known shapes). Numbers that differ between ops
(Python ones, or run-time ones: their graph values, computed before the op) become a 0-dim tensor; a variable
of another shape or dtype at another op, or another Python value, is refused where a handler reads it.
AutoGraph's `return` variables (an op runs only while the function has not returned) and Python lists (their
items before the body, `try_end`) keep the state before the body.
"""

from __future__ import annotations

import dis
import inspect
import operator
import struct
from typing import Any, Callable, Sequence

import torch

from .. import errors
from ..graph import Graph, Node, OpKind, Value, ValueKind, walk_nodes
from ..tracing import SYMBOLIC, GraphList, GraphTensor, Scope, constant_of
from .branches import SCALAR_DTYPES, UNSET, describe, quoted, where

_NUMBER_OF = {torch.SymInt: int, torch.SymFloat: float, torch.SymBool: bool}

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

    def __init__(self, state: Scope) -> None:
        self.state = state
        # per tracked variable: (placeholder Value, its GraphTensor, the values it may take (first: at the first
        # op), id(node) -> (node, index among them))
        self.tracked: list[tuple[Value, GraphTensor, tuple, dict]] = []
        self.refusals: dict[int, TypeError] = {}  # id(placeholder) -> why it cannot stand for its variable

    @classmethod
    def plan(cls, state: Scope, seen: list, start: int, names: Sequence[str], inits: list,
             originals: tuple, fns: Sequence[Callable[..., Any]], label: str, after: tuple = ()
             ) -> tuple["AtRaise", list]:
        """The tracked variables and the state the handlers start from (`inits` with placeholders). `originals`:
        the state as the body started (a Python list the body changed in place is the same list there); `after`:
        as it ended (numbers alone become a 0-dim tensor of the type the body gives the variable, if a tensor)."""
        at = cls(state)
        body_nodes = state.graph.nodes[start:]
        inner = [n for n in body_nodes for n in (n, *_nested(n))]
        ids = {id(n) for n in inner}
        notes = {id(node): (node, vals) for node, vals in seen if id(node) in ids}
        starts = list(inits)
        for i, name in enumerate(names[:len(inits)]):
            if any(name == base or name.startswith(base + "_") for base in errors.GENERATED_VARIABLES):
                # AutoGraph's `return` flag and value: an op of the body runs only while the function has not
                # returned (the code after a `return` under a tensor `if` is guarded), so as before the body.
                continue
            first = inits[i]
            per_node = [(node, first if vals[i] is originals[i] else vals[i]) for node, vals in notes.values()]
            # (an op that cannot fail as the graph runs is never the one a handler starts from)
            bound = [(node, v) for node, v in per_node if v is not UNKNOWN and _may_fail(node)]
            if not bound or all(v is first for _, v in bound):
                continue
            if any(type(v) is list or isinstance(v, GraphList) for _, v in bound + [(None, first)]):
                continue  # (a list: the handler starts from its items before the body, `try_end`)
            if not any(reads_param(fn, i) for fn in fns):
                continue
            one = bound[0][1]
            if not isinstance(one, GraphTensor) and all(v is one or (type(v) is type(one) and _equal(v, one))
                                                        for _, v in bound):
                starts[i] = one  # (one Python value at every op)
                continue
            # A binding the placeholder cannot stand for is refused if a handler reads the placeholder (`finish`).
            refusal: TypeError | None = None
            # (the root trace's own numbers: those bound at its ops, or before the body)
            roots = {id(first)} | {id(v) for node, v in per_node if any(m is node for m in body_nodes)}
            bound = [(node, at._number(v, start, name, node, label, id(v) in roots)) for node, v in bound]
            try:
                one = at._check(name, bound, label)
            except TypeError as e:
                refusal = refusal or e
                one = next((v for _, v in bound if isinstance(v, GraphTensor)), None)
                if one is None and _number_dtype(bound[0][1]) is None:
                    raise
                one = one if one is not None else bound[0][1]
                bound = [(node, v) for node, v in bound if v is one]
            values: list[Any] = []  # (the Values, and Python numbers: a 0-dim tensor of the placeholder's type)
            index: dict[int, tuple[Node, int]] = {}
            for node, v in bound:
                x = v._value if isinstance(v, (GraphTensor, RunTimeNumber)) else v
                k = next((k for k, y in enumerate(values) if y is x or (
                    not isinstance(y, Value) and not isinstance(x, Value) and type(y) is type(x) and y == x)), None)
                if k is None:
                    k = len(values)
                    values.append(x)
                index[id(node)] = (node, k)
            # (Python numbers alone: a 0-dim tensor of their type, as where a tensor `if` merges two of them)
            dtype, shape, device = (one._value.dtype, tuple(one._value.shape), one._value.device) if isinstance(
                one, GraphTensor) else (_number_dtype(one), (), state.trace.entry.device)
            end = after[i] if i < len(after) else None
            if not isinstance(one, GraphTensor) and isinstance(end, GraphTensor) and not end._value.shape and all(
                    isinstance(v, (RunTimeNumber, Unreadable)) and (_number_dtype(v) is torch.int64 or
                                                                    end._value.dtype.is_floating_point)
                    or _exactly(v, end._value.dtype) for _, v in bound):
                dtype, device = end._value.dtype, end._value.device
            grad = any(getattr(v, "requires_grad", False) for _, v in bound)
            example = state.trace.engine.example(shape, dtype, device, grad)
            p = Value(state.fresh_name(f"{name.replace('.', '_')}_at_raise"), dtype, shape, device,
                      ValueKind.TENSOR, example)
            state._defined.add(id(p))  # (readable by the handlers while they are traced)
            gt = state.wrap(p, requires_grad=grad)
            at.tracked.append((p, gt, tuple(values), index))
            if refusal is not None:
                at.refusals[id(p)] = refusal
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
            elif tensors and isinstance(v, (RunTimeNumber, Unreadable)):
                same = not tuple(one._value.shape) and (_number_dtype(v) is torch.int64 and one._value.dtype not in (
                    torch.bool, torch.uint8) or one._value.dtype.is_floating_point)
            elif tensors:
                same = type(v) in (int, float, bool) and not tuple(one._value.shape) and _exactly(v, one._value.dtype)
            else:  # (numbers of one type: a 0-dim tensor; another Python value: the same at every op)
                kinds = {_number_dtype(x) for x in (one, v)}
                same = (None not in kinds and len(kinds) == 1) or (type(v) is type(one) and _equal(v, one))
            if not same:
                was, now = (("unassigned" if x is UNSET else repr(x) if isinstance(x, RunTimeNumber) else describe(x))
                            for x in (one, v))
                raise TypeError(
                    f"{quoted(name)} is {now}{where(node.origin)}, an op of the `try` body of {label}, but "
                    f"{was} at another op of it: the handler, which reads {quoted(name)}, starts from the value it "
                    f"has at the op that fails as the graph runs, which may be either, and a graph gives a "
                    f"variable one type (tensors of one dtype and shape, numbers, or one Python value). Give "
                    f"{quoted(name)} the same type throughout the `try` body, or assign the new value to another "
                    f"variable.")
        return one

    def _number(self, v: Any, start: int, name: str, node: Node, label: str, root: bool) -> Any:
        """`v`, or a run-time number as its graph value, computed before the op `node` (the ops computing it
        from values the body made before that op are moved there); `Unreadable` where it cannot be (a number
        of a tensor `if` or loop of the body)."""
        if not isinstance(v, SYMBOLIC) or not isinstance(constant_of(v), SYMBOLIC):
            return v
        state = self.state
        nodes = state.graph.nodes
        dtype = SCALAR_DTYPES[next(py for sym, py in _NUMBER_OF.items() if isinstance(constant_of(v), sym))]
        unreadable = Unreadable(
            f"{quoted(name)} is a run-time number the graph does not have{where(node.origin)}, the op of the `try` "
            f"body of {label} that failed as the graph ran: the handler, which reads {quoted(name)}, starts from "
            f"the value it has there. Keep {quoted(name)} in a tensor there (`torch.as_tensor(...)`), or assign "
            f"it after the `try` statement.", dtype)
        if not root and not any(m is node for m in nodes[start:]):
            return unreadable  # (a number of a sub-trace of the body (a tensor `if` or loop): it belongs to it)
        n = len(nodes)
        try:
            value = state.to_value(v)
        except errors.InaccessibleTensorError:
            value = None  # (a number of a sub-trace of the body: no value the handler can read)
        made = nodes[n:]
        body = nodes[start:n]
        place = {id(o): k for k, m in enumerate(body) for o in m.outputs}  # (the body's root ops)
        at = next(k for k, m in enumerate(body) if m is node or any(x is node for x in _nested(m)))
        later = place.get(id(value), -1) if isinstance(value, Value) else -1
        if later >= at:  # (made by the body after that op: moved with the new ones)
            made = [body[later]] + made
        inputs = [place.get(id(x), -1) for m in made for x in m.input_values()]
        if isinstance(value, Value) and all(k < at for k in inputs) and \
                all(m.op.pure and not m.subgraphs and not m.stateful for m in made):
            if made:  # (right after what they read: they compute a number, and cannot fail)
                moved = {id(m) for m in made}
                nodes[start:] = [m for m in nodes[start:] if id(m) not in moved]
                k = start + max(inputs, default=-1) + 1
                nodes[k:k] = made
            return RunTimeNumber(value)
        return unreadable

    def check_reads(self, handler_graphs: Sequence[Graph]) -> None:
        """Raise the refusal of a placeholder a handler reads that cannot stand for its variable."""
        read = {id(v) for g in handler_graphs for v in g.inputs}
        for p, _, _, _ in self.tracked:
            if id(p) in read and id(p) in self.refusals:
                raise self.refusals[id(p)]

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


class Unreadable:
    """A run-time number a variable is bound to at an op of the body that the graph computes only later: a
    handler starting from it raises `message` (calling it: as the graph runs, only if that op fails)."""

    def __init__(self, message: str, dtype: torch.dtype) -> None:
        self.message, self.dtype = message, dtype

    def __repr__(self) -> str:
        return "a run-time number"

    def __call__(self) -> None:
        raise TypeError(self.message)


class RunTimeNumber:
    """A run-time number a variable is bound to at an op of the body: its graph value."""

    def __init__(self, value: Value) -> None:
        self._value = value

    def __repr__(self) -> str:
        return f"a run-time {'int' if self._value.dtype is torch.int64 else 'number'}"


def _may_fail(node: Node) -> bool:
    """Whether `node` may be the op that raises as the graph runs: not a control-flow node with sub-graphs (what
    fails there is an op of theirs), nor arithmetic that cannot fail on tensors and numbers whose shapes are
    known (their broadcast was checked while tracing)."""
    if node.subgraphs:
        return False
    op = node.op
    if op.kind is not OpKind.OPERATOR or op.target not in _SAFE_OPERATORS:
        return True
    return any(isinstance(v, Value) and (v.kind not in (ValueKind.TENSOR, ValueKind.SCALAR) or
                                         not all(type(d) is int for d in v.shape)) for v in node.input_values())


# Python operators that raise for no values of static shapes (not `//` and `%`: an integer tensor by zero)
_SAFE_OPERATORS = frozenset({operator.add, operator.sub, operator.mul, operator.truediv, operator.neg, operator.pos,
                             operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne})


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


def _number_dtype(x: Any) -> Any:
    """The dtype of a 0-dim tensor standing for the number `x` (a Python or a run-time one); None for another."""
    if isinstance(x, RunTimeNumber):
        return x._value.dtype
    if isinstance(x, Unreadable):
        return x.dtype
    return SCALAR_DTYPES.get(type(x))
