"""How nodes and graphs read as text: shared by `str(graph)` and the torch backend's code generator.

Printed form of a graph::

    graph double_plus(x: float32[None, 4] cpu) {
      captures:
        %linear_weight: float32[8, 4] cpu
      %linear: float32[None, 8] = torch.nn.functional.linear(%x, %linear_weight)  # demo.py:7
      %mul: float32[None, 8] = %linear * 2                                       # demo.py:8
      return %mul
    }
"""

from __future__ import annotations

import importlib
import operator
from typing import Any, Callable

import torch

from .ops import Expression, OpKind
from .values import Value

Graph = Node = Any  # graph.Graph, graph.Node: graph.py imports this module, so they are not imported here

_INFIX = {
    operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
    operator.floordiv: "//", operator.mod: "%", operator.pow: "**", operator.matmul: "@",
    operator.and_: "&", operator.or_: "|", operator.xor: "^", operator.lshift: "<<",
    operator.rshift: ">>", operator.lt: "<", operator.le: "<=", operator.gt: ">",
    operator.ge: ">=", operator.eq: "==", operator.ne: "!=",
}
_PREFIX = {operator.neg: "-", operator.pos: "+", operator.invert: "~", operator.not_: "not "}


def render_call(node: "Node", render_arg: Callable[[Any], str], target_name: str) -> str:
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
    if isinstance(op.target, Expression):
        return op.target.render([render_arg(a) for a in args])
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


WIDTH = 120  # printed lines stay within this many columns (a single argument longer than that excepted)


def format_graph(graph: "Graph", indent: str = "", width: int = WIDTH) -> list[str]:
    """The lines of `str(graph)`: signature, captures, one entry per node (sub-graphs indented), return.

    A node whose text does not fit in `width` columns has its arguments wrapped onto continuation
    lines. The user line a node came from is a comment on the right, aligned within its block when it
    fits, else on the line above the node.
    """
    lines = _wrapped(f"{indent}graph {graph.name}(", [f"{v.name}: {v.type_str()}" for v in graph.inputs],
                     ") {", width, indent + "      ")
    if graph.sizes:
        lines.append(f"{indent}  sizes: " + ", ".join(f"{sym} = {where}" for sym, where in graph.sizes.items()))
    if graph.captures:
        lines.append(f"{indent}  captures:")
        lines += [f"{indent}    %{v.name}: {v.type_str()}" for v, _ in graph.captures]
    body = indent + "  "
    entries = []
    for node in graph.nodes:
        head, args, tail = node_parts(node)
        text = _wrapped(body + head, args, tail, width, body + "    ")
        entries.append((node, text, f"  # {node.origin.short}" if node.origin else ""))
    fitting = [len(t[0]) for _, t, c in entries if len(t) == 1 and len(t[0]) + len(c) <= width]
    column = max(fitting, default=0)
    for node, text, comment in entries:
        if not comment:
            lines += text
        elif len(text) == 1 and column + len(comment) <= width and len(text[0]) <= column:
            lines.append(text[0].ljust(column) + comment)
        elif len(text) == 1 and len(text[0]) + len(comment) <= width:
            lines.append(text[0] + comment)
        else:
            lines.append(body + comment.lstrip())
            lines += text
        for sub in node.subgraphs:
            lines += format_graph(sub, indent + "    ", width)
    lines += _wrapped(f"{body}return ", [print_arg(o) for o in graph.outputs], "", width, body + "    ")
    lines.append(f"{indent}}}")
    return lines


def _wrapped(head: str, args: list[str], tail: str, width: int, continuation: str) -> list[str]:
    """`head + ", ".join(args) + tail` on one line if it fits, else with the arguments filling continuation lines."""
    one = head + ", ".join(args) + tail
    if len(one) <= width or not args:
        return [one]
    lines, current, empty = [], head, True
    for i, arg in enumerate(args):
        piece = arg + ("," if i < len(args) - 1 else tail)
        if not empty and len(current) + 1 + len(piece) > width:
            lines.append(current)
            current, empty = continuation, True
        current += piece if empty else " " + piece
        empty = False
    lines.append(current)
    return lines


def node_parts(node: "Node") -> tuple[str, list[str], str]:
    """One node as printed: (text up to its first argument, the arguments, the rest), e.g.
    (`%linear: float32[None, 8] cpu = torch.nn.functional.linear(`, [`%x`, `%linear_weight`], `)`)."""
    op = node.op
    if op.kind is OpKind.CONTROL:
        lhs = ", ".join(f"%{v.name}: {v.type_str()}" for v in node.outputs)
        return (f"{lhs} = " if lhs else "") + f"{op.name}(", [print_arg(node.args[0]), *op.target.printed_args()], ")"
    suffix = "" if node.grad_enabled is None else f"  [grad {'on' if node.grad_enabled else 'off'}]"
    if node.autocast is not None:
        regions = ", ".join(f"{device} {str(dtype).replace('torch.', '')}" for device, dtype in node.autocast)
        suffix += f"  [autocast {regions or 'off'}]"
    if not node.outputs:
        lhs = ""
    elif isinstance(node.pattern, Value):
        lhs = f"%{node.pattern.name}: {node.pattern.type_str()} = "
    else:
        lhs = render_pattern(node.pattern, lambda v: f"%{v.name}") + " = "
        suffix += "  -> (" + ", ".join(v.type_str() for v in node.outputs) + ")"
    if op.kind in (OpKind.FUNCTION, OpKind.METHOD):
        args = node.args[1:] if op.kind is OpKind.METHOD else node.args
        parts = [print_arg(a) for a in args] + [f"{k}={print_arg(v)}" for k, v in node.kwargs.items()]
        callee = (qualified_name(op.target) if op.kind is OpKind.FUNCTION
                  else f"{print_arg(node.args[0])}.{op.target}")
        if args and type(args[0]) in (list, tuple) and len(args[0]) > 1:
            # torch.cat([a, b, ...], dim): the sequence's elements are what wraps
            opening, closing = ("[", "]") if type(args[0]) is list else ("(", ")")
            rest = "".join(", " + p for p in parts[1:])
            return f"{lhs}{callee}({opening}", [print_arg(a) for a in args[0]], f"{closing}{rest})" + suffix
        return f"{lhs}{callee}(", parts, ")" + suffix
    return lhs + render_call(node, print_arg, ""), [], suffix


def node_text(node: "Node") -> str:
    """One node as printed in a graph, on one line: `%name: type = call`."""
    head, args, tail = node_parts(node)
    return head + ", ".join(args) + tail


def print_arg(a: Any) -> str:
    """An argument as printed in a graph: `%value`, a constant's repr, nests of them."""
    if isinstance(a, Value):
        return f"%{a.name}"
    if isinstance(a, (list, tuple)):
        inner = ", ".join(print_arg(x) for x in a)
        return f"[{inner}]" if isinstance(a, list) else f"({inner}{',' if len(a) == 1 else ''})"
    if isinstance(a, dict):
        return "{" + ", ".join(f"{k!r}: {print_arg(v)}" for k, v in a.items()) + "}"
    if isinstance(a, slice):
        return f"slice({print_arg(a.start)}, {print_arg(a.stop)}, {print_arg(a.step)})"
    if a is Ellipsis:
        return "..."
    if isinstance(a, torch.dtype):
        return str(a)
    return repr(a)


_QUALNAME_MODULES = ("torch", "torch.nn.functional", "torch.linalg", "torch.fft", "torch.special", "torch.nn.init")


class _QualifiedNames:
    """Dotted names of torch functions, cached: bounded by the set of torch's own functions."""

    def __init__(self) -> None:
        self._cache: dict[int, tuple[Any, str]] = {}

    def __call__(self, fn: Any) -> str:
        hit = self._cache.get(id(fn))
        if hit is not None and hit[0] is fn:
            return hit[1]
        name = getattr(fn, "__name__", None)
        if not name:
            return repr(fn)
        for modname in _QUALNAME_MODULES:
            if getattr(importlib.import_module(modname), name, None) is fn:
                found = f"{modname}.{name}"
                self._cache[id(fn)] = (fn, found)  # holds fn: torch's functions live as long as torch
                return found
        mod = getattr(fn, "__module__", None)
        qual = getattr(fn, "__qualname__", name)
        if mod and mod.startswith("torch_autograph."):
            return qual  # the library's run-time helpers: short names read better
        if mod and "<" not in qual:
            return f"{mod}.{qual}"
        return repr(fn)


qualified_name = _QualifiedNames()
qualified_name.__doc__ = "A dotted name that evaluates to `fn` (e.g. `torch.nn.functional.linear`), or its repr."
