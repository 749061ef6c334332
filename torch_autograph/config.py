"""Process-wide switches (each Function also takes its own options as arguments)."""

from __future__ import annotations

profile_user_lines: bool = False
"""While `torch.profiler` records, also give each user line of a graph's code a range named `file.py:line`
(set `ta.config.profile_user_lines = True`). Each `ta.function` call always gets a range named after the
function and its trace, e.g. `predict (__inference_predict_3)`, when a profiler records; nothing is added to
a call when none does. Line ranges cover code the default backend runs (not inductor's kernels)."""


class _Config:
    run_eagerly: bool = False
    max_traces: int = 64
    jit_threshold: int = 100
    filter_tracebacks: bool = True
    verbosity: int = 1
    watch_frozen_data: bool = True
    jit_strict: bool = False


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


def set_verbosity(level: int) -> None:
    """How much torch_autograph writes on stderr about its work (the `torch_autograph` loggers get it all).

    0: nothing. 1 (the default): one line when a `jit_compile` compile took 2 s or more, e.g.
    `torch_autograph: inductor compiled graph step in 7.9 s`. 2: also a line for every trace (with its
    reason) and for the start of every compile. A level above INFO set on the `torch_autograph` logger
    silences these lines too.
    """
    if level not in (0, 1, 2):
        raise ValueError(f"the verbosity is 0, 1 or 2, got {level!r}")
    _config.verbosity = int(level)


def get_verbosity() -> int:
    """The level set by `set_verbosity` (default 1)."""
    return _config.verbosity


def set_watch_frozen_data(enabled: bool) -> None:
    """Whether frozen code (`freeze_captures`, and `jit_compile=True`'s default freezing of conv graphs) watches
    writes that move no version counter (default True).

    While frozen code is alive, torch's `Tensor.data`, `Tensor.numpy` and `Tensor.__dlpack__` are replaced so
    that a write through `p.data`, a NumPy view or a DLPack view of a frozen capture is seen (the code is compiled
    again by reference); they are torch's own again once the last frozen code is collected. False leaves torch
    untouched: `jit_compile=True` then compiles by reference unless `freeze_captures=True` asks for freezing, and
    frozen code sees only what version counters and data pointers show.
    """
    _config.watch_frozen_data = bool(enabled)


def watch_frozen_data() -> bool:
    """Whether `set_watch_frozen_data(True)` is in effect (the default)."""
    return _config.watch_frozen_data


def set_jit_strict(strict: bool) -> None:
    """Whether a graph or region that inductor cannot lower or compile under `jit_compile=True` raises
    `errors.GraphLoweringError` (True: for tests and CI) instead of running on the default backend with one
    `errors.JitFallbackWarning` per trace (False, the default)."""
    _config.jit_strict = bool(strict)


def jit_strict() -> bool:
    """The switch `set_jit_strict` sets (default False: fall back to the default backend, with a warning)."""
    return _config.jit_strict
