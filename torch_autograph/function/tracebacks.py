"""Errors as the user should see them: their own frames, not torch_autograph's.

- `add_user_frames(e)`: a trace-time error gets an "in user code:" note with
  the user's frames, generated lines mapped back to the user's file and line.
- `strip_internal_frames(e)`: with `ta.config.filter_tracebacks` (on by
  default), the traceback loses the frames of torch_autograph's own modules;
  the user's frames, torch's, and the generated code's (shown with its source
  line) stay. One frame of the library remains: the one that re-raises.
- `user_facing`: the decorator of every entry point (a call, export,
  save/load, ONNX, TensorBoard): what leaves it went through the above.
"""

from __future__ import annotations

import functools
import traceback
from types import TracebackType
from typing import Any, Callable, TypeVar

from ..config import _config
from ..errors import TorchAutographError
from ..staging import map_origin
from ..tracing import PACKAGE_DIR, is_library_file


def _internal(tb: TracebackType) -> bool:
    return tb.tb_frame.f_code.co_filename.startswith(PACKAGE_DIR)


def _strip(tb: TracebackType | None) -> TracebackType | None:
    kept = []
    while tb is not None:
        if not _internal(tb):
            kept.append(tb)
        tb = tb.tb_next
    head = None
    for entry in reversed(kept):
        entry.tb_next = head
        head = entry
    return head


# What a user's own mistake raises: with these, a traceback of only library frames says nothing more.
_USER_ERRORS = (TorchAutographError, TypeError, ValueError, LookupError, OSError, NotImplementedError)


def strip_internal_frames(e: BaseException) -> BaseException:
    """`e` with torch_autograph's own frames removed from its traceback (and its cause's), if so configured.

    Filtering again where an outer entry point re-raises (`ta.export` calling `get_concrete_function`)
    leaves one library frame in all: the outermost re-raise.
    """
    if not _config.filter_tracebacks:
        return e
    for err in (e, e.__cause__):
        if err is not None and err.__traceback__ is not None:
            stripped = _strip(err.__traceback__)
            if stripped is None and err is e and not isinstance(e, _USER_ERRORS) \
                    and not getattr(e, "_ta_hidden_note", False):
                # Nothing but library frames, and not a user's mistake: likely a bug, so say how to see them.
                try:
                    e.add_note("(torch_autograph's own frames are hidden; ta.config.set_filter_tracebacks(False) "
                               "shows them)")
                    e._ta_hidden_note = True
                except (AttributeError, TypeError):
                    pass
            err.__traceback__ = stripped
    return e


_F = TypeVar("_F", bound=Callable[..., Any])


def user_facing(fn: _F) -> _F:
    """Decorate an entry point: an error leaving it shows the user's frames and one of the library's."""

    @functools.wraps(fn)
    def entry(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except Exception as e:
            raise strip_internal_frames(e)

    return entry  # type: ignore[return-value]


def add_user_frames(e: BaseException) -> None:
    """Attach an "in user code:" block with the user's frames to a trace-time error."""
    if getattr(e, "_ta_user_frames", False):
        return
    lines = ["in user code:"]
    for f in traceback.extract_tb(e.__traceback__):
        loc = map_origin(f.filename, f.lineno)
        if loc is not None:
            filename, lineno, name, line = loc.filename, loc.lineno, loc.function or f.name, loc.line
        elif is_library_file(f.filename):
            continue
        else:
            filename, lineno, name, line = f.filename, f.lineno, f.name, f.line
        lines.append(f'    File "{filename}", line {lineno}, in {name}')
        if line:
            lines.append(f"        {line}")
    if len(lines) == 1:
        return
    try:
        e.add_note("\n".join(lines))
        e._ta_user_frames = True
    except (AttributeError, TypeError):
        pass
