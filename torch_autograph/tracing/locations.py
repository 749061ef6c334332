"""Where user code is: the innermost frame outside torch_autograph and torch, mapped through generated code.

AutoGraph's converted functions run from generated source; an origin mapper
(registered by the layer that generates it) turns their lines back into the
user's file and line.
"""

from __future__ import annotations

import linecache
import os
import sys
from typing import Callable

import torch

from ..graph import SourceLocation

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__))

OriginMapper = Callable[[str, int], "SourceLocation | None"]


class OriginMappers:
    """The callbacks (filename, lineno) -> the user's SourceLocation, for generated code."""

    def __init__(self) -> None:
        self._mappers: tuple[OriginMapper, ...] = ()

    def register(self, fn: OriginMapper) -> None:
        if fn not in self._mappers:
            self._mappers = self._mappers + (fn,)  # a new tuple: readers in other threads see one or the other

    def map(self, filename: str, lineno: int) -> SourceLocation | None:
        for mapper in self._mappers:
            loc = mapper(filename, lineno)
            if loc is not None:
                return loc
        return None


origin_mappers = OriginMappers()


def register_origin_mapper(fn: OriginMapper) -> None:
    """Let generated code (e.g. AutoGraph output) report the user's line instead of its own."""
    origin_mappers.register(fn)


def map_generated(filename: str, lineno: int) -> SourceLocation | None:
    """The user's line for a line of generated code (AutoGraph output), if it is one."""
    return origin_mappers.map(filename, lineno)


def is_library_file(filename: str) -> bool:
    """Whether a frame of this file belongs to torch_autograph, torch or generated code (not to the user)."""
    return filename.startswith(PACKAGE_DIR) or filename.startswith(TORCH_DIR) or filename.startswith("<")


_FILE_KINDS: dict[str, int] = {}  # filename -> _USER, _LIBRARY or _GENERATED
_USER, _LIBRARY, _GENERATED = 0, 1, 2


def _file_kind(filename: str) -> int:
    kind = _FILE_KINDS.get(filename)
    if kind is None:
        kind = _GENERATED if filename.startswith("<") else _LIBRARY if is_library_file(filename) else _USER
        if len(_FILE_KINDS) > 10_000:
            _FILE_KINDS.clear()
        _FILE_KINDS[filename] = kind
    return kind


def user_location() -> SourceLocation | None:
    """The innermost frame of user code: outside torch_autograph and torch (generated code mapped back)."""
    f = sys._getframe(1)
    while f is not None:
        filename = f.f_code.co_filename
        kind = _file_kind(filename)
        if kind == _GENERATED or kind == _USER:
            loc = origin_mappers.map(filename, f.f_lineno)
            if loc is not None:
                return loc
            if kind == _USER:
                return SourceLocation(filename, f.f_lineno, f.f_code.co_name,
                                      linecache.getline(filename, f.f_lineno).strip())
        f = f.f_back
    return None
