"""Graphs as pictures: DOT text (Graphviz's language) and rendering through Graphviz's `dot` program.

`to_dot(graph)` needs nothing installed; `render(graph, "g.svg")` runs `dot`.
One DOT node per op, labelled with the op, the type of what it produces and
the user line it came from; inputs, captures and the return are shaped and
coloured apart; a `cond` or `while` node and its sub-graphs form a cluster::

    digraph "predict" {
      ...
      v0 [label="x\\nfloat32[None, 4] cpu", shape=invhouse, fillcolor="#dbeafe"];
      v1 [label="linear_weight\\nfloat32[8, 4] cpu\\ncapture", shape=cylinder, fillcolor="#fef3c7"];
      n2 [label="linear\\n%linear: float32[None, 8] cpu\\ndemo.py:7"];
      v0 -> n2;
      v1 -> n2;
      ...
    }

In a `while` cluster, each loop variable is a node of its own: the while node
feeds it the initial value, the body's output feeds it the next one (dashed
edges), and the loop's outputs leave from the while node.

Nodes are grouped in one cluster per `nn.Module` path (`Node.scope`:
`GPT.blocks.0.attn` inside `GPT.blocks.0` inside `GPT`). A captured tensor
(a weight) is drawn once in each graph or sub-graph whose ops read it, with
edges to those ops only; a branch without ops (an `if` without `else`) shows
what it passes on.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from typing import Any

from ..errors import GraphvizNotFoundError
from .interpreter import NodeVisitor
from .ops import WhileOp
from .values import Value
from .walkers import iter_values

Graph = Node = Any  # graph.Graph, graph.Node: graph.py imports this module, so they are not imported here

_INPUT = 'shape=invhouse, fillcolor="#dbeafe"'
_CAPTURE = 'shape=cylinder, fillcolor="#fef3c7"'
_CONTROL = 'shape=hexagon, fillcolor="#e0e7ff"'
_CHECK = 'shape=octagon, fillcolor="#fee2e2"'
_LOOP_VAR = 'shape=ellipse, fillcolor="#ecfccb"'
_RETURN = 'shape=oval, fillcolor="#e5e7eb"'
_FEEDBACK = 'style=dashed, color="#64748b"'
_PASSES = 'shape=note, fillcolor="#f1f5f9"'
_MODULE = 'style="rounded,filled"; fillcolor="#f8fafc"; color="#cbd5e1";'
_MAX_OUTPUT_LINES = 4
INSTALL_HINT = ("install Graphviz, which provides it: `apt-get install graphviz` (Debian/Ubuntu), "
                "`brew install graphviz` (macOS), `conda install -c conda-forge graphviz`, or see "
                "https://graphviz.org/download/; `to_dot()` gives the DOT text without it")


def to_dot(graph: "Graph") -> str:
    """The graph as DOT text (deterministic: the same graph gives the same text)."""
    return _DotWriter().write(graph)


def render(graph: "Graph", path: str | os.PathLike, format: str | None = None) -> str:  # noqa: A002 - dot's word
    """Write a picture of `graph` to `path` with Graphviz's `dot`; returns the path.

    Args:
        path: the file to write; its suffix picks the format unless `format` is given.
        format: any output format of `dot -T`: "svg" (the default for a path without a suffix), "png", "pdf"...

    Raises:
        GraphvizNotFoundError: the `dot` program is not on PATH (the message says how to install it).
        RuntimeError: `dot` failed (its message is included).
    """
    path = os.fspath(path)
    fmt = format or os.path.splitext(path)[1].lstrip(".") or "svg"
    exe = shutil.which("dot")
    if exe is None:
        raise GraphvizNotFoundError(f"rendering graph {graph.name} to {path} needs Graphviz's `dot` program, "
                                    f"which is not on PATH: {INSTALL_HINT}.")
    done = subprocess.run([exe, f"-T{fmt}", "-o", path], input=to_dot(graph).encode(), capture_output=True)
    if done.returncode != 0:
        raise RuntimeError(f"Graphviz's dot could not render graph {graph.name} as {fmt!r} to {path}: "
                           f"{done.stderr.decode(errors='replace').strip()}")
    return path


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _outputs_text(values: tuple[Value, ...]) -> list[str]:
    shown = [f"%{v.name}: {v.type_str()}" for v in values[:_MAX_OUTPUT_LINES]]
    if len(values) > _MAX_OUTPUT_LINES:
        shown.append(f"... {len(values) - _MAX_OUTPUT_LINES} more")
    return shown


class _DotWriter(NodeVisitor):
    """Assigns DOT ids in walk order and remembers which DOT node produces each Value."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.producer: dict[int, str] = {}  # id(Value) -> the DOT node that produces it
        self.fan_out: dict[str, int] = {}  # DOT node -> how many Values it produces
        # Edges go after every node and cluster: an edge written inside a cluster would pull both ends into it.
        self.edges: list[str] = []
        self.count = 0
        self.clusters = 0
        self.captures: set[int] = set()  # ids of the captured Values: drawn per (sub-)graph that reads them
        self.indent = ""  # of the node being drawn

    def new_id(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count - 1}"

    def emit(self, indent: str, text: str) -> None:
        self.lines.append(indent + text)

    def write(self, graph: "Graph") -> str:
        self.lines = [f"digraph {_quote(graph.name)} {{",
                      '  graph [fontname="Helvetica", fontsize=10, labeljust=l];',
                      '  node [fontname="Helvetica", fontsize=10, shape=box, style="rounded,filled", '
                      'fillcolor="#ffffff"];',
                      '  edge [fontname="Helvetica", fontsize=9, color="#334155"];']
        for v in graph.inputs:
            self.value_node("  ", v, f"{v.name}\n{v.type_str()}", _INPUT)
        self.captures = {id(v) for v, _ in graph.captures}
        self.capture_nodes("  ", graph.nodes, graph.outputs)
        self.nodes("  ", graph.nodes)
        ret = self.new_id("r")
        self.emit("  ", f"{ret} [label=\"return\", {_RETURN}];")
        self.feed(graph.outputs, ret, label_index=len(graph.outputs) > 1)
        self.lines += self.edges
        self.lines.append("}")
        return "\n".join(self.lines) + "\n"

    def value_node(self, indent: str, v: Value, label: str, style: str) -> str:
        node_id = self.new_id("v")
        self.produces(node_id, (v,))
        self.emit(indent, f"{node_id} [label={_quote(label)}, {style}];")
        return node_id

    def edge(self, source: str, target: str, attrs: str = "") -> None:
        self.edges.append(f"  {source} -> {target}{f' [{attrs}]' if attrs else ''};")

    def capture_nodes(self, indent: str, nodes: list["Node"], outputs: Any = ()) -> dict[int, str | None]:
        """Draw the captures that these nodes (not their sub-graphs) or `outputs` read, once; returns what
        the producers of those Values were before, to restore when the (sub-)graph is done."""
        before: dict[int, str | None] = {}
        used = [v for n in nodes if not n.subgraphs for v in n.input_values()] + list(iter_values(outputs))
        for v in used:
            if id(v) in self.captures and id(v) not in before:
                before[id(v)] = self.producer.get(id(v))
                self.value_node(indent, v, f"{v.name}\n{v.type_str()}\ncapture", _CAPTURE)
        return before

    def feed(self, values: Any, target: str, attrs: str = "", label_index: bool = False,
             skip_captures: bool = False) -> None:
        """Edges from the producers of the Values among `values` into `target` (one per producer and value)."""
        seen = set()
        for i, v in enumerate(iter_values(values)):
            source = self.producer.get(id(v))
            if skip_captures and id(v) in self.captures:
                continue  # a control node's sub-graphs draw the captures they read themselves
            if source is None or (source, id(v)) in seen:
                continue  # a Python constant, or a value defined nowhere the picture shows
            seen.add((source, id(v)))
            label = f"label={_quote(str(i) if label_index else '%' + v.name)}" if label_index or \
                self._many_outputs(source) else ""
            self.edge(source, target, ", ".join(a for a in (attrs, label) if a))

    def _many_outputs(self, source: str) -> bool:
        return self.fan_out.get(source, 0) > 1

    def produces(self, node_id: str, values: tuple[Value, ...]) -> None:
        for v in values:
            self.producer[id(v)] = node_id
        self.fan_out[node_id] = self.fan_out.get(node_id, 0) + len(values)

    def nodes(self, indent: str, nodes: list["Node"], outer: str | None = None) -> None:
        """Emit `nodes` in program order (so every producer has its id before its users), each into the
        cluster of its module path below `outer` (the scope of the enclosing control node)."""
        buffers: dict[str | None, list[str]] = {}
        saved = self.lines
        for node in nodes:
            scope = node.scope if node.scope != outer else None
            self.lines = buffers.setdefault(scope, [])
            self.indent = indent
            self.visit(node)
        self.lines = saved
        self.module_clusters(indent, buffers)

    def module_clusters(self, indent: str, buffers: dict[str | None, list[str]]) -> None:
        """The lines of each module path, nested: a path sits inside the longest other path it extends."""
        scopes = [s for s in buffers if s is not None]
        parent = {s: max((p for p in scopes if s.startswith(p + ".")), key=len, default=None) for s in scopes}

        def emit(scope: str | None, depth: str) -> None:
            self.lines += [depth + line for line in buffers[scope]]
            for child in (s for s in scopes if parent[s] == scope):
                self.clusters += 1
                self.lines.append(f"{indent}{depth}subgraph cluster_{self.clusters} {{")
                self.lines.append(f"{indent}{depth}  label={_quote(child)}; {_MODULE}")
                emit(child, depth + "  ")
                self.lines.append(f"{indent}{depth}}}")

        buffers.setdefault(None, [])
        emit(None, "")

    def op(self, node: "Node") -> None:
        self.plain(self.indent, node, [node.op.name] + _outputs_text(node.outputs), "")

    def check(self, node: "Node") -> None:
        self.plain(self.indent, node, [node.op.name, repr(node.op.target.message.split("\n", 1)[0])], f", {_CHECK}")

    def control(self, node: "Node") -> None:
        self.cluster(self.indent, node)

    def plain(self, indent: str, node: "Node", text: list[str], style: str) -> None:
        node_id = self.new_id("n")
        if node.grad_enabled is not None:
            text.append(f"grad {'on' if node.grad_enabled else 'off'}")
        if node.origin is not None:
            text.append(node.origin.short)
        self.emit(indent, f"{node_id} [label={_quote(chr(10).join(text))}{style}];")
        self.feed((node.args, node.kwargs), node_id)
        self.produces(node_id, node.outputs)

    def cluster(self, indent: str, node: "Node") -> None:
        """A `cond` / `while` / `try` node and its sub-graphs, as one cluster."""
        op = node.op
        self.clusters += 1
        where = f"  {node.origin.short}" if node.origin is not None else ""
        self.emit(indent, f"subgraph cluster_{self.clusters} {{")
        inner = indent + "  "
        self.emit(inner, f'label={_quote(op.name + where)}; style="rounded,dashed"; color="#64748b";')
        node_id = self.new_id("n")
        text = [op.name] + _outputs_text(node.outputs) + ([node.origin.short] if node.origin else [])
        self.emit(inner, f"{node_id} [label={_quote(chr(10).join(text))}, {_CONTROL}];")
        self.feed((node.args, node.kwargs), node_id, skip_captures=True)
        target = op.target
        loop_vars: tuple[Value, ...] = target.loop_vars if isinstance(target, WhileOp) else ()
        for v in loop_vars:
            lv = self.value_node(inner, v, f"loop var {v.name}\n{v.type_str()}", _LOOP_VAR)
            self.edge(node_id, lv, _FEEDBACK)
        names = ("cond", "body") if loop_vars else ("true", "false")
        for k, sub in enumerate(node.subgraphs):
            self.clusters += 1
            self.emit(inner, f"subgraph cluster_{self.clusters} {{")
            self.emit(inner + "  ", f"label={_quote(names[k] if k < len(names) else sub.name)}; style=rounded; "
                                    'color="#94a3b8";')
            for v in sub.inputs:
                if id(v) not in self.producer:  # an input the sub-graph does not share with the outer graph
                    self.value_node(inner + "  ", v, f"{v.name}\n{v.type_str()}", _INPUT)
            before = self.capture_nodes(inner + "  ", sub.nodes)
            self.nodes(inner + "  ", sub.nodes, outer=node.scope)
            passes = None
            if not sub.nodes and not loop_vars:  # an identity branch: show what it gives back
                passes = self.new_id("n")
                shown = [f"%{v.name}" for v in iter_values(sub.outputs)][:_MAX_OUTPUT_LINES]
                self.emit(inner + "  ", f"{passes} [label={_quote(chr(10).join(['passes on'] + shown))}, {_PASSES}];")
                self.feed(sub.outputs, passes)
            for key, producer in before.items():  # the captures drawn here are this sub-graph's
                if producer is None:
                    self.producer.pop(key, None)
                else:
                    self.producer[key] = producer
            self.emit(inner, "}")
            if loop_vars and k == 1:  # the body's outputs are the loop variables' next values
                for v, nxt in zip(loop_vars, sub.outputs):
                    if isinstance(nxt, Value) and id(nxt) in self.producer:
                        self.edge(self.producer[id(nxt)], self.producer[id(v)], _FEEDBACK)
            elif passes is not None:
                self.edge(passes, node_id, _FEEDBACK)
            else:
                self.feed(sub.outputs, node_id, _FEEDBACK)
        self.produces(node_id, node.outputs)
        self.emit(indent, "}")
