"""jit_compile="auto": run a graph on the default backend, compile it with inductor in the background once hot.

The compiled code replaces the default only when it times faster on a copy of
the arguments; no call ever waits for a compile.
"""

from __future__ import annotations

import statistics
import threading
import time
from typing import Any, Callable

import torch

from ..errors import GraphLoweringError
from ..graph import Graph, Node, autocast_state, under_autocast, walk_nodes
from . import regions, torch_codegen
from .compiled import Compiled, CompileOptions
from .inductor import _compile_split, _lower, _Runner, side_effect

_Fallback = Callable[[str], None]


class TieredBackend:
    """The `Backend` of jit_compile="auto": `threshold` calls on the default backend, then inductor if faster."""

    def __init__(self, threshold: int, on_fail: _Fallback) -> None:
        self.threshold = threshold
        self.on_fail = on_fail

    def compile(self, graph: Graph, options: CompileOptions) -> Compiled:
        default = torch_codegen.compile_graph(graph, return_tuple=options.return_tuple)
        return Tiered(graph, default, return_tuple=options.return_tuple, grad=options.grad,
                      threshold=self.threshold, on_fail=self.on_fail, freeze=options.freeze_captures)


class Tiered(Compiled):
    """jit_compile="auto": run on the default backend, compile with inductor once the function is hot.

    `entry` (the function the call path runs at first) counts calls and runs the default backend's
    function. At the `threshold`-th call it hands the call path the default function itself (no
    counting any more), copies that call's tensor arguments (examples of the same layout,
    requires_grad and values, never the caller's tensors) and starts one daemon thread that:

    1. compiles the graph with inductor for the examples' layout and requires_grad pattern; a graph
       split at control flow or at staged calls (`regions.split`) runs once on the examples instead,
       compiling the regions they reach (regions reached only by other arguments stay on their Python
       code);
    2. `install`s a trial of the compiled entries (one attribute store: a concurrent call runs one or
       the other; `_Trial`): the caller's next calls run the default and each compiled entry in turn,
       timed, and keep the fastest, a compiled entry only when it beats the default by `_Trial.MARGIN`.
       An inference graph with captures has two compiled entries, its captures frozen and read by
       reference (frozen weights change the GEMM kernels, not always for the better). A graph with side
       effects (Variable updates, optimizer steps, prints, random ops) is not run on the examples. Split,
       such a graph (a training step: `backward()` and `optimizer.step()` split it) takes its regions'
       examples from the `threshold`-th call itself, which runs the split code with every region on its
       Python code (the ops the default runs), each region copying its arguments; the thread compiles the
       regions from those copies (`_split_and_sample`). A split graph with no region worth compiling
       keeps the default backend ("kept default").

    Nothing is timed on the compiling thread. With OpenMP, a second thread running torch ops makes two
    thread teams share the cores, and libgomp then stops spinning in both: a small MLP ran several times
    slower there than on the caller's thread, and its frozen code, faster than the default on the caller's
    thread, timed as fast as the default there (so it was never kept).

    No call waits for the compile. A graph inductor cannot take, or a compile error, leaves the default
    backend in place and calls `on_fail(reason)` (one warning per Function). The compiled entry runs the
    default function for arguments of another layout or requires_grad pattern than the compiled one
    (never compiling again on the call path). `status`: "default" (counting) -> "compiling" ->
    "compiled" (on trial, then kept) | "kept default" (no region worth compiling, or the trial found the
    compiled code no faster) | "failed".
    """

    def __init__(self, graph: Graph, default: Callable[..., Any], *, return_tuple: bool, grad: bool,
                 threshold: int, on_fail: _Fallback, freeze: bool = False) -> None:
        super().__init__(default, "default", default_fn=default,
                         line_ranges=lambda: torch_codegen.compile_graph(graph, return_tuple, profile_lines=True))
        self.graph = graph
        self.freeze = freeze
        self.default = default
        self.return_tuple = return_tuple
        self.grad = grad
        self.threshold = threshold
        self.on_fail = on_fail
        # (label, median s per call) of the default and of each compiled entry, on the caller's calls on trial.
        self.trial_timings: tuple[tuple[str, float], ...] | None = None
        self.kept = "compiled"  # the label of the compiled entry the trial kept
        self.calls = 0
        self.thread: threading.Thread | None = None
        self.done = threading.Event()
        self._lock = threading.Lock()
        self.fn = self.entry()

    def entry(self) -> Callable[..., Any]:
        tier, default, threshold = self, self.default, self.threshold

        def counting(*args: Any) -> Any:
            n = tier.calls = tier.calls + 1
            if n >= threshold:
                return tier.start(args)
            return default(*args)

        return counting

    def start(self, args: tuple) -> Any:
        """Run this call and begin the background compile for arguments like `args` (once)."""
        with self._lock:
            if self.thread is not None:
                return self.default(*args)
            self.install(self.default)  # stop counting
            self._status = "compiling"
            split = self._split_and_sample() if side_effect(self.graph) is not None else None
            if split is None:
                # The examples and the autocast regions the call runs under (thread-local: entered again there).
                target, job = self._compile, (_examples(args), autocast_state())
            else:
                target, job = self._compile_samples, split
            self.thread = threading.Thread(target=target, args=job, daemon=True, name=f"ta-jit-{self.graph.name}")
        if split is None:
            self.thread.start()
            return self.default(*args)
        fn, runners, samples = split
        try:
            return fn(*args)  # the regions on their Python code, each copying its arguments once
        finally:
            for r in runners:
                r.sampler = None
            self.thread.start()

    def _split_and_sample(self) -> tuple[Callable[..., Any], list[_Runner], dict] | None:
        """For a graph with side effects that fx cannot take whole: the split code, its region runners set to
        sample their arguments at the next call, and the dict the samples go to; None otherwise.

        Such a graph must not run on a copy of the arguments (an optimizer step would be applied twice): the
        call that starts the compile runs the split code instead of the default function, and each region
        copies its arguments (and the autocast around the call) for the background compile.
        """
        try:
            _lower_whole(self.graph)
            return None
        except GraphLoweringError:
            pass
        fn, runners = _compile_split(self.graph, self.return_tuple, self.grad, tiered=True, freeze=self.freeze)
        samples: dict[int, tuple[_Runner, tuple, tuple | None]] = {}

        def sample(runner: _Runner, args: tuple) -> None:
            runner.sampler = None
            samples[id(runner)] = (runner, tuple(_examples(args)), autocast_state())

        for r in runners:
            r.background = True
            r.sampler = sample
        return fn, runners, samples

    def _compile_samples(self, fn: Callable[..., Any], runners: list[_Runner], samples: dict) -> None:
        """Compile the regions that sampled their arguments; install the split code if any was compiled."""
        def job() -> dict[str, Callable[..., Any]]:
            for runner, example, autocast in list(samples.values()):
                with runner.lock, under_autocast(autocast):
                    runner.compile_for(example)
            return {"compiled": fn} if samples else {}

        self._settle(job)

    def _compile(self, example: list[Any], autocast: tuple | None = None) -> None:
        def job() -> dict[str, Callable[..., Any]]:
            effect, args = side_effect(self.graph), tuple(example)
            with under_autocast(autocast):
                entry = self._compiled(args, effect, self.freeze)
                if entry is None:
                    return {}
                if effect is not None or not self.freeze:
                    return {"compiled": entry}
                # Frozen weights change the kernels (pre-packed GEMMs), not always for the better: the code that
                # reads them by reference competes too (hand-written LSTM cells: 0.68x eager's time by reference,
                # 0.9x frozen).
                by_reference = self._compiled(args, effect, False)
                return {"frozen": entry} if by_reference is None else {"frozen": entry, "by reference": by_reference}

        self._settle(job)

    def _settle(self, job: Callable[[], dict[str, Callable[..., Any]]]) -> None:
        """Run the background compile `job`: its entries (by label) go on trial against the default, on the
        caller's thread and calls; none keeps the default; any failure stays on the default backend and is
        reported."""
        try:
            try:
                entries = job()
            except Exception as e:  # noqa: BLE001 - any failure: stay on the default backend
                self._status = "failed"
                why = str(e).strip() or type(e).__name__
                self.on_fail(why.split("\nFix:")[0])
                return
            # The status first: the trial's decision, on the caller's thread, may set it once installed.
            self._status = "compiled" if entries else "kept default"
            if entries:
                self.install(_Trial(self, entries))
        finally:
            self.done.set()

    def _compiled(self, example: tuple, effect: Node | None, freeze: bool) -> Callable[..., Any] | None:
        """The compiled entry, its code compiled for `example` (which it may run once); None: nothing to compile."""
        try:
            gm, slots, values_graph = _lower_whole(self.graph)
        except GraphLoweringError:  # control flow or staged calls: compile the regions
            fn, runners = _compile_split(self.graph, self.return_tuple, self.grad, tiered=True, freeze=freeze)
            for r in runners:
                r.background = True
            if not runners:
                return None
            for r in runners:
                r.may_compile = True
            with torch.set_grad_enabled(self.grad):
                fn(*example)
            for r in runners:
                r.may_compile = False
            return fn
        runner = _Runner(values_graph, gm, slots, self.return_tuple, self.grad, f"graph {self.graph.name}",
                         default=torch_codegen.compile_graph(values_graph, return_tuple=True), freeze=freeze)
        runner.background = True
        runner.compile_for(example)
        runner.may_compile = False
        return runner.entry()

    def report_lines(self) -> list[str]:
        """For `ConcreteFunction.jit_report()`: which code runs and the timings that decided it. A compiled
        variant that timed slower than the default backend is never kept."""
        head = f"graph {self.graph.name}: jit_compile='auto', {self.status}"
        out = [head + (f" (compiles after {self.threshold} calls; {self.calls} so far)"
                       if self.status == "default" else "")]
        if self.trial_timings is not None:
            out.append("  timed on the caller's calls, per call: " + ", ".join(
                f"{label} {t * 1e6:.1f} us" for label, t in self.trial_timings))
        if self.status == "kept default":
            out.append(f"  the compiled code was not {1 - _Trial.MARGIN:.0%} faster than the default backend's: the "
                       "default runs" if self.trial_timings is not None else
                       "  no region was worth compiling: the default runs")
        elif self.status == "compiled" and self.trial_timings is not None:
            out.append(f"  the {self.kept} code runs")
        return out

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for a started compile; True when the inductor code is in use."""
        if self.thread is not None:
            self.done.wait(timeout)
        return self.status == "compiled"




def _lower_whole(graph: Graph) -> tuple:
    """`_lower` of the whole graph, refused (so the graph is split) where a node reads tensor data as a number
    (`regions.reads_data_as_number`): inductor would have to guard on its value."""
    if any(map(regions.reads_data_as_number, walk_nodes(graph))):
        raise GraphLoweringError(f"graph {graph.name} reads tensor data as a number")
    return _lower(graph)


def _examples(args: tuple) -> list[Any]:
    """Copies of the tensors in `args` (same layout, requires_grad and values): the background thread
    must neither keep nor read the caller's tensors."""
    out = []
    with torch.no_grad():
        for a in args:
            if isinstance(a, torch.Tensor):
                a = torch.empty_strided(a.size(), a.stride(), dtype=a.dtype, device=a.device).copy_(a) \
                    .requires_grad_(a.requires_grad)
            out.append(a)
    return out


class _Trial:
    """The first calls after the compile: they run the default and each compiled entry in turn on the
    caller's thread and arguments (`CALLS` each, timed), then keep the fastest for good, a compiled entry
    only when it beats the default by `MARGIN` ("kept default" otherwise).

    Only these timings decide: the compiling thread's are distorted (OpenMP, see `Tiered`), and its copies
    of the arguments are not what the caller runs (ResNet-18's inductor code timed faster there and ran
    slower in the caller).
    """

    CALLS = 6
    MARGIN = 0.97

    def __init__(self, tier: Any, compiled: dict[str, Callable[..., Any]]) -> None:
        self.tier = tier
        self.labels = ("default", *compiled)
        self.fns = (tier.default, *compiled.values())
        self.times: tuple[list[float], ...] = tuple([] for _ in self.fns)
        self.calls = 0

    def __call__(self, *args: Any) -> Any:
        which = (self.calls + 1) % len(self.fns)  # the compiled entries first
        self.calls += 1
        t0 = time.perf_counter()
        out = self.fns[which](*args)
        self.times[which].append(time.perf_counter() - t0)
        if self.calls == len(self.fns) * self.CALLS:
            self.decide()
        return out

    def decide(self) -> None:
        # The first call of each may still compile a variant or warm caches: each one's first timing is dropped.
        medians = [statistics.median(t[1:]) for t in self.times]
        tier = self.tier
        tier.trial_timings = tuple(zip(self.labels, medians))
        best = min(range(1, len(medians)), key=medians.__getitem__)
        if medians[best] < medians[0] * self.MARGIN:
            tier.kept = self.labels[best]
            tier.install(self.fns[best])
        else:
            tier.install(self.fns[0])
            tier._status = "kept default"
