"""What every backend shares: `CompileOptions` in, `Compiled` out, the `Backend` protocol."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol

from ..graph import Graph


@dataclass(frozen=True)
class CompileOptions:
    """How a graph is to be compiled.

    Attributes:
        return_tuple: the callable returns a tuple of the outputs (else the single output).
        grad: the grad mode the graph was traced under (compiled code runs under it).
        freeze_captures: fold captured tensors into compiled code as constants (inductor); None: where it is sure
            to pay (convolutions on the CPU).
    """

    return_tuple: bool
    grad: bool
    freeze_captures: bool | None = False


class Compiled:
    """A graph made runnable. `fn` runs it; a backend may `install` faster code later (tiering).

    Attributes:
        fn: the callable in use, graph inputs positionally.
        default_fn: the default backend's callable for the same graph (run-time error notes read its lines).
        status: which code runs, for `ConcreteFunction.jit_status`: "off" (the default backend),
            "compiled" (inductor), and for tiering "default" -> "compiling" -> "compiled" | "kept default" |
            "failed".
    """

    def __init__(self, fn: Callable[..., Any], status: str, default_fn: Callable[..., Any] | None = None,
                 line_ranges: Callable[[], Callable[..., Any]] | None = None) -> None:
        self.fn = fn
        self.default_fn = default_fn if default_fn is not None else fn
        self._status = status
        self._listeners: tuple[Callable[[Callable[..., Any]], None], ...] = ()
        self._line_ranges = line_ranges
        self._line_profiled: Callable[..., Any] | None = None

    def line_profiled(self) -> Callable[..., Any] | None:
        """`default_fn` with a profiler range per user line (made on first use, for `ta.config.profile_user_lines`);
        None for a backend that cannot give one."""
        if self._line_profiled is None and self._line_ranges is not None:
            self._line_profiled = self._line_ranges()
        return self._line_profiled

    @property
    def status(self) -> str:
        return self._status

    def subscribe(self, listener: Callable[[Callable[..., Any]], None]) -> None:
        """Call `listener(fn)` whenever other code is installed (the caller keeps `fn` in a hot-path slot)."""
        self._listeners = self._listeners + (listener,)

    def install(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        for listener in self._listeners:
            listener(fn)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for a background compile, if any; True when compiled (inductor) code is in use."""
        return self.status == "compiled"


class Backend(Protocol):
    """Compiles a finished graph (passes already run) to a `Compiled`."""

    def compile(self, graph: Graph, options: CompileOptions) -> Compiled: ...
