"""Parsing a live function back to its AST with `inspect` + gast.

Line numbers of the returned nodes are the user's file lines, so origin
information falls out of the tree without bookkeeping.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import linecache
import re
import textwrap
import types
from typing import Callable, Optional

import gast

from torch_autograph.autograph.pyct import ast_gast
from torch_autograph.errors import ConversionError


class SourceNotFoundError(ConversionError):
    """The function's source code is not available (interactive shell, exec, native code)."""


@dataclasses.dataclass
class ParsedEntity:
    """A function's AST and where it came from.

    Attributes:
        node: a gast FunctionDef (for lambdas: a Lambda) with user line numbers.
        filename: the user's file (`co_filename`).
        name: the function's `__name__`.
    """

    node: gast.AST
    filename: str
    name: str


def _file_tree(filename: str, lines: list[str]) -> gast.Module:
    return ast_gast.ast_to_gast(ast.parse("".join(lines)))


def _parse_snippet(lines: list[str], first_lineno: int) -> gast.Module:
    # Leading blank lines give the nodes the user's line numbers directly.
    padding = "\n" * (first_lineno - 1)
    try:
        tree = ast.parse(padding + textwrap.dedent("".join(lines)))
    except SyntaxError:
        # Over-indented continuation lines (e.g. a docstring less indented
        # than the def) break dedent; a dummy block header restores validity.
        tree = ast.parse("if True:\n" + "".join(lines)).body[0]
        ast.increment_lineno(tree, first_lineno - 2)
    return ast_gast.ast_to_gast(ast.Module(body=tree.body, type_ignores=[]))


_DEFINITION = re.compile(r"\s*(async\s+)?def\s")


def _indentation(line: str) -> int:
    return len(line) - len(line.lstrip())


def _definition_lines(f: types.FunctionType) -> Optional[tuple[list[str], int]]:
    """(the lines of `f`'s definition, decorators first, and the first one's number), found by indentation,
    or None where that is not plain: then inspect (which tokenizes the file from there) is asked.

    The definition ends before the first line of code indented no deeper than its `def` (trailing comments
    left out). A line of the definition itself can be that shallow only inside brackets, a string or after
    a backslash: the lines before it do not parse then, and the caller falls back to inspect too.
    """
    code = f.__code__
    linecache.checkcache(code.co_filename)
    lines = linecache.getlines(code.co_filename, f.__globals__)
    start = code.co_firstlineno - 1
    if not 0 <= start < len(lines):
        return None
    indent = _indentation(lines[start])
    k = start
    while not (_DEFINITION.match(lines[k]) and _indentation(lines[k]) == indent):
        # A decorator, or a (deeper or blank) continuation line of one.
        if _is_code(lines[k]) and _indentation(lines[k]) <= indent and not lines[k].lstrip().startswith("@"):
            return None
        k += 1
        if k == len(lines):
            return None
    end = k + 1
    while end < len(lines) and not (_is_code(lines[end]) and _indentation(lines[end]) <= indent):
        end += 1
    while not _is_code(lines[end - 1]):
        end -= 1
    return lines[start:end], start + 1


def _is_code(line: str) -> bool:
    text = line.strip()
    return bool(text) and not text.startswith("#")


def _find_lambda(f: types.FunctionType, filename: str) -> gast.Lambda:
    lines = linecache.getlines(filename, f.__globals__)
    if not lines:
        raise SourceNotFoundError(f"Unable to locate the source code of {f!r}")
    try:
        tree = _file_tree(filename, lines)
    except SyntaxError as e:
        raise ConversionError(f"could not parse {filename}: {e}") from e
    code = f.__code__
    lineno = code.co_firstlineno
    argnames = list(code.co_varnames[: code.co_argcount + code.co_kwonlyargcount])
    candidates = []
    for node in gast.walk(tree):
        if isinstance(node, gast.Lambda) and node.lineno == lineno:
            names = [a.id for a in node.args.args + node.args.kwonlyargs]
            if names == argnames:
                candidates.append(node)
    if len(candidates) > 1:
        # The source positions of the lambda's instructions (co_positions,
        # Python >= 3.11) all lie inside its own body: keep the lambdas whose
        # body spans every one of them, innermost first (an outer lambda's
        # body contains an inner one's).
        spans = [(l, c, el, ec) for (l, el, c, ec) in code.co_positions()
                 if l is not None and c is not None and (c, ec) != (0, 0)]

        def encloses(n: gast.Lambda) -> bool:
            b = n.body
            return all((b.lineno, b.col_offset) <= (l, c) and (el, ec) <= (b.end_lineno,
                                                                             b.end_col_offset)
                       for (l, c, el, ec) in spans)

        narrowed = [n for n in candidates if encloses(n)] if spans else []
        narrowed.sort(key=lambda n: (n.body.end_lineno - n.body.lineno,
                                     n.body.end_col_offset - n.body.col_offset))
        candidates = narrowed[:1] if narrowed else candidates
    if len(candidates) != 1:
        src = lines[lineno - 1].strip()
        raise ConversionError(
            f"{filename}:{lineno}: found {len(candidates) or 'no'} lambdas matching {f!r} in "
            f"`{src}`; define each lambda on its own line with unique argument names, "
            "or use a def")
    return candidates[0]


def parse_entity(f: Callable) -> ParsedEntity:
    """Parses a plain function or lambda (not a bound method: pass `__func__`).

    Raises:
        SourceNotFoundError: no source is available.
        ConversionError: the source cannot be parsed or is ambiguous.
    """
    code = getattr(f, "__code__", None)
    if code is None:
        raise SourceNotFoundError(f"{f!r} is not a Python function (no __code__)")
    filename = code.co_filename
    if f.__name__ == "<lambda>":
        return ParsedEntity(_find_lambda(f, filename), filename, f.__name__)
    tree = None
    found = _definition_lines(f) if isinstance(f, types.FunctionType) else None
    if found is not None:
        first_lineno = found[1]
        try:
            tree = _parse_snippet(*found)
        except SyntaxError:
            pass
        if tree is not None and len(tree.body) != 1:
            tree = None
    if tree is None:
        try:
            # The code's own source: for a `functools.wraps` wrapper, inspect would
            # follow `__wrapped__` to the wrapped function's.
            lines, first_lineno = inspect.getsourcelines(
                f.__code__ if hasattr(f, "__wrapped__") else f)
        except (OSError, TypeError) as e:
            raise SourceNotFoundError(f"Unable to locate the source code of {f!r}: {e}") from e
        try:
            tree = _parse_snippet(lines, first_lineno)
        except SyntaxError as e:
            raise ConversionError(f"{filename}:{first_lineno}: could not parse the source of "
                                  f"{f.__name__}: {e}") from e
    nodes = [n for n in tree.body if isinstance(n, (gast.FunctionDef, gast.AsyncFunctionDef))]
    if len(nodes) != 1 or nodes[0].name != code.co_name:
        raise ConversionError(f"{filename}:{first_lineno}: expected the definition of "
                              f"{code.co_name} at this line")
    node = nodes[0]
    node.decorator_list = []
    return ParsedEntity(node, filename, f.__name__)


def source_line(filename: str, lineno: int) -> str:
    """The stripped text of a user line ('' when unknown)."""
    return linecache.getline(filename, lineno).strip()
