"""Errors as the user should see them: their own frames, not torch_autograph's.

- `add_user_frames(e)`: a trace-time error gets an "in user code:" note with
  the user's frames, generated lines mapped back to the user's file and line.
- `strip_internal_frames(e)`: with `ta.config.filter_tracebacks` (on by
  default), the traceback loses the frames of torch_autograph's own modules;
  the user's frames, torch's, and the generated code's (shown with its source
  line) stay. One frame of the library remains: the one that re-raises.
"""

from __future__ import annotations

import traceback
from types import TracebackType

from ..config import _config
from ..staging import map_origin
from ..tracing import locations


def _internal(tb: TracebackType) -> bool:
    return tb.tb_frame.f_code.co_filename.startswith(locations.PACKAGE_DIR)


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


def strip_internal_frames(e: BaseException) -> BaseException:
    """`e` with torch_autograph's own frames removed from its traceback (and its cause's), if so configured."""
    if not _config.filter_tracebacks or getattr(e, "_ta_filtered", False):
        return e
    for err in (e, e.__cause__):
        if err is not None and err.__traceback__ is not None:
            stripped = _strip(err.__traceback__)
            if stripped is not None:  # keep something to show
                err.__traceback__ = stripped
    try:
        e._ta_filtered = True
    except (AttributeError, TypeError):
        pass
    return e


def add_user_frames(e: BaseException) -> None:
    """Attach an "in user code:" block with the user's frames to a trace-time error."""
    if getattr(e, "_ta_user_frames", False):
        return
    lines = ["in user code:"]
    for f in traceback.extract_tb(e.__traceback__):
        loc = map_origin(f.filename, f.lineno)
        if loc is not None:
            filename, lineno, name, line = loc.filename, loc.lineno, loc.function or f.name, loc.line
        elif locations.is_library_file(f.filename):
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
