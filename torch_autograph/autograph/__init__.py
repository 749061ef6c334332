"""AutoGraph for PyTorch: converts Python control flow into staged operator calls.

This package imports neither torch nor the graph/backends layers.
"""

from torch_autograph.autograph import experimental
from torch_autograph.autograph.api import clear_cache, convert, converted_call, do_not_convert, to_code, to_graph
from torch_autograph.autograph.operators.dispatch import StagingBackend, current_backend, register_backend
from torch_autograph.autograph.pyct.origin_info import Origin, lookup

experimental.do_not_convert = do_not_convert

__all__ = ["convert", "converted_call", "to_code", "to_graph", "do_not_convert", "experimental",
           "register_backend", "current_backend", "StagingBackend", "Origin", "lookup",
           "clear_cache"]
