"""`NodeVisitor`: one dispatch by node kind for the code emitters and the IR walkers."""

import pytest
import torch

import torch_autograph as ta
from torch_autograph.errors import GraphInvariantError
from torch_autograph.graph import CheckOp, Node, NodeVisitor, Op, OpKind, TryOp, walk_nodes


def _branchy(x):
    assert x.sum() > -1e9, "finite"
    if x.sum() > 0:
        y = x + 1
    else:
        y = x - 1
    while y.sum() < 10:
        y = y * 2 + 1
    return y


class _Kinds(NodeVisitor):
    def __init__(self):
        self.seen = []

    def op(self, node):
        self.seen.append("op")

    def cond(self, node):
        self.seen.append("cond")

    def while_loop(self, node):
        self.seen.append("while")

    def check(self, node):
        self.seen.append("check")

    def try_block(self, node):
        self.seen.append("try")


def test_each_node_goes_to_the_method_of_its_kind():
    graph = ta.function(_branchy).get_concrete_function(torch.ones(3)).graph
    kinds = _Kinds()
    kinds.visit_nodes(graph.nodes)
    assert {"op", "cond", "while", "check"} <= set(kinds.seen)
    assert len(kinds.seen) == len(graph.nodes)
    assert kinds.visit(Node(Op(OpKind.CONTROL, object.__new__(TryOp), "try"), (), {}, ())) is None
    assert kinds.seen[-1] == "try"


def test_kinds_a_visitor_does_not_handle_go_to_control_and_then_raise():
    class OnlyCalls(NodeVisitor):
        def op(self, node):
            return "call"

    graph = ta.function(_branchy).get_concrete_function(torch.ones(3)).graph
    calls = [n for n in graph.nodes if n.op.kind is not OpKind.CONTROL]
    assert OnlyCalls().visit(calls[0]) == "call"
    check = next(n for n in walk_nodes(graph) if isinstance(n.op.target, CheckOp))
    with pytest.raises(GraphInvariantError, match="OnlyCalls does not handle the control node"):
        OnlyCalls().visit(check)


def test_a_control_node_of_no_known_kind_is_an_invariant_error():
    class Odd:
        pass

    with pytest.raises(GraphInvariantError, match=r"has a target of no known kind \(Odd\)"):
        _Kinds().visit(Node(Op(OpKind.CONTROL, Odd(), "odd"), (), {}, ()))
