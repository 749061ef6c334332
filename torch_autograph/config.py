"""Process-wide switches (each Function also takes its own options as arguments)."""

from __future__ import annotations



class _Config:
    run_eagerly: bool = False
    max_traces: int = 64
    jit_threshold: int = 100
    filter_tracebacks: bool = True


_config = _Config()


def run_functions_eagerly(run_eagerly: bool) -> None:
    """Run every `ta.function` as plain eager Python (no tracing) while True.

    Use it to debug: print shows values on every call, pdb steps through the
    original code. Switch it off again to get graphs back.
    """
    _config.run_eagerly = bool(run_eagerly)


def functions_run_eagerly() -> bool:
    """Whether `run_functions_eagerly(True)` is in effect."""
    return _config.run_eagerly


def set_default_max_traces(n: int) -> None:
    """Bound on the traces one Function keeps (least recently used evicted); default 64."""
    if n < 1:
        raise ValueError(f"max_traces must be at least 1, got {n}")
    _config.max_traces = int(n)


def set_jit_threshold(n: int) -> None:
    """Calls after which a `jit_compile="auto"` ConcreteFunction is compiled with inductor; default 100.

    Until then it runs on the default backend; at the n-th call inductor compiles it in a
    background thread and the compiled code replaces the default one when ready (no call
    waits for it). `ConcreteFunction.wait_for_compile(timeout)` waits for that compile.
    """
    if n < 1:
        raise ValueError(f"the jit threshold must be at least 1, got {n}")
    _config.jit_threshold = int(n)


def get_jit_threshold() -> int:
    """The threshold set by `set_jit_threshold` (default 100)."""
    return _config.jit_threshold


def set_filter_tracebacks(enabled: bool) -> None:
    """Whether errors raised to the user lose torch_autograph's own frames (default True).

    TensorFlow's `tf.debugging.disable_traceback_filtering()` in reverse: pass False
    to see every frame of the library, e.g. to report a bug in it.
    """
    _config.filter_tracebacks = bool(enabled)


def filter_tracebacks() -> bool:
    """Whether `set_filter_tracebacks(True)` is in effect (the default)."""
    return _config.filter_tracebacks
