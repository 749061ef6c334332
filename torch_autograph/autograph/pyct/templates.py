"""Generated code comes from templates with placeholder substitution, never from strings.

    templates.replace('target = ag__.ld(name)', target='x', name=node)

parses the template once per call, then replaces every identifier that names
a placeholder: a `str` becomes a Name, an AST node is inserted (copied when
used more than once), a list of statements is spliced where the placeholder
stands alone as a statement, and a list of strings expands a parameter or
tuple placeholder into several names.
"""

from __future__ import annotations

import functools
from typing import Any, Sequence

import gast

from torch_autograph.autograph.pyct import transformer


@functools.lru_cache(maxsize=256)
def _parse_cached(template: str) -> gast.Module:
    # Parsing dominates conversion time; templates are few and immutable, so
    # parse each once and hand out copies. Their own line numbers are
    # meaningless: cleared so copy_location gives them the user's.
    module = gast.parse(template)
    for node in gast.walk(module):
        if "lineno" in node._attributes:
            node.lineno = node.end_lineno = node.col_offset = node.end_col_offset = None
    return module


def copy_tree(node: Any) -> Any:
    """A deep copy of an AST node or list (much faster than copy.deepcopy).

    Annotations are copied shallowly: the copy gets its own annotation dict.
    """
    if isinstance(node, list):
        return [copy_tree(n) for n in node]
    if not isinstance(node, gast.AST):
        return node
    cls = node.__class__
    new = cls.__new__(cls)
    d = new.__dict__
    for key, value in node.__dict__.items():
        if isinstance(value, (list, gast.AST)):
            d[key] = copy_tree(value)
        elif isinstance(value, dict):
            d[key] = dict(value)
        else:
            d[key] = value
    return new


def _set_ctx(node: gast.AST, ctx: type) -> None:
    """Sets the context of an assignable expression (recursively through tuples)."""
    if isinstance(node, (gast.Name, gast.Attribute, gast.Subscript, gast.Starred)):
        node.ctx = ctx()
        if isinstance(node, gast.Starred):
            _set_ctx(node.value, ctx)
    elif isinstance(node, (gast.Tuple, gast.List)):
        node.ctx = ctx()
        for e in node.elts:
            _set_ctx(e, ctx)


def names_tuple(names: Sequence[str], ctx: type = gast.Load) -> gast.Tuple:
    """A tuple display of plain names: `(a, b)`."""
    return gast.Tuple(elts=[gast.Name(n, ctx(), None, None) for n in names], ctx=ctx())


def strings_tuple(strings: Sequence[str]) -> gast.Tuple:
    """A tuple display of string constants: `('a', 'b')`."""
    return gast.Tuple(elts=[gast.Constant(s, None) for s in strings], ctx=gast.Load())


class _Replacer(transformer.Transformer):
    def __init__(self, replacements: dict[str, Any]):
        self.replacements = replacements
        self.used: set[str] = set()

    def _fresh(self, key: str, node: Any) -> Any:
        # The first use takes the node itself; later uses get copies, so a
        # node never appears twice in the tree.
        if key in self.used:
            return copy_tree(node)
        self.used.add(key)
        return node

    def visit_Expr(self, node: gast.Expr) -> Any:
        if isinstance(node.value, gast.Name) and node.value.id in self.replacements:
            value = self.replacements[node.value.id]
            if isinstance(value, list) and (not value or isinstance(value[0], gast.stmt)):
                return self._fresh(node.value.id, value)
        return self.generic_visit(node)

    def visit_FunctionDef(self, node: gast.FunctionDef) -> Any:
        if node.name in self.replacements:
            node.name = self.replacements[node.name]
        new_args = []
        for a in node.args.args:
            value = self.replacements.get(a.id) if isinstance(a, gast.Name) else None
            if isinstance(value, (list, tuple)):
                new_args.extend(gast.Name(n, gast.Param(), None, None) for n in value)
            elif isinstance(value, str):
                new_args.append(gast.Name(value, gast.Param(), None, None))
            else:
                new_args.append(a)
        node.args.args = new_args
        return self.generic_visit(node)

    def visit_Name(self, node: gast.Name) -> Any:
        if node.id not in self.replacements:
            return node
        value = self.replacements[node.id]
        if isinstance(value, str):
            return gast.Name(value, node.ctx, None, None)
        if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
            return names_tuple(value, type(node.ctx))
        if isinstance(value, gast.AST):
            new = self._fresh(node.id, value)
            if isinstance(new, gast.expr) and not isinstance(node.ctx, gast.Load):
                _set_ctx(new, type(node.ctx))
            return new
        raise ValueError(f"bad replacement for template placeholder {node.id!r}: {value!r}")


def replace(template: str, **replacements: Any) -> list[gast.stmt]:
    """Returns the template's statements with placeholders substituted."""
    module = copy_tree(_parse_cached(template))
    return _Replacer(replacements).generic_visit(module).body


def replace_as_expression(template: str, **replacements: Any) -> gast.expr:
    """Like `replace`, for a template that is a single expression."""
    (stmt,) = replace(template, **replacements)
    assert isinstance(stmt, gast.Expr), template
    return stmt.value
