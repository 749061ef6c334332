"""torch's global hooks the package registers, as entries of the one table, on only while needed.

    TRACE_PATCHES (while any thread traces):
        a global module forward pre-hook and forward hook   which modules ran, their modes, `Node.scope`
        a global optimizer step pre-hook, first of them     an optimizer step at trace time is staged or refused
    TAPE_PATCHES (while a GradientTape watches accessed variables):
        a global module forward pre-hook                    the parameters of modules that ran are "accessed"

The hook functions themselves are the tracer's (tracing/guards.py) and the
tape's watchers (`tracing.ACCESS_WATCHERS`); this module only says when torch
holds them.
"""

from __future__ import annotations

from typing import Any, Callable

import torch
from torch.optim.optimizer import _global_optimizer_pre_hooks, register_optimizer_step_pre_hook

from ..tracing import ACCESS_WATCHERS, module_entered, module_left, optimizer_step_while_tracing
from .patches import Hook

_module = torch.nn.modules.module


def _step_hook_first() -> Callable[[], None]:
    handle = register_optimizer_step_pre_hook(optimizer_step_while_tracing)
    # First among the global step hooks: others would run at trace time before it could refuse.
    if hasattr(_global_optimizer_pre_hooks, "move_to_end"):
        _global_optimizer_pre_hooks.move_to_end(handle.id, last=False)
    return handle.remove


def _watchers_see_module(module: torch.nn.Module, inputs: Any) -> None:
    for watcher in ACCESS_WATCHERS.get():
        seen = getattr(watcher, "module_ran", None)
        if seen is not None:
            seen(module)


TRACER_HOOKS = (
    Hook("torch.nn.modules.module", "global forward pre-hook",
         "records which modules run in a trace (their train/eval modes guard it) and the module each node is "
         "recorded in",
         lambda: _module.register_module_forward_pre_hook(module_entered).remove),
    Hook("torch.nn.modules.module", "global forward hook (always called)",
         "leaves the module a node is recorded in, also when its forward raised",
         lambda: _module.register_module_forward_hook(module_left, always_call=True).remove),
    Hook("torch.optim.optimizer", "global optimizer step pre-hook (first)",
         "an optimizer step taken at trace time would update the parameters once, with stale gradients: it is "
         "staged to run with the graph, or refused",
         _step_hook_first),
)

TAPE_HOOKS = (
    Hook("torch.nn.modules.module", "global forward pre-hook",
         "a GradientTape watching accessed variables watches the parameters of every module that runs",
         lambda: _module.register_module_forward_pre_hook(_watchers_see_module).remove),
)
