"""Maps every line of generated code back to the user's file and line.

The loader records, for each generated file, which user line produced each
generated line. The tracer calls `lookup` while walking frames so that errors
name the user's code, never the generated file:

    lookup('<autograph step 3f2a…>', 12)
    -> ('examples/loop.py', 5, 'step', 'while i < n:')
"""

from __future__ import annotations

import ast
import dataclasses
import linecache
from typing import Optional


@dataclasses.dataclass(frozen=True)
class Origin:
    """Where a piece of generated code came from in the user's source.

    Attributes:
        filename: the user's file.
        lineno: 1-based line in that file.
        function_name: the user function that was converted.
        source_line: that line's text, stripped ('' if unavailable).
    """

    filename: str
    lineno: int
    function_name: str
    source_line: str

    def __str__(self) -> str:
        return f"{self.filename}:{self.lineno}"

    def as_tuple(self) -> tuple[str, int, str, str]:
        return (self.filename, self.lineno, self.function_name, self.source_line)


# generated filename -> {generated line -> Origin}. Global by necessity: a
# traceback only carries (filename, lineno), like linecache's own registry.
_ORIGINS: dict[str, dict[int, Origin]] = {}


def _statements(tree: ast.AST) -> list:
    """Statements in source order (ast.unparse writes each simple one on its own line)."""
    out, todo = [], [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.stmt, ast.excepthandler)):
            out.append(node)
        for field in ("handlers", "finalbody", "orelse", "body"):
            children = getattr(node, field, None)
            if isinstance(children, list):
                todo.extend(reversed(children))
    return out


def build_line_map(user_tree: ast.AST, generated_tree: ast.AST, user_filename: str,
                   function_name: str) -> dict[int, Origin]:
    """Pairs statements of the tree that was unparsed with the tree re-parsed from its text.

    `user_tree` carries user line numbers (generated nodes copy theirs from the
    user statement they stand for); `generated_tree` is `ast.parse` of the
    generated source, so their statements correspond one to one.
    """
    line_map: dict[int, Origin] = {}
    lines: dict[int, str] = {}
    for old, new in zip(_statements(user_tree), _statements(generated_tree)):
        if type(old) is not type(new):
            break  # unparse/parse round trip diverged; keep what matched
        old_line = getattr(old, "lineno", None)
        if old_line is None or new.lineno in line_map:
            continue
        if old_line not in lines:
            lines[old_line] = linecache.getline(user_filename, old_line).strip()
        origin = Origin(user_filename, old_line, function_name, lines[old_line])
        # A compound statement owns only its header line; its body maps itself.
        last = new.lineno if hasattr(new, "body") else (new.end_lineno or new.lineno)
        for line in range(new.lineno, last + 1):
            line_map.setdefault(line, origin)
    return line_map


def register(generated_filename: str, line_map: dict[int, Origin]) -> None:
    _ORIGINS[generated_filename] = line_map


def lookup_origin(generated_filename: str, lineno: int) -> Optional[Origin]:
    """Returns the Origin of a generated line, or None for code that is not generated."""
    table = _ORIGINS.get(generated_filename)
    return None if table is None else table.get(lineno)


def lookup(generated_filename: str, lineno: int) -> Optional[tuple[str, int, str, str]]:
    """Public lookup for tracebacks: (user_filename, user_lineno, function_name, source_line).

    Returns None when `generated_filename` is not AutoGraph output or the line
    has no user counterpart (e.g. the factory wrapper).
    """
    origin = lookup_origin(generated_filename, lineno)
    return None if origin is None else origin.as_tuple()


def is_generated(filename: str) -> bool:
    return filename in _ORIGINS
