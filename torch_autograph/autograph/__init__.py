"""AutoGraph for PyTorch: converts Python control flow into staged operator calls.

This package imports neither torch nor the graph/backends layers.
"""

from torch_autograph.autograph import experimental
from torch_autograph.autograph.api import clear_cache, convert, converted_call, do_not_convert, to_code, to_graph

# The subscript/list operators' module: staging tells its frames from the user's by its file.
from torch_autograph.autograph.operators import lists as list_operators
from torch_autograph.autograph.operators.control_flow import check_branch_outputs
from torch_autograph.autograph.operators.dispatch import StagingBackend, current_backend, register_backend
from torch_autograph.autograph.operators.py_builtins import LazyEnumerate, LazyIterable, LazyRange, LazyZip
from torch_autograph.autograph.operators.variables import Undefined, UndefinedReturnValue
from torch_autograph.autograph.pyct.origin_info import Origin, lookup, lookup_origin

experimental.do_not_convert = do_not_convert

__all__ = ["LazyEnumerate", "LazyIterable", "LazyRange", "LazyZip", "Origin", "StagingBackend", "Undefined",
           "UndefinedReturnValue", "check_branch_outputs", "clear_cache", "convert", "converted_call",
           "current_backend", "do_not_convert", "experimental", "list_operators", "lookup", "lookup_origin",
           "register_backend", "to_code", "to_graph"]
