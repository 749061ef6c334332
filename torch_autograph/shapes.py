"""`ta.shape`: a tensor's shape, with run-time values for dims unknown while tracing."""

from __future__ import annotations

from typing import Any

import torch

from .graph.tensor import GraphTensor


def shape(x: Any) -> tuple:
    """The shape of `x` as a tuple usable in `view`, `reshape`, `zeros`...

    Eagerly this is `tuple(x.shape)`. While tracing, known dims are ints and
    dims unknown until the graph runs (None in `x.shape`) are run-time values.
    """
    if isinstance(x, GraphTensor):
        return x.size()
    if isinstance(x, torch.Tensor):
        return tuple(x.shape)
    return tuple(torch.as_tensor(x).shape)
