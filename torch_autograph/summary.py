"""`ta.summary.graph`: a traced function's graph in a TensorBoard event file, for TensorBoard's Graphs tab.

    f(x)                                   # trace it (or: cf = f.get_concrete_function(spec))
    ta.summary.graph(f, "runs/predict")    # then: tensorboard --logdir runs

Each op becomes a node named after the value it produces, with its op name,
its inputs, the type it produces (`_output_shapes`, and `type` as text) and
the user line it came from (`source`). Inputs are `Placeholder` nodes and
captured tensors `Capture` nodes. A `cond` or `while` node and its
sub-graphs form a name scope (`cond/true/...`, `while/body/...`) that
TensorBoard draws as one box to expand; the node itself takes the outputs
of the sub-graphs as inputs, and in a `while` each loop variable is a node
(`while/loop_vars/i`) fed by the while node and by the body. A Function with
several traces gives one scope per trace (named like `__inference_f_3`).
Ops run by an `nn.Module` sit in its name scope, nested like the modules
(`GPT/blocks/0/attn/linear`: `Node.scope` with `.` as `/`), collapsible in
TensorBoard like a `cond`.

Writing needs the `tensorboard` package (`pip install tensorboard`), loaded
only when called.
"""

from __future__ import annotations

import os
from typing import Any

from .function import BoundFunction, ConcreteFunction, Function, user_facing
from .graph import Graph, Node, NodeVisitor, Value, WhileOp, iter_values
from .naming import Namer


@user_facing
def graph(f: Function | ConcreteFunction | BoundFunction, logdir: str | os.PathLike) -> str:
    """Write the graph of `f` (each of its traces, for a Function) to a new event file in `logdir`.

    Args:
        f: a ConcreteFunction, or a `ta.function` that has been traced (called, or `get_concrete_function`).
        logdir: the directory `tensorboard --logdir` reads; created if needed.

    Returns:
        The path of the event file written.

    Raises:
        ValueError: `f` has not been traced yet.
        TypeError: `f` is neither a Function nor a ConcreteFunction.
        ImportError: the `tensorboard` package is not installed.
    """
    concrete = _concrete_functions(f)
    try:
        from tensorboard.compat.proto.event_pb2 import Event
        from torch.utils.tensorboard.writer import FileWriter
    except ImportError as e:
        raise ImportError(f"ta.summary.graph writes TensorBoard event files, which needs the tensorboard package: "
                          f"pip install tensorboard ({e})") from None
    graph_def = graph_def_of(concrete)
    logdir = os.fspath(logdir)
    before = set(os.listdir(logdir)) if os.path.isdir(logdir) else set()
    writer = FileWriter(logdir, filename_suffix=".graph")
    try:
        writer.add_event(Event(graph_def=graph_def.SerializeToString()))
    finally:
        writer.close()
    (written,) = set(os.listdir(logdir)) - before
    return os.path.join(logdir, written)


def _concrete_functions(f: Any) -> list[ConcreteFunction]:
    if isinstance(f, ConcreteFunction):
        return [f]
    if isinstance(f, (Function, BoundFunction)):
        found = f.concrete_functions
        if not found:
            raise ValueError(f"ta.function {f.name} has not been traced yet: call it, or pass "
                             f"{f.name}.get_concrete_function(...) to ta.summary.graph")
        return list(found)
    raise TypeError(f"ta.summary.graph takes a ta.function or a ConcreteFunction, got {type(f).__name__}")


def graph_def_of(concrete: list[ConcreteFunction]) -> Any:
    """The TensorBoard `GraphDef` of these concrete functions (one name scope each when there are several)."""
    from tensorboard.compat.proto.graph_pb2 import GraphDef

    out = GraphDef()
    for cf in concrete:
        _GraphDefWriter(out, f"{cf.name}/" if len(concrete) > 1 else "").write(cf.graph)
    return out


class _GraphDefWriter(NodeVisitor):
    """Adds one graph's NodeDefs to a GraphDef; remembers which node (and output) each Value comes from."""

    def __init__(self, out: Any, prefix: str) -> None:
        self.out = out
        self.prefix = prefix
        self.source: dict[int, str] = {}  # id(Value) -> "node" or "node:k" (TensorFlow's way to name an output)
        self.taken: set[str] = set()
        self.here = ""  # the name scope of the node being written
        self.namer = Namer(self.taken)  # shares `taken`: names written directly count too

    def write(self, graph: Graph) -> None:
        for v in graph.inputs:
            self.value_node(self.prefix, v, "Placeholder")
        for v, _ in graph.captures:
            self.value_node(self.prefix, v, "Capture")
        self.nodes(self.prefix, graph.nodes)

    def unique(self, name: str) -> str:
        return self.namer.new_symbol(name)

    def add(self, name: str, op: str, inputs: list[str], values: tuple[Value, ...], node: Node | None,
            extra: dict[str, str] | None = None) -> None:
        from tensorboard.compat.proto.attr_value_pb2 import AttrValue

        attr = {"_output_shapes": AttrValue(list=AttrValue.ListValue(shape=[_shape(v) for v in values]))}
        text = {"type": ", ".join(v.type_str() for v in values)} if values else {}
        if node is not None and node.origin is not None:
            text["source"] = str(node.origin)
        text.update(extra or {})
        for key, value in text.items():
            attr[key] = AttrValue(s=value.encode())
        self.out.node.add(name=name, op=op, input=inputs, attr=attr)
        for k, v in enumerate(values):
            self.source[id(v)] = name if len(values) == 1 else f"{name}:{k}"

    def value_node(self, scope: str, v: Value, op: str) -> None:
        self.add(self.unique(scope + v.name), op, [], (v,), None)

    def inputs_of(self, nest: Any) -> list[str]:
        found: list[str] = []
        for v in iter_values(nest):
            src = self.source.get(id(v))
            if src is not None and src not in found:
                found.append(src)
        return found

    def nodes(self, scope: str, nodes: list[Node], outer: str | None = None) -> None:
        for node in nodes:
            self.here = scope + _module_scope(node.scope, outer)
            self.visit(node)

    def op(self, node: Node, extra: dict[str, str] | None = None) -> None:
        name = self.unique(self.here + (node.outputs[0].name if node.outputs else node.op.name))
        self.add(name, node.op.name, self.inputs_of((node.args, node.kwargs)), node.outputs, node, extra)

    def check(self, node: Node) -> None:
        self.op(node, {"message": node.op.target.message})

    def control(self, node: Node) -> None:
        self.cluster(self.here, node)

    def cluster(self, scope: str, node: Node) -> None:
        inner = self.unique(scope + node.op.name) + "/"
        loop_vars = node.op.target.loop_vars if isinstance(node.op.target, WhileOp) else ()
        inputs = self.inputs_of((node.args, node.kwargs))
        self.taken.add(inner + node.op.name)  # the node's own name, written once its sub-graphs are
        for v in loop_vars:  # fed by the while node (below) and by the body
            self.source[id(v)] = self.unique(inner + "loop_vars/" + v.name)
        branch_names = ("cond", "body") if loop_vars else ("true", "false")
        fed_back: dict[int, str] = {}
        for k, sub in enumerate(node.subgraphs):
            label = branch_names[k] if k < len(branch_names) else sub.name
            self.nodes(f"{inner}{label}/", sub.nodes, outer=node.scope)
            if loop_vars and k == 1:
                fed_back = {id(v): self.source[id(o)] for v, o in zip(loop_vars, sub.outputs)
                            if isinstance(o, Value) and id(o) in self.source}
            else:
                inputs += [s for s in self.inputs_of(sub.outputs) if s not in inputs]
        name = inner + node.op.name
        for v in loop_vars:
            self.add(self.source[id(v)], "LoopVariable", [name] + ([fed_back[id(v)]] if id(v) in fed_back else []),
                     (v,), None)
        self.add(name, node.op.name, inputs, node.outputs, node)


def _module_scope(scope: str | None, outer: str | None) -> str:
    """The name scope of a module path inside the scope of the control node around it: `GPT/blocks/0/`."""
    if scope is None or scope == outer:
        return ""
    if outer is not None and scope.startswith(outer + "."):
        scope = scope[len(outer) + 1:]
    return scope.replace(".", "/") + "/"


def _shape(v: Value) -> Any:
    from tensorboard.compat.proto.tensor_shape_pb2 import TensorShapeProto

    if v.shape is None:
        return TensorShapeProto(unknown_rank=True)
    # -1: a dim known only when the graph runs (None, or a size symbol such as s0)
    return TensorShapeProto(dim=[TensorShapeProto.Dim(size=d if isinstance(d, int) else -1) for d in v.shape])
