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

Specialisation (checked per call, cheaply):
- requires_grad of the inputs, when the graph was traced with grad enabled:
  AOT autograd builds a training graph only for inputs that require grad;
  an input that starts requiring grad gets a new compile (once per pattern).
- sizes and strides: inductor's code asserts them; an input of another
  layout (or a `None` dim taking a new size) gets a new compile.
Captured tensors are read by reference at every call (buffers and parameters
of the lowered module); their requires_grad is taken at compile time.

A graph that runs autograd itself (a GradientTape + optimizer training step)
is compiled as an inference graph whose body re-enables grad: its backward is
traced into the compiled code, and its outputs come back without autograd
history (nothing outside the step can differentiate through them).

Compiled code is cached on disk by inductor (FX graph cache, AOT autograd
cache, under `TORCHINDUCTOR_CACHE_DIR`), so a new process compiling the same
graph is much faster than the first (benchmarks/bench_jit.py measures both).
"""

from __future__ import annotations

import threading
from typing import Any, Callable

import torch

from ..errors import GraphLoweringError
from ..graph.graph import Graph, Value
from . import torch_codegen

_Fallback = Callable[[str], None]
_COMPILE_LOCK = threading.Lock()


def compile_graph(graph: Graph, *, return_tuple: bool, grad: bool, fallback: _Fallback | None = None
                  ) -> Callable[..., Any]:
    """A function running `graph` compiled with inductor, taking the graph inputs positionally.

    Args:
        graph: the finished graph.
        return_tuple: return a tuple of the outputs (else the single output).
        grad: the grad mode the graph was traced under (and is compiled under).
        fallback: for jit_compile="auto": called with the reason when inductor cannot
            take the graph, which then runs on the default backend instead.

    Raises:
        GraphLoweringError: the graph cannot be lowered or compiled (without `fallback`).
    """
    try:
        gm, slots, values_graph = _lower(graph)
    except GraphLoweringError as e:
        if fallback is None:
            raise
        fallback(str(e))
        return torch_codegen.compile_graph(graph, return_tuple=return_tuple)
    graph.python_source = gm.code
    return _Runner(values_graph, gm, slots, return_tuple, grad, fallback).entry()


def _lower(graph: Graph) -> tuple[torch.fx.GraphModule, list[Any], Graph]:
    """The fx module of `graph` returning only its Value outputs, how to rebuild the full outputs, and
    the graph with only those outputs (for a fallback to the default backend).

    `slots` has one entry per graph output: an int (index into the module's outputs) or
    `(constant,)` for a Python constant output (None, a string...).
    """
    from dataclasses import replace

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


class _Runner:
    """Owns the compiled variants of one graph; `entry()` is the per-call function."""

    def __init__(self, graph: Graph, gm: torch.fx.GraphModule, slots: list[Any], return_tuple: bool, grad: bool,
                 fallback: _Fallback | None, default: Callable | None = None) -> None:
        self.graph = graph
        self.trace_grad = grad
        if _computes_gradients(graph):
            # A training step (GradientTape + optimizer): autograd runs inside the graph. AOT autograd would
            # differentiate it again, so it is compiled as an inference graph whose body turns grad mode
            # back on; its outputs come back without autograd history.
            gm, grad = _self_differentiating(gm, grad), False
        self.gm = gm
        self.grad = grad
        self.fallback = fallback
        self.variants: dict[tuple, Callable] = {}
        self.lock = threading.Lock()
        self.eager: Callable | None = None  # the default backend, once "auto" fell back
        # jit_compile="auto" (tiered): the default backend's function, run for arguments no variant was
        # compiled for; select() then never compiles on the call path.
        self.default = default
        self.post = _post(slots, return_tuple)

    def entry(self) -> Callable[..., Any]:
        """The per-call function; the common cases are kept to a few attribute reads (see P2j)."""
        runner, post, check_grad = self, self.post, self.grad
        first = post is _first
        one = len(self.graph.inputs) == 1
        state: list[Any] = [None, None]  # (requires_grad pattern, compiled fn) in use

        def call(*args: Any) -> Any:
            fn = state[1]
            if fn is None or (check_grad and (args[0].requires_grad if one else _grad_pattern(args)) != state[0]):
                fn = runner.select(args, state)
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
        """The variant compiled for these arguments (compiling it now if needed); made the current one."""
        if self.eager is not None:
            fn = self.eager
        else:
            key = self.key(args)
            with self.lock:
                fn = self.variants.get(key)
                if fn is None:
                    if self.default is not None:
                        return self.default  # tiered: not made current, the compiled variant stays first
                    fn = self.variants[key] = self.compile(args)
        state[0] = (args[0].requires_grad if len(args) == 1 else _grad_pattern(args)) if self.grad else None
        state[1] = fn
        return fn

    def compile(self, args: tuple) -> Callable:
        from torch._inductor.compile_fx import compile_fx

        try:
            # One compile at a time in this process: inductor's lazy set-up (pattern registration) is not
            # thread-safe, and jit_compile="auto" compiles in background threads.
            with _COMPILE_LOCK, torch.set_grad_enabled(self.grad):  # False for a self-differentiating graph
                compiled = compile_fx(self.gm, list(args))
        except Exception as e:  # noqa: BLE001 - inductor's errors are many; all mean "cannot compile this"
            why = f"inductor could not compile graph {self.graph.name}: {type(e).__name__}: " \
                  f"{str(e).strip().splitlines()[0] if str(e).strip() else ''}"
            if self.fallback is None:
                raise GraphLoweringError(f"{why}\nFix: use jit_compile='auto' to fall back to the default backend, "
                                         f"or jit_compile=False.") from e
            self.fallback(why)
            self.eager = torch_codegen.compile_graph(self.graph, return_tuple=True)
            return self.eager
        return compiled  # aot_module_simplified's forward(*args), whatever its `_boxed_call` says


class Tiered:
    """jit_compile="auto": run on the default backend, compile with inductor once the function is hot.

    `entry` (the function the call path runs at first) counts calls and runs the default backend's
    function. At the `threshold`-th call it hands the call path the default function itself (no
    counting any more) and starts one daemon thread that lowers the graph and compiles it with inductor
    for the layout and requires_grad pattern of that call's arguments; when the compile is done,
    `install` swaps the compiled entry in (one attribute store: a concurrent call runs one or the
    other). No call waits for the compile. A graph inductor cannot take, or a compile error, leaves
    the default backend in place and calls `on_fail(reason)` (one warning per Function).
    The compiled entry runs the default function for arguments of another layout or requires_grad
    pattern than the compiled one (never compiling again on the call path).
    """

    def __init__(self, graph: Graph, default: Callable[..., Any], *, return_tuple: bool, grad: bool,
                 threshold: int, install: Callable[[Callable[..., Any]], None], on_fail: _Fallback) -> None:
        self.graph = graph
        self.default = default
        self.return_tuple = return_tuple
        self.grad = grad
        self.threshold = threshold
        self.install = install
        self.on_fail = on_fail
        self.status = "default"  # -> "compiling" -> "compiled" | "failed"
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
            # Metadata-only examples: the compile must not keep (or read) the caller's tensors.
            example = [torch.empty_strided(a.size(), a.stride(), dtype=a.dtype, device=a.device)
                       .requires_grad_(a.requires_grad) if isinstance(a, torch.Tensor) else a for a in args]
            self.status = "compiling"
            self.thread = threading.Thread(target=self._compile, args=(example,), daemon=True,
                                           name=f"ta-jit-{self.graph.name}")
            self.thread.start()

    def _compile(self, example: list[Any]) -> None:
        try:
            try:
                gm, slots, values_graph = _lower(self.graph)
                runner = _Runner(values_graph, gm, slots, self.return_tuple, self.grad, None, default=self.default)
                runner.variants[runner.key(tuple(example))] = runner.compile(tuple(example))
                entry = runner.entry()
            except Exception as e:  # noqa: BLE001 - any failure: stay on the default backend
                self.status = "failed"
                why = str(e).strip() or type(e).__name__
                self.on_fail(why.split("\nFix:")[0])
                return
            self.install(entry)
            self.status = "compiled"
        finally:
            self.done.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for a started compile; True when the inductor code is in use."""
        if self.thread is not None:
            self.done.wait(timeout)
        return self.status == "compiled"


_AUTOGRAD_ENTRY_POINTS = (torch.autograd.grad, torch.autograd.backward, torch.Tensor.backward)


def _computes_gradients(graph: Graph) -> bool:
    """Whether the graph itself runs autograd (torch.autograd.grad, backward, a GradientTape's gradient)."""
    for node in graph.nodes:
        t = node.op.target
        if t in _AUTOGRAD_ENTRY_POINTS or (getattr(t, "__module__", None) == "torch_autograph.tape"
                                           and getattr(t, "__name__", "").startswith("compute_")):
            return True
        if any(_computes_gradients(sub) for sub in node.subgraphs):
            return True
    return False


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
