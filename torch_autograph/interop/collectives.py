"""torch.distributed collectives called while tracing: nodes that communicate at every call, in program order.

A collective is communication with the other processes, not a computation:
running it once, at trace time, would leave every later call of the graph
unreduced on this process and the other processes waiting. So each call is
recorded as a node that makes the same call when the graph runs, on the same
process group, with the same arguments::

    dist.all_reduce(g, op=dist.ReduceOp.AVG)    ->   %g written in place by torch.distributed.all_reduce
    y = funcol.all_reduce(x, "sum", group)      ->   %y = _c10d_functional.all_reduce(%x, 'sum', '0'), waited

- The in-place collectives (`all_reduce`, `broadcast`, `all_gather_into_tensor`,
  `reduce_scatter_tensor`, `all_to_all_single`, `send`/`recv`, ...) reach the
  tracer through `__torch_function__` (torch.distributed hands them to modes
  and tensor subclasses); `barrier` from converted code (staging). Each node
  has `Effect.RUNS_PYTHON` (never pruned, merged or moved, never inside a
  `jit_compile` region) and writes the tensors the collective writes.
- `async_op=True` returns a `GraphWork`: its `wait()` is a node too, so the
  collective starts and is waited for where the program says, at every call.
- Functional collectives (`torch.distributed._functional_collectives`, the
  `_c10d_functional` ops) are recorded with the metadata their meta kernels
  give; the node waits for the result before returning it (eager returns an
  `AsyncCollectiveTensor` that waits at first use: the values are the same).
- Anything else that communicates from Python while tracing (`dist.barrier()`
  in code AutoGraph did not convert, `all_gather_object` there) reaches a
  process group method at trace time: this module's `PATCHES` (on while a
  trace runs) make that an error naming the method and the user's line instead of a step that
  communicates only once. (Collectives torch makes in C++, such as the
  parameter broadcast of DDP's constructor, do not pass through Python.)
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Callable, Mapping

import torch

from ..errors import DistributedTracingError, InvalidArgumentError
from ..graph import Effect, Op, OpKind
from ..tracing import current, record_op, record_with_meta, user_location
from .patches import Patch

_dist: Any = torch.distributed if torch.distributed.is_available() else None


@dataclass(frozen=True)
class CollectiveSpec:
    """What a torch.distributed function writes: `first` (its first argument, a tensor or a list of them) or
    `any` (another argument: every tensor it reads counts as written); `work`: it always returns a Work."""

    writes: str = "first"  # "first", "any" or "none"
    work: bool = False


_SPECS: dict[str, CollectiveSpec] = {
    "all_reduce": CollectiveSpec(), "broadcast": CollectiveSpec(), "reduce": CollectiveSpec(),
    "all_reduce_coalesced": CollectiveSpec(), "all_gather": CollectiveSpec(),
    "all_gather_single": CollectiveSpec(), "all_gather_into_tensor": CollectiveSpec(),
    "_all_gather_base": CollectiveSpec(), "all_gather_coalesced": CollectiveSpec(),
    "reduce_scatter": CollectiveSpec(), "reduce_scatter_single": CollectiveSpec(),
    "reduce_scatter_tensor": CollectiveSpec(), "_reduce_scatter_base": CollectiveSpec(),
    "all_to_all_single": CollectiveSpec(), "all_to_all": CollectiveSpec(), "scatter": CollectiveSpec(),
    "gather": CollectiveSpec(writes="any"), "recv": CollectiveSpec(), "irecv": CollectiveSpec(work=True),
    "send": CollectiveSpec(writes="none"), "isend": CollectiveSpec(writes="none", work=True),
    "barrier": CollectiveSpec(writes="none"), "monitored_barrier": CollectiveSpec(writes="none"),
}
# torch.distributed functions that do not hand themselves to `__torch_function__`: staged from converted code.
STAGED_DIRECTLY = ("barrier", "monitored_barrier")
# Collectives of Python objects: pickled values, not tensors, cannot be graph values.
OBJECT_COLLECTIVES = ("all_gather_object", "gather_object", "broadcast_object_list", "scatter_object_list",
                      "send_object_list", "recv_object_list", "batch_isend_irecv")

def _collectives() -> dict[Callable, tuple[str, CollectiveSpec]]:
    if _dist is None:
        return {}
    found = {}
    for name, spec in _SPECS.items():
        fn = getattr(_dist, name, None) or getattr(_dist.distributed_c10d, name, None)
        if fn is not None:
            found[fn] = (name, spec)
    return found


COLLECTIVES: Mapping[Callable, tuple[str, CollectiveSpec]] = MappingProxyType(_collectives())


def _effects(spec: CollectiveSpec) -> Effect:
    effects = Effect.RUNS_PYTHON
    if spec.writes == "first":
        effects |= Effect.WRITES_FIRST_ARG
    elif spec.writes == "any":
        effects |= Effect.UNKNOWN
    return effects


class Collective:
    """The target of a collective node: calls the torch.distributed function when the graph runs."""

    __slots__ = ("fn", "name")

    def __init__(self, fn: Callable, name: str) -> None:
        self.fn = fn
        self.name = name

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"torch.distributed.{self.name}"


def _where(loc: Any) -> str:
    return f" at {loc}" if loc else ""


def _code(loc: Any) -> str:
    return f"\n    {loc.line}" if loc is not None and loc.line else ""


def record_collective(func: Callable, args: tuple, kwargs: dict) -> Any:
    """Record a torch.distributed collective: a node that runs it at every call (None, or a GraphWork)."""
    name, spec = COLLECTIVES[func]
    if not (spec.work or kwargs.get("async_op")):
        record_with_meta(Op(OpKind.FUNCTION, Collective(func, name), name, effects=_effects(spec)), args, kwargs,
                         None)
        return None
    pending = PendingWork(name)
    record_with_meta(Op(OpKind.FUNCTION, StartCollective(func, name, pending), name, effects=_effects(spec)),
                     args, kwargs, None)
    written = args[0] if spec.writes == "first" and args else ()
    return GraphWork(pending, written, current())


# ----- async_op=True: a handle whose wait() is a node too ---------------------------------------------------
class PendingWork:
    """The run-time slot of one async collective's Work handle, per thread (graphs run in their caller's)."""

    def __init__(self, label: str) -> None:
        self.label = label
        self._local = threading.local()

    def put(self, work: Any) -> None:
        self._local.work = work

    def take(self) -> Any:
        work = self._local.__dict__.pop("work", None)
        if work is None:
            raise InvalidArgumentError(f"wait() of torch.distributed.{self.label}(async_op=True) ran when the "
                                       f"collective had not started in this call of the graph (it started in a "
                                       f"branch or loop iteration that did not run)")
        return work


class StartCollective:
    """The target of an async collective node: starts it and keeps its Work for the `wait` node."""

    __slots__ = ("fn", "name", "pending")

    def __init__(self, fn: Callable, name: str, pending: PendingWork) -> None:
        self.fn = fn
        self.name = name
        self.pending = pending

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        self.pending.put(self.fn(*args, **kwargs))

    def __repr__(self) -> str:
        return f"torch.distributed.{self.name}[start]"


class WaitCollective:
    """The target of a `work.wait()` node (its arguments are the tensors the collective writes, for ordering)."""

    __slots__ = ("pending", "timeout")

    def __init__(self, pending: PendingWork, timeout: Any) -> None:
        self.pending = pending
        self.timeout = timeout

    def __call__(self, *written: Any) -> None:
        work = self.pending.take()
        if self.timeout is None:
            work.wait()
        else:
            work.wait(self.timeout)

    def __repr__(self) -> str:
        return f"torch.distributed.{self.pending.label}[wait]"


class GraphWork:
    """What `dist.<collective>(..., async_op=True)` returns while tracing: `wait()` records the wait.

    The Work handle exists only when the graph runs; asking it anything else (`is_completed()`,
    `get_future()`) while tracing would freeze an answer of trace time, and is an error.
    """

    def __init__(self, pending: PendingWork, written: Any, trace: Any) -> None:
        self._pending = pending
        self._written = written
        self._trace = trace
        self._waited = False

    def wait(self, timeout: Any = None) -> bool:
        state = current()
        if state is None or (self._trace is not None and self._trace.root.closed):
            raise DistributedTracingError(
                f"the work handle of torch.distributed.{self._pending.label}(async_op=True) was used after the trace "
                f"that made it ended (returned from the function or stored): call work.wait() inside the function, "
                f"where the graph runs it at every call.")
        if state is not self._trace:
            loc = user_location()
            raise DistributedTracingError(
                f"work.wait() of torch.distributed.{self._pending.label}(async_op=True){_where(loc)} is in another "
                f"graph branch or loop body than the collective it waits for.{_code(loc)}\nFix: start and wait in "
                f"the same block (both inside the `if`/loop, or both outside it).")
        if self._waited:
            return True
        self._waited = True
        written = tuple(self._written) if isinstance(self._written, (list, tuple)) else (self._written,)
        effects = Effect.RUNS_PYTHON | (Effect.WRITES_FIRST_ARG if written else Effect.NONE)
        record_with_meta(Op(OpKind.FUNCTION, WaitCollective(self._pending, timeout), "wait", effects=effects),
                         (written,) if written else (), {}, None)
        return True

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        loc = user_location()
        raise DistributedTracingError(
            f"work.{name}() of torch.distributed.{self._pending.label}(async_op=True){_where(loc)}: the work handle "
            f"exists only when the graph runs, so only work.wait() can be used while tracing.{_code(loc)}")

    def __repr__(self) -> str:
        return f"<work handle of torch.distributed.{self._pending.label}, started when the graph runs>"


# ----- functional collectives --------------------------------------------------------------------------------
_FUNCTIONAL_NAMESPACES = ("_c10d_functional", "_c10d_functional_autograd", "c10d_functional")


def _op_namespace(func: Any) -> str | None:
    if isinstance(func, torch._ops.OpOverload):
        return func.namespace
    if isinstance(func, torch._ops.OpOverloadPacket):
        return func._qualified_op_name.split("::", 1)[0]
    return None


def _base_name(func: Any) -> str:
    if isinstance(func, torch._ops.OpOverload):
        return func._schema.name.split("::", 1)[1]
    return func._qualified_op_name.split("::", 1)[1]


class FunctionalCollective:
    """The target of a functional-collective node: runs the op and waits for its result(s)."""

    __slots__ = ("op", "name")

    def __init__(self, op: Any, name: str) -> None:
        self.op = op
        self.name = name

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        out = self.op(*args, **kwargs)
        wait = torch.ops._c10d_functional.wait_tensor
        if isinstance(out, torch.Tensor):
            return wait(out)
        return type(out)(wait(t) for t in out)

    def __repr__(self) -> str:
        return f"_c10d_functional.{self.name}"


def record_functional(func: Any, args: tuple, kwargs: dict) -> Any:
    """A `_c10d_functional` op while tracing: a node that communicates and waits; `_wrap_tensor_autograd` (which
    makes the AsyncCollectiveTensor eager code waits on at first use) is the identity on the waited result."""
    name = _base_name(func)
    if name == "_wrap_tensor_autograd":
        return args[0]
    effects = Effect.RUNS_PYTHON
    if name.endswith("_") or (isinstance(func, torch._ops.OpOverload) and func._schema.is_mutable):
        effects |= Effect.WRITES_FIRST_ARG
    target = func if name == "wait_tensor" else FunctionalCollective(func, name)
    return record_op(Op(OpKind.FUNCTION, target, name, effects=effects), func, args, kwargs)


def is_functional_collective(func: Any) -> bool:
    return _op_namespace(func) in _FUNCTIONAL_NAMESPACES


# ----- anything else that communicates while tracing ---------------------------------------------------------
_PG_METHODS = (
    "allreduce", "allreduce_coalesced", "broadcast", "reduce", "allgather", "_allgather_base", "allgather_coalesced",
    "allgather_into_tensor_coalesced", "gather", "scatter", "reduce_scatter", "_reduce_scatter_base",
    "reduce_scatter_tensor_coalesced", "alltoall", "alltoall_base", "send", "recv", "recv_anysource", "barrier",
    "monitored_barrier",
)


def trace_time_collective_error(method: str) -> DistributedTracingError:
    loc = user_location()
    return DistributedTracingError(
        f"ProcessGroup.{method} (a torch.distributed collective) ran while tracing{_where(loc)}: it would "
        f"communicate once, at trace time, and never when the graph runs, so the processes would no longer "
        f"exchange what eager code exchanges at every call.{_code(loc)}\nFix: the tensor collectives of "
        f"torch.distributed (all_reduce, broadcast, all_gather_into_tensor, reduce_scatter_tensor, "
        f"all_to_all_single, send/recv, ...) and its functional collectives are recorded wherever they are called "
        f"on tensors; dist.barrier() is recorded when called from code AutoGraph converts. Collectives of Python "
        f"objects (all_gather_object, broadcast_object_list, ...) and setting up DistributedDataParallel or FSDP "
        f"belong outside the function.")


def _guarded(method: str, original: Callable) -> Callable:
    def guarded(self: Any, *args: Any, **kwargs: Any) -> Any:
        if current() is not None:
            raise trace_time_collective_error(method)
        return original(self, *args, **kwargs)

    guarded.__name__ = method
    guarded.__wrapped__ = original  # type: ignore[attr-defined]
    return guarded


def _pg_targets() -> list[tuple[Any, str]]:
    if _dist is None:
        return []
    return [(_dist.ProcessGroup, m) for m in _PG_METHODS if m in _dist.ProcessGroup.__dict__]


def _object_collective_error(name: str) -> Callable:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        loc = user_location()
        raise DistributedTracingError(
            f"torch.distributed.{name}(){_where(loc)} communicates Python objects, which a graph cannot hold: "
            f"called while tracing it would run once, at trace time.{_code(loc)}\nFix: call it outside the "
            f"ta.function and pass what it returns in as an argument, or exchange tensors with the tensor "
            f"collectives (all_gather_into_tensor, broadcast, ...), which run at every call.")
    return refuse


def _converted_calls() -> dict[Callable, Callable]:
    calls: dict[Callable, Callable] = {}
    if _dist is None:
        return calls
    for name in STAGED_DIRECTLY:
        fn = getattr(_dist, name, None)
        if fn is not None:
            calls[fn] = (lambda f: lambda *args, **kwargs: record_collective(f, args, kwargs))(fn)
    for name in OBJECT_COLLECTIVES:
        fn = getattr(_dist, name, None)
        if fn is not None:
            calls[fn] = _object_collective_error(name)
    return calls


# The plug-ins of this module (staging/ hands them to every trace as `TraceHooks`): torch.distributed functions
# converted code calls that do not reach `__torch_function__`, with what to call instead while tracing; the
# collectives recorded their own way; and the functional collectives, recognised by kind.
CONVERTED_CALLS: Mapping[Callable, Callable] = MappingProxyType(_converted_calls())
SPECIAL_CALLS: Mapping[Callable, Callable] = MappingProxyType(dict.fromkeys(COLLECTIVES, record_collective))
SPECIAL_KINDS = ((is_functional_collective, record_functional),)
PATCHES = (
    Patch("torch.distributed.ProcessGroup", _PG_METHODS,
          "a collective that reaches a process group at trace time (not recorded as a node) would communicate "
          "once, never when the graph runs: it is an error naming the method and the user's line",
          _pg_targets, lambda cls, name, original: _guarded(name, original)),
)
