"""`ta.GradientTape`: TensorFlow's tape API on top of torch.autograd, eager and inside graphs.

Eagerly, `watch(x)` makes a leaf tensor require grad (in place, so the user's
tensor keeps its identity) and `gradient` calls `torch.autograd.grad`. Inside
a `ta.function`, `watch` records a node that makes its input require grad
when the graph runs, and `gradient` / `jacobian` record nodes that call the
same run-time functions, so the graph computes exactly what eager code does::

    with ta.GradientTape() as tape:
        loss = loss_fn(model(x), y)              # trainable Variables / Parameters are watched
    grads = tape.gradient(loss, model.parameters())

Semantics follow autograd where TensorFlow differs: an
unconnected source gives None (zeros with unconnected_gradients='zero'), an
integer source gives None. `stop_recording()` pauses autograd (`no_grad`) for
every tape, not only this one.
"""

from __future__ import annotations

import enum
import math
import warnings
import weakref
from contextlib import contextmanager
from typing import Any, Callable, Iterator

import torch

from .. import nest
from ..graph import Op, OpKind, Value
from ..interop import TAPE_PATCHES
from ..tracing import (
    ACCESS_WATCHERS,
    GraphTensor,
    TensorMeta,
    current,
    like_example,
    record_with_meta,
    user_location,
    warn_at_user_line,
)
from .variables import Variable, _TensorLike


class UnconnectedGradients(enum.Enum):
    """What `gradient` returns for a source the target does not depend on."""

    NONE = "none"
    ZERO = "zero"


# Tensors this library made require grad (so that they do not count as user-requested leaves).
_flipped: "weakref.WeakSet[torch.Tensor]" = weakref.WeakSet()

# ----- run-time computations (called directly when eager, by generated code in graphs) -------
def _differentiable(t: Any) -> bool:
    return isinstance(t, torch.Tensor) and t.requires_grad and (t.is_floating_point() or t.is_complex())


def compute_gradients(targets: list, sources: list, output_gradients: list, retain_graph: bool,
                      create_graph: bool, zero: bool) -> tuple:
    """d(sum of targets)/d(source) for each source: a tensor, or None (zeros with `zero`) when unconnected."""
    create_graph = create_graph or bool(ACCESS_WATCHERS.get())  # an outer tape is recording: keep the graph
    pairs = [(t, g) for t, g in zip(targets, output_gradients) if _differentiable(t)]
    wanted = [i for i, s in enumerate(sources) if _differentiable(s)]
    grads: list = [None] * len(sources)
    if pairs and wanted:
        outs = [t for t, _ in pairs]
        upstream = [torch.ones_like(t) if g is None else g.to(t.dtype) for t, g in pairs]
        got = torch.autograd.grad(outs, [sources[i] for i in wanted], upstream, retain_graph=retain_graph or
                                  create_graph, create_graph=create_graph, allow_unused=True)
        for i, g in zip(wanted, got):
            grads[i] = g
    if zero:
        grads = [torch.zeros_like(s) if g is None and _floating(s) else g for g, s in zip(grads, sources)]
    return tuple(grads)


def compute_jacobians(target: torch.Tensor, sources: list, retain_graph: bool, create_graph: bool, zero: bool,
                      batch: bool) -> tuple:
    """Jacobians of `target` w.r.t. each source (`batch`: per example of dim 0), vectorised with autograd."""
    create_graph = create_graph or bool(ACCESS_WATCHERS.get())
    tshape = tuple(target.shape)
    out_shape = (lambda s: tshape + tuple(s.shape)) if not batch else (
        lambda s: tshape + tuple(s.shape[1:]))
    wanted = [i for i, s in enumerate(sources) if _differentiable(s)]
    jacs: list = [None] * len(sources)
    if _differentiable(target) and wanted:
        rows = math.prod(tshape[1:]) if batch else target.numel()
        eye = torch.eye(rows, dtype=target.dtype, device=target.device)
        if batch:
            upstream = eye.reshape((rows, 1) + tshape[1:]).expand((rows,) + tshape)
        else:
            upstream = eye.reshape((rows,) + tshape)
        srcs = [sources[i] for i in wanted]
        try:
            got = torch.autograd.grad([target], srcs, [upstream], retain_graph=retain_graph or create_graph,
                                      create_graph=create_graph, allow_unused=True, is_grads_batched=True)
        except RuntimeError:  # an op without a batching rule: one backward pass per row
            per_row = [torch.autograd.grad([target], srcs, [upstream[r]], retain_graph=True,
                                           create_graph=create_graph, allow_unused=True) for r in range(rows)]
            got = [None if per_row[0][k] is None else torch.stack([p[k] for p in per_row]) for k in range(len(srcs))]
        for i, g in zip(wanted, got):
            if g is None:
                continue
            if batch:  # [rows, b, x...] -> [b, y..., x...]
                g = g.movedim(0, 1).reshape(out_shape(sources[i]))
            else:
                g = g.reshape(out_shape(sources[i]))
            jacs[i] = g
    if zero:
        jacs = [torch.zeros(out_shape(s), dtype=s.dtype, device=s.device) if j is None and _floating(s) else j
                for j, s in zip(jacs, sources)]
    return tuple(jacs)


def watch_tensor(x: torch.Tensor) -> torch.Tensor:
    """`x` made to require grad when the graph runs: itself if it already does (so outer tapes stay connected)."""
    if x.requires_grad or not _floating(x):
        return x
    return x.detach().requires_grad_()


def _floating(t: Any) -> bool:
    return t.dtype.is_floating_point or t.dtype.is_complex


# ----- the tape ---------------------------------------------------------------------------------
class GradientTape:
    """Records operations for automatic differentiation (TensorFlow's `tf.GradientTape`).

    Args:
        persistent: allow several `gradient` / `jacobian` calls (default: one).
        watch_accessed_variables: watch trainable `ta.Variable`s and
            `nn.Parameter`s used while recording (default True); with False,
            only what `watch` names gets gradients.
    """

    def __init__(self, persistent: bool = False, watch_accessed_variables: bool = True) -> None:
        self._persistent = persistent
        self._watch_accessed = watch_accessed_variables
        self._recording = False
        self._used = False
        self._token = None
        self._watched: dict[int, Any] = {}  # id -> watched tensor (eager) or Value (graph)
        self._variables: dict[int, Any] = {}  # id -> Variable / Parameter watched, in first-access order

    # ----- recording ---------------------------------------------------------------------------
    def __enter__(self) -> "GradientTape":
        if self._recording:
            raise RuntimeError("Tape is still recording, This can happen if you try to re-enter an already-active "
                               "tape.")
        self._start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop()

    def _start(self) -> None:
        self._token = ACCESS_WATCHERS.set(ACCESS_WATCHERS.get() + (self,))
        self._recording = True
        if self._watch_accessed:
            TAPE_PATCHES.acquire()  # the parameters of modules that run are accessed

    def _stop(self) -> None:
        if self._watch_accessed:
            TAPE_PATCHES.release()
        ACCESS_WATCHERS.set(tuple(w for w in ACCESS_WATCHERS.get() if w is not self))
        self._recording = False
        self._token = None

    @contextmanager
    def stop_recording(self) -> Iterator[None]:
        """Pause recording: operations inside get no gradients (autograd is off for them)."""
        if not self._recording:
            raise RuntimeError("Trying to stop recording a tape which is not recording.")
        self._stop()
        try:
            with torch.no_grad():
                yield
        finally:
            self._start()

    def reset(self) -> None:
        """Forget everything (watched tensors and variables included), as if leaving and re-entering the tape."""
        recording = self._recording
        if recording:
            self._stop()
        self._watched.clear()
        self._variables.clear()
        self._used = False
        if recording:
            self._start()

    def _variable_accessed(self, var: Variable) -> None:
        if self._watch_accessed and var.trainable and id(var) not in self._variables:
            self._variables[id(var)] = var

    def module_ran(self, module: torch.nn.Module) -> None:
        for p in module.parameters():
            if p.requires_grad and id(p) not in self._variables:
                self._variables[id(p)] = p

    # ----- watching ------------------------------------------------------------------------------
    def watch(self, tensor: Any) -> None:
        """Record operations on `tensor` (a tensor, Variable, or a nest of them) from now on."""
        for x in nest.flatten(tensor):
            if isinstance(x, _TensorLike) and not isinstance(x, Variable):
                x = x._read()
            if isinstance(x, Variable):
                self._variables.setdefault(id(x), x)
                if not _floating(x._tensor):
                    _warn_int(x.dtype)
                    continue
                if current() is not None:
                    self._watch_graph(current().capture(x._tensor))
                elif not x._tensor.requires_grad:
                    x._tensor.requires_grad_()
                    _flipped.add(x._tensor)
                self._watched[id(x._tensor)] = x._tensor
            elif isinstance(x, (torch.Tensor, GraphTensor)):
                if not _floating(x):
                    _warn_int(x.dtype)
                    continue
                if isinstance(x, torch.Tensor) and current() is not None:
                    x = current().capture(x)
                if isinstance(x, GraphTensor):
                    self._watch_graph(x)
                else:
                    if not x.requires_grad and x.grad_fn is None:
                        x.requires_grad_()
                        _flipped.add(x)
                    self._watched[id(x)] = x
                    if isinstance(x, torch.nn.Parameter):
                        self._variables.setdefault(id(x), x)
            else:
                raise ValueError(f"Passed in object {x!r} of type {type(x).__name__!r}, not torch.Tensor or "
                                 f"ta.Variable{_at_user()}.")

    def _watch_graph(self, g: GraphTensor) -> None:
        v = g._value
        example = like_example(v)
        if example.device.type == "meta":  # (a metadata example: made outside the trace's recording)
            with torch._C.DisableTorchFunction():
                example = example.detach().requires_grad_(v.dtype.is_floating_point or v.dtype.is_complex)
        watched = record_with_meta(Op(OpKind.FUNCTION, watch_tensor, "watch"), (g,), {},
                                   TensorMeta(example, v.device, requires_grad=True))
        if g._trace is current():
            g._value = watched._value  # the user's tensor now stands for the watched value
            g._origin = "node"
            with torch._C.DisableTorchFunction():
                g.requires_grad_(watched.raw_requires_grad())
        self._watched[id(watched._value)] = watched._value

    def watched_variables(self) -> tuple:
        """The Variables (in creation order) and Parameters (in access order) this tape watches."""
        items = list(self._variables.values())
        variables = sorted((x for x in items if isinstance(x, Variable)), key=lambda v: v._creation_id)
        return tuple(variables + [x for x in items if not isinstance(x, Variable)])

    # ----- differentiating -------------------------------------------------------------------------
    def gradient(self, target: Any, sources: Any, output_gradients: Any = None,
                 unconnected_gradients: Any = UnconnectedGradients.NONE) -> Any:
        """Gradients of `target` (summed over its elements and over a nest of targets) w.r.t. `sources`.

        Returns the structure of `sources` with a tensor (or None) per source.
        """
        zero = _unconnected(unconnected_gradients)
        if target is None:
            raise TypeError("Argument `target` should be a list or nested structure of Tensors or ta.Variables to "
                            f"be differentiated, but received None{_at_user()}.")
        self._check_use("gradient")
        if self._recording and self._persistent:
            warnings.warn("Calling GradientTape.gradient on a persistent tape inside its context is significantly "
                          "less efficient than calling it outside the context (the gradient ops are recorded too). "
                          "Only do it to compute higher-order derivatives.", stacklevel=2)
        targets = [_as_target(t, "target") for t in nest.flatten(target)]
        if output_gradients is None:
            ograds: list = [None] * len(targets)
        else:
            ograds = [None if g is None else _as_target(g, "output_gradients") for g in nest.flatten(output_gradients)]
            if len(ograds) != len(targets):
                raise ValueError(f"output_gradients has {len(ograds)} entries but target has {len(targets)}")
        sources = _materialize_iterator(sources)
        srcs = [_as_source(s, i) for i, s in enumerate(nest.flatten(sources))]
        grads = self._differentiate(targets, srcs, ograds, zero, None)
        return nest.pack_sequence_as(sources, list(grads)) if _is_nest(sources) else grads[0]

    def jacobian(self, target: Any, sources: Any, unconnected_gradients: Any = UnconnectedGradients.NONE,
                 parallel_iterations: Any = None, experimental_use_pfor: bool = True) -> Any:
        """d target[i...] / d source[j...] for each source: shape target.shape + source.shape."""
        zero = _unconnected(unconnected_gradients)
        if target is None:
            raise TypeError(f"Argument `target` should be a Tensor, but received None{_at_user()}.")
        self._check_use("jacobian")
        t = _as_target(target, "target")
        sources = _materialize_iterator(sources)
        srcs = [_as_source(s, i) for i, s in enumerate(nest.flatten(sources))]
        jacs = self._differentiate([t], srcs, [None], zero, "jacobian")
        return nest.pack_sequence_as(sources, list(jacs)) if _is_nest(sources) else jacs[0]

    def batch_jacobian(self, target: Any, source: Any, unconnected_gradients: Any = UnconnectedGradients.NONE,
                       parallel_iterations: Any = None, experimental_use_pfor: bool = True) -> Any:
        """Per-example Jacobians: target [b, y...], source [b, x...] -> [b, y..., x...].

        Like TensorFlow, it does not check that examples are independent.
        """
        zero = _unconnected(unconnected_gradients)
        self._check_use("batch_jacobian")
        t = _as_target(target, "target")
        s = _as_source(source, 0)
        ts, ss = tuple(t.shape), tuple(s.shape)
        if len(ts) < 1 or len(ss) < 1 or (ts[0] is not None and ss[0] is not None and ts[0] != ss[0]):
            raise ValueError(f"Need first dimension of target shape {ts} and source shape {ss} to match"
                             f"{_at_user()}.")
        return self._differentiate([t], [s], [None], zero, "batch_jacobian")[0]

    def _check_use(self, what: str) -> None:
        if not self._persistent:
            if self._used:
                raise RuntimeError("A non-persistent GradientTape can only be used to compute one set of gradients "
                                   "(or jacobians); create the tape with persistent=True to call "
                                   f"{what}() again{_at_user()}.")
            self._used = True

    def _differentiate(self, targets: list, sources: list, ograds: list, zero: bool, jac: str | None) -> tuple:
        """Eager: compute now. In a trace: record a node computing it when the graph runs."""
        state = current()
        keep = [self._is_watched(s, state) for s in sources]
        retain = self._persistent
        create = len(ACCESS_WATCHERS.get()) > 0
        if state is None:
            live = [s for s, k in zip(sources, keep) if k]
            if jac is None:
                got = compute_gradients(targets, live, ograds, retain, create, zero)
            else:
                got = compute_jacobians(targets[0], live, retain, create, zero, jac == "batch_jacobian")
            it = iter(got)
            return tuple(next(it) if k else _unconnected_value(s, zero, targets[0], jac) for s, k in zip(sources, keep))
        # Sources that are statically unconnected get None (or zeros) in the trace itself.
        reach = _ancestors(state, targets)
        keep = [k and (reach is None or not isinstance(s, GraphTensor) or id(s._value) in reach
                       or not _defined_in(state, s._value)) for s, k in zip(sources, keep)]
        live = [s for s, k in zip(sources, keep) if k]
        outs: tuple = ()
        if live:
            if jac is None:
                fn, args = compute_gradients, (targets, live, ograds, retain, create, zero)
                metas = tuple(_meta(s, s.shape, create) for s in live)
            else:
                batch = jac == "batch_jacobian"
                fn, args = compute_jacobians, (targets[0], live, retain, create, zero, batch)
                tshape = tuple(targets[0].shape)
                metas = tuple(_meta(s, tshape + tuple(s.shape[1:] if batch else s.shape), create) for s in live)
            outs = record_with_meta(Op(OpKind.FUNCTION, fn, jac or "gradient", runs_autograd=True), args, {}, metas)
        it = iter(outs)
        return tuple(next(it) if k else _unconnected_value(s, zero, targets[0], jac) for s, k in zip(sources, keep))

    def _is_watched(self, s: Any, state: Any) -> bool:
        """Whether this tape gives `s` a gradient: watched, accessed trainable, or computed from watched values."""
        if not _floating(s):
            return False
        if isinstance(s, GraphTensor):
            v = s._value
            if id(v) in self._watched:
                return True
            real = _captured_tensor(state, v)
            if real is None:
                return not any(v is p for p in state.graph.inputs)  # an op's output: decided when the graph runs
            s = real
        if id(s) in self._watched or s.grad_fn is not None:
            return True
        if not self._watch_accessed or not s.requires_grad:
            return False
        return isinstance(s, torch.nn.Parameter) or s not in _flipped

    def __repr__(self) -> str:
        return f"<ta.GradientTape persistent={self._persistent} recording={self._recording}>"


# ----- helpers ------------------------------------------------------------------------------------
def _at_user() -> str:
    loc = user_location()
    return f" (at {loc})" if loc else ""


def _warn_int(dtype: torch.dtype) -> None:
    warn_at_user_line(UserWarning(f"The dtype of the watched tensor must be floating (e.g. torch.float32), got "
                                  f"{dtype}{_at_user()}"))


def _unconnected(value: Any) -> bool:
    """True for 'zero', False for 'none'; ValueError otherwise."""
    if isinstance(value, UnconnectedGradients):
        return value is UnconnectedGradients.ZERO
    if value in ("none", "zero"):
        return value == "zero"
    raise ValueError(f"Unknown value for unconnected_gradients: {value!r}; expected 'none', 'zero' or "
                     f"ta.UnconnectedGradients.NONE / ZERO")


def _as_differentiable(x: Any, complaint: Callable[[], str]) -> Any:
    """A tensor (graph tensor while tracing) for a target or source; TypeError(complaint()) otherwise."""
    if isinstance(x, _TensorLike):
        x = x._read()
    if isinstance(x, torch.Tensor) and current() is not None:
        return current().capture(x)
    if not isinstance(x, (torch.Tensor, GraphTensor)):
        raise TypeError(complaint())
    return x


def _as_target(t: Any, what: str) -> Any:
    return _as_differentiable(t, lambda: (
        f"Argument `{what}` should be a list or nested structure of Tensors or ta.Variables to be "
        f"differentiated, but received {t!r} of type {type(t).__name__!r}{_at_user()}."))


def _as_source(s: Any, i: int) -> Any:
    return _as_differentiable(s, lambda: (
        f"Argument `sources` must hold Tensors or ta.Variables (or nests of them), but its leaf #{i} "
        f"is {s!r} of type {type(s).__name__!r}{_at_user()}."))


def _materialize_iterator(obj: Any) -> Any:
    """`model.parameters()` (a generator) as a list, so the result has a structure to mirror."""
    return list(obj) if hasattr(obj, "__next__") else obj


def _is_nest(obj: Any) -> bool:
    return nest.children(obj) is not None


def _meta(s: GraphTensor, shape: tuple, create_graph: bool) -> TensorMeta:
    requires_grad = create_graph and (s.dtype.is_floating_point or s.dtype.is_complex)
    return TensorMeta(current().trace.engine.example(tuple(shape), s.dtype, s.device, requires_grad), s.device,
                      requires_grad)


def _unconnected_value(s: Any, zero: bool, target: Any, jac: str | None) -> Any:
    if not zero or not _floating(s):
        return None
    if jac is None:
        return torch.zeros_like(s)
    tshape = tuple(target.shape)
    shape = tshape + tuple(s.shape[1:] if jac == "batch_jacobian" else s.shape)
    return torch.zeros(shape, dtype=s.dtype, device=s.device)


def _captured_tensor(state: Any, v: Value) -> torch.Tensor | None:
    for cv, t in state.root.graph.captures:
        if cv is v:
            return t
    return None


def _defined_in(state: Any, v: Value) -> bool:
    g = state.graph
    return any(v is x for x in g.inputs) or any(v is cv for cv, _ in g.captures) or any(
        v is o for n in g.nodes for o in n.outputs)


def _ancestors(state: Any, targets: list) -> set[int] | None:
    """Ids of every Value the targets depend on in the current graph (None: cannot tell)."""
    if not all(isinstance(t, GraphTensor) for t in targets):
        return None
    needed = {id(t._value) for t in targets}
    for node in reversed(state.graph.nodes):
        if any(id(v) in needed for v in node.outputs):
            needed.update(id(v) for v in node.input_values())
            for sub in node.subgraphs:
                needed.update(id(v) for v, _ in sub.captures)
    return needed
