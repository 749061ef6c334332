"""The table: every torch attribute torch_autograph replaces and every process-wide hook it registers, and for
how long (see patches.py).

    TRACE_PATCHES   while any thread traces     training.py, ddp.py, fsdp.py, collectives.py, lazy_dynamo.py
                                                (and its sys.meta_path finder), conventions.py, numpy_arrays.py,
                                                module_hooks.py (torch's global module and optimizer-step hooks)
    WATCH_PATCHES   while frozen code is alive  data_watch.py (off with ta.config.set_watch_frozen_data(False))
    TAPE_PATCHES    while a GradientTape        module_hooks.py (torch's global module pre-hook)
                    watches accessed variables

`table()` lists them (owner, attribute, lifetime, why); docs/python-state.md
and tests/interop/test_patches.py read it.
"""

from __future__ import annotations

from . import collectives, conventions, ddp, fsdp, lazy_dynamo, module_hooks, numpy_arrays, training
from .data_watch import WATCH_PATCHES
from .patches import PatchSet

TRACE_PATCHES = PatchSet("while tracing",
                         training.PATCHES + ddp.PATCHES + fsdp.PATCHES + collectives.PATCHES + lazy_dynamo.PATCHES
                         + conventions.PATCHES + numpy_arrays.PATCHES + module_hooks.TRACER_HOOKS)
TAPE_PATCHES = PatchSet("while a GradientTape watches accessed variables", module_hooks.TAPE_HOOKS)


def table() -> list[tuple[str, str, str, str]]:
    """(owner, attribute or hook, lifetime, why) for everything the package may replace or register."""
    return [(p.owner, a, s.name, p.why) for s in (TRACE_PATCHES, WATCH_PATCHES, TAPE_PATCHES) for p in s.patches
            for a in p.attributes]
