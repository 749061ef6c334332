"""Executes generated source as a fresh module and registers it in linecache.

Tracebacks and debuggers then show the generated code, and `origin_info`
maps each of its lines to the user's.
"""

from __future__ import annotations

import ast
import contextlib
import hashlib
import linecache
import sys
import types
from typing import Any, Optional

import gast

from torch_autograph.autograph.pyct import ast_gast

# Nodes whose lines origin info maps: statements and except clauses (of ast, and of gast written directly).
_OWNER_CLASSES = frozenset(c for module in (ast, gast) for c in vars(module).values() if isinstance(c, type)
                           and issubclass(c, (ast.stmt, ast.excepthandler)))
# gast classes whose unparsing reads what gast spells differently (parameters as Names, an except clause's
# name as a Name) or tests a child's class against ast's: their subtrees (small) are written from an ast copy.
_FROM_AST = frozenset({gast.arguments, gast.ExceptHandler, gast.Subscript, gast.AnnAssign,
                       gast.JoinedStr, gast.FormattedValue})
# gast class -> its optional fields, which the ast class reads as None when a node lacks them and gast does not.
_ABSENT = object()
_OPTIONAL = {g: fields for g, a in ast_gast.counterparts().items()
             if (fields := tuple(f for f in g._fields if getattr(a, f, _ABSENT) is None))}


class _Closer:
    """The end of a `block` or `delimit` of `_CompactUnparser`: what ast._Unparser's generator-based context
    managers do after their `yield`, without a generator for each of the many brackets and blocks."""

    __slots__ = ("unparser", "end")

    def __init__(self, unparser: Any, end: Optional[str]) -> None:
        self.unparser, self.end = unparser, end  # end None: a block (dedent)

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: Any, *_: Any) -> None:
        if exc_type is None:  # as after a generator's `yield`: skipped when the body raised
            if self.end is None:
                self.unparser._indent -= 1
            else:
                self.unparser.write(self.end)


_NO_DELIMITERS = contextlib.nullcontext()


class _CompactUnparser(getattr(ast, "_Unparser", object)):
    """ast.unparse without the blank line before each nested def (STYLE.md's layout).

    It also notes, for every line it starts, the `lineno` of the innermost
    statement being written (the user line a converted statement carries), so
    the origin of each generated line is known without parsing the text again.
    """

    _skip_blank = False
    _visitors: dict = {}  # node class -> visit method, shared by all instances

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._owner: Optional[int] = None
        self._starts: list = []  # (index in self._source where a line starts, owner)

    def traverse(self, node: Any) -> None:
        # ast._Unparser.traverse + NodeVisitor.visit in one frame, noting statement owners. A gast node that
        # must be written from its ast copy (see `_GastUnparser`) is swapped for it here.
        cls = node.__class__
        if cls is list:
            for item in node:
                self.traverse(item)
            return
        if cls in _FROM_AST:
            node = ast_gast.gast_to_ast(node)
            cls = node.__class__
        else:
            optional = _OPTIONAL.get(cls)
            if optional is not None:
                d = node.__dict__
                for field in optional:
                    if field not in d:
                        node = ast_gast.gast_to_ast(node)
                        cls = node.__class__
                        break
        visit = self._visitors.get(cls)
        if visit is None:
            visit = self._visitors[cls] = getattr(type(self), "visit_" + cls.__name__,
                                             type(self).generic_visit)
        if cls in _OWNER_CLASSES and getattr(node, "lineno", None):
            outer, self._owner = self._owner, node.lineno
            visit(self, node)
            self._owner = outer
        else:
            visit(self, node)

    def fill(self, text: str = "") -> None:
        self.maybe_newline()
        self._starts.append((len(self._source), self._owner))
        self.write("    " * self._indent + text)

    def _write_docstring(self, node: ast.Constant) -> None:
        # Written by the enclosing def's visit, not by its statement's: own the lines here.
        outer, self._owner = self._owner, getattr(node, "lineno", None) or self._owner
        super()._write_docstring(node)
        self._owner = outer

    def _function_helper(self, node: ast.AST, fill_suffix: str) -> None:
        # The helper opens with an extra maybe_newline() (the blank line) before fill().
        self._skip_blank = True
        super()._function_helper(node, fill_suffix)

    def block(self, *, extra: Optional[str] = None) -> _Closer:
        # ast._Unparser.block: ':' (and `extra`), then the indented body.
        self.write(":")
        if extra:
            self.write(extra)
        self._indent += 1
        return _Closer(self, None)

    def delimit(self, start: str, end: str) -> _Closer:
        self.write(start)
        return _Closer(self, end)

    def delimit_if(self, start: str, end: str, condition: bool) -> Any:
        return self.delimit(start, end) if condition else _NO_DELIMITERS

    def maybe_newline(self) -> None:
        if self._skip_blank:
            self._skip_blank = False
            return
        super().maybe_newline()

    def line_owners(self) -> dict[int, int]:
        """{line of the text: lineno of the statement that wrote it}, after `visit`."""
        owners: dict[int, int] = {}
        pieces, line, done, owner = self._source, 1, 0, None
        for index, next_owner in self._starts + [(len(pieces), None)]:
            # The lines of pieces[done:index] belong to `owner`; each newline there ends one.
            newlines = "".join(pieces[done:index]).count("\n")
            if index == len(pieces):
                newlines += 1  # the last line has no newline of its own
            if owner is not None:
                for n in range(line, line + newlines):
                    owners[n] = owner
            line, done, owner = line + newlines, index, next_owner
        return owners


_DOCSTRING_OWNERS = (ast.AsyncFunctionDef, ast.FunctionDef, ast.ClassDef, ast.Module,
                     gast.AsyncFunctionDef, gast.FunctionDef, gast.ClassDef, gast.Module)


class _GastUnparser(_CompactUnparser):
    """`_CompactUnparser` writing a gast tree directly (Python 3.11), with the text and owners its ast copy gets.

    gast nodes have ast's class names and fields but for a few (`_FROM_AST`), which are written from their
    ast copy, as is a node lacking an optional field; the class tests of `if`/`elif` chains, docstrings and
    attributes of int literals take gast's classes too. Writing the tree as it is saves copying it as ast,
    a tenth of a conversion.
    """

    _visitors: dict = {}  # its own: it overrides visit methods

    def get_raw_docstring(self, node: Any) -> Any:
        # ast._Unparser.get_raw_docstring, for either tree.
        if not isinstance(node, _DOCSTRING_OWNERS) or len(node.body) < 1:
            return None
        node = node.body[0]
        if not isinstance(node, (ast.Expr, gast.Expr)):
            return None
        node = node.value
        if isinstance(node, (ast.Constant, gast.Constant)) and isinstance(node.value, str):
            return node
        return None

    def visit_Attribute(self, node: Any) -> None:
        # ast._Unparser.visit_Attribute, for either tree: `3 .real`, as `3.real` does not parse.
        self.set_precedence(ast._Precedence.ATOM, node.value)
        self.traverse(node.value)
        if isinstance(node.value, (ast.Constant, gast.Constant)) and isinstance(node.value.value, int):
            self.write(" ")
        self.write(".")
        self.write(node.attr)

    def visit_If(self, node: Any) -> None:
        # ast._Unparser.visit_If, for either tree: nested ifs collapse into `elif`s.
        self.fill("if ")
        self.traverse(node.test)
        with self.block():
            self.traverse(node.body)
        while node.orelse and len(node.orelse) == 1 and isinstance(node.orelse[0], (ast.If, gast.If)):
            node = node.orelse[0]
            self.fill("elif ")
            self.traverse(node.test)
            with self.block():
                self.traverse(node.body)
        if node.orelse:
            self.fill("else")
            with self.block():
                self.traverse(node.orelse)


_GAST_DIRECT = sys.version_info[:2] == (3, 11) and _CompactUnparser.__bases__ != (object,)


def unparse(tree: Any) -> str:
    """Source text of `tree` (ast or gast), compact: no blank lines between statements."""
    return unparse_with_origins(tree)[0]


def unparse_with_origins(tree: Any) -> tuple[str, dict[int, int]]:
    """`unparse(tree)` (ast or gast), and {line of the text: `lineno` of the statement written there}.

    Every line belongs to the innermost statement (with a `lineno`) that
    wrote it: a compound statement owns its header and `else:` lines, a
    statement spanning lines (a docstring) all of its lines.
    """
    if not _GAST_DIRECT and ast_gast.is_gast(tree):
        tree = ast_gast.gast_to_ast(tree)
    if _CompactUnparser.__bases__ == (object,):  # no private unparser in this Python
        return ast.unparse(tree), {}
    unparser = _GastUnparser() if _GAST_DIRECT else _CompactUnparser()
    return unparser.visit(tree), unparser.line_owners()


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
    fn.__dict__.update((k, v) for k, v in original.__dict__.items() if not k.startswith("__ta_"))
    # Decorators that introspect read the original's parameters: the converted code object's (co_varnames,
    # co_argcount) are the same by construction, and `__wrapped__` (inspect.unwrap) is the original.
    fn.__wrapped__ = original
    return fn
