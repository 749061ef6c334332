"""The table: every torch attribute torch_autograph replaces, and for how long (see patches.py).

    TRACE_PATCHES   while any thread traces     training.py, ddp.py, fsdp.py, collectives.py, lazy_dynamo.py,
                                                conventions.py, numpy_arrays.py
    WATCH_PATCHES   while frozen code is alive  data_watch.py (off with ta.config.set_watch_frozen_data(False))

`table()` lists them (owner, attribute, lifetime, why); docs/python-state.md
and tests/interop/test_patches.py read it.
"""

from __future__ import annotations

from . import collectives, conventions, ddp, fsdp, lazy_dynamo, numpy_arrays, training
from .data_watch import WATCH_PATCHES
from .patches import PatchSet

TRACE_PATCHES = PatchSet("while tracing",
                         training.PATCHES + ddp.PATCHES + fsdp.PATCHES + collectives.PATCHES + lazy_dynamo.PATCHES
                         + conventions.PATCHES + numpy_arrays.PATCHES)


def table() -> list[tuple[str, str, str, str]]:
    """(owner, attribute, lifetime, why) for every attribute the package may replace."""
    return [(p.owner, a, s.name, p.why) for s in (TRACE_PATCHES, WATCH_PATCHES) for p in s.patches
            for a in p.attributes]
