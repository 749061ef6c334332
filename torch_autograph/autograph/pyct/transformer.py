"""Shared pieces of the converters: the conversion context and scope helpers."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Iterable, Optional

import gast

from torch_autograph.autograph.pyct import naming

FUNCTION_NODES = (gast.FunctionDef, gast.AsyncFunctionDef)


@dataclasses.dataclass
class ConversionContext:
    """What every converter may consult.

    Attributes:
        namer: the one namer for generated identifiers.
        filename: the user's file (for error messages).
        function_name: the converted function's name.
        namespace: resolves a global/closure name at conversion time (used by
            directives to recognise `set_loop_options`); returns `MISSING`.
    """

    namer: naming.Namer
    filename: str
    function_name: str
    namespace: Callable[[str], Any] = lambda name: MISSING


MISSING = object()


def copy_location(new: Any, old: gast.AST) -> Any:
    """Gives every node of `new` (a node or list) without a line the line of `old`.

    Generated code thus maps back to the user statement it stands for. Nodes
    that already have a line (user code, or generated earlier) keep theirs,
    and so do their children, which is why the walk stops there.
    """
    lineno = getattr(old, "lineno", None)
    if lineno is None:
        return new
    todo = list(new) if isinstance(new, list) else [new]
    while todo:
        n = todo.pop()
        if "lineno" in n._attributes:
            if getattr(n, "lineno", None) is not None:
                continue
            n.lineno, n.col_offset = lineno, 0
            n.end_lineno, n.end_col_offset = lineno, 0
        todo.extend(gast.iter_child_nodes(n))
    return new


def nested_functions(fn: gast.AST) -> list:
    """Function defs nested anywhere in `fn`, innermost first."""
    found = []

    def visit(node: gast.AST) -> None:
        for child in gast.iter_child_nodes(node):
            visit(child)
            if isinstance(child, FUNCTION_NODES):
                found.append(child)

    visit(fn)
    return found


def for_each_scope(fn: gast.FunctionDef, apply: Callable[[gast.FunctionDef], None]) -> None:
    """Applies a per-scope rewrite to every nested def (innermost first), then to `fn`."""
    for inner in nested_functions(fn):
        apply(inner)
    apply(fn)


def is_ag_call(node: gast.AST) -> bool:
    """True for a call of a generated `ag__.<op>`."""
    return (isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute)
            and isinstance(node.func.value, gast.Name) and node.func.value.id == "ag__")


def walk_scope(stmts: Iterable[gast.AST]):
    """Yields nodes of the statements without entering nested functions, classes or lambdas."""
    todo = list(stmts)[::-1]
    while todo:
        n = todo.pop()
        yield n
        if isinstance(n, FUNCTION_NODES + (gast.ClassDef, gast.Lambda)):
            continue
        todo.extend(list(gast.iter_child_nodes(n))[::-1])


def name(id_: str, ctx: type = gast.Load) -> gast.Name:
    return gast.Name(id_, ctx(), None, None)


def assign(target: str, value: gast.expr) -> gast.Assign:
    return gast.Assign(targets=[name(target, gast.Store)], value=value, type_comment=None)


def constant(value: Any) -> gast.Constant:
    return gast.Constant(value, None)


def not_expr(expr: gast.expr) -> gast.expr:
    return gast.UnaryOp(op=gast.Not(), operand=expr)


def and_exprs(first: gast.expr, second: Optional[gast.expr]) -> gast.expr:
    if second is None:
        return first
    return gast.BoolOp(op=gast.And(), values=[first, second])
