"""The bridge between AutoGraph's operators and the tracer: how converted code stages onto graphs.

`install()` registers, once, the staging backend AutoGraph's operators and
calls dispatch to for graph values (autograph's one registration point); the
package's `__init__` calls it. `STAGING_HOOKS` are the plug-ins every trace of
a `ta.function` runs with (tracing/hooks.py): the calls interop/ records its
own way, the torch patches it installs while a trace runs, and the mapper
from AutoGraph's generated lines to the user's.
"""

from __future__ import annotations

from ..autograph import register_backend
from ..interop import TRACE_PATCHES, collectives, grads, rnn_cells, stage_trace_time_step
from ..tracing import TraceHooks
from .control_flow import TorchStagingBackend, map_origin

STAGING_HOOKS = TraceHooks(
    special_calls={**collectives.SPECIAL_CALLS, **rnn_cells.SPECIAL_CALLS},
    special_kinds=collectives.SPECIAL_KINDS,
    converted_calls=collectives.CONVERTED_CALLS,
    around_trace=(TRACE_PATCHES.while_tracing,),
    map_origin=map_origin,
    trace_time_step=stage_trace_time_step,
    read_grad=grads.read,
    write_grad=grads.write,
    after_backward=grads.after_backward,
    grads_state=grads.GradTracker,
)

_installed = False


def install() -> None:
    """Register the staging backend with AutoGraph's operators (idempotent)."""
    global _installed
    if not _installed:
        _installed = True
        register_backend(TorchStagingBackend())


__all__ = ["STAGING_HOOKS", "install", "map_origin"]
