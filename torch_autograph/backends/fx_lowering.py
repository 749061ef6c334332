"""Lower a `Graph` to a `torch.fx.GraphModule` (public fx export; the inductor backend's input).

The graph inputs become placeholders; captured tensors become buffers (or
parameters, for `nn.Parameter`s) of the module, read with `get_attr`, by
reference: an in-place update of a capture is seen by the next call. A
`cond` becomes `torch.cond` with its branches as sub-modules::

    graph f(x: float32[4] cpu) {            class GraphModule(torch.nn.Module):
      captures:                                 def forward(self, x):
        %w: float32[4] cpu                          w = self.w
      %mul = %x * %w              ->                mul = x * w
      %sum = %mul.sum()                             sum_1 = mul.sum()
      return %sum                                   return (sum_1,)
    }

A number computed from sizes while the graph runs (`expr[2*u0]` from
`x.size(0)`) is recorded operator by operator (`mul_1 = 2 * x_size0`), so
inductor sees it as an expression of its size symbols; other expressions
(`max`, comparisons) are not lowered.

Nodes run in program order; a node recorded under an explicit grad mode is
wrapped in `torch._C._set_grad_enabled` calls. Not lowered, with a
`GraphLoweringError` naming the node and its line: `while` loops, run-time
checks, nodes that run Python at every call (their `Op` has
`Effect.RUNS_PYTHON`: staged `optimizer.step()` / `zero_grad()` / scheduler
steps, `ta.py_function`, `ta.print`) and autograd calls with an effect
(`runs_autograd` and stateful: `loss.backward()` accumulating into `.grad`).
`jit_compile=True` then splits the graph at those nodes and lowers the
straight-line regions between (backends/regions.py).
"""

from __future__ import annotations

import operator
from typing import Any

import torch
import torch.fx as fx

from ..errors import GraphLoweringError
from ..graph import (
    Effect,
    Expression,
    Graph,
    Node,
    NodeVisitor,
    OpKind,
    Value,
    ValueKind,
    map_nest,
    unique_values,
    walk_nodes,
)
from ..naming import Namer, identifier


def to_fx(graph: Graph) -> fx.GraphModule:
    """A GraphModule computing `graph`; it returns a tuple of the graph outputs (constants included as is).

    Raises:
        GraphLoweringError: a node has no fx equivalent (a `while` loop, a run-time
            check, a `cond` that mutates state or returns Python values).
    """
    root = torch.nn.Module()
    fx_graph = fx.Graph()
    env: dict[int, fx.Node] = {}
    for v in graph.inputs:
        env[id(v)] = fx_graph.placeholder(v.name)
        if v.kind is ValueKind.TENSOR and isinstance(v.example, torch.Tensor):
            env[id(v)].meta["example_value"] = v.example
    for v, t in graph.captures:
        # A capture named after the op that made it may be named like a Module attribute (`to`, `train`).
        name = _fresh_attr(root, v.name)
        if isinstance(t, torch.nn.Parameter):
            root.register_parameter(name, t)
        else:
            root.register_buffer(name, t)
        env[id(v)] = fx_graph.get_attr(name)
        env[id(v)].meta["example_value"] = t
    lowering = _Lowering(root, fx_graph, env)
    lowering.nodes(graph.nodes)
    fx_graph.output(tuple(lowering.arg(o) for o in graph.outputs))
    gm = fx.GraphModule(root, fx_graph, class_name=f"{graph.name}_graph" if graph.name.isidentifier() else "graph")
    return gm


class _Lowering(NodeVisitor):
    """Emits the nodes of one (sub-)graph into an fx.Graph."""

    def __init__(self, root: torch.nn.Module, fx_graph: fx.Graph, env: dict[int, fx.Node]) -> None:
        self.root = root
        self.g = fx_graph
        self.env = env

    def arg(self, a: Any) -> Any:
        if isinstance(a, Value):
            return self.env[id(a)]
        return map_nest(lambda x: self.env[id(x)] if isinstance(x, Value) else x, a)

    def nodes(self, nodes: list[Node]) -> None:
        mode = None  # the explicit grad mode in force, None for the caller's
        autocast, entered = None, []  # the explicit autocast in force, and the fx nodes that entered it
        for node in nodes:
            if node.autocast != autocast:
                self.exit_autocast(entered)
                entered = self.enter_autocast(node.autocast)
                autocast = node.autocast
            if node.grad_enabled != mode:
                # A node's explicit mode always differs from the mode the graph was traced under.
                restore = not mode if mode is not None else None
                target = node.grad_enabled if node.grad_enabled is not None else restore
                self.g.call_function(torch._C._set_grad_enabled, (target,))
                mode = node.grad_enabled
            self.node(node)
        if mode is not None:
            self.g.call_function(torch._C._set_grad_enabled, (not mode,))
        self.exit_autocast(entered)

    def enter_autocast(self, state: tuple | None) -> list[fx.Node]:
        """Autocast regions entered as torch.export records them (`_enter_autocast` / `_exit_autocast`)."""
        if state is None:
            return []
        wanted = dict(state)
        devices = ["cpu"] + (["cuda"] if torch.cuda.is_available() or "cuda" in wanted else [])
        return [self.g.call_function(torch.amp.autocast_mode._enter_autocast,
                                     (device, wanted.get(device), device in wanted, None)) for device in devices]

    def exit_autocast(self, entered: list[fx.Node]) -> None:
        for ctx in reversed(entered):
            self.g.call_function(torch.amp.autocast_mode._exit_autocast, (ctx,))

    def node(self, node: Node) -> None:
        self.bind(node.pattern, self.visit(node))

    def while_loop(self, node: Node) -> fx.Node:
        return self._refused(node, "a `while` loop")

    def check(self, node: Node) -> fx.Node:
        return self._refused(node, "a run-time check (assert)")

    def control(self, node: Node) -> fx.Node:
        return self._refused(node, f"control op {node.op.name}")

    def _refused(self, node: Node, what: str) -> fx.Node:
        raise lowering_error(node, f"{what} has no torch.fx lowering",
                             "compute it outside the compiled function, or use jit_compile='auto'")

    def op(self, node: Node) -> fx.Node:
        op = node.op
        if op.effects & Effect.RUNS_PYTHON:
            raise lowering_error(node, "it runs Python at every call (a staged training-step call such as "
                                 "optimizer.step(), ta.py_function or ta.print), which torch.fx cannot trace",
                                 "jit_compile=True compiles the regions around such calls; to export, move the "
                                 "call out of the function")
        if op.reads_python_state:
            raise lowering_error(node, "it keeps Python's meaning of a number that a tensor `if` merged with a "
                                 "tensor, looked up in Python at every call, which torch.fx cannot trace",
                                 "jit_compile=True runs it as Python between compiled regions; to export, "
                                 "make the value a tensor in both branches")
        if op.runs_autograd and op.stateful:
            raise lowering_error(node, "it runs autograd and accumulates into `.grad` of tensors it does not "
                                 "take as arguments, which a compiled graph cannot do",
                                 "jit_compile=True compiles the regions around it; to export, use "
                                 "torch.autograd.grad (or ta.GradientTape), whose gradients are outputs")
        args, kwargs = self.arg(node.args), self.arg(node.kwargs)
        name = node.pattern.name if isinstance(node.pattern, Value) else None
        if isinstance(op.target, Expression):
            result = self.expression(node, args)
        elif op.kind is OpKind.FUNCTION or op.kind is OpKind.OPERATOR:
            result = self.g.create_node("call_function", op.target, args, kwargs, name=name)
        elif op.kind is OpKind.METHOD:
            result = self.g.create_node("call_method", op.target, args, kwargs, name=name)
        else:
            result = self.g.create_node("call_function", getattr, (args[0], op.target), name=name)
        return result

    def expression(self, node: Node, args: tuple) -> fx.Node:
        """A number computed from others (`2*s0 + 1` from `x.size(0)`), recorded operator by operator."""
        expr = node.op.target
        if not expr.is_int_arithmetic():
            raise lowering_error(node, f"the number {expr!r} is not int arithmetic (+, -, *, //, %) that torch.fx "
                                 f"records", "compute the size with those operators, or use jit_compile='auto'")
        tracer = fx.proxy.GraphAppendingTracer(self.g)
        result = expr(*[fx.Proxy(a, tracer) if isinstance(a, fx.Node) else a for a in args])
        if not isinstance(result, fx.Proxy):  # no argument is a graph value: a constant
            raise lowering_error(node, f"the number {expr!r} reads no value of the graph",
                                 "report this: it should have been folded while tracing")
        return result.node

    def bind(self, pattern: Any, result: fx.Node) -> None:
        """Map the Values of a node's unpacking pattern to (getitem of) its fx result.

        A tensor's fx node carries its example (a meta or fake tensor) as `example_value`, as dynamo's graphs do:
        AOT autograd's on-disk cache takes only graphs whose method calls are on nodes known to be tensors.
        """
        if isinstance(pattern, Value):
            self.env[id(pattern)] = result
            if pattern.kind is ValueKind.TENSOR and isinstance(pattern.example, torch.Tensor):
                result.meta["example_value"] = pattern.example
        elif isinstance(pattern, tuple):
            for i, p in enumerate(pattern):
                if p is not None:
                    self.bind(p, self.g.call_function(operator.getitem, (result, i)))

    def cond(self, node: Node) -> fx.Node:
        true_g, false_g = node.subgraphs
        operands = unique_values([v for g in (true_g, false_g) for v in g.inputs])
        pred = node.args[0]
        if pred.kind is not ValueKind.TENSOR:
            raise lowering_error(node, f"its predicate %{pred.name} is a run-time Python {pred.type_str()}, "
                                 f"not a tensor", "compare tensors (e.g. `x.sum() > 0`) to get a tensor predicate")
        for g in (true_g, false_g):
            bad = next((n for n in walk_nodes(g) if n.stateful), None)
            if bad is not None:
                raise lowering_error(node, f"its branch runs the stateful op {bad.op.name} "
                                     f"(at {bad.origin or '?'}); torch.cond branches cannot mutate state",
                                     "move the update out of the `if`, e.g. `v.assign(torch.where(c, a, b))`")
            for o in g.outputs:
                if not isinstance(o, Value) or o.kind is not ValueKind.TENSOR:
                    raise lowering_error(node, f"a branch returns the Python value {o!r}; torch.cond branches "
                                         f"return tensors only", "make the value a tensor in both branches")
        branches = []
        for g in (true_g, false_g):
            name = _fresh_attr(self.root, f"{node.name}_{g.name}" if node.outputs else g.name)
            self.root.add_module(name, _branch_module(g, operands))
            branches.append(self.g.get_attr(name))
        p = self.env[id(pred)]
        if pred.dtype is not torch.bool:
            p = self.g.call_method("bool", (p,))
        ops = tuple(self.env[id(v)] for v in operands)
        # The higher-order op itself, as torch.export records it: `torch.cond` called outside a dynamo trace
        # compiles a wrapper with dynamo, whose code cache is process-wide and guards on the branches' ids, so a
        # later compile could reuse the branches of an earlier, collected graph (a compile that depended on
        # what was compiled before), and which refuses some branches it traces fine on its own.
        return self.g.call_function(torch.ops.higher_order.cond, (p, branches[0], branches[1], ops))


def _branch_module(g: Graph, operands: list[Value]) -> fx.GraphModule:
    """A branch of a cond as a GraphModule taking every operand of the cond."""
    root = torch.nn.Module()
    fx_graph = fx.Graph()
    env = {id(v): fx_graph.placeholder(v.name) for v in operands}
    lowering = _Lowering(root, fx_graph, env)
    lowering.nodes(g.nodes)
    ins = {id(v) for v in operands}
    # torch.cond rejects a branch returning one of its inputs as is: return a copy.
    outs = tuple(fx_graph.call_method("clone", (env[id(o)],)) if id(o) in ins else lowering.arg(o) for o in g.outputs)
    fx_graph.output(outs)
    return fx.GraphModule(root, fx_graph)


def lowering_error(node: Node, why: str, fix: str, to: str = "torch.fx") -> GraphLoweringError:
    """The error for a node that cannot be lowered `to` (torch.fx, torch.export): the node, the user's line, a fix."""
    loc = node.origin
    where = f' at File "{loc.filename}", line {loc.lineno}' if loc else ""
    code = f"\n    {loc.line}" if loc and loc.line else ""
    what = f"node %{node.name} ({node.op.name})" if node.outputs else f"the call {node.op.name}"
    return GraphLoweringError(f"cannot lower {what}{where} to {to}: {why}.{code}\n"
                              f"Fix: {fix}.")


def _fresh_attr(root: torch.nn.Module, base: str) -> str:
    return Namer(clashes=lambda name: hasattr(root, name)).new_symbol(identifier(base))


