"""Python + torch -> IR: graph tensors, recording, shape inference, control-flow sub-traces, guards.

`trace.tracing(graph)` runs user code with a tracing mode active; every torch
call on a graph tensor (`tensor.GraphTensor`) is recorded into the graph;
`cond`, `while_loop` and `lists` trace branches, loop bodies and growing lists
into sub-graphs.
"""
