"""Python + torch -> IR: graph tensors, recording, shape inference, graph lists, guards.

`trace.tracing(graph, hooks)` runs user code with a tracing mode active; every
torch call on a graph tensor (`tensor.GraphTensor`) is recorded into the graph,
with the plug-ins `hooks` (a `TraceHooks`) names. Control-flow sub-traces
(branches, loop bodies) live in subtraces/.
"""

from .hooks import NO_HOOKS, TraceHooks

__all__ = ["NO_HOOKS", "TraceHooks"]
