"""The `jit_compile=True` backend: Graph -> torch.fx -> inductor, compiled once, called directly.

    f = ta.function(step, jit_compile=True)   # or jit_compile="auto" (tiered: see `Tiered`)

`compile_graph` lowers the graph with `Graph.to_fx` and compiles the module
with `torch._inductor.compile_fx.compile_fx` (AOT autograd + inductor's C++ /
Triton code) on the first call, under the grad mode the graph was traced in.
The compiled artifact is then called directly: our trace cache already
decided which graph runs, so no dynamo frame evaluation and no dynamo guards
run per call. Measured on the 200-op chain (benchmarks/bench_jit.py), calling
the compile_fx artifact costs a fraction of `torch.compile(gm, backend=
"inductor", fullgraph=True, dynamic=False)`, whose per-call guards dominate
for small graphs; both support backward (AOT autograd), so compile_fx is used.

A graph `to_fx` cannot lower (a `while` loop, a run-time check, a `cond`
that updates state or returns Python values) is split at its control flow
(`regions.split`): its straight-line runs of tensor ops are compiled this way
one by one, and the default backend's Python runs the control flow around
them. `torch._higher_order_ops.while_loop` under inductor was the other way:
on CPU it ran P5 (1000 iterations of `x = x * a + b`) 2.1x slower than a
Python loop of the same ops (torch 2.13), so loops stay Python loops.

Specialisation (checked per call, cheaply):
- requires_grad of the inputs, when the graph was traced with grad enabled:
  AOT autograd builds a training graph only for inputs that require grad;
  an input that starts requiring grad gets a new compile (once per pattern).
- sizes and strides: inductor's code asserts them; an input of another
  layout (or a `None` dim taking a new size) gets a new compile, up to
  `MAX_VARIANTS` per graph or region; later layouts run the default backend.
Captured tensors are read by reference at every call (buffers and parameters
of the lowered module); their requires_grad is taken at compile time.

`freeze_captures=True` (opt-in) folds the captured tensors of a graph traced
under no_grad into the compiled code as constants (inductor's `freezing`),
which lets inductor pre-pack weights for its C++ GEMM kernels (P3j: an MLP of
8 small Linear layers runs about 6x faster than eager, against about 1.6x by
reference). Each call then compares the captures' version counters and data
pointers with those seen before the compile; after an in-place update, an
optimizer step, `load_state_dict` or `p.data = t`, the variant is compiled
again by reference, for good. A write through `p.data` (a tensor with its own
version counter) is not seen: that is why freezing is not the default. Frozen
code also keeps a packed copy of the weights (memory), and is not bitwise
equal to eager (another GEMM kernel; differences at rounding level).

A graph that runs autograd itself (a GradientTape + optimizer training step)
is compiled as an inference graph whose body re-enables grad: its backward is
traced into the compiled code, and its outputs come back without autograd
history (nothing outside the step can differentiate through them). Split at
control flow, such a graph runs its autograd calls in Python instead, on the
outputs of regions compiled as training graphs.

Compiled code is cached on disk by inductor (FX graph cache, AOT autograd
cache, under `TORCHINDUCTOR_CACHE_DIR`), so a new process compiling the same
graph is much faster than the first (benchmarks/bench_jit.py measures both).
"""

from __future__ import annotations

import operator
import statistics
import threading
import time
import warnings
from dataclasses import replace
from typing import Any, Callable

import torch

from ..errors import GraphLoweringError
from ..graph import lists
from ..graph.graph import Graph, Node, OpKind, Value
from . import regions, torch_codegen

_Fallback = Callable[[str], None]
_COMPILE_LOCK = threading.Lock()
_FIX = "use jit_compile='auto' to fall back to the default backend, or jit_compile=False"
# Compiled variants (input layouts x requires_grad patterns) per graph or region; later layouts run the default
# backend's code: each compile takes seconds, and a region in a loop may see a new shape at every iteration.
MAX_VARIANTS = 8
# freeze_captures=True: captures folded in as constants, weights pre-packed for inductor's C++ GEMM template.
# The autotuning reports inductor writes to stderr are turned off (keys unknown to an older torch are skipped).
_FROZEN_CONFIG = {"freezing": True, "max_autotune_gemm": True, "max_autotune_gemm_backends": "ATEN,CPP",
                  "autotune_num_choices_displayed": 0, "max_autotune_report_choices_stats": False}
_version = operator.attrgetter("_version")
_data_ptr = torch.Tensor.data_ptr


def compile_graph(graph: Graph, *, return_tuple: bool, grad: bool, freeze: bool = False) -> Callable[..., Any]:
    """A function running `graph` compiled with inductor, taking the graph inputs positionally.

    Args:
        graph: the finished graph.
        return_tuple: return a tuple of the outputs (else the single output).
        grad: the grad mode the graph was traced under (and is compiled under).
        freeze: fold the captures into the code of a no_grad graph (`freeze_captures=True`, see above).

    Raises:
        GraphLoweringError: (at the call that compiles) inductor cannot compile the graph, or one of its
            regions: the message names the nodes and their lines.
    """
    try:
        gm, slots, values_graph = _lower(graph)
    except GraphLoweringError:  # control flow fx cannot express: compiled regions inside Python control flow
        return _compile_split(graph, return_tuple, grad, tiered=False, freeze=freeze)[0]
    graph.python_source = gm.code
    return _Runner(values_graph, gm, slots, return_tuple, grad, f"graph {graph.name}", freeze=freeze,
                   default=torch_codegen.compile_graph(values_graph, return_tuple=True)).entry()


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
    return values_graph.to_fx(), slots, values_graph


def _compile_split(graph: Graph, return_tuple: bool, grad: bool, *, tiered: bool, freeze: bool = False
                   ) -> tuple[Callable[..., Any], list["_Runner"]]:
    """`graph` split at its control flow: the default backend's function calling one `_Runner` per region.

    Each region runner also gets the region's default-backend function: run for a call that records
    autograd when the region is small for that (`regions.MIN_TRAINING_REGION_OPS`), and with `tiered` for
    arguments it has no compiled variant for once its `may_compile` is turned off.
    """
    runners: list[_Runner] = []

    def compile_region(region: Graph, grad_enabled: bool | None) -> Callable[..., Any]:
        gm, slots, _ = _lower(region)
        single = len(region.outputs) == 1
        runner = _Runner(region, gm, slots, not single, grad if grad_enabled is None else grad_enabled,
                         _region_words(region, graph.name),
                         default=torch_codegen.compile_graph(region, return_tuple=True),
                         python_when_training=regions.ops(region.nodes) < regions.MIN_TRAINING_REGION_OPS,
                         freeze=freeze)
        runner.may_compile = not tiered
        runners.append(runner)
        return runner.entry()

    split = regions.split(graph, compile_region)
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
                 freeze: bool = False) -> None:
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
        # A region too small to gain from AOT autograd's training graph (whose run time wrapper costs tens of
        # µs per call) runs `default` when its call records autograd.
        self.python_when_training = python_when_training
        self.captures_grad = any(t.requires_grad for _, t in graph.captures)
        # freeze_captures: only for an inference graph with captures that it does not update itself.
        # Inference tensors (made under torch.inference_mode) have no version counter to guard them with.
        self.freeze = freeze and not grad and bool(graph.captures) and _side_effect(graph) is None and \
            not any(t.is_inference() for _, t in graph.captures)
        self.post = _post(slots, return_tuple)

    def entry(self) -> Callable[..., Any]:
        """The per-call function; the common cases are kept to a few attribute reads (see P2j)."""
        runner, post, check_grad = self, self.post, self.grad
        first = post is _first
        one = len(self.graph.inputs) == 1
        # The variant in use, as one (requires_grad pattern, compiled fn) pair: read and replaced whole, so a
        # thread never pairs one thread's pattern with another's function.
        state: list[Any] = [None]

        def call(*args: Any) -> Any:
            current = state[0]
            if current is None or (check_grad and (args[0].requires_grad if one else _grad_pattern(args))
                                   != current[0]):
                fn = runner.select(args, state)
            else:
                fn = current[1]
            try:
                out = fn(*args)
            except AssertionError:
                # inductor's size/stride asserts (they run before any op): an input of a layout this
                # variant was not compiled for. Re-raise a genuine error of the function itself.
                if fn is runner.default or runner.variants.get(runner.key(args)) is fn:
                    raise
                out = runner.select(args, state)(*args)
            return out[0] if first else post(out)

        return call

    def key(self, args: tuple) -> tuple:
        return tuple((a.shape, a.stride(), a.requires_grad and self.grad, a.dtype, a.device)
                     if isinstance(a, torch.Tensor) else (type(a), a) for a in args)

    def select(self, args: tuple, state: list[Any]) -> Callable:
        """The variant compiled for these arguments (compiling it now if allowed); made the current one."""
        key = self.key(args)
        with self.lock:
            fn = self.variants.get(key)
            if fn is None:
                if self.python_when_training and self.grad and (
                        self.captures_grad or any(isinstance(a, torch.Tensor) and a.requires_grad for a in args)):
                    fn = self.default
                elif not self.may_compile or (len(self.variants) >= MAX_VARIANTS and self.default is not None):
                    # tiered, or a shape seen after MAX_VARIANTS others (a None dim, a loop variable changing
                    # shape in a region): the default backend, never made current, no compile on this call.
                    return self.default
                else:
                    fn = self.variants[key] = self.compile(args)
        state[0] = ((args[0].requires_grad if len(args) == 1 else _grad_pattern(args)) if self.grad else None, fn)
        return fn

    def compile(self, args: tuple) -> Callable:
        """The compiled code for arguments like `args`: frozen and guarded (see `freeze_captures`) or by reference."""
        return self._compile_frozen(args) if self.freeze else self._compile_by_reference(args)

    def _compile_frozen(self, args: tuple) -> Callable:
        """Captures folded in as constants; the first call after any of them changed (version counter: in-place
        update, optimizer step, load_state_dict; data pointer: `p.data = t`) switches this variant for good to
        code compiled by reference (or, tiered, to the default backend)."""
        caps = [t for _, t in self.graph.captures]
        # Read before compiling: an update during a (background) compile counts as a change.
        versions, ptrs = sum(map(_version, caps)), list(map(_data_ptr, caps))
        try:
            frozen = self._compile_by_reference(args, _FROZEN_CONFIG)
        except GraphLoweringError:  # freezing is an optimisation: the by-reference compile decides
            return self._compile_by_reference(args)
        runner, cell = self, [frozen]

        def guarded(*a: Any) -> Any:
            fn = cell[0]
            if fn is frozen and (sum(map(_version, caps)) != versions or list(map(_data_ptr, caps)) != ptrs):
                fn = cell[0] = runner.default if not runner.may_compile else runner._compile_by_reference(a)
            return fn(*a)

        guarded.thawed = lambda: cell[0] is not frozen  # for tests
        return guarded

    def _compile_by_reference(self, args: tuple, config: dict[str, Any] | None = None) -> Callable:
        from torch._inductor import config as inductor_config
        from torch._inductor.compile_fx import compile_fx

        try:
            # One compile at a time in this process: inductor's lazy set-up (pattern registration) is not
            # thread-safe, and jit_compile="auto" compiles in background threads.
            known = {k: v for k, v in (config or {}).items() if hasattr(inductor_config, k)}
            with _COMPILE_LOCK, torch.set_grad_enabled(self.grad), \
                    inductor_config.patch(known), warnings.catch_warnings():  # grad False: self-differentiating
                # inductor's GEMM autotuning reads `Tensor.storage()`, which warns on every compile.
                warnings.filterwarnings("ignore", "TypedStorage is deprecated", UserWarning)
                compiled = compile_fx(self.gm, list(args))
        except Exception as e:  # noqa: BLE001 - inductor's errors are many; all mean "cannot compile this"
            msg = str(e).strip()
            raise GraphLoweringError(f"inductor could not compile {self.what}: {type(e).__name__}: "
                                     f"{msg.splitlines()[0] if msg else ''}\nFix: {_FIX}.") from e
        return compiled  # aot_module_simplified's forward(*args), whatever its `_boxed_call` says


class Tiered:
    """jit_compile="auto": run on the default backend, compile with inductor once the function is hot.

    `entry` (the function the call path runs at first) counts calls and runs the default backend's
    function. At the `threshold`-th call it hands the call path the default function itself (no
    counting any more), copies that call's tensor arguments (examples of the same layout,
    requires_grad and values, never the caller's tensors) and starts one daemon thread that:

    1. compiles the graph with inductor for the examples' layout and requires_grad pattern; a graph
       split at control flow (`regions.split`) runs once on the examples instead, compiling the regions
       they reach (regions reached only by other arguments stay on their Python code);
    2. times the compiled and the default function on the examples (interleaved rounds, medians, under
       the trace's grad mode) and `install`s the compiled entry only when it is faster (one attribute
       store: a concurrent call runs one or the other). A graph with side effects (Variable updates,
       optimizer steps, prints, random ops) is not run on the examples: it is not timed (the compiled
       entry is installed), and one with control flow stays on the default backend (`on_fail`).

    No call waits for the compile. A graph inductor cannot take, or a compile error, leaves the default
    backend in place and calls `on_fail(reason)` (one warning per Function). The compiled entry runs the
    default function for arguments of another layout or requires_grad pattern than the compiled one
    (never compiling again on the call path). `status`: "default" (counting) -> "compiling" ->
    "compiled" | "kept default" (the compiled code timed slower) | "failed".
    """

    _ROUNDS = 7  # timing rounds, each `number` calls of either function (about _BATCH_S s of the default's)
    _BATCH_S = 1e-3

    def __init__(self, graph: Graph, default: Callable[..., Any], *, return_tuple: bool, grad: bool,
                 threshold: int, install: Callable[[Callable[..., Any]], None], on_fail: _Fallback,
                 freeze: bool = False) -> None:
        self.graph = graph
        self.freeze = freeze
        self.default = default
        self.return_tuple = return_tuple
        self.grad = grad
        self.threshold = threshold
        self.install = install
        self.on_fail = on_fail
        self.status = "default"
        self.timings: tuple[float, float] | None = None  # (default, compiled) median s per call, once timed
        self.calls = 0
        self.thread: threading.Thread | None = None
        self.done = threading.Event()
        self._lock = threading.Lock()

    def entry(self) -> Callable[..., Any]:
        tier, default, threshold = self, self.default, self.threshold

        def counting(*args: Any) -> Any:
            n = tier.calls = tier.calls + 1
            if n >= threshold:
                tier.start(args)
            return default(*args)

        return counting

    def start(self, args: tuple) -> None:
        """Begin the background compile for arguments like `args` (once; later calls return at once)."""
        with self._lock:
            if self.thread is not None:
                return
            self.install(self.default)  # stop counting
            self.status = "compiling"
            self.thread = threading.Thread(target=self._compile, args=(_examples(args),), daemon=True,
                                           name=f"ta-jit-{self.graph.name}")
            self.thread.start()

    def _compile(self, example: list[Any]) -> None:
        try:
            effect = _side_effect(self.graph)
            try:
                entry = self._compiled(tuple(example), effect)
                faster = effect is not None or self._faster(entry, tuple(example))
            except Exception as e:  # noqa: BLE001 - any failure: stay on the default backend
                self.status = "failed"
                why = str(e).strip() or type(e).__name__
                self.on_fail(why.split("\nFix:")[0])
                return
            if faster:
                self.install(entry)
            self.status = "compiled" if faster else "kept default"
        finally:
            self.done.set()

    def _compiled(self, example: tuple, effect: Node | None) -> Callable[..., Any]:
        """The compiled entry, its code compiled for `example` (which it may run once)."""
        try:
            gm, slots, values_graph = _lower(self.graph)
        except GraphLoweringError:  # control flow: compile the regions the examples reach, by running them
            if effect is not None:
                loc = effect.origin
                raise GraphLoweringError(
                    f"graph {self.graph.name} has control flow, so its regions are compiled by running it once on "
                    f"a copy of the arguments, which its side effect %{effect.name} ({effect.op.name}"
                    f"{f' at {loc}' if loc else ''}) rules out; jit_compile=True compiles it at its first call"
                ) from None
            fn, runners = _compile_split(self.graph, self.return_tuple, self.grad, tiered=True, freeze=self.freeze)
            for r in runners:
                r.may_compile = True
            with torch.set_grad_enabled(self.grad):
                fn(*example)
            for r in runners:
                r.may_compile = False
            return fn
        runner = _Runner(values_graph, gm, slots, self.return_tuple, self.grad, f"graph {self.graph.name}",
                         default=torch_codegen.compile_graph(values_graph, return_tuple=True), freeze=self.freeze)
        runner.variants[runner.key(example)] = runner.compile(example)
        runner.may_compile = False
        return runner.entry()

    def _faster(self, compiled: Callable[..., Any], example: tuple) -> bool:
        """Whether `compiled` runs `example` faster than the default function (medians of interleaved rounds)."""
        default = self.default
        with torch.set_grad_enabled(self.grad):
            compiled(*example)
            t0 = time.perf_counter()
            default(*example)
            number = max(1, min(1000, int(self._BATCH_S / max(time.perf_counter() - t0, 1e-7))))
            times: tuple[list[float], list[float]] = ([], [])
            for _ in range(self._ROUNDS):
                for fn, out in ((default, times[0]), (compiled, times[1])):
                    t0 = time.perf_counter()
                    for _ in range(number):
                        fn(*example)
                    out.append((time.perf_counter() - t0) / number)
        self.timings = (statistics.median(times[0]), statistics.median(times[1]))
        return self.timings[1] < self.timings[0]

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for a started compile; True when the inductor code is in use."""
        if self.thread is not None:
            self.done.wait(timeout)
        return self.status == "compiled"


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


_HARMLESS = (lists.list_append, lists.list_pop)  # stateful only towards lists the graph itself creates


def _side_effect(graph: Graph) -> Node | None:
    """A node whose effect outlives a call (a state update, a print, a random op), or None."""
    for node in graph.nodes:
        if node.op.kind is OpKind.CONTROL:
            hit = next((h for h in map(_side_effect, node.subgraphs) if h is not None), None)
            if hit is not None:
                return hit
        elif node.stateful and node.op.target not in _HARMLESS:
            return node
    return None


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


def _first(out: Any) -> Any:
    return out[0]


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
