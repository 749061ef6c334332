"""Where user code is: the innermost frame outside torch_autograph and torch, mapped through generated code.

AutoGraph's converted functions run from generated source; the current trace's
origin mapper (`TraceHooks.map_origin`, given by the layer that generates the
code) turns their lines back into the user's file and line.
"""

from __future__ import annotations

import contextlib
import linecache
import os
import sys

import torch

from ..graph import SourceLocation
from .context import current

PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__))

def is_library_file(filename: str) -> bool:
    """Whether a frame of this file belongs to torch_autograph, torch or generated code (not to the user); the
    frames of `contextlib` are the machinery of a `with` (this package's own, when it raises from one)."""
    return filename.startswith(PACKAGE_DIR) or filename.startswith(TORCH_DIR) or filename.startswith("<") or \
        filename == _CONTEXTLIB


_CONTEXTLIB = contextlib.__file__


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
    state = current()
    map_origin = state.trace.hooks.map_origin if state is not None else None
    f = sys._getframe(1)
    while f is not None:
        filename = f.f_code.co_filename
        kind = _file_kind(filename)
        if kind == _GENERATED or kind == _USER:
            loc = map_origin(filename, f.f_lineno) if map_origin is not None else None
            if loc is not None:
                return loc
            if kind == _USER:
                return SourceLocation(filename, f.f_lineno, f.f_code.co_name,
                                      linecache.getline(filename, f.f_lineno).strip())
        f = f.f_back
    return None
