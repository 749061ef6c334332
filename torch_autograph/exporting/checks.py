"""What exporting refuses, checked before torch.export sees the code: each names the node and the user's line.

Each check is a difference between eager Python and a program of
`torch.cond` / `torch.while_loop`, which pass values on rather than share
them, and carry tensors of one shape.
"""

from __future__ import annotations

from ..backends import lowering_error
from ..errors import GraphLoweringError
from ..graph import CondOp, Effect, Graph, Node, OpKind, Value, ValueKind, WhileOp
from .analysis import node_writes


def check_loop_var_writes(node: Node, graph: Graph, captures: set[int]) -> None:
    """A loop variable updated in place whose initial tensor is read after the loop: Python would see the
    first iteration's update there, which a loop carrying values cannot express."""
    body = node.subgraphs[1]
    updated = {id(v) for n in body.nodes for v in node_writes(n)}
    after = _nodes_after(graph, node)
    for init, lv in zip(node.args[0], node.op.target.loop_vars):
        if id(lv) in updated and isinstance(init, Value) and (
                id(init) in captures or any(init is v for n in after for v in n.input_values())
                or any(init is o for o in graph.outputs)):
            raise lowering_error(node, f"the loop updates loop variable %{lv.name} in place and its initial "
                                 f"tensor %{init.name} is read after the loop", "update a copy "
                                 "(`acc = acc.clone()` before the loop) or assign instead of updating in "
                                 "place (`acc = acc + 1`)", to="torch.export")


def _passed_on(node: Node) -> dict[int, list[Value]]:
    """For a `cond`/`while` node: output id -> the tensors it may be (a branch or loop passing one on as is)."""
    out: dict[int, list[Value]] = {}
    if isinstance(node.op.target, CondOp):
        for g in node.subgraphs:
            inputs = {id(v) for v in g.inputs}
            for o, res in zip(g.outputs, node.outputs):
                if isinstance(o, Value) and id(o) in inputs and o.kind is ValueKind.TENSOR:
                    out.setdefault(id(res), []).append(o)
    elif isinstance(node.op.target, WhileOp):
        for init, res in zip(node.args[0], node.outputs):
            if isinstance(init, Value) and init.kind is ValueKind.TENSOR:
                out.setdefault(id(res), []).append(init)  # a loop that runs no iteration passes it on
    return out


def check_updates_of_passed_on(nodes: list[Node], graph: Graph) -> None:
    """Refuse an in-place update of a tensor a `cond`/`while` passed on as is, when the original is seen again.

    Eager Python updates the original too (it is the same tensor); torch.cond and torch.while_loop return copies,
    so an exported program would not, and whatever reads the original later would see other values.
    """
    passed: dict[int, list[Value]] = {}
    outer = {id(v) for v in graph.inputs} | {id(v) for v, _ in graph.captures}
    for i, node in enumerate(nodes):
        if node.op.kind is OpKind.CONTROL:
            passed.update(_passed_on(node))
        if not node.op.effects & (Effect.WRITES_FIRST_ARG | Effect.WRITES_OUT) or node.op.kind is OpKind.CONTROL:
            continue
        for target in node_writes(node):
            for original in passed.get(id(target), ()):
                later = any(original is v for n in nodes[i + 1:] for v in n.input_values())
                if later or id(original) in outer or any(original is o for o in graph.outputs):
                    name = original.name
                    raise lowering_error(node, f"it updates %{target.name} in place, which may be the tensor "
                                         f"%{name} that a branch or loop passed on as is, and %{name} "
                                         f"is seen again: torch.cond and torch.while_loop pass on copies, so the "
                                         f"exported program would leave %{name} unchanged",
                                         "assign instead of updating in place (`y = y + 1`), or update a copy "
                                         "(`y = y.clone()` first)", to="torch.export")


def check_fixed_shapes(node: Node) -> None:
    """A loop variable whose shape changes between iterations (the trace made its dims symbolic) cannot be
    carried by torch.while_loop: say so at the loop's line rather than let torch fail on it."""
    for init, lv in zip(node.args[0], node.op.target.loop_vars):
        if not (isinstance(init, Value) and init.kind is ValueKind.TENSOR and lv.kind is ValueKind.TENSOR):
            continue
        changing = [d for d, (a, b) in enumerate(zip(init.shape, lv.shape)) if str(a) != str(b)]
        if changing:
            raise lowering_error(node, f"loop variable %{lv.name} changes shape between iterations (dim "
                                 f"{changing[0]}: {init.shape[changing[0]]} before the loop, {lv.shape[changing[0]]} "
                                 f"in it), and torch.while_loop carries tensors of one shape",
                                 "keep the shape fixed (pad, or mask instead of slicing), or run this function "
                                 "with the default backend instead of exporting it", to="torch.export")


def raise_output_list(graph: Graph, v: Value) -> None:
    raise GraphLoweringError(f"cannot export graph {graph.name}: it returns the graph list %{v.name} (a Python "
                             f"list of tensors), which an exported program cannot return.\n"
                             f"Fix: return torch.stack(lst) instead.")


def _nodes_after(graph: Graph, node: Node) -> list[Node]:
    for i, n in enumerate(graph.nodes):
        if n is node:
            return graph.nodes[i + 1:]
    return []
