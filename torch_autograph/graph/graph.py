"""The graph IR: a `Graph` of `Node`s producing `Value`s, printable as readable SSA.

A traced function becomes one `Graph`::

    graph double_plus(x: float32[None, 4] cpu) {
      captures:
        %linear_weight: float32[8, 4] cpu
      %linear: float32[None, 8] = torch.nn.functional.linear(%x, %linear_weight)  # demo.py:7
      %mul: float32[None, 8] = %linear * 2                                       # demo.py:8
      return %mul
    }

Values are immutable metadata (name, dtype, shape, device); nodes are the
operations in program order. Program order matters: in-place ops, random ops
and other stateful nodes run in the order they were recorded, and backends
must emit nodes in `graph.nodes` order.
"""

from __future__ import annotations

import enum
import operator
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

import torch


class ValueKind(enum.Enum):
    """What a `Value` holds when the graph runs."""

    TENSOR = "tensor"
    SCALAR = "scalar"  # a Python number only known at run time, e.g. x.size(0) of a None dim
    LIST = "list"  # a Python list of tensors (dtype/shape/device describe the elements)


@dataclass(frozen=True, eq=False)
class Value:
    """A value produced in a graph: a placeholder, a capture or a node output.

    Attributes:
        name: unique within its graph, a valid Python identifier (printed `%name`).
        dtype: the tensor dtype (`torch.int64`, `torch.float64` or `torch.bool` for a SCALAR of type int, float or bool).
        shape: a tuple with an int per known dim and None per unknown dim, or
            None when even the rank is unknown.
        device: where the tensor lives (None for SCALAR values).
        kind: TENSOR or SCALAR.
        stand_ins: for a SCALAR computed from sizes unknown while tracing
            (`x.size(0) * 3`), its value in each of shape inference's runs,
            where every unknown dim has a sentinel size (`(51, 57)` for dims
            of 17 and 19); None when not known (e.g. a number read from data).

    Printed form: `%linear: float32[None, 8] cpu`.
    """

    name: str
    dtype: torch.dtype
    shape: tuple[int | None, ...] | None
    device: torch.device | None
    kind: ValueKind = ValueKind.TENSOR
    stand_ins: tuple | None = None

    def type_str(self) -> str:
        if self.kind is ValueKind.SCALAR:
            return {torch.bool: "bool", torch.float64: "float"}.get(self.dtype, "int")
        if self.kind is ValueKind.LIST:
            if self.dtype is None:
                return "list[?]"
            return f"list[{Value(self.name, self.dtype, self.shape, self.device).type_str()}]"
        dt = str(self.dtype).replace("torch.", "")
        shape = "[?]" if self.shape is None else "[" + ", ".join("None" if d is None else str(d) for d in self.shape) + "]"
        dev = f" {self.device}" if self.device is not None else ""
        return f"{dt}{shape}{dev}"

    def __repr__(self) -> str:
        return f"%{self.name}"


class OpKind(enum.Enum):
    """How a node's target is applied (and printed / generated)."""

    FUNCTION = "function"  # target(*args, **kwargs)
    METHOD = "method"  # args[0].<target name>(*args[1:], **kwargs)
    GETATTR = "getattr"  # args[0].<attribute>
    OPERATOR = "operator"  # a Python operator: a + b, a[i], a[i] = v, ...
    CONTROL = "control"  # a structured control-flow op holding sub-graphs


@dataclass(frozen=True)
class Op:
    """What a node does: a kind plus the Python object it applies.

    `target` is the callable for FUNCTION (e.g. `torch.add`), the method or
    attribute name for METHOD / GETATTR (e.g. `"view"`), the `operator`
    function for OPERATOR (e.g. `operator.add`), or a control-flow op object
    for CONTROL. `name` is only for printing and naming outputs.

    `inplace` is set on the Python operator an augmented assignment to a
    run-time Python number records (`n += 1` rebinds `n`, as in Python): the
    in-place tensor op the same statement records when its target is a tensor
    (`t += 1` is `t.add_(1)`), which the node must become if its target is
    re-typed to a tensor (`retype.py`).

    `converts_number` marks the `torch.tensor(n, dtype=..., device=...)` the
    tracer itself inserts where a Python number must become a tensor (a graph
    `if` merging it with a tensor from the other branch, a loop variable the
    body promotes), as opposed to a user's own `torch.tensor` call: if
    re-typing makes `n` a tensor of that dtype, a trace would insert nothing,
    and the node becomes the identity (`retype.py`).
    """

    kind: OpKind
    target: Any
    name: str
    stateful: bool = False
    inplace: "Op | None" = None
    converts_number: bool = False


@dataclass(frozen=True)
class SourceLocation:
    """The user's source line a node came from."""

    filename: str
    lineno: int
    function: str = ""
    line: str = ""

    def __str__(self) -> str:
        return f"{self.filename}:{self.lineno}"

    @property
    def short(self) -> str:
        return f"{self.filename.rsplit('/', 1)[-1]}:{self.lineno}"


@dataclass(eq=False)
class Node:
    """One operation in program order.

    Attributes:
        op: what it does.
        args, kwargs: arguments; any nesting of tuples/lists/dicts/slices whose
            leaves are `Value`s or Python constants.
        outputs: the values it defines, in order.
        pattern: how the call's result binds to `outputs`: the single Value, or
            nested tuples of Values (None for a non-tensor slot) for results
            that are unpacked (`a, b = torch.split(...)`); None for no result.
        origin: the user line that called the op.
        grad_enabled: None to run under the caller's grad mode, or the mode the
            user set explicitly around this op (`with torch.no_grad():`).
        subgraphs: sub-graphs of a CONTROL node.
    """

    op: Op
    args: tuple
    kwargs: dict
    outputs: tuple[Value, ...]
    pattern: Any = None
    origin: SourceLocation | None = None
    grad_enabled: bool | None = None
    subgraphs: tuple["Graph", ...] = ()

    @property
    def name(self) -> str:
        return self.outputs[0].name if self.outputs else f"{self.op.name}_{id(self):x}"

    @property
    def stateful(self) -> bool:
        return self.op.stateful

    def input_values(self) -> Iterator[Value]:
        """Every Value among args and kwargs, depth first."""
        yield from iter_values((self.args, self.kwargs))


def iter_values(obj: Any) -> Iterator[Value]:
    if isinstance(obj, Value):
        yield obj
    elif isinstance(obj, (tuple, list)):
        for item in obj:
            yield from iter_values(item)
    elif isinstance(obj, dict):
        for item in obj.values():
            yield from iter_values(item)
    elif isinstance(obj, slice):
        yield from iter_values((obj.start, obj.stop, obj.step))


def unique_values(values: Any) -> list[Value]:
    """`values` without repeats (by identity), in first-seen order."""
    seen: set[int] = set()
    out = []
    for v in values:
        if id(v) not in seen:
            seen.add(id(v))
            out.append(v)
    return out


_INFIX = {
    operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
    operator.floordiv: "//", operator.mod: "%", operator.pow: "**", operator.matmul: "@",
    operator.and_: "&", operator.or_: "|", operator.xor: "^", operator.lshift: "<<",
    operator.rshift: ">>", operator.lt: "<", operator.le: "<=", operator.gt: ">",
    operator.ge: ">=", operator.eq: "==", operator.ne: "!=",
}
_PREFIX = {operator.neg: "-", operator.pos: "+", operator.invert: "~", operator.not_: "not "}


def render_call(node: Node, render_arg: Callable[[Any], str], target_name: str) -> str:
    """The Python expression (or statement, for setitem) a node stands for.

    Shared by graph printing and the torch backend's code generator, so the
    printed graph and the generated code read the same.
    """
    op, args, kwargs = node.op, node.args, node.kwargs
    if op.kind is OpKind.OPERATOR:
        t = op.target
        if t in _INFIX:
            return f"{render_arg(args[0])} {_INFIX[t]} {render_arg(args[1])}"
        if t in _PREFIX:
            return f"{_PREFIX[t]}{render_arg(args[0])}"
        if t is operator.getitem:
            return f"{render_arg(args[0])}[{render_index(args[1], render_arg)}]"
        if t is operator.setitem:
            return f"{render_arg(args[0])}[{render_index(args[1], render_arg)}] = {render_arg(args[2])}"
        if t is abs:
            return f"abs({render_arg(args[0])})"
        raise AssertionError(f"bug in torch_autograph: unknown operator {t!r}")
    parts = [render_arg(a) for a in (args[1:] if op.kind in (OpKind.METHOD, OpKind.GETATTR) else args)]
    parts += [f"{k}={render_arg(v)}" for k, v in kwargs.items()]
    if op.kind is OpKind.METHOD:
        return f"{render_arg(args[0])}.{op.target}({', '.join(parts)})"
    if op.kind is OpKind.GETATTR:
        return f"{render_arg(args[0])}.{op.target}"
    return f"{target_name}({', '.join(parts)})"


def render_pattern(pattern: Any, name: Callable[[Value], str]) -> str:
    """The assignment target for a node's result: `a`, `a, b` or `a, (b, _)`."""
    if isinstance(pattern, Value):
        return name(pattern)
    if pattern is None:
        return "_"
    inner = ", ".join(render_pattern(p, name) if not isinstance(p, tuple) else f"({render_pattern(p, name)})"
                      for p in pattern)
    return inner + ("," if len(pattern) == 1 else "")


def render_index(idx: Any, render_arg: Callable[[Any], str]) -> str:
    """`a[1:n, ..., None]` style rendering of an index expression."""

    def one(i: Any) -> str:
        if isinstance(i, slice):
            s = ("" if i.start is None else render_arg(i.start)) + ":" + ("" if i.stop is None else render_arg(i.stop))
            return s + (":" + render_arg(i.step) if i.step is not None else "")
        if i is Ellipsis:
            return "..."
        return render_arg(i)

    if isinstance(idx, tuple):
        return ", ".join(one(i) for i in idx) if len(idx) != 1 else one(idx[0]) + ","
    return one(idx)


@dataclass(eq=False)
class Graph:
    """A traced function: inputs, captures, nodes in program order, outputs.

    Attributes:
        name: the function's name.
        inputs: one placeholder Value per tensor leaf of the arguments.
        captures: (Value, tensor) for every real tensor the trace used
            (module parameters, buffers, closure tensors); passed by reference.
        nodes: operations in program order.
        outputs: the flat outputs: Values, or Python constants (None, str).
        parent: the enclosing graph of a control-flow sub-graph.
        python_source: the backend's generated code, once compiled.
    """

    name: str
    inputs: list[Value] = field(default_factory=list)
    captures: list[tuple[Value, torch.Tensor]] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    outputs: list[Any] = field(default_factory=list)
    parent: "Graph | None" = None
    python_source: str | None = None
    _names: set = field(default_factory=set, repr=False)

    def to_fx(self) -> "torch.fx.GraphModule":
        """This graph as a `torch.fx.GraphModule` (captures as buffers/parameters); see `fx_export.to_fx`."""
        from .fx_export import to_fx

        return to_fx(self)

    def get_operations(self) -> list[Node]:
        """The nodes in program order (TensorFlow's `Graph.get_operations`)."""
        return list(self.nodes)

    @property
    def capture_tensors(self) -> list[torch.Tensor]:
        return [t for _, t in self.captures]

    def verify(self) -> None:
        """Check the invariants every pass and backend relies on.

        Raises:
            AssertionError: (a bug in torch_autograph) naming the broken invariant.
        """
        defined: set[int] = set()
        names: set[str] = set()

        def define(v: Value, where: str) -> None:
            assert isinstance(v, Value), f"bug in torch_autograph: {where} defines a non-Value {v!r}"
            assert v.name.isidentifier(), f"bug in torch_autograph: value name {v.name!r} is not an identifier"
            assert v.name not in names, f"bug in torch_autograph: duplicate value name %{v.name} in graph {self.name}"
            names.add(v.name)
            defined.add(id(v))

        for v in self.inputs:
            define(v, "input")
        for v, t in self.captures:
            assert isinstance(t, torch.Tensor), f"bug in torch_autograph: capture %{v.name} is not a tensor"
            define(v, "capture")
        for node in self.nodes:
            for v in node.input_values():
                assert id(v) in defined, (
                    f"bug in torch_autograph: %{v.name} used by {node.op.name} before it is defined\n{self}")
            for sub in node.subgraphs:
                sub.verify()
            for v in node.outputs:
                define(v, node.op.name)
        for v in iter_values(self.outputs):
            assert id(v) in defined, f"bug in torch_autograph: output %{v.name} is not defined\n{self}"

    def __str__(self) -> str:
        return "\n".join(self.format_lines())

    def format_lines(self, indent: str = "") -> list[str]:
        ins = ", ".join(f"{v.name}: {v.type_str()}" for v in self.inputs)
        lines = [f"{indent}graph {self.name}({ins}) {{"]
        if self.captures:
            lines.append(f"{indent}  captures:")
            lines += [f"{indent}    %{v.name}: {v.type_str()}" for v, _ in self.captures]
        body = []
        for node in self.nodes:
            body.append((node, self._node_text(node)))
        width = max((len(t) for _, t in body), default=0)
        for node, text in body:
            loc = f"  # {node.origin.short}" if node.origin else ""
            lines.append(f"{indent}  {text.ljust(width)}{loc}".rstrip())
            for sub in node.subgraphs:
                lines += sub.format_lines(indent + "    ")
        outs = ", ".join(_print_arg(o) for o in self.outputs)
        lines.append(f"{indent}  return {outs}")
        lines.append(f"{indent}}}")
        return lines

    def _node_text(self, node: Node) -> str:
        if node.op.kind is OpKind.CONTROL:
            call = f"{node.op.name}({_print_arg(node.args[0])}{node.op.target.describe_extra()})"
            if node.outputs:
                lhs = ", ".join(f"%{v.name}: {v.type_str()}" for v in node.outputs)
                return f"{lhs} = {call}"
            return call
        call = render_call(node, _print_arg, qualified_name(node.op.target) if node.op.kind is OpKind.FUNCTION else "")
        if node.grad_enabled is not None:
            call += f"  [grad {'on' if node.grad_enabled else 'off'}]"
        if not node.outputs:
            return call
        if isinstance(node.pattern, Value):
            return f"%{node.pattern.name}: {node.pattern.type_str()} = {call}"
        lhs = render_pattern(node.pattern, lambda v: f"%{v.name}")
        types = ", ".join(v.type_str() for v in node.outputs)
        return f"{lhs} = {call}  -> ({types})"


def _print_arg(a: Any) -> str:
    if isinstance(a, Value):
        return f"%{a.name}"
    if isinstance(a, (list, tuple)):
        inner = ", ".join(_print_arg(x) for x in a)
        return f"[{inner}]" if isinstance(a, list) else f"({inner}{',' if len(a) == 1 else ''})"
    if isinstance(a, dict):
        return "{" + ", ".join(f"{k!r}: {_print_arg(v)}" for k, v in a.items()) + "}"
    if isinstance(a, slice):
        return f"slice({_print_arg(a.start)}, {_print_arg(a.stop)}, {_print_arg(a.step)})"
    if a is Ellipsis:
        return "..."
    if isinstance(a, torch.dtype):
        return str(a)
    return repr(a)


_QUALNAME_MODULES = ("torch", "torch.nn.functional", "torch.linalg", "torch.fft", "torch.special", "torch.nn.init")
_qualname_cache: dict[int, str] = {}


def qualified_name(fn: Any) -> str:
    """A dotted name that evaluates to `fn` (e.g. `torch.nn.functional.linear`), or its repr."""
    key = id(fn)
    hit = _qualname_cache.get(key)
    if hit is not None:
        return hit
    import importlib

    name = getattr(fn, "__name__", None)
    found = None
    if name:
        for modname in _QUALNAME_MODULES:
            mod = importlib.import_module(modname)
            if getattr(mod, name, None) is fn:
                found = f"{modname}.{name}"
                break
        if found is not None:
            _qualname_cache[key] = found  # only long-lived torch functions are cached
            return found
        mod = getattr(fn, "__module__", None)
        qual = getattr(fn, "__qualname__", name)
        if mod and mod.startswith("torch_autograph."):
            return qual  # the library's run-time helpers: short names read better
        if mod and "<" not in qual:
            return f"{mod}.{qual}"
    return repr(fn)
