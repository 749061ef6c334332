"""Executes generated source as a fresh module and registers it in linecache.

Tracebacks and debuggers then show the generated code, and `origin_info`
maps each of its lines to the user's.
"""

from __future__ import annotations

import ast
import hashlib
import linecache
import sys
import types
from typing import Any, Optional

import gast


class _CompactUnparser(getattr(ast, "_Unparser", object)):
    """ast.unparse without the blank line before each nested def (STYLE.md's layout)."""

    _skip_blank = False

    def _function_helper(self, node: ast.AST, fill_suffix: str) -> None:
        # The helper opens with an extra maybe_newline() (the blank line) before fill().
        self._skip_blank = True
        super()._function_helper(node, fill_suffix)

    def maybe_newline(self) -> None:
        if self._skip_blank:
            self._skip_blank = False
            return
        super().maybe_newline()


def unparse(tree: ast.AST) -> str:
    """Source text of `tree`, compact: no blank lines between statements."""
    if _CompactUnparser.__bases__ == (object,):  # no private unparser in this Python
        return ast.unparse(tree)
    return _CompactUnparser().visit(tree)


def generated_filename(name: str, key: str) -> str:
    """A unique, deterministic pseudo-filename for generated code of `name`."""
    digest = hashlib.sha1(key.encode()).hexdigest()[:12]
    return f"<autograph {name} {digest}>"


def load_source(source: str, filename: str, tree: Optional[ast.Module] = None) -> dict[str, Any]:
    """Compiles and runs `source` as module `filename`; returns its namespace.

    `tree`, if given, is `ast.parse(source)` already made by the caller.
    """
    lines = source.splitlines(keepends=True)
    # mtime None: linecache.checkcache must never evict this entry.
    linecache.cache[filename] = (len(source), None, lines, filename)
    code = compile(source if tree is None else tree, filename, "exec", dont_inherit=True)
    namespace: dict[str, Any] = {"__name__": filename, "__builtins__": __builtins__}
    exec(code, namespace)  # noqa: S102 - running generated code is the loader's job
    return namespace


def rebind(template: types.FunctionType, original: types.FunctionType,
           extra_cells: dict[str, Any]) -> types.FunctionType:
    """Builds the converted function from `template`'s code with `original`'s environment.

    The converted code is compiled inside a factory whose parameters are the
    original's free variables (plus `ag__`), so its code object has the same
    free variables; here those are bound to the original's own closure cells,
    so later rebinding of a nonlocal is seen, and to the original's globals.
    """
    code = template.__code__
    orig_cells = dict(zip(original.__code__.co_freevars, original.__closure__ or ()))
    closure = []
    for name in code.co_freevars:
        if name in extra_cells:
            closure.append(types.CellType(extra_cells[name]))
        else:
            closure.append(orig_cells[name])
    fn = types.FunctionType(code, original.__globals__, original.__name__,
                            original.__defaults__, tuple(closure) or None)
    fn.__kwdefaults__ = original.__kwdefaults__
    fn.__qualname__ = original.__qualname__
    fn.__module__ = original.__module__
    fn.__doc__ = original.__doc__
    fn.__annotations__ = dict(getattr(original, "__annotations__", {}) or {})
    return fn


# -- gast -> ast ---------------------------------------------------------------
#
# gast.gast_to_ast dispatches through ast.NodeTransformer and copies locations
# with ast.copy_location; on the generated trees it was a third of conversion
# time. This converter does the same translation for Python 3.8-3.11 (where
# gast nodes differ from ast only in Name-as-argument and ExceptHandler.name)
# directly; other versions use gast's.

_LOCATION = ("lineno", "col_offset", "end_lineno", "end_col_offset")
_AST_CLASSES: dict = {}


def _ast_class(gast_cls: type) -> Any:
    cls = _AST_CLASSES.get(gast_cls)
    if cls is None:
        cls = _AST_CLASSES[gast_cls] = getattr(ast, gast_cls.__name__, None) or False
    return cls


def _convert(node: Any) -> Any:
    if isinstance(node, list):
        return [_convert(n) for n in node]
    if not isinstance(node, gast.AST):
        return node
    t = type(node)
    if t is gast.Name:
        new = ast.Name(node.id, _convert(node.ctx))
    elif t is gast.arguments:
        return ast.arguments([_arg(a) for a in node.posonlyargs], [_arg(a) for a in node.args],
                             _arg(node.vararg), [_arg(a) for a in node.kwonlyargs],
                             _convert(node.kw_defaults), _arg(node.kwarg),
                             _convert(node.defaults))
    elif t is gast.ExceptHandler and node.name:
        new = ast.ExceptHandler(_convert(node.type), node.name.id, _convert(node.body))
    else:
        cls = _ast_class(t)
        if cls is False:
            return None
        d = node.__dict__
        new = cls(**{f: _convert(d[f]) for f in node._fields if f in d})
    d = node.__dict__
    for attr in _LOCATION:
        if attr in d:
            setattr(new, attr, d[attr])
    return new


def _arg(node: Any) -> Any:
    if node is None:
        return None
    new = ast.arg(node.id, _convert(node.annotation), _convert(node.type_comment))
    d = node.__dict__
    for attr in _LOCATION:
        if attr in d:
            setattr(new, attr, d[attr])
    return new


def gast_to_ast(node: Any) -> Any:
    """`gast.gast_to_ast(node)`, faster on Python 3.8-3.11."""
    if not (3, 8) <= sys.version_info[:2] < (3, 12):
        return gast.gast_to_ast(node)
    return _convert(node)
