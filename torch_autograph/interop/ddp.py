"""DistributedDataParallel in a traced step: DDP's per-call Python work runs at every call of the graph.

`DistributedDataParallel.forward` is three parts::

    inputs, kwargs = self._pre_forward(*inputs, **kwargs)   # reducer.prepare_for_forward, bucket rebuild,
                                                            # buffer broadcast, join, inputs to the device
    output = self.module(*inputs, **kwargs)                 # the model: plain tensor code
    return self._post_forward(output)                       # reducer.prepare_for_backward (with the outputs'
                                                            # autograd graph when find_unused_parameters),
                                                            # _DDPSink on the outputs (static graph, unused
                                                            # parameters), grad buffer views

Traced, the model in the middle is recorded like any module, and the two
halves become nodes (`Effect.RUNS_PYTHON`) that call DDP's own `_pre_forward`
and `_post_forward` when the graph runs, on the call's real tensors, and hand
on the tensors they return::

    %ddp_pre_forward = DistributedDataParallel._pre_forward(%x)      # the inputs DDP passes on
    %linear = torch.nn.functional.linear(%ddp_pre_forward, %linear_weight, %linear_bias)  # the module
    %ddp_post_forward = DistributedDataParallel._post_forward(%linear)  # what DDP returns (_DDPSink's)

So every call prepares the reducer exactly as eager DDP does, and the staged
`loss.backward()` node runs autograd, whose hooks (registered by DDP's C++
reducer on the parameters) all-reduce the gradient buckets as they become
ready. Nothing of DDP runs at trace time: the first call's graph run is DDP's
first iteration, as in eager. Both halves are replaced on the class while a trace runs (`PATCHES`, in
interop/patches.py's table, like the staged optimizer methods), so a
subclass's `forward` that calls them is staged too.

`no_sync()` entered in the traced function is staged the same way: the nodes
of a forward inside it run with `require_backward_grad_sync` off, as eager's
would; `no_sync()` around a call of the function is read when the graph runs.
DDP's `mixed_precision` (which swaps parameter storage in per-call hooks) is
refused with an error at the user's line.
"""

from __future__ import annotations

import contextvars
import functools
from contextlib import contextmanager
from types import MappingProxyType
from typing import Any, Callable, Iterator, Mapping

import torch
from torch.utils import _pytree as pytree

from ..errors import DistributedTracingError, InvalidArgumentError
from ..graph import Effect, Op, OpKind
from ..tracing import GraphTensor, TensorMeta, current, like_example, record_with_meta, user_location
from .patches import Patch

try:
    from torch.nn.parallel import DistributedDataParallel
except ImportError:  # a torch without distributed support
    DistributedDataParallel = None  # type: ignore[assignment,misc]

_STAGED = "_ta_staged"
# ids of the DDP modules whose no_sync() the code being traced is inside of (lexically scoped, per thread).
_in_no_sync: contextvars.ContextVar[frozenset] = contextvars.ContextVar("ta_ddp_no_sync", default=frozenset())


# ----- what runs when the graph runs -------------------------------------------------------------------------
class Flat:
    """A nest (args and kwargs, or a forward's output) as its tensor leaves plus what rebuilds it.

    The common nests skip torch's pytree at every call: a lone tensor, and positional tensors without kwargs.
    """

    __slots__ = ("leaves", "spec", "positions", "kind")

    def __init__(self, tree: Any) -> None:
        self.leaves, self.spec = pytree.tree_flatten(tree)
        self.positions = tuple(i for i, x in enumerate(self.leaves) if isinstance(x, torch.Tensor))
        self.kind = "tree"
        if isinstance(tree, torch.Tensor):
            self.kind = "tensor"
        elif _is_positional(tree):
            self.kind = "positional"

    def tensors(self) -> tuple:
        return tuple(self.leaves[i] for i in self.positions)

    def rebuild(self, tensors: tuple) -> Any:
        if self.kind == "tensor":
            return tensors[0]
        if self.kind == "positional":
            return tuple(tensors), {}
        leaves = list(self.leaves)
        for i, t in zip(self.positions, tensors):
            leaves[i] = t
        return pytree.tree_unflatten(leaves, self.spec)

    def tensors_of(self, tree: Any, what: str) -> tuple:
        """The tensor leaves of `tree`, which must have this nest's tensor positions."""
        if self.kind == "tensor" and isinstance(tree, torch.Tensor):
            return (tree,)
        if self.kind == "positional" and _is_positional(tree) and len(tree[0]) == len(self.positions):
            return tree[0]
        leaves, _ = pytree.tree_flatten(tree)
        positions = tuple(i for i, x in enumerate(leaves) if isinstance(x, torch.Tensor))
        if positions != self.positions:
            raise InvalidArgumentError(f"{what} returned tensors at other places of its result than when the "
                                       f"function was traced; torch_autograph cannot follow that change")
        return tuple(leaves[i] for i in positions)


def _is_positional(tree: Any) -> bool:
    """`((t1, t2, ...), {})`: positional tensor arguments and no keyword arguments."""
    return (type(tree) is tuple and len(tree) == 2 and type(tree[0]) is tuple and type(tree[1]) is dict
            and not tree[1] and all(isinstance(t, torch.Tensor) for t in tree[0]))


class _ForwardHalf:
    """The target of a `_pre_forward` / `_post_forward` node: DDP's own method, on the call's tensors."""

    __slots__ = ("ddp", "half", "flat", "no_sync")

    def __init__(self, ddp: Any, half: str, flat: Flat, no_sync: bool) -> None:
        self.ddp = ddp
        self.half = half
        self.flat = flat
        self.no_sync = no_sync

    def __call__(self, *tensors: Any) -> tuple:
        ddp, tree = self.ddp, self.flat.rebuild(tensors)
        if not self.no_sync:
            return self._run(ddp, tree)
        old = ddp.require_backward_grad_sync
        ddp.require_backward_grad_sync = False
        try:
            return self._run(ddp, tree)
        finally:
            ddp.require_backward_grad_sync = old

    def _run(self, ddp: Any, tree: Any) -> tuple:
        if self.half == "pre":
            args, kwargs = tree
            result = _ORIGINALS["_pre_forward"](ddp, *args, **kwargs)
        else:
            result = _ORIGINALS["_post_forward"](ddp, tree)
        return tuple(self.flat.tensors_of(result, f"DistributedDataParallel.{self.label}"))

    @property
    def label(self) -> str:
        return "_pre_forward" if self.half == "pre" else "_post_forward"

    def __repr__(self) -> str:
        return f"DistributedDataParallel.{self.label}"


# ----- what tracing records ----------------------------------------------------------------------------------
def _record_half(ddp: Any, half: str, tree: Any, device: torch.device | None = None) -> Any:
    """Record the node of one half on the tensors of `tree`; `tree` rebuilt with the node's outputs."""
    state = current()
    flat = Flat(tree)
    tensors = tuple(t if isinstance(t, GraphTensor) else state.capture(t) for t in flat.tensors())
    metas = tuple(TensorMeta(like_example(t._value), device or t._value.device, t.raw_requires_grad())
                  for t in tensors)
    target = _ForwardHalf(ddp, half, flat, id(ddp) in _in_no_sync.get())
    op = Op(OpKind.FUNCTION, target, f"ddp_{half}_forward", effects=Effect.RUNS_PYTHON)
    outputs = record_with_meta(op, tensors, {}, metas)
    return flat.rebuild(tuple(outputs))


def _refuse(ddp: Any, what: str, why: str) -> DistributedTracingError:
    loc = user_location()
    where = f" at {loc}" if loc else ""
    code = f"\n    {loc.line}" if loc is not None and loc.line else ""
    return DistributedTracingError(
        f"DistributedDataParallel({type(ddp.module).__name__}) with {what} was called while tracing{where}: "
        f"{why}.{code}\nFix: construct DDP without it, or call the model outside the ta.function.")


def _pre_forward(self: Any, *inputs: Any, **kwargs: Any) -> Any:
    if current() is None:
        return _ORIGINALS["_pre_forward"](self, *inputs, **kwargs)
    if getattr(self, "mixed_precision", None) is not None:
        raise _refuse(self, "mixed_precision", "its hooks swap the parameters' storage in Python at every "
                      "forward, which a graph would do only once, at trace time")
    device = torch.device(self.device_type, self.device_ids[0]) if getattr(self, "device_ids", None) else None
    return _record_half(self, "pre", (inputs, kwargs), device)


def _post_forward(self: Any, output: Any) -> Any:
    if current() is None:
        return _ORIGINALS["_post_forward"](self, output)
    return _record_half(self, "post", output)


def _no_sync(self: Any) -> Any:
    if current() is None:
        return _ORIGINALS["no_sync"](self)
    return _traced_no_sync(self)


@contextmanager
def _traced_no_sync(ddp: Any) -> Iterator[None]:
    """`with ddp.no_sync():` while tracing: the forwards inside run their nodes without gradient sync."""
    token = _in_no_sync.set(_in_no_sync.get() | {id(ddp)})
    old = ddp.require_backward_grad_sync
    ddp.require_backward_grad_sync = False  # as eager code inside the block would read it
    try:
        yield
    finally:
        ddp.require_backward_grad_sync = old
        _in_no_sync.reset(token)


# torch's own methods, read (never changed) at import; the wrappers call them outside a trace.
_ORIGINALS: Mapping[str, Callable] = MappingProxyType(
    {} if DistributedDataParallel is None else
    {name: DistributedDataParallel.__dict__[name] for name in ("_pre_forward", "_post_forward", "no_sync")})
_WRAPPERS = {"_pre_forward": _pre_forward, "_post_forward": _post_forward, "no_sync": _no_sync}


def _staged(cls: type, name: str, original: Callable) -> Callable:
    staged = functools.wraps(original)(_WRAPPERS[name])
    setattr(staged, _STAGED, original)
    return staged


PATCHES = (
    Patch("torch.nn.parallel.DistributedDataParallel", tuple(_WRAPPERS),
          "DDP's per-call Python (reducer preparation, buffer broadcast, the outputs' hooks) would run once, at "
          "trace time; staged, its two halves are nodes that run at every call",
          lambda: [] if DistributedDataParallel is None else [(DistributedDataParallel, n) for n in _WRAPPERS],
          _staged),
)
