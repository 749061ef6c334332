"""Shape inference for torch's RNN cells, as the trace's special calls (`lstm_cell`, `gru_cell`, `rnn_tanh_cell`, `rnn_relu_cell`).

Their C++ implementations read the sizes of their tensors as plain integers
(`unsafe_chunk` of the gates asks for `sizes()`), which on a fake tensor with a
symbolic dim fixes that dim to the traced call's size, or fails where the size
has no value while tracing (the batch dim of a hidden state carried by a graph
loop). The same cell written with symbolic-friendly ops gives the outputs'
metadata (shapes, dtype, requires_grad) without reading a size; the graph still
runs torch's own cell, which checks its arguments when it runs.
"""

from __future__ import annotations

import functools
from typing import Any

import torch
import torch.nn.functional as F

from ..tracing import record_inferred_by


def _symbolic(*tensors: Any) -> bool:
    return any(isinstance(d, torch.SymInt) for t in tensors if isinstance(t, torch.Tensor) for d in t.shape)


def _gates(input: Any, hx: Any, w_ih: Any, w_hh: Any, b_ih: Any, b_hh: Any) -> tuple[Any, Any]:
    return F.linear(input, w_ih, b_ih), F.linear(hx, w_hh, b_hh)


def lstm_cell(input: Any, hx: Any, w_ih: Any, w_hh: Any, b_ih: Any = None, b_hh: Any = None) -> tuple[Any, Any]:
    h, c = hx
    if not _symbolic(input, h, c):  # torch's own cell: its checks and messages for wrong sizes
        return torch.lstm_cell(input, hx, w_ih, w_hh, b_ih, b_hh)
    gi, gh = _gates(input, h, w_ih, w_hh, b_ih, b_hh)
    i, f, g, o = (gi + gh).chunk(4, -1)
    cy = f.sigmoid() * c + i.sigmoid() * g.tanh()
    return o.sigmoid() * cy.tanh(), cy


def gru_cell(input: Any, hx: Any, w_ih: Any, w_hh: Any, b_ih: Any = None, b_hh: Any = None) -> Any:
    if not _symbolic(input, hx):
        return torch.gru_cell(input, hx, w_ih, w_hh, b_ih, b_hh)
    gi, gh = _gates(input, hx, w_ih, w_hh, b_ih, b_hh)
    i_r, i_z, i_n = gi.chunk(3, -1)
    h_r, h_z, h_n = gh.chunk(3, -1)
    r, z = (i_r + h_r).sigmoid(), (i_z + h_z).sigmoid()
    n = (i_n + r * h_n).tanh()
    return n + z * (hx - n)


def rnn_tanh_cell(input: Any, hx: Any, w_ih: Any, w_hh: Any, b_ih: Any = None, b_hh: Any = None) -> Any:
    if not _symbolic(input, hx):
        return torch.rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih, b_hh)
    gi, gh = _gates(input, hx, w_ih, w_hh, b_ih, b_hh)
    return (gi + gh).tanh()


def rnn_relu_cell(input: Any, hx: Any, w_ih: Any, w_hh: Any, b_ih: Any = None, b_hh: Any = None) -> Any:
    if not _symbolic(input, hx):
        return torch.rnn_relu_cell(input, hx, w_ih, w_hh, b_ih, b_hh)
    gi, gh = _gates(input, hx, w_ih, w_hh, b_ih, b_hh)
    return (gi + gh).relu()


# torch's cell -> its handler: recorded as any torch call, its outputs' metadata from the cell written above.
SPECIAL_CALLS = {cell: functools.partial(record_inferred_by, infer) for cell, infer in (
    (torch.lstm_cell, lstm_cell), (torch.gru_cell, gru_cell), (torch.rnn_tanh_cell, rnn_tanh_cell),
    (torch.rnn_relu_cell, rnn_relu_cell))}
