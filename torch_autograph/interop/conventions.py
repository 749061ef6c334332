"""torch's tracer conventions, answered while a trace runs: library code takes the path it takes under torch.compile.

torch.nn and transformers are not converted by AutoGraph; they are written to
run under torch.compile and torch.export, and ask `torch.compiler.is_compiling()`
to skip what a tracer cannot follow: torch.nn's Transformer encoder skips its
nested-tensor fast path's `_nested_tensor_from_mask_left_aligned` (a Python bool
from tensor data), transformers' masking skips its data-dependent shortcuts
(`if padding_mask.all(): return None`) and builds the mask as tensors. While the
calling thread traces, `torch.compiler.is_compiling()` is True — for that thread
only: another thread's eager code (or torch.compile) gets torch's own answer.
`torch._dynamo.is_compiling()` and `torch._utils.is_compiling()` call it, so they
answer the same without being replaced.

Not claimed: `torch.compiler.is_exporting()` stays torch's own (False while we
trace; torch.export sets it when `ta.export` hands it the generated program),
and `torch.jit.is_tracing()` stays False (code under it takes TorchScript's
paths: `torch.jit` tracer state, `_get_tracing_state()` calls). A graph tensor is
not a FakeTensor: code that checks `isinstance(t, FakeTensor)` sees a tensor.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from ..tracing import current
from .patches import Patch


def _targets() -> list[tuple[Any, str]]:
    return [(torch.compiler, "is_compiling")]


def _while_tracing(obj: Any, name: str, original: Callable[[], bool]) -> Callable[[], bool]:
    def is_compiling() -> bool:
        return current() is not None or original()

    is_compiling.__doc__ = original.__doc__
    is_compiling.__wrapped__ = original  # type: ignore[attr-defined]
    return is_compiling


PATCHES = (
    Patch("torch.compiler", ("is_compiling",),
          "library code (torch.nn, transformers) asks it to skip what a tracer cannot follow: Python bools from "
          "tensor data (the Transformer encoder's nested-tensor check, transformers' mask shortcuts). True in "
          "the thread that traces only; torch._dynamo.is_compiling and torch._utils.is_compiling call it",
          _targets, _while_tracing),
)


def torch_is_compiling() -> bool:
    """torch's own answer (torch.compile or torch.export is tracing), whether or not a trace has the patch on:
    for the package's own code, which must tell dynamo apart from itself."""
    fn = torch.compiler.is_compiling
    return getattr(fn, "__wrapped__", fn)()
