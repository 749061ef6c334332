"""Converts trees between `ast` and `gast`, faster than gast's own converters.

gast's `ast_to_gast` / `gast_to_ast` dispatch through `ast.NodeTransformer`
and copy every field through a generic visitor; on a converted function that
was about a quarter of the conversion time. For Python 3.8-3.11 the two
node sets differ only in a few places, handled here directly:

    ast.arg(arg='x', annotation=a)        <->  gast.Name('x', Param(), a, None)
    ast.Name('x', Load())                 <->  gast.Name('x', Load(), None, None)
    ast.ExceptHandler(name='e')           <->  gast.ExceptHandler(name=Name('e', Store()))
    FunctionDef / AsyncFunctionDef / ClassDef  <->  the same with `type_params=[]`

Every other node is copied field by field into the class of the same name;
context and operator leaves (`Load()`, `Add()`, ...) carry no data and are
shared. Other Python versions use gast's converters.
"""

from __future__ import annotations

import ast
import sys
from typing import Any

import gast

from torch_autograph.autograph.pyct import anno

_FAST = (3, 8) <= sys.version_info[:2] < (3, 12)
_LOCATION = ("lineno", "col_offset", "end_lineno", "end_col_offset")
# Leaves: no fields, no location (contexts, operators).
_LEAF_BASES = (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)
_WITH_TYPE_PARAMS = frozenset({"FunctionDef", "AsyncFunctionDef", "ClassDef"})
# Fields holding leaves (`ctx=Load()`, `op=Add()`, `ops=[Lt()]`); fields that hold no node in any class.
_LEAF_FIELDS = frozenset({"ctx", "op", "ops"})
_SCALAR_FIELDS = frozenset({"id", "attr", "arg", "asname", "module", "level", "type_comment", "kind",
                            "conversion", "is_async", "simple", "tag", "lineno"})
_AST = ast.AST


def _class_table(source_module: Any, target_module: Any) -> dict:
    """source class -> (target class, or a shared instance for a leaf)."""
    table: dict = {}
    for name in dir(source_module):
        cls = getattr(source_module, name)
        target = getattr(target_module, name, None)
        if not (isinstance(cls, type) and issubclass(cls, ast.AST) and isinstance(target, type)):
            continue
        table[cls] = target() if issubclass(target, _LEAF_BASES) else target
    return table


def _plans(table: dict) -> dict:
    """source class -> (target class, fields that may hold nodes, fields that hold leaves), for each non-leaf.

    Identifier and flag fields are left out: they never hold a node.
    """
    return {cls: (target, tuple(f for f in cls._fields if f not in _SCALAR_FIELDS and f not in _LEAF_FIELDS),
                  tuple(f for f in cls._fields if f in _LEAF_FIELDS))
            for cls, target in table.items() if target.__class__ is type}


_TO_GAST = _class_table(ast, gast) if _FAST else {}
_TO_AST = _class_table(gast, ast) if _FAST else {}
_TO_GAST_PLANS = _plans(_TO_GAST)
_TO_AST_PLANS = _plans(_TO_AST)


def _copy_fields(node: Any, plan: tuple, convert: Any, leaves: dict) -> Any:
    """A node of `plan`'s class with `node`'s attributes, its child fields converted (leaves: shared ones)."""
    cls, fields, leaf_fields = plan
    d = node.__dict__.copy()
    d.pop(anno.ANNO_ATTR, None)  # annotations stay behind
    for field in fields:
        value = d.get(field)
        if value.__class__ is list:
            d[field] = [convert(v) if isinstance(v, _AST) else v for v in value]
        elif isinstance(value, _AST):
            d[field] = convert(value)
    for field in leaf_fields:
        value = d.get(field)
        if value.__class__ is list:
            d[field] = [leaves[v.__class__] for v in value]
        elif value is not None:
            d[field] = leaves[value.__class__]
    new = cls.__new__(cls)
    new.__dict__ = d
    return new


def _location(new: Any, node: Any) -> Any:
    src, d = node.__dict__, new.__dict__
    for attr in _LOCATION:
        if attr in src:
            d[attr] = src[attr]
    return new


def _to_gast(node: ast.AST) -> gast.AST:
    t = node.__class__
    if t is ast.Name:
        return _location(gast.Name(node.id, _TO_GAST[node.ctx.__class__], None, None), node)
    if t is ast.arg:
        return _location(gast.Name(node.arg, gast.Param(), _opt(node.annotation, _to_gast),
                                   node.type_comment), node)
    if t is ast.ExceptHandler and node.name:
        new = gast.ExceptHandler(_opt(node.type, _to_gast),
                                 gast.Name(node.name, gast.Store(), None, None),
                                 [_to_gast(s) for s in node.body])
        return _location(new, node)
    plan = _TO_GAST_PLANS.get(t)
    if plan is None:
        return _TO_GAST[t]  # a shared leaf
    new = _copy_fields(node, plan, _to_gast, _TO_GAST)
    if t.__name__ in _WITH_TYPE_PARAMS:
        new.type_params = []
    return new


def _to_ast(node: gast.AST) -> ast.AST:
    t = node.__class__
    if t is gast.Name:
        return _location(ast.Name(node.id, _TO_AST[node.ctx.__class__]), node)
    if t is gast.arguments:
        return ast.arguments([_arg(a) for a in node.posonlyargs], [_arg(a) for a in node.args],
                             _arg(node.vararg), [_arg(a) for a in node.kwonlyargs],
                             [_opt(d, _to_ast) for d in node.kw_defaults], _arg(node.kwarg),
                             [_to_ast(d) for d in node.defaults])
    if t is gast.ExceptHandler and node.name:
        new = ast.ExceptHandler(_opt(node.type, _to_ast), node.name.id,
                                [_to_ast(s) for s in node.body])
        return _location(new, node)
    plan = _TO_AST_PLANS.get(t)
    if plan is None:
        if t not in _TO_AST:
            raise NotImplementedError(f"no ast counterpart for gast.{t.__name__} in this Python")
        return _TO_AST[t]  # a shared leaf
    new = _copy_fields(node, plan, _to_ast, _TO_AST)
    new.__dict__.pop("type_params", None)
    return new


def _opt(node: Any, convert: Any) -> Any:
    return None if node is None else convert(node)


def _arg(node: Any) -> Any:
    if node is None:
        return None
    return _location(ast.arg(node.id, _opt(node.annotation, _to_ast), node.type_comment), node)


def ast_to_gast(node: ast.AST) -> gast.AST:
    """`gast.ast_to_gast(node)`, faster on Python 3.8-3.11."""
    return _to_gast(node) if _FAST else gast.ast_to_gast(node)


def gast_to_ast(node: gast.AST) -> ast.AST:
    """`gast.gast_to_ast(node)`, faster on Python 3.8-3.11."""
    return _to_ast(node) if _FAST else gast.gast_to_ast(node)


def counterparts() -> dict:
    """gast class -> the ast class of the same name, for the nodes converted here (none off Python 3.8-3.11)."""
    return {cls: plan[0] for cls, plan in _TO_AST_PLANS.items()}


def is_gast(node: Any) -> bool:
    """Whether `node` is a gast node (not an ast one)."""
    return type(node).__module__ == gast.gast.__name__
