"""ta.summary.graph: the event file TensorBoard reads back has the graph's nodes, edges and scopes."""

from __future__ import annotations

import pytest
import torch

import torch_autograph as ta

event_accumulator = pytest.importorskip("tensorboard.backend.event_processing.event_accumulator")


def _read_back(logdir) -> dict:
    acc = event_accumulator.EventAccumulator(str(logdir))
    acc.Reload()
    return {n.name: n for n in acc.Graph().node}


lin = torch.nn.Linear(4, 3)


def _step(x, n):
    y = lin(x)
    if y.sum() > 0:
        y = y * 2
    i = 0
    while i < n:
        y = torch.tanh(y)
        i += 1
    return y


def test_graph_with_cond_and_while_reads_back_with_nodes_edges_and_scopes(tmp_path):
    f = ta.function(_step)
    cf = f.get_concrete_function(ta.TensorSpec([None, 4]), torch.tensor(3))
    path = ta.summary.graph(cf, tmp_path)
    assert path.startswith(str(tmp_path))
    nodes = _read_back(tmp_path)
    first = _step.__code__.co_firstlineno
    assert nodes["x"].op == "Placeholder" and nodes["n"].op == "Placeholder"
    assert nodes["linear_weight"].op == "Capture" and nodes["linear_bias"].op == "Capture"
    linear = nodes["Linear/linear"]  # in the name scope of the module that ran it
    assert linear.op == "linear" and list(linear.input) == ["x", "linear_weight", "linear_bias"]
    assert [d.size for d in linear.attr["_output_shapes"].list.shape[0].dim] == [-1, 3]  # -1: a size symbol
    assert linear.attr["type"].s == b"float32[u0, 3] cpu"
    assert linear.attr["source"].s.decode().endswith(f"test_summary.py:{first + 1}")
    # the cond and its branch, as a scope; the branch reads the outer value and feeds the cond node
    assert nodes["cond/true/mul"].input == ["Linear/linear"]
    assert set(nodes["cond/cond"].input) == {"gt", "Linear/linear", "cond/true/mul"}
    # the while: loop variables fed by the while node and by the body, the test and body as scopes
    assert list(nodes["while/loop_vars/i"].input) == ["while/while", "while/body/sym"]  # i += 1
    assert list(nodes["while/loop_vars/y_1"].input) == ["while/while", "while/body/tanh"]
    assert nodes["while/body/tanh"].input == ["while/loop_vars/y_1"]
    assert set(nodes["while/cond/gt_3"].input) == {"while/loop_vars/i", "n"}  # i < n, recorded as n > i
    assert set(nodes["while/while"].input) == {"cond/cond", "n", "while/cond/gt_3"}  # the initial y, n, the test
    every_input = {i.split(":")[0] for node in nodes.values() for i in node.input}
    assert every_input <= set(nodes)  # every edge ends at a node of the file


def test_a_function_with_several_traces_gets_one_scope_per_trace(tmp_path):
    f = ta.function(lambda x: torch.relu(x) * 2)
    f(torch.randn(3))
    f(torch.randn(2, 2))
    ta.summary.graph(f, tmp_path)
    nodes = _read_back(tmp_path)
    scopes = sorted({name.split("/")[0] for name in nodes})
    assert scopes == sorted(cf.name for cf in f.concrete_functions) and len(scopes) == 2
    assert nodes[f"{scopes[0]}/mul"].input == [f"{scopes[0]}/relu"]


def test_an_untraced_function_is_refused_with_the_fix(tmp_path):
    f = ta.function(lambda x: x + 1, name="plus_one")
    with pytest.raises(ValueError, match=r"ta.function plus_one has not been traced yet: call it, or pass "
                                         r"plus_one.get_concrete_function\(...\)"):
        ta.summary.graph(f, tmp_path)
    with pytest.raises(TypeError, match="takes a ta.function or a ConcreteFunction, got int"):
        ta.summary.graph(3, tmp_path)


class _Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attn = torch.nn.Linear(4, 4)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())

    def forward(self, x):
        if x.sum() > 0:
            x = self.attn(x)
        return self.mlp(x) + x


class _Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList([_Block(), _Block()])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x.sum()


def test_ops_sit_in_the_name_scope_of_their_module_nested_like_the_modules(tmp_path):
    net = _Net()
    f = ta.function(lambda x: net(x))
    f(torch.ones(2, 4))
    ta.summary.graph(f, tmp_path)
    nodes = _read_back(tmp_path)
    assert nodes["_Net/layers/0/mlp/0/linear_1"].op == "linear"
    assert nodes["_Net/layers/1/mlp/1/relu_1"].op == "relu"
    assert nodes["_Net/layers/0/add"].op == "add"  # the residual, in its block's scope
    assert nodes["_Net/sum_2"].op == "sum"
    # a cond inside a block: the cond's scope sits in the block's, its branch ops in the branch
    assert nodes["_Net/layers/0/cond/true/attn/linear"].op == "linear"
    every_input = {i.split(":")[0] for node in nodes.values() for i in node.input}
    assert every_input <= set(nodes)
