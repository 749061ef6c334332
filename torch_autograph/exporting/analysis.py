"""What exporting a graph must know beyond each node: which outer tensors a sub-graph writes, list element types.

`torch.cond` branches and `torch.while_loop` bodies may not mutate their
inputs, so the export code generator threads every tensor a sub-graph writes
in place (a Variable's `assign`, `x.add_(1)`, BatchNorm's running statistics)
through it as an output and copies it back after the control-flow op
(`writes`). Graph lists become preallocated tensors, so the element type of a
list made empty (`[]`, a TensorArray of size 0) comes from the values it flows
into (`ListTypes`).
"""

from __future__ import annotations

import torch

from ..graph import CondOp, Effect, Graph, Node, OpKind, Value, ValueKind, WhileOp, iter_values, unique_values

# Functions that update tensors given as arguments without the op saying so: (argument index, keyword).
_NORM_STATS = (((1, "running_mean"), (2, "running_var")), "training", 5)
_WRITERS = {torch.nn.functional.batch_norm: _NORM_STATS,
            torch.nn.functional.instance_norm: (((1, "running_mean"), (2, "running_var")), "use_input_stats", 5)}


def node_writes(node: Node) -> list[Value]:
    """The tensors `node` updates in place (its own writes; for control flow, what its sub-graphs write outside)."""
    op = node.op
    if op.kind is OpKind.CONTROL:
        if isinstance(op.target, CondOp):
            return unique_values(writes(node.subgraphs[0]) + writes(node.subgraphs[1]))
        if isinstance(op.target, WhileOp):
            carried = {id(v) for v in op.target.loop_vars}
            return [v for v in unique_values(writes(node.subgraphs[0]) + writes(node.subgraphs[1])) if id(v) not in carried]
        return []
    out: list[Value] = []
    if op.effects & Effect.WRITES_FIRST_ARG and node.args and isinstance(node.args[0], Value):
        out.append(node.args[0])
    if op.effects & Effect.WRITES_OUT:
        out += list(iter_values(node.kwargs.get("out")))
    spec = _WRITERS.get(op.target) if op.kind is OpKind.FUNCTION else None
    if spec is not None:
        targets, flag, flag_index = spec
        on = node.kwargs.get(flag, node.args[flag_index] if len(node.args) > flag_index else False)
        if on is True:
            for index, keyword in targets:
                v = node.kwargs.get(keyword, node.args[index] if len(node.args) > index else None)
                if isinstance(v, Value):
                    out.append(v)
    return [v for v in out if v.kind is ValueKind.TENSOR]


def writes(graph: Graph) -> list[Value]:
    """The tensors defined outside `graph` (its inputs, loop variables, captures) that running it updates."""
    defined = {id(v) for n in graph.nodes for v in n.outputs}
    return [v for v in unique_values([v for n in graph.nodes for v in node_writes(n)]) if id(v) not in defined]


class ListTypes:
    """The element type (dtype, shape, device) of every graph list of a graph nest.

    Lists linked by list operations, by `cond` outputs and by loop variables
    form one family, whose element type is the one any member knows.
    """

    def __init__(self, graph: Graph) -> None:
        self._parent: dict[int, int] = {}
        self._values: dict[int, Value] = {}
        self._link_graph(graph)

    def element(self, v: Value) -> tuple | None:
        """(dtype, shape, device) of `v`'s elements, None when no member of its family knows them."""
        root = self._find(id(v))
        for vid, value in self._values.items():
            if self._find(vid) == root and value.dtype is not None and value.shape is not None:
                return value.dtype, value.shape, value.device
        if v.dtype is not None and v.shape is not None:
            return v.dtype, v.shape, v.device
        return None

    def related(self, a: Value, b: Value) -> bool:
        """Whether lists `a` and `b` are one family (one list as it flows through operations and control flow)."""
        return self._find(id(a)) == self._find(id(b))

    def _find(self, i: int) -> int:
        while self._parent.get(i, i) != i:
            i = self._parent[i]
        return i

    def _union(self, a: object, b: object) -> None:
        if not (_is_list(a) and _is_list(b)):
            return
        for v in (a, b):
            self._values[id(v)] = v
        ra, rb = self._find(id(a)), self._find(id(b))
        if ra != rb:
            self._parent[ra] = rb

    def _link_graph(self, graph: Graph) -> None:
        for node in graph.nodes:
            if node.op.kind is not OpKind.CONTROL:
                for v in node.outputs:
                    if _is_list(v):
                        self._values[id(v)] = v
                        for a in node.input_values():
                            self._union(a, v)  # a list operation: its list argument and its result
                continue
            for sub in node.subgraphs:
                self._link_graph(sub)
            if isinstance(node.op.target, CondOp):
                for sub in node.subgraphs:
                    for o, out in zip(sub.outputs, node.outputs):
                        self._union(o, out)
            elif isinstance(node.op.target, WhileOp):
                body = node.subgraphs[1]
                for init, lv, o, out in zip(node.args[0], node.op.target.loop_vars, body.outputs, node.outputs):
                    for x in (init, o, out):
                        self._union(lv, x)


def _is_list(v: object) -> bool:
    return isinstance(v, Value) and v.kind is ValueKind.LIST
