"""One dispatch over a graph's nodes for everything that turns the IR into something else.

torch.fx's `Interpreter` is the model: a consumer (a code emitter, a lowering, a drawing) subclasses
`NodeVisitor` and says what it does for each kind of node; the base decides the kind, once, for all of them::

    class Printer(NodeVisitor):
        def op(self, node): ...              # a call of a torch function, method, operator, attribute
        def cond(self, node): ...            # a tensor `if`: node.subgraphs are its branches
        def while_loop(self, node): ...      # a tensor loop: node.op.target.loop_vars, (cond, body)
        def check(self, node): ...           # a run-time assumption or `assert`
        def try_block(self, node): ...       # a `try` whose handler runs when the body fails as the graph runs

    Printer().visit_nodes(graph.nodes)

A kind a consumer does not handle goes to `control(node)` (control flow it treats alike) and, unless that is
overridden, raises `GraphInvariantError` naming the consumer and the kind: never a silent skip.
"""

from __future__ import annotations

from typing import Any, Iterable

from ..errors import GraphInvariantError
from .ops import CheckOp, CondOp, OpKind, TryOp, WhileOp

Node = Any  # graph.Node (graph.py draws with dot.py, a visitor: importing it here would close a cycle)


class NodeVisitor:
    """Visits nodes by kind: `op` for calls, `cond`/`while_loop`/`check`/`try_block` for control flow."""

    def visit_nodes(self, nodes: Iterable[Node]) -> None:
        for node in nodes:
            self.visit(node)

    def visit(self, node: Node) -> Any:
        """Hand `node` to the method for its kind, and return what that gives."""
        op = node.op
        if op.kind is not OpKind.CONTROL:
            return self.op(node)
        target = op.target
        if isinstance(target, CondOp):
            return self.cond(node)
        if isinstance(target, WhileOp):
            return self.while_loop(node)
        if isinstance(target, CheckOp):
            return self.check(node)
        if isinstance(target, TryOp):
            return self.try_block(node)
        raise GraphInvariantError(f"bug in torch_autograph: control node {op.name} has a target of no known kind "
                                  f"({type(target).__name__})")

    def op(self, node: Node) -> Any:
        return self._unhandled(node, "a call")

    def cond(self, node: Node) -> Any:
        return self.control(node)

    def while_loop(self, node: Node) -> Any:
        return self.control(node)

    def check(self, node: Node) -> Any:
        return self.control(node)

    def try_block(self, node: Node) -> Any:
        return self.control(node)

    def control(self, node: Node) -> Any:
        """The control-flow kinds a consumer treats alike (those it does not override one by one)."""
        return self._unhandled(node, f"the control node {node.op.name}")

    def _unhandled(self, node: Node, what: str) -> Any:
        raise GraphInvariantError(f"bug in torch_autograph: {type(self).__name__} does not handle {what}")
