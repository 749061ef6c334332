"""Split a graph at control flow into straight-line regions, each compiled on its own (`jit_compile=True`).

torch.fx has no `while` loop and no run-time check, and `torch.cond` takes
neither state updates nor Python values, so `jit_compile=True` takes a graph
that `ConcreteFunction.to_fx` cannot lower apart. Every maximal run of consecutive tensor
nodes, at every nesting level (the top level, a `while` loop's condition and
body, a `cond`'s branches), becomes a *region*: a sub-graph that the caller
compiles (inductor, with its own AOT autograd, so gradients chain through
autograd from one region to the next), called from one node that replaces the
run. Everything else stays in the graph and runs as the default backend's
Python: `while` / `cond` / `check` nodes as Python `while` / `if` / a raise,
and the nodes that read or produce run-time Python values (SCALAR ints, LIST
values)::

    graph f(x, n) {                                 def f(x, n):
      %item: int = builtins.int(%n)                     item = _f0(n)
      %i_1, %x_2 = while((0, %x), ...)                  i, x_1 = 0, x
        graph cond(i, x_1, item) {                      while True:
          %lt: bool = %i < %item           ->               lt = i < item
        }                                                   if not lt:
        graph body(i, x_1) {                                    break
          %sin = torch.sin(%x_1)                            tanh = _f2(x_1)  # region: sin..tanh
          ... (6 tensor ops) ...                            add = i + 1
          %tanh = torch.tanh(%mul_2)                        i, x_1 = add, tanh
          %add: int = %i + 1                            i_1, x_2 = i, x_1
        }                                               return x_2
      return %x_2
    }

Which nodes join a region (`lowerable`), read from the data on each node's
`Op`, never from names: not a control-flow node; every Value it reads or
defines is a tensor; not an autograd entry point (`op.runs_autograd`: a
GradientTape gradient, `torch.autograd.grad`, `backward`), which runs in
Python on the regions' outputs and differentiates through their AOT autograd
backward graphs; not a node that runs Python at every call
(`Effect.RUNS_PYTHON` in `op.effects`: the staged training-step calls
`optimizer.step()`, `optimizer.zero_grad()`, `scheduler.step()`,
`model.train()`, and `ta.py_function`, `ta.print`); not a node whose target
looks up Python state at every call (`op.reads_python_state`: the numbers a
tensor `if` merged with a tensor, tracing/promoted.py). Such staged calls are
never folded into a region nor traced by torch.fx: they run as Python between
the compiled regions, in program order, reading and updating the same
parameters and `.grad` tensors as in eager PyTorch. A training step

    opt.zero_grad(); loss = loss_fn(model(x), y); loss.backward(); opt.step()

thus runs as `zero_grad` (Python), one compiled region (the forward and the
loss, an AOT autograd training graph), `backward` (autograd through the
region's compiled backward, accumulating into `.grad`), `step` (Python). A
run also ends where the explicit grad mode (`with torch.no_grad():`)
changes: a region is compiled under one grad mode, the one its call runs
under.

Sizes do not cut a run. A view on a length known only when the graph runs
(`q.view(B, T, 4, 32)` with `T = x.size(1)`, in a loop whose sequence grows)
reads the number `T`: the region computes `x.size(1)` itself (`_Sizes`), so
inductor sees a size symbol of its input, and compiles once for every length.
Nodes that only compute numbers, and the checks on them (`assert T >= 1`, a
shape assumption made while tracing), run before the region when they read
nothing the region defines and no node of the region before them has an
effect: the body of a greedy decoding loop over a GPT is then one region
instead of one per attention block.

Which regions are compiled (`MIN_REGION_OPS`): calling an inductor artifact
directly costs what a few eager ops on small tensors cost (AOT autograd's
runtime wrappers and inductor's size asserts). A run of fewer than
`MIN_REGION_OPS` ops (GETATTR nodes not counted) is left as it is: Python code
costing what eager costs. The break-even measured on small elementwise bodies
is at five ops; larger tensors gain more from inductor's fusion, so the rule
errs towards compiling there (benchmarks/README.md, "Measurements behind
the backends' rules", has the figures).

A call that records autograd (grad mode on and an input or captured tensor
requiring grad) runs AOT autograd's training wrapper, which costs more per
call, so a compiled body gains only with many more ops. The backend (`inductor._Runner`) therefore runs a
compiled region's Python code instead for such calls when the region has
fewer than `MIN_TRAINING_REGION_OPS` ops; gradients are the same either way.
"""

from __future__ import annotations

import operator
from dataclasses import replace
from typing import Any, Callable

import torch

from ..graph import (
    CheckOp,
    Effect,
    Expression,
    Graph,
    Node,
    Op,
    OpKind,
    TryOp,
    Value,
    ValueKind,
    iter_values,
    map_nest,
    unique_values,
    walk_nodes,
    writes_only_its_own,
)

MIN_REGION_OPS = 5
MIN_TRAINING_REGION_OPS = 16

# (region graph, the explicit grad mode its call runs under or None for the caller's) -> the function the
# region node calls: region inputs positionally; returns its single output, or a tuple of its outputs.
RegionCompiler = Callable[[Graph, "bool | None"], Callable[..., Any]]


def ops(nodes: list[Node]) -> int:
    """How many ops `nodes` run, for the size rules (GETATTR nodes, e.g. `x.shape`, not counted)."""
    return sum(n.op.kind is not OpKind.GETATTR for n in nodes)


def structure(region: Graph, grad_enabled: bool | None) -> str:
    """A key equal for two regions that compute the same thing: the same ops on inputs of the same types
    and on the same captured tensors, whatever their values are named."""
    names: dict[int, str] = {id(v): f"in{i}:{v.type_str()}" for i, v in enumerate(region.inputs)}
    names.update((id(v), f"capture@{id(t):x}") for v, t in region.captures)
    lines = [f"grad {grad_enabled}"]
    for i, node in enumerate(region.nodes):
        for j, v in enumerate(node.outputs):
            names[id(v)] = f"v{i}.{j}"
        lines.append(repr((node.op.kind, node.op.target, node.op.effects, node.grad_enabled, node.autocast,
                           map_nest(lambda x: names[id(x)] if isinstance(x, Value) else x, (node.args, node.kwargs)),
                           map_nest(lambda x: names[id(x)] if isinstance(x, Value) else x, node.pattern))))
    lines.append(repr([names[id(v)] for v in region.outputs]))
    return "\n".join(lines)


def computes_gradients(graph: Graph) -> bool:
    """Whether the graph (or a graph nested in it) runs autograd itself: a training step."""
    return any(node.op.runs_autograd for node in walk_nodes(graph))


def lowerable(node: Node, size_input: Callable[[Value], bool] = lambda v: False) -> bool:
    """Whether `node` may join a region: a tensor op that is neither control flow, autograd nor Python.

    It reads tensors, and numbers for which `size_input` is true (sizes the region recomputes itself)."""
    op = node.op
    if op.kind is OpKind.CONTROL or op.runs_autograd or runs_python(op) or indexes_by_data(node):
        return False
    return all(v.kind is ValueKind.TENSOR for v in node.outputs) and \
        all(v.kind is ValueKind.TENSOR or size_input(v) for v in node.input_values())


def runs_python(op: Op) -> bool:
    """Whether `op` must run as Python at every call: its `Effect.RUNS_PYTHON` (a staged optimizer step,
    `ta.print`), or `Op.reads_python_state` (the ops that track which run-time tensors stand for Python numbers,
    whose bookkeeping compiled code would do once, while it traces)."""
    return bool(op.effects & Effect.RUNS_PYTHON) or op.reads_python_state


def reads_data_as_number(node: Node) -> bool:
    """Whether `node` makes a Python number of a tensor's data (`int(t)`, `float(t)`, `t.item()`: its result is an
    unbacked symbol) or indexes by a 0-d integer tensor, which torch reads as such a number.

    Inductor would have to guard on the number's value (GuardOnDataDependentSymNode): a graph with such a node is
    split (`jit_compile=True` compiles the regions around it), and the node itself runs in Python."""
    if indexes_by_data(node):
        return True
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

    made = set()
    for v in node.outputs:
        if v.kind is ValueKind.SCALAR and isinstance(v.example, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            made |= free_unbacked_symbols(v.example)
    if not made:
        return False
    # A symbol its inputs already have is a size (`x.size(0)` of a None dim, `2 * s` of it); a new one is data.
    known = set()
    for v in node.input_values():
        ex = v.example
        if isinstance(ex, torch.Tensor):
            known |= set().union(*(free_unbacked_symbols(d) for d in ex.shape if isinstance(d, torch.SymInt)))
        elif isinstance(ex, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            known |= free_unbacked_symbols(ex)
    return not made <= known


_INDEXING = frozenset({operator.getitem, operator.setitem})


def indexes_by_data(node: Node) -> bool:
    """`x[t]` / `x[t] = v` with a 0-d integer tensor `t` in the index (Python reads it as an int)."""
    if node.op.kind is not OpKind.OPERATOR or node.op.target not in _INDEXING or len(node.args) < 2:
        return False
    index = node.args[1]
    return any(v.kind is ValueKind.TENSOR and v.shape == () and v.dtype is not None and
               not v.dtype.is_floating_point and v.dtype is not torch.bool
               for v in iter_values(index if isinstance(index, tuple) else (index,)))


_SIZE_ARITHMETIC = frozenset({operator.add, operator.sub, operator.mul, operator.floordiv, operator.mod,
                              operator.neg})


def size_op(node: Node) -> bool:
    """`x.size(d)`, or int arithmetic on its results (an operator, or an expression tracing derived such as
    `2*s0`): a number that traced code (and inductor) computes from a tensor's sizes, as a size symbol of the
    compile when the dim is open."""
    op = node.op
    if not op.pure or node.subgraphs or node.kwargs or len(node.outputs) != 1:
        return False
    out = node.outputs[0]
    if out.kind is not ValueKind.SCALAR or out.dtype is not torch.int64:
        return False
    if op.kind is OpKind.METHOD and op.target == "size":
        return len(node.args) == 2 and type(node.args[1]) is int
    if op.kind is OpKind.OPERATOR:
        return op.target in _SIZE_ARITHMETIC
    return isinstance(op.target, Expression) and op.target.is_int_arithmetic()  # `2*s0`, `s0 + 1`


def hoistable(node: Node) -> bool:
    """A node that may run before the tensor ops around it: it computes numbers only, or checks one."""
    if node.subgraphs:
        return False
    if node.op.kind is OpKind.CONTROL:
        return isinstance(node.op.target, CheckOp)
    return node.op.pure and all(v.kind is not ValueKind.TENSOR for v in node.outputs)


def split(graph: Graph, compile_region: RegionCompiler,
          too_small: Callable[[list[Node]], None] = lambda run: None) -> Graph:
    """A copy of `graph` in which every region worth compiling is one node calling `compile_region`'s function.

    The copy has the same inputs, captures and outputs; sub-graphs of control-flow nodes are copied and
    split the same way. `compile_region` is called once per region, outermost and earliest first;
    `too_small` with each run of tensor nodes left as it is (fewer than `MIN_REGION_OPS` ops).
    """
    captures = {id(v): (v, t) for g in (graph, *(s for n in walk_nodes(graph) for s in n.subgraphs))
                for v, t in g.captures}
    return _Splitter(graph.name, captures, compile_region, too_small).graph(graph)


class _Splitter:
    def __init__(self, name: str, captures: dict[int, tuple[Value, torch.Tensor]],
                 compile_region: RegionCompiler, too_small: Callable[[list[Node]], None]) -> None:
        self.name = name
        self.captures = captures
        self.compile_region = compile_region
        self.too_small = too_small
        self.count = 0

    def graph(self, g: Graph) -> Graph:
        # live[i]: the values read by nodes[i:] (their sub-graphs' reads are among the node's args) or returned.
        live: list[set[int]] = [set()] * (len(g.nodes) + 1)
        live[-1] = {id(v) for v in iter_values(g.outputs)}
        for i in range(len(g.nodes) - 1, -1, -1):
            live[i] = live[i + 1] | {id(v) for v in g.nodes[i].input_values()}
        sizes = _Sizes(g)
        nodes: list[Node] = []
        i = reported = 0  # runs too small to compile are reported once, not once per node they start at
        while i < len(g.nodes):
            node = g.nodes[i]
            if not lowerable(node, sizes.recomputable):
                # A `try` whose handlers start from the values at the op that raised (`TryOp.at_raise`) names
                # each op of its body: its sub-graphs stay as they are.
                at_raise = isinstance(node.op.target, TryOp) and node.op.target.at_raise
                nodes.append(replace(node, subgraphs=tuple(self.graph(s) for s in node.subgraphs))
                             if node.subgraphs and not at_raise else node)
                i += 1
                continue
            run, moved, j = self.run(g.nodes, i, sizes)
            if ops(run) >= MIN_REGION_OPS:
                nodes.extend(moved)
                nodes.append(self.region(run, live[j], sizes))
                i = j
            else:
                if i >= reported and ops(run):
                    self.too_small(run)
                    reported = j
                nodes.append(node)
                i += 1
        return replace(g, nodes=nodes, python_source=None)

    @staticmethod
    def run(nodes: list[Node], i: int, sizes: "_Sizes") -> tuple[list[Node], list[Node], int]:
        """The run of tensor nodes starting at `nodes[i]`, the nodes among them that run before the region
        instead (numbers and checks on them: `n = x.size(1)`, a check that `n != 0`), and where the run ends.

        A node moves before the region only when it reads nothing the run defines and no node of the run so far
        has an effect, so it computes what it did in place and a failing check stops the call as before."""
        first = nodes[i]
        run, moved, pending = [first], [], []
        defined = {id(v) for v in first.outputs}
        stateful = first.stateful
        j = i + 1
        while j < len(nodes):
            node = nodes[j]
            if lowerable(node, sizes.recomputable) and node.grad_enabled == first.grad_enabled:
                run.append(node)
                moved += pending
                pending = []
                defined.update(id(v) for v in node.outputs)
                stateful = stateful or node.stateful
            elif not stateful and hoistable(node) and not any(id(v) in defined for v in node.input_values()):
                pending.append(node)
            else:
                break
            j += 1
        return run, moved, j - len(pending)

    def region(self, run: list[Node], live_after: set[int], sizes: "_Sizes") -> Node:
        body = sizes.with_recomputed(run)
        defined = {id(v) for n in body for v in n.outputs}
        free = [v for v in unique_values([v for n in body for v in n.input_values()]) if id(v) not in defined]
        inputs = [v for v in free if id(v) not in self.captures]
        outputs = [v for n in run for v in n.outputs if id(v) in live_after]
        self.count += 1
        sub = Graph(f"{self.name}_region{self.count}", inputs=inputs,
                    captures=[self.captures[id(v)] for v in free if id(v) in self.captures],
                    nodes=[replace(n, grad_enabled=None) for n in body], outputs=outputs)
        fn = self.compile_region(sub, run[0].grad_enabled)
        pattern = outputs[0] if len(outputs) == 1 else tuple(outputs) or None
        effects = Effect.UNKNOWN if any(n.stateful for n in run) else Effect.NONE
        return Node(Op(OpKind.FUNCTION, fn, "region", effects=effects), tuple(inputs), {},
                    tuple(outputs), pattern=pattern, origin=run[0].origin, grad_enabled=run[0].grad_enabled)


class _Sizes:
    """The numbers of one graph that a region recomputes from tensor sizes instead of taking them as inputs.

    A region's inputs are tensors: inductor compiles a size as a symbol of a tensor's dim, not as a number
    argument (which it would specialise on, one compile per value). So `view(1, n, 4, 32)` with `n = x.size(1)`
    joins a region that computes `x.size(1)` itself; the node stays outside too, for the code that reads `n`.
    """

    def __init__(self, g: Graph) -> None:
        self.defs = {id(v): n for n in g.nodes for v in n.outputs}
        self.memo: dict[int, bool] = {}

    def recomputable(self, v: Value) -> bool:
        hit = self.memo.get(id(v))
        if hit is None:
            node = self.defs.get(id(v))
            hit = self.memo[id(v)] = node is not None and size_op(node) and all(
                w.kind is ValueKind.TENSOR or self.recomputable(w) for w in node.input_values())
        return hit

    def with_recomputed(self, run: list[Node]) -> list[Node]:
        """`run` with the size nodes its numbers come from, each once, before its first reader."""
        out: list[Node] = []
        seen: set[int] = set()

        def add(v: Value) -> None:
            node = self.defs[id(v)]
            if id(node) in seen:
                return
            seen.add(id(node))
            for w in node.input_values():
                if w.kind is not ValueKind.TENSOR:
                    add(w)
            out.append(node)

        for node in run:
            for v in node.input_values():
                if v.kind is not ValueKind.TENSOR:
                    add(v)
            out.append(node)
        return out


def side_effect(graph: Graph) -> Node | None:
    """A node whose effect outlives a call (a state update, a print, a random op), or None.

    An in-place op on a tensor the graph made itself (`relu(inplace=True)` after a BatchNorm) is not one.
    In a sub-graph, every input counts as outside: a write to one may reach the enclosing graph's state.
    """
    for node in graph.nodes:
        if node.op.kind is OpKind.CONTROL:
            hit = next((h for h in map(side_effect, node.subgraphs) if h is not None), None)
            if hit is not None:
                return hit
        elif node.stateful and not _writes_own_list(node) and not writes_only_its_own(graph, node):
            return node
    return None


def _writes_own_list(node: Node) -> bool:
    """A list append or pop: its only effect is on a run-time list the graph itself creates."""
    first = node.args[0] if node.args else None
    return (node.op.effects is Effect.WRITES_FIRST_ARG and isinstance(first, Value)
            and first.kind is ValueKind.LIST)
