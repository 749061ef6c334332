"""Executes generated source as a fresh module and registers it in linecache.

Tracebacks and debuggers then show the generated code, and `origin_info`
maps each of its lines to the user's.
"""

from __future__ import annotations

import ast
import hashlib
import linecache
import types
from typing import Any, Optional


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
