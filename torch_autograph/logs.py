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
import threading
import time
from typing import Any

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


class ProgressLine:
    """While a long compile runs: after `SLOW_COMPILE_S`, one stderr line rewritten every second with what is
    compiled and the time so far (`torch_autograph: compiling region 2 of 5 of graph step with inductor... 7 s`).

    Only on a terminal (stderr a TTY) and at verbosity 1 or more; the line is cleared when the compile ends, so
    the summary line `echo` writes after it stays the only trace of it."""

    def __init__(self, log: logging.Logger, label: str) -> None:
        self.log, self.label = log, label
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None
        self.shown = False

    def __enter__(self) -> "ProgressLine":
        stream = sys.stderr
        if get_verbosity() >= 1 and not _muted(self.log) and getattr(stream, "isatty", lambda: False)():
            self.thread = threading.Thread(target=self._run, args=(stream, time.perf_counter()), daemon=True,
                                           name="ta-progress")
            self.thread.start()
        return self

    def _run(self, stream: Any, start: float) -> None:
        if self.stop.wait(SLOW_COMPILE_S):
            return
        while True:
            stream.write(f"\rtorch_autograph: compiling {self.label} with inductor... "
                         f"{time.perf_counter() - start:.0f} s")
            stream.flush()
            self.shown = True
            if self.stop.wait(1.0):
                return

    def __exit__(self, *exc: Any) -> None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join()
            if self.shown:
                sys.stderr.write("\r\033[K")
                sys.stderr.flush()
