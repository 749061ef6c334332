"""The `jit_compile=True` backend: Graph -> torch.fx -> inductor, compiled once, called directly.

    f = ta.function(step, jit_compile=True)   # or jit_compile="auto" (tiered: see `Tiered`)

`compile_graph` lowers the graph with `ConcreteFunction.to_fx` and compiles the module
with `torch._inductor.compile_fx.compile_fx` (AOT autograd + inductor's C++ /
Triton code) on the first call, under the grad mode the graph was traced in.
The compiled artifact is then called directly: our trace cache already
decided which graph runs, so no dynamo frame evaluation and no dynamo guards
run per call. Calling the compile_fx artifact costs a fraction of
`torch.compile(gm, backend="inductor", fullgraph=True, dynamic=False)`, whose
per-call guards dominate for small graphs; both support backward (AOT
autograd), so compile_fx is used. (The figures behind this module's rules are
in benchmarks/README.md, "Measurements behind the backends' rules".)

A graph `to_fx` cannot lower (a `while` loop, a run-time check, a `cond`
that updates state or returns Python values) is split at its control flow
(`regions.split`): its straight-line runs of tensor ops are compiled this way
one by one, and the default backend's Python runs the control flow around
them. `torch._higher_order_ops.while_loop` under inductor was the other way:
on CPU it ran a small loop body slower than a Python loop of the same ops, so
loops stay Python loops.

Specialisation (checked per call, cheaply):
- requires_grad of the inputs, when the graph was traced with grad enabled:
  AOT autograd builds a training graph only for inputs that require grad;
  an input that starts requiring grad gets a new compile (once per pattern).
- sizes and strides: inductor's code asserts them; an input of another
  layout gets a new compile, up to `MAX_VARIANTS` per graph or region; later
  layouts run the default backend. Dims the graph leaves open (a `None` dim
  of the signature, a loop variable that grows) are compiled as size symbols
  instead: one variant for every size, under a guard (`compile_inputs`).
- autocast: the autocast regions in force around the call (`with
  torch.autocast(...)` around it): inductor compiles autocast's casts into
  the code, so a call under another autocast state gets its own variant.
An inference graph on CPU is compiled with inductor's C++ wrapper
(`_Runner.cpp_wrapper`), whose per-call cost is a fraction of its Python one.
Captured tensors are read by reference at every call (buffers and parameters
of the lowered module); their requires_grad is taken at compile time.

`freeze_captures=True` folds the captured tensors of a graph traced under
no_grad into the compiled code as constants (inductor's `freezing`), which lets
inductor pre-pack weights for its C++ GEMM kernels (small Linear layers run
several times faster than by reference) and fold BatchNorm into pre-packed mkldnn convolutions. Each call then compares
the captures' version counters and data pointers with those seen before the
compile (`data_watch` makes writes through a capture's `.data` move its version
counter too, and notes NumPy and DLPack views of it); after an in-place update,
an optimizer step, `load_state_dict`, `p.data = t`, `p.data.mul_(2)` or
`w.numpy()`, the variant is compiled again by reference, for good. Frozen code keeps a
packed copy of the weights (memory) and is not bitwise equal to eager (another
GEMM kernel; differences at rounding level). The default, `None`, freezes under
`jit_compile="auto"` (which times frozen against by reference) and, under
`jit_compile=True`, graphs and regions that convolve captured CPU tensors
(`_pays_to_freeze`; plain freezing, without the GEMM autotuning that
`freeze_captures=True` and "auto" add): another GEMM kernel is not always
faster.

A graph that runs autograd itself (a GradientTape + optimizer training step)
is compiled as an inference graph whose body re-enables grad: its backward is
traced into the compiled code, and its outputs come back without autograd
history (nothing outside the step can differentiate through them). Split at
control flow, such a graph runs its autograd calls in Python instead, on the
outputs of regions compiled as training graphs.

Compiled code is cached on disk by inductor (FX graph cache, AOT autograd
cache, under `TORCHINDUCTOR_CACHE_DIR`), so a new process compiling the same
graph is much faster than the first (benchmarks/bench_jit.py measures both).
Both caches need what `compile_inputs` provides: example inputs from a fake
mode with a shape environment inside a TracingContext (else the FX graph
cache is bypassed), and fx nodes marked as tensors (`example_value`, set by
`to_fx`; else AOT autograd's cache is bypassed at the first method call).
Compiles with GEMM autotuning (`freeze_captures=True`, "auto"'s frozen
variant) take nothing from the caches: each times its kernel choices itself.
"""

from __future__ import annotations

import operator
import threading
import time
import warnings
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, Callable, Iterator

import torch

from ..config import jit_strict, watch_frozen_data
from ..errors import GraphLoweringError
from ..graph import Graph, Node, Trait, Value, autocast_state, walk_nodes
from ..interop import FrozenDataWatch
from ..logs import SLOW_COMPILE_S, ProgressLine, echo, jit_logger
from . import regions, torch_codegen
from .compile_inputs import Layouts, compile_in_context
from .compiled import Compiled, CompileOptions
from .fx_lowering import to_fx
from .jit_report import JitReport, RegionRecord
from .regions import side_effect

_Fallback = Callable[[str], None]
_COMPILE_LOCK = threading.Lock()
_FIX = ("ta.config.set_jit_strict(False) runs such a region on the default backend with a warning; or use "
        "jit_compile='auto' or jit_compile=False")
# Compiled variants (input layouts x requires_grad patterns) per graph or region; later layouts run the default
# backend's code: each compile takes seconds, and a region in a loop may see a new shape at every iteration.
MAX_VARIANTS = 8
# freeze_captures=True: captures folded in as constants, weights pre-packed for inductor's C++ GEMM template.
# The autotuning reports inductor writes to stderr are turned off (keys unknown to an older torch are skipped).
# GEMM autotuning decides from timings, so each such compile times its choices itself: with inductor's
# autotuning cache, a kernel picked once while the machine was loaded decided every later compile in any process
# (frozen P3j ran at 0.70x eager on mkl kernels picked from that cache, at 0.26x on the C++ template its own
# timings picked). Freezing already keeps these compiles out of the FX graph cache, which would hold the pick.
_FROZEN_CONFIG = {"freezing": True, "max_autotune_gemm": True, "max_autotune_gemm_backends": "ATEN,CPP",
                  "autotune_num_choices_displayed": 0, "max_autotune_report_choices_stats": False,
                  "autotune_local_cache": False}
# Freezing by default under jit_compile=True (convolutions on the CPU, `_pays_to_freeze`): without the GEMM
# autotuning, which took ResNet-18's first call from 8.7 s to 13.9 s for the same per-call time.
_FROZEN_DEFAULT_CONFIG = {"freezing": True}
_version = operator.attrgetter("_version")
_data_ptr = torch.Tensor.data_ptr


def compile_graph(graph: Graph, *, return_tuple: bool, grad: bool, freeze: bool | None = False,
                  report: JitReport | None = None) -> Callable[..., Any]:
    """A function running `graph` compiled with inductor, taking the graph inputs positionally.

    Args:
        graph: the finished graph.
        return_tuple: return a tuple of the outputs (else the single output).
        grad: the grad mode the graph was traced under (and is compiled under).
        freeze: fold the captures into the code of a no_grad graph (`freeze_captures=True`, see above);
            None: where it is sure to pay (`_pays_to_freeze`).

        report: filled with what became of each region (compiled, below threshold, fell back).

    A graph or region inductor cannot lower or compile runs on the default backend, with one
    `JitFallbackWarning` per trace (`report.fell_back`); under `ta.config.set_jit_strict(True)` the call that
    compiles raises `GraphLoweringError` instead, naming the nodes and their lines. A graph that makes Python
    numbers of tensor data (`int(t)`, `.item()`, `x[t]`: `regions.reads_data_as_number`) is split, so those
    nodes run in Python and inductor never has to guard on a data-dependent value.
    """
    report = report if report is not None else JitReport(graph.name)
    try:
        if any(map(regions.reads_data_as_number, walk_nodes(graph))):
            raise GraphLoweringError("a number read from tensor data")
        gm, slots, values_graph = _lower(graph)
    except GraphLoweringError:  # control flow fx cannot express: compiled regions inside Python control flow
        return _compile_split(graph, return_tuple, grad, tiered=False, freeze=freeze, report=report)[0]
    graph.python_source = gm.code
    runner = _Runner(values_graph, gm, slots, return_tuple, grad, f"graph {graph.name}", freeze=freeze,
                     default=torch_codegen.compile_graph(values_graph, return_tuple=True))
    runner.record, runner.report = report.add(runner.what, regions.ops(graph.nodes)), report
    # Refused whole (an op inductor cannot take inside a `cond`), a graph with control flow is split: its other
    # regions compile. (Without, its one region would be the graph again.)
    if any(n.subgraphs for n in graph.nodes):
        runner.split_on_failure = lambda: _compile_split(values_graph, True, grad, tiered=False, freeze=freeze,
                                                         report=report)[0]
    return runner.entry()


class InductorCompiled(Compiled):
    """jit_compile=True's code; `status` and `report` say what became of each region (see `JitReport`)."""

    def __init__(self, fn: Callable[..., Any], report: JitReport) -> None:
        super().__init__(fn, "compiled")
        self.report = report

    @property
    def status(self) -> str:
        return self.report.status


class InductorBackend:
    """The `Backend` of jit_compile=True: inductor, compiled at the first call of each input layout."""

    def compile(self, graph: Graph, options: CompileOptions) -> Compiled:
        report = JitReport(graph.name, threshold=regions.MIN_REGION_OPS,
                           training_threshold=regions.MIN_TRAINING_REGION_OPS)
        fn = compile_graph(graph, return_tuple=options.return_tuple, grad=options.grad,
                           freeze=options.freeze_captures, report=report)
        return InductorCompiled(fn, report)


def _lower(graph: Graph) -> tuple[torch.fx.GraphModule, list[Any], Graph]:
    """The fx module of `graph` returning only its Value outputs, how to rebuild the full outputs, and
    the graph with only those outputs.

    `slots` has one entry per graph output: an int (index into the module's outputs) or
    `(constant,)` for a Python constant output (None, a string...).
    """
    slots: list[Any] = []
    values: list[Value] = []
    for o in graph.outputs:
        if isinstance(o, Value):
            slots.append(len(values))
            values.append(o)
        else:
            slots.append((o,))
    values_graph = replace(graph, outputs=values)
    return to_fx(values_graph), slots, values_graph


def _compile_split(graph: Graph, return_tuple: bool, grad: bool, *, tiered: bool, freeze: bool | None = False,
                   report: JitReport | None = None) -> tuple[Callable[..., Any], list["_Runner"]]:
    """`graph` split at its control flow: the default backend's function calling one `_Runner` per region.

    Each region runner also gets the region's default-backend function: run for a call that records
    autograd when the region is small for that (`regions.MIN_TRAINING_REGION_OPS`), and with `tiered` for
    arguments it has no compiled variant for once its `may_compile` is turned off.
    """
    runners: list[_Runner] = []
    by_structure: dict[str, _Runner] = {}
    report = report if report is not None else JitReport(graph.name)

    def compile_region(region: Graph, grad_enabled: bool | None) -> Callable[..., Any]:
        # Regions computing the same ops on the same captures (the forward pass of each micro-batch of an
        # unrolled gradient-accumulation loop) share one runner: compiled once, not once per micro-batch.
        key = regions.structure(region, grad_enabled)
        runner = by_structure.get(key)
        if runner is None:
            single = len(region.outputs) == 1
            try:
                gm, slots, _ = _lower(region)
            except GraphLoweringError as e:  # e.g. a size expression fx does not record
                if jit_strict() or tiered:
                    raise
                report.fell_back(report.add(_region_words(region, graph.name), regions.ops(region.nodes)), region, e)
                return torch_codegen.compile_graph(region, return_tuple=not single)
            runner = _Runner(region, gm, slots, not single, grad if grad_enabled is None else grad_enabled,
                             _region_words(region, graph.name),
                             default=torch_codegen.compile_graph(region, return_tuple=True),
                             python_when_training=regions.ops(region.nodes) < regions.MIN_TRAINING_REGION_OPS,
                             freeze=freeze)
            runner.may_compile = not tiered
            runner.record, runner.report = report.add(runner.what, regions.ops(region.nodes)), report
            runners.append(runner)
            by_structure[key] = runner
        return runner.entry()

    def too_small(run: list[Node]) -> None:
        report.add(_region_words(replace(graph, nodes=run), graph.name), regions.ops(run), "below threshold")

    split = regions.split(graph, compile_region, too_small)
    for i, r in enumerate(runners):  # for the progress line: "region 2 of 5 of graph step"
        r.label = f"region {i + 1} of {len(runners)} ({r.what.split(' of graph ')[0].removeprefix('the region ')}) " \
                  f"of graph {graph.name}"
    fn = torch_codegen.compile_graph(split, return_tuple=return_tuple)
    graph.python_source = split.python_source + "".join(
        f"\n# {r.what}, compiled with inductor:\n" + "\n".join("# " + line for line in r.gm.code.strip().splitlines())
        + "\n" for r in runners)
    return fn, runners


def _region_words(region: Graph, graph_name: str) -> str:
    first, last = region.nodes[0], region.nodes[-1]
    span = f"%{first.name}" if first is last else f"%{first.name} .. %{last.name}"
    loc = first.origin
    where = f' at File "{loc.filename}", line {loc.lineno}' if loc else ""
    return f"the region {span} of graph {graph_name}{where}"


class _Runner:
    """Owns the compiled variants of one graph (or region); `entry()` is the per-call function."""

    def __init__(self, graph: Graph, gm: torch.fx.GraphModule, slots: list[Any], return_tuple: bool, grad: bool,
                 what: str, default: Callable | None = None, python_when_training: bool = False,
                 freeze: bool | None = False) -> None:
        self.graph = graph
        self.what = what  # for messages: "graph f", "the region %mul .. %add of graph f at File ..."
        if regions.computes_gradients(graph):
            # A training step (GradientTape + optimizer): autograd runs inside the graph. AOT autograd would
            # differentiate it again, so it is compiled as an inference graph whose body turns grad mode
            # back on; its outputs come back without autograd history.
            gm, grad = _self_differentiating(gm, grad), False
        self.gm = gm
        self.grad = grad
        self.variants: dict[tuple, Callable] = {}
        self.lock = threading.Lock()
        # The default backend's function of `graph` (returning a tuple, as the compiled code does), run for
        # arguments no variant was compiled for once `may_compile` is off (jit_compile="auto": select()
        # then never compiles on the call path), and for training calls of a small region.
        self.default = default
        self.may_compile = True
        # jit_compile="auto" on a graph with side effects: called with the arguments of the next call that runs
        # `default` because compiling is off, to compile from them in the background (tiering.Tiered).
        self.sampler: Callable[["_Runner", tuple], None] | None = None
        self.background = False  # compiled off the call path (jit_compile="auto")
        # A region too small to gain from AOT autograd's training graph (whose run time wrapper costs tens of
        # µs per call) runs `default` when its call records autograd.
        self.python_when_training = python_when_training
        self.captures_grad = any(t.requires_grad for _, t in graph.captures)
        # freeze_captures: only for an inference graph with captures that it does not update itself.
        # Inference tensors (made under torch.inference_mode) have no version counter to guard them with.
        # None: where it pays for sure, convolutions on the CPU (see `_pays_to_freeze`).
        self.freeze_config = _FROZEN_CONFIG if freeze else _FROZEN_DEFAULT_CONFIG
        if freeze is None:  # by default only where writes through `.data` & co. are watched (config)
            freeze = watch_frozen_data() and _pays_to_freeze(graph)
        self.freeze = freeze and not grad and bool(graph.captures) and side_effect(graph) is None and \
            not any(t.is_inference() for _, t in graph.captures)
        self.post = _post(slots, return_tuple)
        self.layouts = Layouts(graph)  # dims the graph leaves open (symbolic) compile as size symbols
        # What became of it, for jit_status / jit_report (a fresh record when no report was given), and its
        # words on the progress line.
        self.report = JitReport(graph.name)
        self.record: RegionRecord = self.report.add(what, regions.ops(graph.nodes))
        self.label = what
        self.split_on_failure: Callable[[], Callable] | None = None  # a whole graph's fallback: split it

    def entry(self) -> Callable[..., Any]:
        """The per-call function; the common cases are kept to a few attribute reads."""
        runner, post, check_grad = self, self.post, self.grad
        first = post is _first
        one = len(self.graph.inputs) == 1
        # The variant in use, as one (requires_grad pattern, compiled fn) pair: read and replaced whole, so a
        # thread never pairs one thread's pattern with another's function.
        state: list[Any] = [None]

        # A graph with open dims gets arguments of many sizes: each call looks its variant up by key. (Inductor's
        # size asserts, which the fast path relies on, let an empty tensor through whatever size was compiled.)
        every_call = runner.layouts.any_open

        def call(*args: Any) -> Any:
            current = state[0]
            if every_call:
                # The open variant in use takes the call when the arguments have its layout (its own guard then
                # checks the sizes); a variant chosen by exact key is looked up again.
                if current is not None and current[3] is not None and current[3](args) and \
                        (autocast_state() if _any_autocast() else None) == current[2]:
                    fn = current[1]
                else:
                    fn = runner.select(args, state)
            elif current is None or (check_grad and (args[0].requires_grad if one else _grad_pattern(args))
                                     != current[0]) or (autocast_state() if _any_autocast() else None) != current[2]:
                fn = runner.select(args, state)
            else:
                fn = current[1]
            try:
                out = fn(*args)
            except (AssertionError, RuntimeError) as e:
                # inductor's size/stride checks (AssertionError from its Python wrapper, RuntimeError from its
                # C++ one): an input of a layout this variant was not compiled for. Re-raise a genuine error
                # of the function itself.
                if fn is runner.default or runner.variants.get(runner.key(args)) is fn or not _layout_error(e):
                    raise
                out = runner.select(args, state)(*args)
            return out[0] if first else post(out)

        return call

    def key(self, args: tuple) -> tuple:
        """What an exact variant is specialised on: the layouts, requires_grad, and the autocast in force
        (inductor bakes autocast's casts into the code it compiles under it)."""
        return self.layouts.exact_key(args, self.grad) + (autocast_state(),)

    def open_key(self, args: tuple) -> tuple | None:
        """The key of the variant with the graph's open dims symbolic that `args` may take, if any."""
        key = self.layouts.open_key(args, self.grad)
        return None if key is None else key + (autocast_state(),)

    def select(self, args: tuple, state: list[Any], exact: bool = False) -> Callable:
        """The variant compiled for these arguments (compiling it now if allowed); made the current one.
        An open variant (see `compile_inputs`) serves every size of the open dims its guard allows."""
        key = self.key(args)
        okey = None if exact else self.open_key(args)
        with self.lock:
            fn = self.variants.get(key)
            if fn is None and okey is not None:
                fn, key = self.variants.get(okey), okey
            if fn is None:
                if self.python_when_training and self.grad and (
                        self.captures_grad or any(isinstance(a, torch.Tensor) and a.requires_grad for a in args)):
                    fn = self.default
                    if self.record.state == "not called yet":
                        self.record.state = "default for training calls"
                elif not self.may_compile or (len(self.variants) >= MAX_VARIANTS and self.default is not None):
                    # tiered, or a shape seen after MAX_VARIANTS others (a None dim, a loop variable changing
                    # shape in a region): the default backend, never made current, no compile on this call.
                    if self.sampler is not None and not self.may_compile:
                        self.sampler(self, args)
                    return self.default
                else:
                    fn = self.variants[key] = self.compile_or_fall_back(args, open_dims=key is okey)
        state[0] = ((args[0].requires_grad if len(args) == 1 else _grad_pattern(args)) if self.grad else None, fn,
                    key[-1], getattr(fn, "fits", None) if key is okey else None)
        return fn

    def compile_or_fall_back(self, args: tuple, open_dims: bool) -> Callable:
        """`compile`, or where inductor refuses: the default backend's code for these arguments (noted in the
        report, with one warning per trace), unless `ta.config.set_jit_strict(True)` or off the call path."""
        start = time.perf_counter()
        try:
            fn = self.compile(args, open_dims=open_dims)
        except GraphLoweringError as e:
            if jit_strict() or self.background or self.default is None:
                raise
            self.report.fell_back(self.record, self.graph, e, time.perf_counter() - start)
            if self.split_on_failure is not None:
                self.default, self.split_on_failure = self.split_on_failure(), None
                self.record.reason += "; split at its control flow, its regions compiled one by one"
            return self.default
        record = self.record
        record.seconds += time.perf_counter() - start
        record.variants += 1
        if record.state != "fell back":
            record.state = "compiled"
        return fn

    def compile_for(self, args: tuple) -> None:
        """Compile the variant `args` select (open or exact), off the call path (jit_compile="auto")."""
        okey = self.open_key(args)
        key = okey if okey is not None else self.key(args)
        self.variants[key] = self.compile(args, open_dims=okey is not None)

    def compile(self, args: tuple, open_dims: bool = False) -> Callable:
        """The compiled code for arguments like `args`: frozen and guarded (see `freeze_captures`) or by reference;
        with `open_dims`, for every size of the graph's open dims that its guard allows (others: `exact`)."""
        fn = self._compile_frozen(args, open_dims) if self.freeze else self._compile_by_reference(args, None, open_dims)
        if not open_dims:
            return fn
        runner, check = self, fn.open_guard

        def open_variant(*a: Any) -> Any:
            if check(a):
                return fn(*a)
            return runner.select(a, [None], exact=True)(*a)

        open_variant.open_guard = check
        open_variant.fits = self.layouts.open_fits(args, self.grad)  # the per-call fast path (see `entry`)
        return open_variant

    def _compile_frozen(self, args: tuple, open_dims: bool = False) -> Callable:
        """Captures folded in as constants; the first call after any of them changed (version counter: in-place
        update, optimizer step, load_state_dict, `p.data.mul_(2)` (see `data_watch`); data pointer: `p.data = t`)
        switches this variant for good to code compiled by reference (or, tiered, to the default
        backend)."""
        caps = [t for _, t in self.graph.captures]
        # Read before compiling: an update during a (background) compile counts as a change.
        versions, ptrs, watch = sum(map(_version, caps)), list(map(_data_ptr, caps)), FrozenDataWatch(caps)
        try:
            frozen = self._compile_by_reference(args, self.freeze_config, open_dims)
        except GraphLoweringError:  # freezing is an optimisation: the by-reference compile decides
            watch.close()
            return self._compile_by_reference(args, None, open_dims)
        runner, cell = self, [frozen]

        def guarded(*a: Any) -> Any:
            fn = cell[0]
            if fn is frozen and (watch.touched or sum(map(_version, caps)) != versions
                                 or list(map(_data_ptr, caps)) != ptrs):
                watch.close()
                fn = cell[0] = runner.default if not runner.may_compile else \
                    runner._compile_by_reference(a, None, open_dims)
            return fn(*a)

        guarded.thawed = lambda: cell[0] is not frozen  # for tests
        guarded.open_guard = getattr(frozen, "open_guard", None)
        return guarded

    def cpp_wrapper(self, args: tuple, frozen: bool = False) -> bool:
        """Whether to compile with inductor's C++ wrapper: an inference graph on CPU checking 8 tensors or more.

        The Python wrapper inductor writes checks the layout of every tensor input (captures read by reference
        included, not frozen ones) and allocates each buffer with a Python call, a cost that grows with the
        inputs; the C++ wrapper costs a little more per call than a Python wrapper with few inputs, so those
        keep it. Its layout checks raise RuntimeError where the Python ones raise AssertionError
        (`_layout_error`).
        """
        tensors = [a for a in args if isinstance(a, torch.Tensor)] + [t for _, t in self.graph.captures]
        checked = sum(isinstance(a, torch.Tensor) for a in args) + (0 if frozen else len(self.graph.captures))
        return checked >= 8 and not self.grad and not regions.computes_gradients(self.graph) and \
            all(t.device.type == "cpu" for t in tensors)

    def _compile_by_reference(self, args: tuple, config: dict[str, Any] | None = None,
                              open_dims: bool = False) -> Callable:
        with compile_progress(self.what + (" (open sizes symbolic)" if open_dims else ""), self.label):
            return self._compile_fx(args, config, open_dims)

    def _compile_fx(self, args: tuple, config: dict[str, Any] | None, open_dims: bool = False) -> Callable:
        from torch._functorch import config as functorch_config
        from torch._inductor import config as inductor_config
        from torch._inductor.compile_fx import compile_fx

        try:
            # One compile at a time in this process: inductor's lazy set-up (pattern registration) is not
            # thread-safe, and jit_compile="auto" compiles in background threads.
            known = {k: v for k, v in (config or {}).items() if hasattr(inductor_config, k)}
            # Random ops call aten's kernels, so they draw eager's numbers from the global generator and leave it
            # where eager does: inductor's own Philox stream gave other values than the default backend and
            # eager from the same seed (a VAE's reparameterisation, dropout).
            known.setdefault("fallback_random", True)
            if self.cpp_wrapper(args, frozen=bool(known.get("freezing"))):
                known["cpp_wrapper"] = True
            # AOT autograd compiles a training graph's backward at its first backward call: on the call path.
            # A background compile (jit_compile="auto", where no call waits for a compile) does it now.
            eager_backward = {"force_non_lazy_backward_lowering": True} if self.background and hasattr(
                functorch_config, "force_non_lazy_backward_lowering") else {}
            with _COMPILE_LOCK, torch.set_grad_enabled(self.grad), functorch_config.patch(eager_backward), \
                    inductor_config.patch(known), warnings.catch_warnings():  # grad False: self-differentiating
                # inductor's GEMM autotuning reads `Tensor.storage()`, which warns on every compile.
                warnings.filterwarnings("ignore", "TypedStorage is deprecated", UserWarning)
                fakes, mode = self.layouts.examples(args, open_dims)
                compiled = compile_in_context(compile_fx, self.gm, fakes, mode)
                guard = Layouts.open_guard(mode, fakes) if open_dims else None
        except Exception as e:  # noqa: BLE001 - inductor's errors are many; all mean "cannot compile this"
            msg = str(e).strip()
            raise GraphLoweringError(f"inductor could not compile {self.what}: {type(e).__name__}: "
                                     f"{msg.splitlines()[0] if msg else ''}\nFix: {_FIX}.") from e
        if guard is None:
            return compiled  # aot_module_simplified's forward(*args), whatever its `_boxed_call` says

        def with_guard(*a: Any) -> Any:
            return compiled(*a)

        with_guard.open_guard = guard
        return with_guard


_any_autocast = torch._C._is_any_autocast_enabled


def _layout_error(e: Exception) -> bool:
    """Whether `e` is inductor's check of an input's layout failing (Python wrapper: any AssertionError; C++
    wrapper: `assert_size_stride` in aoti_runtime/utils.h)."""
    return isinstance(e, AssertionError) or str(e).startswith(("expected size ", "expected ndim "))


@contextmanager
def compile_progress(what: str, label: str | None = None) -> Iterator[None]:
    """Log the start and the end (with its duration) of an inductor compile; a slow one also says so on stderr,
    and shows a progress line while it runs (`ProgressLine`: `label`, e.g. "region 2 of 5 of graph step")."""
    jit_logger.info("compiling %s with inductor", what)
    echo(jit_logger, f"compiling {what} with inductor", verbosity=2)
    start = time.perf_counter()
    try:
        with ProgressLine(jit_logger, label or what):
            yield
    except Exception:
        jit_logger.info("inductor could not compile %s (%.2f s)", what, time.perf_counter() - start)
        raise
    seconds = time.perf_counter() - start
    jit_logger.info("compiled %s with inductor in %.2f s", what, seconds)
    echo(jit_logger, f"inductor compiled {what} in {seconds:.1f} s", verbosity=1 if seconds >= SLOW_COMPILE_S else 2)


def _pays_to_freeze(graph: Graph) -> bool:
    """Whether freezing is sure to pay for `graph` (`freeze_captures=None` under jit_compile=True): it convolves
    with captured CPU tensors. Inductor's CPU convolutions by reference are slower than eager (as with
    torch.compile); frozen, BatchNorm folds into pre-packed mkldnn convolutions, faster than eager. For GEMMs freezing changes the kernel, sometimes for the worse: those graphs are
    frozen only on request, or under jit_compile="auto", which times both."""
    if not any(t.device.type == "cpu" for _, t in graph.captures):
        return False
    return any(Trait.CONVOLUTION in n.op.traits for n in walk_nodes(graph))


def _self_differentiating(gm: torch.fx.GraphModule, grad: bool) -> torch.fx.GraphModule:
    """`gm` with the trace's grad mode set on entry and detached outputs, to compile as an inference graph."""
    g = gm.graph
    placeholders = [n for n in g.nodes if n.op == "placeholder"]
    anchor = placeholders[-1] if placeholders else next(iter(g.nodes))
    ctx = g.inserting_after(anchor) if placeholders else g.inserting_before(anchor)
    with ctx:
        g.call_function(torch._C._set_grad_enabled, (grad,))
    out = next(n for n in g.nodes if n.op == "output")
    with g.inserting_before(out):
        out.args = (tuple(g.call_method("detach", (a,)) if isinstance(a, torch.fx.Node) else a
                          for a in out.args[0]),)
    gm.recompile()
    return gm


def _grad_pattern(args: tuple) -> tuple:
    return tuple([a.requires_grad for a in args])


_first = operator.itemgetter(0)


def _post(slots: list[Any], return_tuple: bool) -> Callable[[Any], Any]:
    """Turn the compiled module's output list into what the graph returns."""
    n = len(slots)
    if all(isinstance(s, int) for s in slots):
        if not return_tuple and n == 1:
            return _first
        return tuple
    if not return_tuple and n == 1:
        const = slots[0][0]
        return lambda out: const

    def rebuild(out: Any) -> tuple:
        return tuple(out[s] if isinstance(s, int) else s[0] for s in slots)

    return rebuild
