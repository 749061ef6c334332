"""Python + torch -> IR: graph tensors, recording, shape inference, graph lists, guards.

`trace.tracing(graph, request)` runs user code with a tracing mode active; every
torch call on a graph tensor (`tensor.GraphTensor`) is recorded into the graph,
with the plug-ins `hooks` (a `TraceHooks`) names. Control-flow sub-traces
(branches, loop bodies) live in subtraces/.
"""

# List operations on graph lists, used as a namespace (`lists.append(target, x)`): their names are generic.
from ..op_facts import traits_of
from . import lists
from .arrays import GraphArray, converted, refused
from .context import ACCESS_WATCHERS, Traced, current, outside_trace
from .decisions import DecisionCheck, bind_results
from .guards import module_entered, module_guards, module_left, optimizer_step_while_tracing
from .hooks import NO_HOOKS, NO_REQUEST, TraceHooks, TraceRequest
from .lists import GraphList, element_meta
from .locations import PACKAGE_DIR, is_library_file, user_location
from .messages import data_dependent_error, warn_at_user_line
from .meta import ListMeta, TensorMeta, like_example, meta_example
from .numbers import traced
from .promoted import Augmented, NumberOp, promote_number
from .recording import NeedsSizeError, record_inferred_by, record_op, record_with_meta, run_or_record
from .retrace import Knowledge, Retrace
from .symbols import SYMBOLIC, OutputDim, ScalarMeta, constant_of, is_graph_value, is_symbolic, same_dim
from .tensor import GraphTensor
from .trace import Scope, Trace, reenter, subtrace, tracing

__all__ = ["ACCESS_WATCHERS", "Augmented", "DecisionCheck", "GraphArray", "GraphList", "GraphTensor", "Knowledge", "ListMeta",
           "NO_HOOKS", "NO_REQUEST", "NeedsSizeError", "NumberOp", "OutputDim", "PACKAGE_DIR", "Retrace", "SYMBOLIC", "ScalarMeta",
           "TensorMeta", "TraceHooks", "TraceRequest", "Scope", "Trace", "Traced", "bind_results", "constant_of", "converted", "current",
           "data_dependent_error", "element_meta", "is_graph_value", "is_library_file", "is_symbolic",
           "like_example", "lists", "meta_example", "module_entered", "module_guards", "module_left", "optimizer_step_while_tracing", "outside_trace", "promote_number",
           "record_inferred_by", "record_op", "record_with_meta", "reenter", "refused", "run_or_record", "same_dim", "subtrace", "traced",
           "tracing", "traits_of", "user_location", "warn_at_user_line"]
