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

from torch_autograph.autograph.pyct import anno, transformer

_ANNO_ATTR = anno.ANNO_ATTR
# Classes with children to copy; context/operator leaves are absent (shared).
_NODE_FIELDS = {cls: fields for cls, fields in transformer.NODE_FIELDS.items()
                if cls._fields or cls._attributes}


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
    Context and operator leaves (`Load()`, `Add()`) carry no data and are shared.
    """
    if node.__class__ is list:
        return [copy_tree(n) for n in node]
    if not isinstance(node, gast.AST):
        return node
    cls = node.__class__
    fields = _NODE_FIELDS.get(cls)
    if fields is None:
        return node  # a leaf
    d = node.__dict__.copy()
    for field in fields:
        value = d.get(field)
        if value.__class__ is list:
            d[field] = [copy_tree(v) if isinstance(v, gast.AST) else v for v in value]
        elif isinstance(value, gast.AST):
            d[field] = copy_tree(value)
    annotations = d.get(_ANNO_ATTR)
    if annotations is not None:
        d[_ANNO_ATTR] = dict(annotations)
    new = cls.__new__(cls)
    new.__dict__ = d
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


class _Instantiation:
    """One use of a template: copies its nodes, substituting placeholders on the way."""

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

    def _name(self, node: gast.Name) -> Any:
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

    def _params(self, args: gast.arguments) -> gast.arguments:
        """The template def's parameters, each placeholder expanded to its name(s)."""
        params = []
        for a in args.args:
            value = self.replacements.get(a.id)
            if isinstance(value, (list, tuple)):
                params.extend(gast.Name(n, gast.Param(), None, None) for n in value)
            elif isinstance(value, str):
                params.append(gast.Name(value, gast.Param(), None, None))
            else:
                params.append(copy_tree(a))
        new = copy_tree(args)
        new.args = params
        return new

    def build(self, node: Any) -> Any:
        """A copy of template node `node` (a list of statements where a body placeholder stood)."""
        cls = node.__class__
        fields = _NODE_FIELDS.get(cls)
        if fields is None:
            return node  # a leaf
        if cls is gast.Name and node.id in self.replacements:
            return self._name(node)
        d = node.__dict__.copy()
        if cls is gast.Expr:
            v = node.value
            if v.__class__ is gast.Name and v.id in self.replacements:
                value = self.replacements[v.id]
                if isinstance(value, list) and (not value or isinstance(value[0], gast.stmt)):
                    return self._fresh(v.id, value)
        elif cls is gast.FunctionDef:
            d["name"] = self.replacements.get(node.name, node.name)
            d["args"] = self._params(node.args)
            fields = [f for f in fields if f != "args"]
        for field in fields:
            value = d.get(field)
            if value.__class__ is list:
                out = []
                for v in value:
                    if isinstance(v, gast.AST):
                        v = self.build(v)
                        if v.__class__ is list:
                            out.extend(v)
                            continue
                    out.append(v)
                d[field] = out
            elif isinstance(value, gast.AST):
                d[field] = self.build(value)
        new = cls.__new__(cls)
        new.__dict__ = d
        return new


def replace(template: str, **replacements: Any) -> list[gast.stmt]:
    """Returns the template's statements with placeholders substituted."""
    instantiation = _Instantiation(replacements)
    out = []
    for stmt in _parse_cached(template).body:
        new = instantiation.build(stmt)
        out.extend(new) if new.__class__ is list else out.append(new)
    return out


def replace_as_expression(template: str, **replacements: Any) -> gast.expr:
    """Like `replace`, for a template that is a single expression."""
    (stmt,) = replace(template, **replacements)
    assert isinstance(stmt, gast.Expr), template
    return stmt.value
