"""`cuda_graphs=True`: capture a concrete function's CUDA work once per input layout, then replay it.

    f = ta.function(step, cuda_graphs=True)                    # on the default backend
    f = ta.function(step, cuda_graphs=True, jit_compile=True)  # on inductor's code

`wrap` puts a `GraphedFunction` around the callable a backend made for one
ConcreteFunction. A concrete function whose shapes hold None dims sees several
sizes, so captures are kept per input layout (shapes, strides, dtypes, devices;
at most `MAX_LAYOUTS`, least recently used dropped). The first call with a new
layout:

1. copies the arguments into static input buffers (same strides where the
   argument is dense), runs the function once for real on a side stream (the
   warm-up: lazy initialisation, cuBLAS workspaces, inductor's compile and
   autotuning happen outside the capture) and returns that run's results;
2. captures the function into a `torch.cuda.CUDAGraph` (its own memory pool)
   on the same side stream, with `torch.cuda.graph`.

Every later call with that layout copies the arguments into the static
buffers, replays the graph, copies back the arguments the function mutates
in place (found by their version counters during the warm-up) and returns
clones of the static outputs: outputs are safe to keep, the next replay
cannot overwrite them. An output that is an argument or a captured tensor
comes back as a copy, not as that tensor.

Captured tensors (parameters, buffers, Variables) are read by reference: the
graph reads their memory, so an optimizer's in-place update is seen by the next
replay. Rebinding a module attribute to a new tensor does not retrace (like any
Python attribute, the trace froze which tensor it reads) and the graph keeps
reading the old one, exactly as the default backend does. Swapping a captured
tensor's storage (`p.data = ...`, `module.half()`) is noticed: each replay
compares the captures' data pointers (and the versions of CPU captures, whose
values a capture reads once) with those its graph was captured with, and
captures again when they differ.

A capture costs milliseconds and synchronises the device (`torch.cuda.graph`
does): once per layout. Each captured layout holds its static buffers and a
private memory pool of intermediates.

Random ops: capture registers the default CUDA generator (and any generator
passed as `generator=`), so every replay draws fresh numbers and advances the
generator's offset, like eager; `torch.manual_seed` makes replays reproducible.

What runs without a graph, with one RuntimeWarning per Function:
- a graph with no CUDA work (inputs and captures on the CPU): nothing to
  capture, the backend's code runs as is;
- gradients needed by the caller (grad mode on and an argument or captured
  tensor requires grad): a replay records no autograd history, so the call
  runs uncaptured. Call under `torch.no_grad()` for inference. A graph that
  computes its own gradients (a `ta.GradientTape` training step) is captured;
  its outputs come back without autograd history, as with jit_compile=True.

What raises `GraphLoweringError` naming the node and the user's line (found by
inspecting the graph before any capture, see `find_obstacles`): a GPU->CPU
sync (`if`/`while`/`assert` on a tensor, `.item()`, `int(t)`), Python run at
every call (`ta.print`, `ta.py_function`, staged `optimizer.step()`),
`.backward()` (accumulates into `.grad`), ops whose output size depends on
data (`nonzero`, `x[mask]`, `unique`), copies between the CPU and the GPU, and
CPU random or in-place ops in a graph that runs on the GPU. A failure of the
capture itself (an op torch cannot capture) raises `GraphLoweringError` too.

Calls are serialised per ConcreteFunction (a lock around copy-in, replay and
copy-out); calls from threads using different CUDA streams at once are not
supported. Calling the function inside a capture of your own runs it uncaptured
(its kernels join your graph).
"""

from __future__ import annotations

import threading
import warnings
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Protocol

import torch

from ..errors import GraphLoweringError
from ..graph import Graph, ValueKind, iter_leaves, map_nest, walk_nodes
from . import regions, torch_codegen
from .compiled import Compiled, CompileOptions
from .cuda_obstacles import find_obstacles, graph_devices, raise_obstacles

MAX_LAYOUTS = 8  # captured layouts kept per ConcreteFunction; each holds a memory pool of intermediates
_CAPTURE_LOCK = threading.RLock()  # torch allows one capture at a time per process
_Tensor = torch.Tensor


# ----- the capture seam -----------------------------------------------------------------------
class Capturer(Protocol):
    """Runs the warm-up and the capture. `CudaCapturer` is the real one; a test passes a stand-in to
    exercise the bookkeeping of `GraphedFunction` without a GPU.

    `device_type` is the device whose work is captured; tensors elsewhere are on the host.
    """

    device_type: str

    def is_capturing(self) -> bool: ...

    def warm_up(self, fn: Callable[..., Any], args: list[Any], device: torch.device) -> Any:
        """Run `fn(*args)` for real, where a later capture will not trip over lazy initialisation."""
        ...

    def capture(self, fn: Callable[..., Any], args: list[Any], device: torch.device,
                generators: list[torch.Generator]) -> tuple[Callable[[], None], Any]:
        """Capture `fn(*args)`: (replay, the static outputs that each replay overwrites)."""
        ...

    def release(self) -> None:
        """Called before captured graphs are dropped: wait until none can still be replaying."""
        ...


class CudaCapturer:
    """`torch.cuda.graph` capture; warm-up and capture on one side stream per device."""

    device_type = "cuda"

    def __init__(self) -> None:
        self._streams: dict[torch.device, torch.cuda.Stream] = {}

    def is_capturing(self) -> bool:
        return torch.cuda.is_initialized() and torch.cuda.is_current_stream_capturing()

    def _stream(self, device: torch.device) -> torch.cuda.Stream:
        s = self._streams.get(device)
        if s is None:
            s = self._streams[device] = torch.cuda.Stream(device=device)
        return s

    def warm_up(self, fn: Callable[..., Any], args: list[Any], device: torch.device) -> Any:
        current = torch.cuda.current_stream(device)
        side = self._stream(device)
        side.wait_stream(current)  # the copies into the static buffers come first
        with torch.cuda.device(device), torch.cuda.stream(side):
            out = fn(*args)
        current.wait_stream(side)
        for t in _flat_tensors(out):
            if t.is_cuda:
                t.record_stream(current)  # allocated on the side stream, read (cloned) on the caller's
        return out

    def capture(self, fn: Callable[..., Any], args: list[Any], device: torch.device,
                generators: list[torch.Generator]) -> tuple[Callable[[], None], Any]:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.device(device):
            for g in generators:
                graph.register_generator_state(g)
            # The warm-up's stream: cuBLAS handles and workspaces made there are reused, not created mid-capture.
            caller = torch.cuda.current_stream(device)
            try:
                with torch.cuda.graph(graph, stream=self._stream(device)):
                    out = fn(*args)
            finally:
                # torch.cuda.graph's exit ends the capture before it restores the stream, so a failed capture
                # would leave this thread on the side stream.
                torch.cuda.set_stream(caller)
        return graph.replay, out

    def release(self) -> None:
        torch.cuda.synchronize()


# ----- per-layout capture and replay ---------------------------------------------------------------
class FallbackWarnings:
    """The warnings of one Function: each kind ("cpu", "grad", "recapture") is given once."""

    def __init__(self, function_name: str, emit: Callable[[Warning], None] | None = None) -> None:
        self.function_name = function_name
        self._emit = emit  # how the warning reaches the user (the function layer points it at their line)
        self._given: set[str] = set()
        self._lock = threading.Lock()

    def warn(self, kind: str, text: str) -> None:
        with self._lock:
            if kind in self._given:
                return
            self._given.add(kind)
        warning = RuntimeWarning(f"ta.function {self.function_name}: {text}")
        if self._emit is not None:
            self._emit(warning)
        else:
            warnings.warn(warning, stacklevel=3)


@dataclass
class _Layout:
    """One captured graph: its static arguments and outputs."""

    static: list[Any]  # the arguments the graph reads: tensors are buffers owned here
    tensors: list[int]  # positions of the tensor arguments (copied in at every call)
    mutated: list[int]  # positions of the arguments the function updates in place (copied back)
    replay: Callable[[], None]
    outputs: Any  # the static outputs (detached), overwritten by every replay
    captured: list[tuple]  # the captured tensors' storage (and CPU values) the graph was captured with

    def run(self, args: tuple) -> Any:
        static = self.static
        with torch.no_grad():  # the static buffers of a self-differentiating graph are leaves requiring grad
            for i in self.tensors:
                static[i].copy_(args[i])
        self.replay()
        if self.mutated:
            with torch.no_grad():
                for i in self.mutated:
                    args[i].copy_(static[i])
        return _copies(self.outputs)


_HOST_LAYOUT = None  # a layout with no work on the capture device: runs uncaptured


class GraphedFunction:
    """Captures `fn` (one ConcreteFunction's backend code) per input layout and replays it.

    Args:
        graph: the graph `fn` runs (for inspection, captures and messages).
        fn: the backend's callable, taking the graph inputs positionally.
        grad: the grad mode the graph was traced under.
        warnings: the Function's warnings (each kind given once per Function).
        capturer: `CudaCapturer()` unless a test passes a stand-in.
    """

    def __init__(self, graph: Graph, fn: Callable[..., Any], *, grad: bool, warnings: FallbackWarnings,
                 capturer: Capturer | None = None) -> None:
        self.graph = graph
        self.fn = fn
        self.warnings = warnings
        self.capturer = capturer if capturer is not None else CudaCapturer()
        # A graph running its own autograd (a GradientTape step) is captured whole; any other graph traced
        # with grad enabled runs uncaptured when an argument or a capture requires grad.
        self.check_grad = grad and not regions.computes_gradients(graph)
        self.layouts: OrderedDict[tuple, _Layout | None] = OrderedDict()
        self.captures_made = 0  # captures done so far (tests and benchmarks read it)
        self._generators: list[torch.Generator] | None = None
        self._storage_changes = 0
        self._lock = threading.RLock()

    # ----- the call path ---------------------------------------------------------------------
    def __call__(self, *args: Any) -> Any:
        if self.check_grad and torch.is_grad_enabled():
            why = self._grad_needed(args)
            if why is not None:
                self.warnings.warn("grad", f"cuda_graphs=True runs without a CUDA graph while gradients are "
                                           f"needed ({why}): a replay records no autograd history. Call it "
                                           f"under torch.no_grad() for inference; a training step that computes "
                                           f"its gradients inside the function (ta.GradientTape) is captured.")
                return self._uncaptured(args)
        if self.capturer.is_capturing():
            return self._uncaptured(args)  # inside the caller's own capture: our kernels join it
        key = _layout_key(args)
        with self._lock:
            layout = self.layouts.get(key, _MISSING)
            if layout is not _HOST_LAYOUT:
                if layout is _MISSING:
                    return self._first_call(key, args)
                if self.graph.captures and self._capture_state() != layout.captured:
                    self._storage_changed()
                    return self._first_call(key, args)
                self.layouts.move_to_end(key)
                return layout.run(args)
        return self._uncaptured(args)

    def _uncaptured(self, args: tuple) -> Any:
        try:
            return self.fn(*args)
        except Exception as e:
            torch_codegen.add_runtime_error_note(e, self.fn)
            raise

    def _grad_needed(self, args: tuple) -> str | None:
        for v, a in zip(self.graph.inputs, args):
            if isinstance(a, _Tensor) and a.requires_grad:
                return f"argument %{v.name} requires grad"
        for v, t in self.graph.captures:
            if t.requires_grad:
                return f"captured tensor %{v.name} requires grad"
        return None

    # ----- a new layout: warm up, capture ------------------------------------------------------
    def _first_call(self, key: tuple, args: tuple) -> Any:
        device = self._admit(args)
        if device is None:
            self._remember(key, _HOST_LAYOUT)
            self.warnings.warn("cpu", _nothing_to_capture(self.capturer.device_type))
            return self._uncaptured(args)
        if self._generators is None:
            self._generators = _generators(self.graph, self.capturer.device_type)
        # Dense arguments keep their strides (inductor's code asserts them); requires_grad is kept for a
        # graph that differentiates its inputs itself. Not inference tensors: the same ConcreteFunction
        # serves torch.no_grad() calls, which could not copy into them.
        with torch.inference_mode(False):
            static = [torch.empty_like(a).requires_grad_(a.requires_grad) if isinstance(a, _Tensor) else a
                      for a in args]
        tensors = [i for i, a in enumerate(args) if isinstance(a, _Tensor)]
        with torch.no_grad():
            for i in tensors:
                static[i].copy_(args[i])
        versions = [static[i]._version for i in tensors]
        with _CAPTURE_LOCK:
            try:
                out = self.capturer.warm_up(self.fn, static, device)
            except Exception as e:
                torch_codegen.add_runtime_error_note(e, self.fn)
                raise
            mutated = [i for i, v in zip(tensors, versions) if static[i]._version != v]
            with torch.no_grad():
                for i in mutated:
                    args[i].copy_(static[i])
            result = _copies(out)  # this call's result: the warm-up ran it for real
            del out
            try:
                replay, outputs = self.capturer.capture(self.fn, static, device, self._generators)
            except Exception as e:
                raise self._capture_error(e, args) from e
        self.captures_made += 1
        state = self._capture_state()
        if any(l is not _HOST_LAYOUT and l.captured != state for l in self.layouts.values()):
            self._storage_changed()  # the warm-up gave a captured tensor new storage (a Variable changing shape)
        self._remember(key, _Layout(static, tensors, mutated, replay, _detached(outputs), state))
        return result

    def _remember(self, key: tuple, layout: _Layout | None) -> None:
        self.layouts[key] = layout
        if len(self.layouts) > MAX_LAYOUTS:
            self.capturer.release()  # the evicted graph may still be replaying
            self.layouts.popitem(last=False)

    def _admit(self, args: tuple) -> torch.device | None:
        """The device to capture on, None when nothing runs there; raises for what cannot be captured."""
        dt = self.capturer.device_type
        arg_devices = [a.device if isinstance(a, _Tensor) else None for a in args]
        candidates = arg_devices + [t.device for t in self.graph.capture_tensors]
        candidates += [v.device for n in walk_nodes(self.graph) for v in n.outputs if v.kind is ValueKind.TENSOR]
        device = next((d for d in candidates if d is not None and d.type == dt), None)
        if device is None:
            return None
        if dt == "cuda":
            raise_obstacles(self.graph, find_obstacles(self.graph, arg_devices))
            if device.index is None:
                device = torch.device("cuda", torch.cuda.current_device())
        return device

    def _capture_error(self, e: BaseException, args: tuple) -> GraphLoweringError:
        # A capture broken by an op makes `capture_end` fail too; its context is the op's error.
        first = e.__context__ if e.__context__ is not None and not e.__suppress_context__ else e
        note = torch_codegen.runtime_error_note(first, self.fn)
        layout = ", ".join(f"{str(a.dtype).replace('torch.', '')}{list(a.shape)} {a.device}"
                           if isinstance(a, _Tensor) else repr(a) for a in args)
        text = (f"cuda_graphs=True: torch could not capture graph {self.graph.name} for arguments ({layout}): "
                f"{type(first).__name__}: {_first_line(first)}")
        if first is not e:
            text += f"\n  (then {type(e).__name__}: {_first_line(e)})"
        if note:
            text += "\n" + note
        return GraphLoweringError(text + "\nFix: find the op that synchronises with the host (run the function "
                                         "eagerly under torch.cuda.set_sync_debug_mode('error') to have torch name "
                                         "it) and move it out of the function; or pass cuda_graphs=False.")

    # ----- captured tensors whose storage changed -----------------------------------------------
    def _capture_state(self) -> list[tuple]:
        dt = self.capturer.device_type
        # Inference tensors have no version counter (and cannot be updated in place outside inference mode).
        return [(t.data_ptr(), None if t.device.type == dt or t.is_inference() else t._version)
                for t in self.graph.capture_tensors]

    def _storage_changed(self) -> None:
        """A captured tensor got new storage (`p.data = ...`) or a CPU capture a new value: every graph is stale."""
        self.capturer.release()
        self.layouts.clear()
        self._storage_changes += 1
        if self._storage_changes == 3:
            self.warnings.warn("recapture", "cuda_graphs=True captured its graphs again 3 times because captured "
                                            "tensors changed storage (p.data = ..., module.to(...)) or CPU captures "
                                            "changed value; keep them fixed, or each such call captures again.")


_MISSING = object()


def _layout_key(args: tuple) -> tuple:
    return tuple((a.shape, a.stride(), a.dtype, a.device, a.requires_grad) if isinstance(a, _Tensor) else (type(a), a)
                 for a in args)


def _copies(out: Any) -> Any:
    """The outputs as new tensors with no autograd history: safe to keep across replays."""
    if isinstance(out, _Tensor):
        return out.detach().clone()
    if type(out) is tuple:
        return tuple([_copies(o) for o in out])
    if type(out) is list:
        return [_copies(o) for o in out]
    return out


def _detached(out: Any) -> Any:
    """Static outputs without the capture's autograd graph (which would keep its tensors alive)."""
    return map_nest(lambda o: o.detach() if isinstance(o, _Tensor) else o, out)


def _flat_tensors(out: Any) -> Iterator[_Tensor]:
    return (o for o in iter_leaves(out) if isinstance(o, _Tensor))


def _generators(graph: Graph, device_type: str) -> list[torch.Generator]:
    """Generators passed as `generator=` on the capture device; the default one is registered by capture."""
    found: list[torch.Generator] = []
    defaults = tuple(torch.cuda.default_generators) if device_type == "cuda" else ()
    for node in walk_nodes(graph):
        for x in iter_leaves((node.args, node.kwargs)):
            if (isinstance(x, torch.Generator) and x.device.type == device_type
                    and not any(x is g for g in found + list(defaults))):
                found.append(x)
    return found


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return text.splitlines()[0] if text else ""


def _nothing_to_capture(device_type: str) -> str:
    return (f"cuda_graphs=True has nothing to capture: the graph runs on the CPU (its arguments and captured "
            f"tensors are not on a {device_type} device), so it runs without a CUDA graph. Move the arguments "
            f"and the model to a CUDA device to capture it.")


# ----- entry point (function.py) --------------------------------------------------------------------
def wrap(graph: Graph, fn: Callable[..., Any], *, grad: bool, warnings: FallbackWarnings,
         capturer: Capturer | None = None) -> Callable[..., Any]:
    """`fn` (one ConcreteFunction's backend callable) with its CUDA work captured and replayed per layout.

    Returns `fn` itself, after one "nothing to capture" warning per Function, for a graph whose traced
    tensors are all on the CPU.

    Raises:
        GraphLoweringError: a graph traced on a CUDA device holds something a capture cannot (see
            `find_obstacles`); the message names the node and the user's line.
    """
    cap = capturer if capturer is not None else CudaCapturer()
    kinds = graph_devices(graph)
    if cap.device_type not in kinds and "unknown" not in kinds:
        warnings.warn("cpu", _nothing_to_capture(cap.device_type))
        return fn
    if cap.device_type == "cuda" and "cuda" in kinds:
        raise_obstacles(graph, find_obstacles(graph))  # before any compile or capture
    return GraphedFunction(graph, fn, grad=grad, warnings=warnings, capturer=cap).__call__


class CudaGraphsBackend:
    """The `Backend` of cuda_graphs=True: another backend's code, captured into CUDA graphs and replayed."""

    def __init__(self, inner: Any, warnings: FallbackWarnings, capturer: Capturer | None = None) -> None:
        self.inner = inner
        self.warnings = warnings
        self.capturer = capturer

    def compile(self, graph: Graph, options: CompileOptions) -> Compiled:
        inner = self.inner.compile(graph, options)
        fn = wrap(graph, inner.fn, grad=options.grad, warnings=self.warnings, capturer=self.capturer)
        return Compiled(fn, inner.status, default_fn=inner.default_fn)


def graphed(fn: Callable[..., Any]) -> GraphedFunction | None:
    """The GraphedFunction behind a ConcreteFunction's callable (`cf._fn`), if `wrap` made one."""
    owner = getattr(fn, "__self__", None)
    return owner if isinstance(owner, GraphedFunction) else None
