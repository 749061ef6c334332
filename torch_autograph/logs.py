"""What torch_autograph tells about its work: records on the `torch_autograph` loggers, and the few lines on stderr
that `ta.config.set_verbosity` controls.

    logger "torch_autograph"       every trace and its reason (INFO)
    logger "torch_autograph.jit"   start and end of every inductor compile, with its duration (INFO)

stderr, by verbosity: 0 nothing; 1 (the default) one line for an inductor compile that took `SLOW_COMPILE_S`
or longer; 2 a line for every trace and for the start and end of every compile. A level above INFO set on
either logger (`logging.getLogger("torch_autograph").setLevel(logging.WARNING)`) also silences the stderr lines,
and while INFO records of a logger reach a handler the user configured, its stderr lines are left to that handler.
"""

from __future__ import annotations

import logging
import sys

from .config import get_verbosity

logger = logging.getLogger("torch_autograph")
jit_logger = logging.getLogger("torch_autograph.jit")
SLOW_COMPILE_S = 2.0


def echo(log: logging.Logger, message: str, verbosity: int) -> None:
    """Write `message` on stderr when the verbosity is at least `verbosity` and logging does not show or mute it."""
    if get_verbosity() < verbosity or _muted(log) or (log.isEnabledFor(logging.INFO) and log.hasHandlers()):
        return
    print(f"torch_autograph: {message}", file=sys.stderr, flush=True)


def _muted(log: logging.Logger | None) -> bool:
    while log is not None and log.name.startswith("torch_autograph"):
        if log.level not in (logging.NOTSET,) and log.level > logging.INFO:
            return True
        log = log.parent
    return False
