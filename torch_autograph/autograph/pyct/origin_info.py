"""Maps every line of generated code back to the user's file and line.

The loader records, for each generated file, which user line produced each
generated line. The tracer calls `lookup` while walking frames so that errors
name the user's code, never the generated file:

    lookup('<autograph step 3f2a…>', 12)
    -> ('examples/loop.py', 5, 'step', 'while i < n:')
"""

from __future__ import annotations

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


def build_line_map(owners: dict[int, int], user_filename: str,
                   function_name: str) -> dict[int, Origin]:
    """{generated line: Origin} from {generated line: user line}.

    `owners` comes from `loader.unparse_with_origins`: generated nodes carry
    the line of the user statement they stand for, so each generated line
    knows its user line.
    """
    origins: dict[int, Origin] = {}
    line_map: dict[int, Origin] = {}
    for line, user_line in owners.items():
        origin = origins.get(user_line)
        if origin is None:
            text = linecache.getline(user_filename, user_line).strip()
            origin = origins[user_line] = Origin(user_filename, user_line, function_name, text)
        line_map[line] = origin
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
