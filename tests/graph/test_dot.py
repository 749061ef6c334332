"""Pictures of graphs: the DOT text's structure for straight-line, cond and while graphs; rendering through dot."""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field

import pytest
import torch

import torch_autograph as ta
from torch_autograph.errors import GraphvizNotFoundError

requires_dot = pytest.mark.graphviz


@dataclass
class Dot:
    """What a picture shows: nodes (id -> label lines, attributes), edges, and clusters with what they hold."""

    nodes: dict[str, tuple[list[str], str]] = field(default_factory=dict)
    edges: list[tuple[str, str, str]] = field(default_factory=list)
    clusters: list[tuple[str, list[str], list[str]]] = field(default_factory=list)  # (label, parents, members)

    def ids(self, first_label_line: str) -> list[str]:
        return [i for i, (label, _) in self.nodes.items() if label[0] == first_label_line]

    def one(self, first_label_line: str) -> str:
        (found,) = self.ids(first_label_line)
        return found

    def edge(self, a: str, b: str) -> str | None:
        """The attributes of the edge a -> b, or None when there is none."""
        return next((attrs for s, t, attrs in self.edges if (s, t) == (a, b)), None)

    def cluster(self, label: str) -> tuple[list[str], list[str]]:
        (found,) = [(parents, members) for name, parents, members in self.clusters if name == label]
        return found


def parse(text: str) -> Dot:
    dot, stack = Dot(), []
    for line in text.splitlines()[1:-1]:
        line = line.strip()
        if line.startswith("subgraph cluster_"):
            stack.append(len(dot.clusters))
            dot.clusters.append(("", [dot.clusters[i][0] for i in stack[:-1]], []))
        elif line == "}":
            stack.pop()
        elif line.startswith("label=") and stack:
            label = re.match(r'label="(.*?)";', line).group(1)
            _, parents, members = dot.clusters[stack[-1]]
            dot.clusters[stack[-1]] = (label, parents, members)
        elif m := re.match(r'(\w+) -> (\w+)(?: \[(.*)\])?;$', line):
            dot.edges.append((m.group(1), m.group(2), m.group(3) or ""))
        elif m := re.match(r'(\w+) \[label="((?:[^"\\]|\\.)*)"(.*)\];$', line):
            dot.nodes[m.group(1)] = (m.group(2).split("\\n"), m.group(3))
            for i in stack:
                dot.clusters[i][2].append(m.group(1))
    assert not stack
    return dot


def _mlp_line(x):
    return lin(x).relu() * 2


lin = torch.nn.Linear(4, 3)


def test_straight_line_graph_one_node_per_op_with_type_and_line():
    cf = ta.function(_mlp_line).get_concrete_function(ta.TensorSpec([None, 4]))
    text = cf.graph.to_dot()
    assert text == cf.graph.to_dot()  # deterministic
    dot = parse(text)
    line = _mlp_line.__code__.co_firstlineno + 1
    assert dot.nodes[dot.one("linear")][0] == ["linear", "%linear: float32[u0, 3] cpu", f"test_dot.py:{line}"]
    x, w, b = dot.one("x"), dot.one("linear_weight"), dot.one("linear_bias")
    assert "invhouse" in dot.nodes[x][1]  # an input
    assert dot.nodes[w][0][-1] == "capture" and "cylinder" in dot.nodes[w][1]  # a capture, drawn apart
    linear, relu, mul, ret = dot.one("linear"), dot.one("relu"), dot.one("mul"), dot.one("return")
    assert {(s, t) for s, t, _ in dot.edges} == {(x, linear), (w, linear), (b, linear), (linear, relu),
                                                  (relu, mul), (mul, ret)}
    assert dot.clusters == [("Linear", [], [linear])]  # the module that ran the op


def _branch(x):
    if x.sum() > 0:
        y = x * 2
    else:
        y = -x
    return y


def test_cond_is_a_cluster_with_a_sub_cluster_per_branch():
    dot = parse(ta.function(_branch).get_concrete_function(ta.TensorSpec([3])).graph.to_dot())
    line = _branch.__code__.co_firstlineno + 1
    cond = dot.one("cond")
    parents, members = dot.cluster(f"cond  test_dot.py:{line}")
    assert parents == [] and cond in members
    true_parents, true_members = dot.cluster("true")
    false_parents, false_members = dot.cluster("false")
    assert true_parents == false_parents == [f"cond  test_dot.py:{line}"]
    mul, neg, x, gt = dot.one("mul"), dot.one("neg"), dot.one("x"), dot.one("gt")
    assert true_members == [mul] and false_members == [neg]
    assert dot.edge(x, mul) == "" and dot.edge(x, neg) == ""  # branches read the outer value directly
    assert dot.edge(gt, cond) == ""  # the predicate
    assert "dashed" in dot.edge(mul, cond) and "dashed" in dot.edge(neg, cond)  # what each branch gives back
    assert dot.edge(cond, dot.one("return")) is not None


def _loop(x, n):
    i = 0
    while i < n:
        x = torch.tanh(x) + i
        i += 1
    return x


def test_while_is_a_cluster_with_loop_variables_fed_by_the_body():
    dot = parse(ta.function(_loop).get_concrete_function(ta.TensorSpec([3]), torch.tensor(4)).graph.to_dot())
    line = _loop.__code__.co_firstlineno + 2
    loop = dot.one("while")
    assert dot.nodes[loop][0][1:] == ["%i_1: int", "%x_2: float32[3] cpu", f"test_dot.py:{line}"]
    _, members = dot.cluster(f"while  test_dot.py:{line}")
    i_var, x_var = dot.one("loop var i"), dot.one("loop var x_1")
    assert {loop, i_var, x_var} <= set(members)
    assert "dashed" in dot.edge(loop, i_var) and "dashed" in dot.edge(loop, x_var)  # initial values
    _, cond_members = dot.cluster("cond")
    _, body_members = dot.cluster("body")
    test, tanh, add, count = dot.one("gt"), dot.one("tanh"), dot.one("add"), dot.one("sym")  # i < n is n > i
    assert cond_members == [test] and body_members == [tanh, add, count]
    assert dot.edge(i_var, test) == "" and dot.edge(dot.one("n"), test) == ""
    assert dot.edge(x_var, tanh) == "" and dot.edge(i_var, count) == ""
    assert "dashed" in dot.edge(test, loop)  # the test decides
    assert "dashed" in dot.edge(add, x_var) and "dashed" in dot.edge(count, i_var)  # the next values
    assert dot.edge(dot.one("x"), loop) == ""  # the initial x enters the loop
    assert dot.edge(loop, dot.one("return")) == 'label="%x_2"'  # one of the loop's outputs leaves


def test_render_without_graphviz_says_how_to_install_it(monkeypatch, tmp_path):
    graph = ta.function(_branch).get_concrete_function(ta.TensorSpec([3])).graph
    monkeypatch.setattr(shutil, "which", lambda name: None)
    with pytest.raises(GraphvizNotFoundError, match="needs Graphviz's `dot` program") as info:
        graph.render(tmp_path / "g.svg")
    assert "apt-get install graphviz" in str(info.value) and "brew install graphviz" in str(info.value)
    assert isinstance(info.value, FileNotFoundError)
    assert not (tmp_path / "g.svg").exists()


@requires_dot
def test_render_writes_svg_and_png_with_dot(tmp_path):
    graph = ta.function(_loop).get_concrete_function(ta.TensorSpec([3]), torch.tensor(4)).graph
    svg = graph.render(tmp_path / "loop.svg")
    text = (tmp_path / "loop.svg").read_text()
    assert svg == str(tmp_path / "loop.svg") and "<svg" in text and "loop var x_1" in text
    graph.render(tmp_path / "loop.out", format="png")
    assert (tmp_path / "loop.out").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


class _Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attn = torch.nn.Linear(4, 4)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())

    def forward(self, x):
        return self.mlp(self.attn(x)) + x


class _Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList([_Block(), _Block()])

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x.sum()


_net = _Net()


def test_nodes_are_grouped_in_one_cluster_per_module_path():
    dot = parse(ta.function(lambda x: _net(x)).get_concrete_function(ta.TensorSpec([2, 4])).graph.to_dot())
    labels = {label: parents for label, parents, _ in dot.clusters}
    assert labels["_Net"] == []
    assert labels["_Net.layers.0"] == labels["_Net.layers.1"] == ["_Net"]
    assert labels["_Net.layers.0.attn"] == ["_Net", "_Net.layers.0"]
    assert labels["_Net.layers.1.mlp.0"] == ["_Net", "_Net.layers.1", "_Net.layers.1.mlp"] or \
        labels["_Net.layers.1.mlp.0"] == ["_Net", "_Net.layers.1"]
    _, attn = dot.cluster("_Net.layers.0.attn")
    assert [dot.nodes[n][0][0] for n in attn] == ["linear"]
    _, block = dot.cluster("_Net.layers.1")
    assert "add" in [dot.nodes[n][0][0] for n in block]  # the residual, in the block's own cluster
    _, net = dot.cluster("_Net")
    assert dot.one("sum") in net and dot.one("x") not in net  # inputs stay outside
    (linear_0,) = attn
    assert dot.edge(dot.one("x"), linear_0) == ""  # edges still join across clusters


lin8 = torch.nn.Linear(3, 3)


def _loop_with_weights(x, n):
    i = 0
    while i < n:
        x = torch.tanh(lin8(x))
        i += 1
    return lin8(x)


def test_a_capture_is_drawn_once_in_each_sub_graph_that_uses_it():
    cf = ta.function(_loop_with_weights).get_concrete_function(ta.TensorSpec([3]), torch.tensor(2))
    dot = parse(cf.graph.to_dot())
    weights = dot.ids("linear_weight")
    assert len(weights) == 2  # the outer graph's, and the loop body's own
    _, body = dot.cluster("body")
    (inner,) = [w for w in weights if w in body]
    (outer,) = [w for w in weights if w != inner]
    loop = dot.one("while")
    assert dot.edge(outer, loop) is None and dot.edge(inner, loop) is None  # no edge into the while node
    linears = dot.ids("linear")
    (in_body,) = [n for n in linears if n in body]
    (after,) = [n for n in linears if n not in body]
    assert dot.edge(inner, in_body) == "" and dot.edge(outer, in_body) is None
    assert dot.edge(outer, after) == ""


def _identity_branch(x):
    if x.sum() > 0:
        x = x * 2
    return x


def test_the_identity_branch_of_an_if_has_its_cluster():
    dot = parse(ta.function(_identity_branch).get_concrete_function(ta.TensorSpec([3])).graph.to_dot())
    _, false = dot.cluster("false")
    (passes,) = false
    assert dot.nodes[passes][0][0] == "passes on" and dot.nodes[passes][0][1] == "%x"
    assert dot.edge(dot.one("x"), passes) == "" and "dashed" in dot.edge(passes, dot.one("cond"))


def test_every_node_has_its_user_line_size_expressions_too():
    dot = parse(ta.function(_loop).get_concrete_function(ta.TensorSpec([None]), torch.tensor(4)).graph.to_dot())
    for node_id, (label, attrs) in dot.nodes.items():
        if "invhouse" in attrs or "cylinder" in attrs or "ellipse" in attrs or label == ["return"]:
            continue  # inputs, captures, loop variables, the return
        assert re.fullmatch(r"test_dot\.py:\d+", label[-1]), label
    count = dot.one("sym")  # `i += 1` on a Python int: an expression the loop hands on at its own line
    assert dot.nodes[count][0][-1] == f"test_dot.py:{_loop.__code__.co_firstlineno + 2}"
