"""Backends turn a finished Graph into something that runs: IR -> callable. They import only `graph/`.

Every backend implements `Backend`: `compile(graph, options)` returns a
`Compiled`, whose `fn` takes the graph's inputs positionally (placeholders,
then captures are read by reference inside) and returns its outputs.

- `torch_codegen.TorchBackend`: readable Python calling torch ops (the default).
- `inductor.InductorBackend`: lowered to torch.fx and compiled by inductor
  (`jit_compile=True`), split at control flow fx cannot express (`regions`).
- `tiering.TieredBackend`: the default first, inductor in the background once
  a function is hot (`jit_compile="auto"`).
- `cuda_graphs.CudaGraphsBackend`: wraps another backend's code in CUDA graph
  capture and replay (`cuda_graphs=True`).
"""

from .compiled import Backend, Compiled, CompileOptions
from .cuda_graphs import CudaGraphsBackend, FallbackWarnings
from .fx_lowering import lowering_error, to_fx
from .inductor import InductorBackend
from .tiering import TieredBackend
from .torch_codegen import CodeWriter, TorchBackend, add_runtime_error_note, compile_graph

__all__ = ["Backend", "CodeWriter", "Compiled", "CompileOptions", "CudaGraphsBackend", "FallbackWarnings",
           "InductorBackend", "TieredBackend", "TorchBackend", "add_runtime_error_note", "compile_graph",
           "lowering_error", "to_fx"]
