"""The bridge between AutoGraph's operators and the tracer: how converted code stages onto graphs.

`install()` registers, once, the staging backend AutoGraph's operators call for
graph values, the call overrides (modules, training-step calls) and the origin mapper that turns generated lines into the user's. The
package's `__init__` calls it: the one registration done at import.
"""

from __future__ import annotations

from ..autograph import register_backend
from ..autograph.api import register_call_override
from ..autograph.pyct.origin_info import lookup_origin
from ..graph import SourceLocation
from ..tracing.locations import register_origin_mapper
from ..tracing.trace import BEFORE_TRACE
from . import ddp, fsdp, library
from .calls import call_module, stage_distributed_call, stage_training_call
from .control_flow import TorchStagingBackend, location

_installed = False


def _map_origin(filename: str, lineno: int) -> SourceLocation | None:
    o = lookup_origin(filename, lineno)
    return None if o is None else location(o)


def install() -> None:
    """Register the staging backend, the call overrides and the origin mapper (idempotent)."""
    global _installed
    if _installed:
        return
    _installed = True
    register_backend(TorchStagingBackend())
    register_call_override(call_module)
    register_call_override(stage_training_call)
    register_call_override(stage_distributed_call)
    register_origin_mapper(_map_origin)
    library.install()  # now, before user code makes optimizers (LR schedulers keep their `step`)
    ddp.install()
    BEFORE_TRACE.append(library.install)
    BEFORE_TRACE.append(fsdp.install)
