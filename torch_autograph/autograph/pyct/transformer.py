"""Shared pieces of the converters: the conversion context and scope helpers."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Iterable, Optional

import gast

FUNCTION_NODES = (gast.FunctionDef, gast.AsyncFunctionDef)

# Fields that never hold a node worth visiting: identifiers, flags, and the
# context/operator leaves (`ctx`, `op`, `ops`), which carry no data. (`names` is
# not one: an import's names are `alias` nodes, which bind names.)
_SCALAR_FIELDS = frozenset({"ctx", "op", "ops", "id", "attr", "arg", "type_comment", "kind",
                            "conversion", "is_async", "level", "module"})
NODE_FIELDS: dict = {
    cls: tuple(f for f in cls._fields if f not in _SCALAR_FIELDS)
    for cls in vars(gast).values() if isinstance(cls, type) and issubclass(cls, gast.AST)}
"""gast class -> the fields that may hold child nodes (a node or a list of them)."""
_AST = gast.AST
# The fields of a statement (or except clause, or match case) that hold statements.
BLOCK_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")
_SCOPE_STATEMENTS = (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)


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

    namer: Any  # naming.Namer: naming.py imports this module, so it is not imported here
    filename: str
    function_name: str
    namespace: Callable[[str], Any] = lambda name: MISSING
    dual_path: bool = True


MISSING = object()


def iter_children(node: gast.AST):
    """Child nodes of `node` (like ast.iter_child_nodes, faster, skipping ctx/op leaves)."""
    d = node.__dict__
    for field in NODE_FIELDS[node.__class__]:
        value = d.get(field)
        if value.__class__ is list:
            for v in value:
                if isinstance(v, _AST):
                    yield v
        elif isinstance(value, _AST):
            yield value


def _push_children(node: gast.AST, todo: list) -> None:
    d = node.__dict__
    for field in NODE_FIELDS[node.__class__]:
        value = d.get(field)
        if value.__class__ is list:
            todo.extend([v for v in value if isinstance(v, _AST)])
        elif isinstance(value, _AST):
            todo.append(value)


def walk(node: gast.AST):
    """All nodes under `node` (including it), depth first; ctx/op leaves skipped."""
    todo = [node]
    while todo:
        n = todo.pop()
        yield n
        _push_children(n, todo)


def copy_location(new: Any, old: gast.AST) -> Any:
    """Gives `new` (a node or list) and its statements without a line the line of `old`.

    Generated code thus maps back to the user statement it stands for. Only
    statements need lines (origin info maps the lines statements start; the
    code is compiled from its text), so expressions are not entered. Nodes
    that already have a line (user code, or generated earlier) keep theirs,
    and so do their statements, which is why the walk stops there.
    """
    lineno = getattr(old, "lineno", None)
    if lineno is None:
        return new
    todo = list(new) if new.__class__ is list else [new]
    while todo:
        n = todo.pop()
        d = n.__dict__
        if "lineno" in n._attributes:
            if d.get("lineno") is not None:
                continue
            d["lineno"] = d["end_lineno"] = lineno
            d["col_offset"] = d["end_col_offset"] = 0
        for field in BLOCK_FIELDS:
            block = d.get(field)
            if block.__class__ is list:
                todo.extend(block)
    return new


def nested_functions(fn: gast.AST) -> list:
    """Function defs nested anywhere in `fn`, innermost first."""
    found = []

    def visit(node: gast.AST) -> None:
        d = node.__dict__
        for field in BLOCK_FIELDS:
            block = d.get(field)
            if block.__class__ is list:
                for child in block:
                    visit(child)
                    if isinstance(child, FUNCTION_NODES):
                        found.append(child)

    visit(fn)
    return found


def is_ag_call(node: gast.AST) -> bool:
    """True for a call of a generated `ag__.<op>`."""
    return (isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute)
            and isinstance(node.func.value, gast.Name) and node.func.value.id == "ag__")


def walk_statements(stmts: Iterable[gast.AST]):
    """Yields the statements (and except clauses, match cases) in `stmts` and in their
    blocks, in source order, without entering nested functions or classes."""
    todo = list(stmts)[::-1]
    while todo:
        n = todo.pop()
        yield n
        if isinstance(n, _SCOPE_STATEMENTS):
            continue
        d = n.__dict__
        for field in reversed(BLOCK_FIELDS):
            block = d.get(field)
            if block.__class__ is list:
                todo.extend(reversed(block))


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

    _methods: dict = {}  # node class -> this class's visit method for it (each subclass has its own)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._methods = {}

    def visit(self, node: gast.AST) -> Any:
        method = self._methods.get(node.__class__)
        if method is None:
            cls = self.__class__
            method = cls._methods[node.__class__] = (getattr(cls, "visit_" + node.__class__.__name__, None)
                                                     or cls.generic_visit)
        return method(self, node)

    def generic_visit(self, node: gast.AST) -> gast.AST:
        d = node.__dict__
        for field in NODE_FIELDS[node.__class__]:
            old = d.get(field)
            if old.__class__ is list:
                new = []
                for v in old:
                    if isinstance(v, _AST):
                        r = self.visit(v)
                        if r is None:
                            continue
                        if r.__class__ is list:
                            new.extend(r)
                            continue
                        v = r
                    new.append(v)
                old[:] = new
            elif isinstance(old, _AST):
                d[field] = self.visit(old)
        return node


class StatementTransformer(Transformer):
    """A Transformer that enters statement blocks only (bodies, `else:`/`finally:` blocks, except clauses,
    match cases), never expressions: for rewrites of statements, which no expression holds."""

    def generic_visit(self, node: gast.AST) -> gast.AST:
        d = node.__dict__
        for field in BLOCK_FIELDS:
            block = d.get(field)
            if block.__class__ is list:
                new = []
                for s in block:
                    r = self.visit(s)
                    if r is None:
                        continue
                    if r.__class__ is list:
                        new.extend(r)
                    else:
                        new.append(r)
                block[:] = new
        return node


class Visitor(Transformer):
    """A read-only walk with the same dispatch (visit_* methods return nothing)."""

    def generic_visit(self, node: gast.AST) -> gast.AST:
        d = node.__dict__
        for field in NODE_FIELDS[node.__class__]:
            old = d.get(field)
            if old.__class__ is list:
                for v in old:
                    if isinstance(v, _AST):
                        self.visit(v)
            elif isinstance(old, _AST):
                self.visit(old)
        return node
