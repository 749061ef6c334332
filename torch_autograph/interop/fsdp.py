"""FSDP2 (`fully_shard`) modules in a traced step: their hooks run at every call, the model in between is traced.

A module sharded with `fully_shard` holds its parameters as sharded DTensors
and registers two forward hooks. Eager, each call runs::

    pre-hook   all-gather the parameters into the unsharded ones and put those
               on the module; wrap the inputs in RegisterPostBackwardFunction
               (the reduce-scatter of gradients after backward)
    forward    the module's own code, on the unsharded parameters
    post-hook  reshard (free the gathered data, sharded parameters back on the
               module); register the pre-backward hooks (all-gather again for
               backward) on the outputs

Traced, the module's call is staged like DDP's (staging/ddp.py)::

    %fsdp_pre_forward, %fsdp_pre_forward_1, %fsdp_pre_forward_2 = FSDP.pre_forward[Linear](%x)
    %linear = torch.nn.functional.linear(%fsdp_pre_forward, %fsdp_pre_forward_1, %fsdp_pre_forward_2)
    %fsdp_post_forward = FSDP.post_forward[Linear](%fsdp_pre_forward, %linear)

(the inputs the pre-hook passes on, then the unsharded weight and bias; the
forward, traced; the post-hook on the inputs and outputs).

The pre node runs FSDP's own pre-hook on the call's tensors and returns the
inputs it passes on and the unsharded parameters it installed, read when the
graph runs; while tracing, those graph values stand in for the module's
parameters (nothing is gathered at trace time: the trace never communicates).
The post node runs FSDP's post-hook on the real outputs. Backward, the
reduce-scatter and the optimizer step on the sharded parameters then happen
as in eager FSDP2, from the hooks FSDP registered when the nodes ran.

FSDP2 lives in a module torch imports on demand (about 2 s): `FSDPModule` is
patched while a trace runs once that module is imported (`PATCHES`, in
interop/patches.py's table). The patch is on the class, so modules sharded
before it are staged too. `unshard()`, `reshard()`
and the `set_*` configuration methods called while tracing become nodes as
well (they act on state FSDP reads when the graph runs).
"""

from __future__ import annotations

import functools
import sys
from typing import Any, Callable, Iterable

import torch

from ..errors import DistributedTracingError
from ..graph import Effect, Op, OpKind
from ..subtraces import py_function
from ..tracing import (
    GraphTensor,
    TensorMeta,
    current,
    like_example,
    meta_example,
    outside_trace,
    record_with_meta,
    user_location,
)
from .conventions import torch_is_compiling
from .ddp import Flat
from .grads import flows_to
from .patches import Patch

_FULLY_SHARD = "torch.distributed.fsdp._fully_shard._fully_shard"
_STAGED = "_ta_staged"


# ----- what runs when the graph runs -------------------------------------------------------------------------
class _PreForward:
    """The target of a pre node: FSDP's forward pre-hook(s), then the unsharded parameters it installed."""

    __slots__ = ("module", "hooks", "flat", "params", "label")

    def __init__(self, module: Any, hooks: list, flat: Flat, params: list, label: str) -> None:
        self.module, self.hooks, self.flat, self.params, self.label = module, hooks, flat, params, label

    def __call__(self, *tensors: Any) -> tuple:
        args, kwargs = self.flat.rebuild(tensors)
        for hook in self.hooks:
            result = hook(self.module, args, kwargs)
            if result is not None:
                args, kwargs = result
        passed = self.flat.tensors_of((args, kwargs), f"{self.label}'s pre-hook")
        return passed + tuple(owner._parameters[name] for owner, name in self.params)

    def __repr__(self) -> str:
        return f"FSDP.pre_forward[{self.label}]"


class _PostForward:
    """The target of a post node: FSDP's forward hook(s) on the call's inputs and outputs."""

    __slots__ = ("module", "hooks", "args", "out", "label")

    def __init__(self, module: Any, hooks: list, args: Flat, out: Flat, label: str) -> None:
        self.module, self.hooks, self.args, self.out, self.label = module, hooks, args, out, label

    def __call__(self, *tensors: Any) -> tuple:
        n = len(self.args.positions)
        args = self.args.rebuild(tensors[:n])
        output = self.out.rebuild(tensors[n:])
        for hook in self.hooks:
            result = hook(self.module, args, output)
            if result is not None:
                output = result
        return self.out.tensors_of(output, f"{self.label}'s post-hook")

    def __repr__(self) -> str:
        return f"FSDP.post_forward[{self.label}]"


# ----- what tracing records ----------------------------------------------------------------------------------
def _refuse(module: Any, what: str) -> DistributedTracingError:
    loc = user_location()
    where = f" at {loc}" if loc else ""
    code = f"\n    {loc.line}" if loc is not None and loc.line else ""
    return DistributedTracingError(
        f"the FSDP2 module {type(module).__name__} was called while tracing{where} with {what}, which a graph "
        f"cannot replay at every call.{code}\nFix: call the model outside the ta.function, or shard it without "
        f"that feature.")


def _hook_ids(handle: Any) -> set[int]:
    handles = getattr(handle, "handles", None)
    return {h.id for h in handles} if handles is not None else {handle.id}


def _graph_tensors(state: Any, tensors: Iterable[torch.Tensor]) -> tuple:
    return tuple(t if isinstance(t, GraphTensor) else state.capture(t) for t in tensors)


def _metas(tensors: tuple) -> list:
    return [TensorMeta(like_example(t._value), t._value.device, t.raw_requires_grad()) for t in tensors]


def _unsharded_params(module: Any, fsdp_state: Any) -> list:
    """(FSDPParam, owner module, attribute name, other owners) of each parameter this call unshards."""
    inside = {id(m) for m in module.modules()}
    out = []
    for group in fsdp_state._fsdp_param_groups:
        for fp in group.fsdp_params:
            info = fp._module_info
            if id(info.module) not in inside:
                continue
            if fp._unsharded_dtensor_spec is not None or hasattr(fp._sharded_local_tensor, "fsdp_post_all_gather"):
                raise _refuse(module, f"the parameter {info.param_name!r} unsharded as a tensor subclass (DTensor "
                                      f"or an all-gather extension)")
            out.append((fp, info))
    return out


def _staged_call(module: Any, args: tuple, kwargs: dict) -> Any:
    state = current()
    fsdp_state = module._get_fsdp_state()
    with outside_trace():
        fsdp_state._lazy_init()  # what FSDP's first forward does first (idempotent, no communication)
    pre_ids = _hook_ids(fsdp_state._pre_forward_hook_handle)
    post_ids = _hook_ids(fsdp_state._post_forward_hook_handle)
    pre_hooks = [h for k, h in module._forward_pre_hooks.items() if k in pre_ids]
    post_hooks = [h for k, h in module._forward_hooks.items() if k in post_ids]
    label = type(module).__mro__[getattr(module, "_orig_cls_mro_index", 2)].__name__
    params = _unsharded_params(module, fsdp_state)

    flat_in = Flat((args, kwargs))
    inputs = _graph_tensors(state, flat_in.tensors())
    param_metas = [TensorMeta(meta_example(tuple(fp._orig_size), fp.param_dtype or fp.orig_dtype,
                                           tuple(fp._contiguous_orig_stride), fp.sharded_param.requires_grad),
                              fp.device, fp.sharded_param.requires_grad) for fp, _ in params]
    pre = _PreForward(module, pre_hooks, flat_in, [(info.module, info.param_name) for _, info in params], label)
    outs = record_with_meta(Op(OpKind.FUNCTION, pre, "fsdp_pre_forward", effects=Effect.RUNS_PYTHON), inputs, {},
                            tuple(_metas(inputs) + param_metas))
    n = len(inputs)
    args, kwargs = flat_in.rebuild(tuple(outs[:n]))
    gathered = outs[n:]
    for (fp, _), g in zip(params, gathered):
        flows_to(state, g, fp.sharded_param)  # a backward reaching %weight gives the sharded param a grad

    output = _forward_without_fsdp_hooks(module, params, gathered, pre_ids, post_ids, args, kwargs)

    flat_args, flat_out = Flat((args, kwargs)), Flat(output)
    arg_tensors = _graph_tensors(state, flat_args.tensors())
    out_tensors = _graph_tensors(state, flat_out.tensors())
    post = _PostForward(module, post_hooks, flat_args, flat_out, label)
    final = record_with_meta(Op(OpKind.FUNCTION, post, "fsdp_post_forward", effects=Effect.RUNS_PYTHON),
                             arg_tensors + out_tensors, {}, tuple(_metas(out_tensors)))
    return flat_out.rebuild(tuple(final))


def _forward_without_fsdp_hooks(module: Any, params: list, gathered: Any, pre_ids: set, post_ids: set,
                                args: tuple, kwargs: dict) -> Any:
    """Trace `module(*args, **kwargs)` (other hooks included) with the graph values as its parameters."""
    owners = [(o, n) for _, info in params
              for o, n in [(info.module, info.param_name), *zip(info.shared_modules, info.shared_param_names)]]
    values = [g for (_, info), g in zip(params, gathered) for _ in range(1 + len(info.shared_modules))]
    saved = [(o, n, o._parameters[n]) for o, n in owners]
    hooks = module.__dict__["_forward_pre_hooks"], module.__dict__["_forward_hooks"]
    module.__dict__["_forward_pre_hooks"] = type(hooks[0])((k, h) for k, h in hooks[0].items() if k not in pre_ids)
    module.__dict__["_forward_hooks"] = type(hooks[1])((k, h) for k, h in hooks[1].items() if k not in post_ids)
    try:
        for (o, n), g in zip(owners, values):
            o._parameters[n] = g  # as FSDP swaps in its unsharded parameters (bypassing Module.__setattr__)
        return torch.nn.Module.__call__(module, *args, **kwargs)
    finally:
        for o, n, p in saved:
            o._parameters[n] = p
        module.__dict__["_forward_pre_hooks"], module.__dict__["_forward_hooks"] = hooks


# ----- the patch -----------------------------------------------------------------------------------------
def _call(self: Any, *args: Any, **kwargs: Any) -> Any:
    if current() is None or torch_is_compiling():
        return torch.nn.Module.__call__(self, *args, **kwargs)
    return _staged_call(self, args, kwargs)


def _staged_method(name: str, method: Callable) -> Callable:
    """`unshard()`, `reshard()`, `set_requires_gradient_sync(False)` ... while tracing: a node run at every call."""
    @functools.wraps(method)
    def staged(self: Any, *args: Any, **kwargs: Any) -> Any:
        if current() is None:
            return method(self, *args, **kwargs)
        if name == "unshard" and (kwargs.get("async_op") or (args and args[0])):
            raise _refuse(self, "unshard(async_op=True) (its handle exists only when the graph runs)")
        py_function(lambda *a: method(self, *a, **kwargs), args, Tout=None, name=f"FSDP.{name}")
        return None

    setattr(staged, _STAGED, method)
    return staged


def _fsdp_targets() -> list[tuple[Any, str]]:
    cls = getattr(sys.modules.get(_FULLY_SHARD), "FSDPModule", None)
    if cls is None:
        return []  # FSDP2 not imported: nothing of it can be in a trace
    names = [n for n, m in cls.__dict__.items()
             if callable(m) and (n in ("unshard", "reshard") or n.startswith("set_"))]
    return [(cls, n) for n in names] + [(cls, "__call__")]


def _replacement(cls: type, name: str, original: Callable) -> Callable:
    if name == "__call__":
        call = functools.wraps(torch.nn.Module.__call__)(_call)
        setattr(call, _STAGED, original)
        return call
    return _staged_method(name, original)


PATCHES = (
    Patch("torch.distributed.fsdp.FSDPModule (once torch imports FSDP2)", ("__call__", "unshard", "reshard", "set_*"),
          "FSDP's forward hooks gather and free parameters, and its methods set state FSDP reads, at every call; "
          "at trace time they would run once",
          _fsdp_targets, _replacement),
)
