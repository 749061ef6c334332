"""Shared pieces of the converters: the conversion context and scope helpers."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional

import gast

if TYPE_CHECKING:
    from torch_autograph.autograph.pyct import naming

FUNCTION_NODES = (gast.FunctionDef, gast.AsyncFunctionDef)
_LEAVES = (gast.expr_context, gast.operator, gast.unaryop, gast.cmpop, gast.boolop)


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

    namer: "naming.Namer"
    filename: str
    function_name: str
    namespace: Callable[[str], Any] = lambda name: MISSING


MISSING = object()


def iter_children(node: gast.AST):
    """Child nodes of `node` (like ast.iter_child_nodes, faster, skipping ctx/op leaves)."""
    for field in node._fields:
        value = getattr(node, field, None)
        if isinstance(value, list):
            for v in value:
                if isinstance(v, gast.AST) and not isinstance(v, _LEAVES):
                    yield v
        elif isinstance(value, gast.AST) and not isinstance(value, _LEAVES):
            yield value


def walk(node: gast.AST):
    """All nodes under `node` (including it), depth first; ctx/op leaves skipped."""
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        todo.extend(iter_children(n))


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
        todo.extend(iter_children(n))
    return new


def nested_functions(fn: gast.AST) -> list:
    """Function defs nested anywhere in `fn`, innermost first."""
    found = []

    def visit(node: gast.AST) -> None:
        for child in iter_children(node):
            visit(child)
            if isinstance(child, FUNCTION_NODES):
                found.append(child)

    visit(fn)
    return found


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
        todo.extend(list(iter_children(n))[::-1])


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



class Transformer:
    """A leaner `ast.NodeTransformer`: same protocol (`visit_<Class>`, return a node,
    a list of statements or None), with per-class method lookup cached and no
    descent into context/operator leaves. Conversion time is mostly AST
    walking, so this matters.
    """

    _method_cache: dict = {}

    def visit(self, node: gast.AST) -> Any:
        key = (self.__class__, node.__class__)
        method = Transformer._method_cache.get(key)
        if method is None:
            method = getattr(self.__class__, "visit_" + node.__class__.__name__, None) or \
                self.__class__.generic_visit
            Transformer._method_cache[key] = method
        return method(self, node)

    def generic_visit(self, node: gast.AST) -> gast.AST:
        for field in node._fields:
            old = getattr(node, field, None)
            if isinstance(old, list):
                new = []
                for v in old:
                    if isinstance(v, gast.AST) and not isinstance(v, _LEAVES):
                        r = self.visit(v)
                        if r is None:
                            continue
                        if isinstance(r, list):
                            new.extend(r)
                            continue
                        v = r
                    new.append(v)
                old[:] = new
            elif isinstance(old, gast.AST) and not isinstance(old, _LEAVES):
                setattr(node, field, self.visit(old))
        return node


class Visitor(Transformer):
    """A read-only walk with the same dispatch (visit_* methods return nothing)."""

    def generic_visit(self, node: gast.AST) -> gast.AST:
        for field in node._fields:
            old = getattr(node, field, None)
            if isinstance(old, list):
                for v in old:
                    if isinstance(v, gast.AST) and not isinstance(v, _LEAVES):
                        self.visit(v)
            elif isinstance(old, gast.AST) and not isinstance(old, _LEAVES):
                self.visit(old)
        return node
