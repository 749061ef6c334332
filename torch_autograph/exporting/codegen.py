"""A graph as the Python source of an `nn.Module` that `torch.export` can trace: control flow as torch's own ops.

Where the default backend writes `if`/`while` on `bool(pred)`, this writes
`torch.cond` and `torch.while_loop` with the sub-graphs as nested functions::

    def forward(_self, x, n):                       # graph f(x: float32[u0, 3], n: int64[])
        w = _self.w                                  #   captures: %w
        item = _rt.scalar(n, torch.int64)            #   %item: int = int(%n)
        def _while_cond_0(i, acc):                   #   %i_1, %acc_1 = while((0, %x), ...)
            return i < item
        def _while_body_0(i, acc):
            mul = acc * w
            return i + 1, mul
        i_1, acc_1 = torch.while_loop(_while_cond_0, _while_body_0, (torch.full((), 0, dtype=torch.int64), x))
        return (acc_1,)

Run-time Python numbers are 0-d tensors (a loop counter must be a tensor to be
carried), read back with `.item()` where an op wants a number; graph lists are
`(buffer, length)` pairs (see `runtime.py`); a tensor a branch or loop body
updates in place is cloned on entry, returned, and copied back after the op
(see `analysis.py`); run-time checks are `torch._assert_async`. What has no
such form (Python run at every call, autograd inside the graph) raises
`GraphLoweringError` naming the node and the user's line.
"""

from __future__ import annotations

import dataclasses
import itertools
import linecache
import re
from dataclasses import dataclass, field
from typing import Any

import torch

from ..backends import CodeWriter, lowering_error
from ..graph import (
    Effect,
    Expression,
    Graph,
    Node,
    NodeVisitor,
    OpKind,
    Value,
    ValueKind,
    WhileOp,
    map_nest,
    render_call,
    render_pattern,
    under_autocast,
    unique_values,
)
from ..state import assign, assign_add, assign_add_index, assign_index, assign_sub, assign_sub_index
from ..tracing import Augmented, NumberOp, promote_number
from . import runtime
from .analysis import ListTypes, node_writes, writes
from .checks import check_fixed_shapes, check_loop_var_writes, check_updates_of_passed_on, raise_output_list
from .expressions import tensor_expression
from .list_lowering import ListLowering

_counter = itertools.count()
_RT = "_rt"
_ITEM_KINDS = {int: torch.int64, float: torch.float64, bool: torch.bool}


@dataclass
class Scope:
    """One generated function (forward, a branch, a loop's condition or body)."""

    graph: Graph
    params: set[int] = field(default_factory=set)  # Values bound as parameters of this function
    local_lists: set[int] = field(default_factory=set)  # lists made here: their capacity is reserved here


class _Writer(CodeWriter):
    """The default backend's writer with run-time numbers read from their 0-d tensors."""

    numbers: dict[int, str]  # run-time number Value id -> a variable holding it as a Python number (a size)

    def arg(self, a: Any) -> str:
        if isinstance(a, _Detached):
            return f"{self.arg(a.value)}.detach()"
        if isinstance(a, Value):
            if a.kind is ValueKind.SCALAR:
                return self.numbers.get(id(a)) or f"{a.name}.item()"
            if a.kind is ValueKind.LIST:
                raise _ListArgument(a)
            return a.name
        return super().arg(a)

    def raw(self, a: Any) -> str:
        """A Value as it is held (0-d tensor, list pair), a constant as its literal."""
        return a.name if isinstance(a, Value) else super().arg(a)


class _ListArgument(Exception):
    def __init__(self, value: Value) -> None:
        self.value = value


class ExportCodegen(ListLowering, NodeVisitor):
    """Generates the forward of an exportable module computing `graph` (see the module docstring)."""

    def __init__(self, graph: Graph, capture_attrs: dict[int, str] | None, autocast: tuple | None = None) -> None:
        self.graph = graph
        self.autocast = autocast  # the autocast around the call the graph was traced for (None: none)
        self.capture_attrs = capture_attrs  # capture Value id -> module attribute name; None: captures are inputs
        self.captures = {id(v) for v, _ in graph.captures}
        self.w = _Writer()
        self.w.numbers = {}
        self.w.globals[_RT] = runtime
        self.list_types = ListTypes(graph)
        self._ids = itertools.count()

    # ----- the module -------------------------------------------------------------------------------
    def source(self) -> tuple[str, dict[str, Any]]:
        w = self.w
        if self.capture_attrs is not None:
            for v, _ in self.graph.captures:
                w.line(f"{v.name} = _self.{self.capture_attrs[id(v)]}")
        # The inputs' symbolic sizes as numbers, for nested functions to read (reading them from the input
        # tensor there would make torch.while_loop see that tensor twice when it is also a loop's initial value).
        for symbol, text in self.graph.sizes.items():
            w.line(f"{size_name(symbol)} = {text}")
        scope = Scope(self.graph, params={id(v) for v in self.graph.inputs})
        self.nodes(self.graph.nodes, scope)
        outs = []
        for o in self.graph.outputs:
            if not isinstance(o, Value):
                continue  # constants are put back by whoever packs the outputs
            if o.kind is ValueKind.LIST:
                raise_output_list(self.graph, o)
            outs.append(o.name if id(o) not in self.captures else f"{o.name}.clone()")
        w.line(f"return ({', '.join(outs)}{',' if len(outs) == 1 else ''})")
        params = ["_self"] + [v.name for v in self.graph.inputs]
        if self.capture_attrs is None:
            params += [v.name for v, _ in self.graph.captures]
        params = ", ".join(params)
        src = "\n".join([f"# graph {self.graph.name}, exported by torch_autograph", f"def forward({params}):"]
                        + w.lines) + "\n"
        w.globals["__ta_origins__"] = {i + 3: o for i, o in w.origins.items()}
        return src, w.globals

    # ----- nodes ------------------------------------------------------------------------------------
    def nodes(self, nodes: list[Node], scope: Scope) -> None:
        """Emit `nodes` in order; runs with an explicit grad mode or autocast go under a `with` (a node with none
        runs under the autocast the function was traced in, `self.autocast`, whatever the caller's)."""
        check_updates_of_passed_on(nodes, self.graph)
        mode = None
        for node in nodes:
            if node.grad_enabled is False and node.op.effects & Effect.WRITES_FIRST_ARG:
                # An in-place update under no_grad is written as an update by detached values instead: torch.export
                # loses an input updated inside a no_grad region (see `_outside_grad_mode`).
                node = _outside_grad_mode(node)
            key = (node.grad_enabled, node.autocast if node.autocast is not None else self.autocast)
            if key != mode:
                if mode is not None and mode != (None, None):
                    self.w._indent -= 1
                contexts = [f"torch.set_grad_enabled({key[0]})"] if key[0] is not None else []
                if key[1] is not None:
                    state = "(" + "".join(f"({device!r}, {dtype}), " for device, dtype in key[1]).rstrip(" ") + ")"
                    contexts.append(f"{self.w.global_name(under_autocast, 'autocast')}({state})")
                if contexts:
                    self.w.line(f"with {', '.join(contexts)}:")
                    self.w._indent += 1
                mode = key
            self.node(node, scope)
        if mode is not None and mode != (None, None):
            self.w._indent -= 1

    def node(self, node: Node, scope: Scope) -> None:
        self.scope = scope  # the scope code is being written in (list capacity hoists values into it)
        op = node.op
        if op.effects & Effect.RUNS_PYTHON:
            raise lowering_error(node, "it runs Python at every call (ta.py_function, ta.print, a staged optimizer "
                                 "step), which an exported program cannot hold",
                                 "move it out of the function you export (or into the code calling it)",
                                 to="torch.export")
        if op.runs_autograd:
            raise lowering_error(node, f"{op.name} runs autograd inside the graph (a training step); an exported "
                                 f"program computes forward only", "export the inference function and compute "
                                 "gradients on the loaded program", to="torch.export")
        if op.kind is OpKind.CONTROL:
            self.reserve_for(node, scope)
        self.visit(node)

    def try_block(self, node: Node) -> None:
        raise lowering_error(node, f"{node.op.name} is a `try` whose `except` clause at {node.origin} runs when the "
                             "body's ops fail as the graph runs, which an exported program cannot express (its "
                             "handler would be dead)", "check the input before the op (or call the exported "
                             "program inside your own `try`)", to="torch.export")

    def op(self, node: Node) -> None:
        """A call: written as the default backend writes it, with export's own forms where they differ."""
        scope, op = self.scope, node.op
        if isinstance(op.target, Expression):
            self.expression(node)
            return
        if op.kind is OpKind.FUNCTION and op.target in _VARIABLE_UPDATES:
            self.variable_update(node)
            return
        if op.kind is OpKind.FUNCTION and isinstance(op.target, Augmented):
            self.augmented(node, scope)
            return
        if op.kind is OpKind.FUNCTION and isinstance(op.target, NumberOp):
            # Which run-time tensors stand for Python numbers matters only to `augmented` (see there): the op.
            node = dataclasses.replace(node, op=dataclasses.replace(op, target=op.target.fn))
            op = node.op
        if op.kind is OpKind.FUNCTION and op.target is torch.tensor and op.converts_number:
            node = dataclasses.replace(node, op=dataclasses.replace(op, target=promote_number),
                                       args=(node.args[0], node.kwargs["dtype"], node.kwargs["device"]), kwargs={})
            op = node.op
        if op.kind is OpKind.FUNCTION and op.target is promote_number:
            # A number made a tensor (to merge it with one, or carry it in a loop): no trip through `.item()`.
            n, dtype, device = node.args
            to = f".to({self.w.arg(device)})" if device is not None else ""
            self.w.line(f"{node.outputs[0].name} = {_RT}.scalar({self.w.raw(n)}, {dtype}){to}", node.origin)
            return
        if self.list_op(node, scope):
            return
        if op.kind is OpKind.FUNCTION and op.target in _ITEM_KINDS and node.outputs and \
                node.outputs[0].kind is ValueKind.SCALAR:
            self.w.line(f"{node.outputs[0].name} = {_RT}.scalar({self.w.raw(node.args[0])}, "
                        f"{node.outputs[0].dtype})", node.origin)
            return
        try:
            call = render_call(node, self.w.arg, self.w.target(op.target) if op.kind is OpKind.FUNCTION else "")
        except _ListArgument as e:
            raise lowering_error(node, f"it takes the graph list %{e.value.name}, which export holds as a tensor",
                                 "use torch.stack(lst) or torch.cat(lst) on the list", to="torch.export") from None
        if node.pattern is None or not node.outputs:
            self.w.line(call, node.origin)
            return
        # A number computed from tensors' metadata alone (`x.size(0)`) stays a Python number too: sizes made
        # from it are the input's own symbolic sizes, not numbers read back from a tensor.
        from_metadata = not any(a.kind is ValueKind.SCALAR for a in node.input_values())
        names = {id(v): f"{v.name}_number" if v.kind is ValueKind.SCALAR else v.name for v in node.outputs}
        self.w.line(f"{render_pattern(node.pattern, lambda v: names[id(v)])} = {call}", node.origin)
        for v in node.outputs:
            if v.kind is ValueKind.SCALAR:
                self.w.line(f"{v.name} = {_RT}.scalar({names[id(v)]}, {v.dtype})")
                if from_metadata:
                    self.w.numbers[id(v)] = names[id(v)]

    def variable_update(self, node: Node) -> None:
        """`v.assign_add(d)` and friends: an in-place update by a detached value (what they do under no_grad)."""
        method, indexed = _VARIABLE_UPDATES[node.op.target]
        t, *rest = node.args
        value = _detached(self.w, rest[-1])
        target = f"{t.name}[{self.w.arg(rest[0])}]" if indexed else t.name
        if method == "copy_":
            line = f"{target} = {value}" if indexed else f"{t.name}.copy_({value})"
        else:
            op = "+=" if method == "add_" else "-="
            line = f"{target} {op} {value}" if indexed else f"{t.name}.{method}({value})"
        self.w.line(line, node.origin)

    def augmented(self, node: Node, scope: Scope) -> None:
        """`y op= x` on a value that is a Python number on some paths (a tensor `if` merged a number with a
        tensor): eager Python rebinds `y` on those paths and updates the tensor in place on the others, which
        only other names for the same tensor can tell apart. An exported program has no path to ask: it
        computes `y op x` when nothing else reads the old `y`, and refuses otherwise."""
        target, (a, b) = node.op.target, node.args
        readers = [n for n in _nodes_after(scope.graph, node) if any(v is a for v in n.input_values())]
        if readers or any(o is a for o in scope.graph.outputs):
            raise lowering_error(node, f"%{a.name} is a Python number on one path of an `if` and a tensor on the "
                                 f"other, and it is read again after `{target.method}`: eager Python would update "
                                 f"it in place on one path only", "give it one type on both paths (e.g. "
                                 "`torch.tensor(0.0)` instead of `0`), or copy it before updating",
                                 to="torch.export")
        fn = self.w.global_name(target.function, "f")
        self.w.line(f"{node.outputs[0].name} = {fn}({self.w.arg(a)}, {self.w.arg(b)})", node.origin)

    def check(self, node: Node) -> None:
        error = node.op.target.error
        if error is not None:
            raise lowering_error(node, f"the `raise {type(error).__name__}` at {node.origin} runs when the graph "
                                 "takes its path, and an exported program cannot raise the user's own exception "
                                 "(an assert would become a RuntimeError; an `except "
                                 f"{type(error).__name__}` around the call would no longer catch it)",
                                 "check the condition before calling the exported program, or use `assert` "
                                 "(exported as a run-time check raising RuntimeError)", to="torch.export")
        cond = node.args[0]
        text = f"{_RT}.scalar({self.w.raw(cond)}, torch.bool)"
        self.w.line(f"torch._assert_async({text}, {node.op.target.message!r})", node.origin)

    def expression(self, node: Node) -> None:
        expr: Expression = node.op.target
        names = [self.w.raw(a) for a in node.args]
        text = tensor_expression(expr.text, names, node)
        out = node.outputs[0]
        self.w.line(f"{out.name} = {_RT}.scalar({text}, {out.dtype})", node.origin)

    # ----- control flow ------------------------------------------------------------------------------
    def cond(self, node: Node) -> None:
        true_g, false_g = node.subgraphs
        operands = unique_values([v for g in (true_g, false_g) for v in g.inputs])
        written = node_writes(node)
        k = next(self._ids)
        fns = []
        for g in (true_g, false_g):
            name = f"_cond_{g.name}_{k}"
            fns.append(name)
            self.function(name, [v.name for v in operands], g, written, operands, node.outputs)
        pred = f"{_RT}.scalar({self.w.raw(node.args[0])}, torch.bool)"
        targets = [v.name for v in node.outputs] + [f"_written_{v.name}_{k}" for v in written]
        ops = ", ".join(v.name for v in operands) + ("," if len(operands) == 1 else "")
        lhs = ", ".join(targets) + ("," if len(targets) == 1 else "") if targets else "_"
        self.w.line(f"{lhs} = torch.cond({pred}, {fns[0]}, {fns[1]}, ({ops}))", node.origin)
        like = [next((a for a in operands if _is_list(a) and _is_list(o) and self.list_types.related(a, o)), None)
                for o in node.outputs]
        self.carried_sizes(list(node.outputs), [f"{a.name}[0].size(0)" if a is not None else None for a in like])
        self.write_back(written, k, node)

    def while_loop(self, node: Node) -> None:
        scope = self.scope
        target: WhileOp = node.op.target
        cond_g, body_g = node.subgraphs
        written = node_writes(node)
        k = next(self._ids)
        loop_vars = list(target.loop_vars)
        params = [v.name for v in loop_vars] + [v.name for v in written]
        limit = target.maximum_iterations
        counter = f"_count_{k}" if limit is not None else None
        check_loop_var_writes(node, scope.graph, self.captures)
        check_fixed_shapes(node)
        with_counter = params + ([counter] if counter else [])
        w = self.w
        # A loop passes a list on with the capacity it came with: said after the loop (inside, the capacity is a
        # number torch.while_loop cannot take in from outside, and a list's own is the carried one's already).
        capacities = [f"{a.name}[0].size(0)" if _is_list(a) else None for a in node.args[0]]
        inside = [None] * len(capacities)
        w.line(f"def _while_cond_{k}({', '.join(with_counter)}):")
        with w.indented():
            inner = Scope(cond_g, params={id(v) for v in loop_vars + written})
            self.carried_sizes(loop_vars, inside)
            self.nodes(cond_g.nodes, inner)
            pred = f"{_RT}.scalar({w.raw(cond_g.outputs[0])}, torch.bool)"
            if counter:
                pred = f"{_RT}.logical_and({counter} < {w.raw(limit)}, {pred})"
            w.line(f"return {pred}")
        self.function(f"_while_body_{k}", with_counter, body_g, written, loop_vars + written, loop_vars,
                      extra_outputs=[f"{counter} + 1"] if counter else [], carried=(loop_vars, inside),
                      cloned=unique_values(written + writes(body_g)))
        # torch.while_loop refuses a tensor that is both a loop's initial value and read by it from outside (or
        # the initial value of two loop variables): those start from a copy.
        lifted = {id(v) for g in node.subgraphs for v in g.inputs}
        seen: set[int] = set()
        inits = []
        for a, lv in zip(node.args[0], loop_vars):
            text = self.constant_or_name(a, lv)
            if isinstance(a, Value) and (id(a) in lifted or id(a) in seen):
                text = f"({text}[0].clone(), {text}[1].clone())" if a.kind is ValueKind.LIST else f"{text}.clone()"
            seen.add(id(a))
            inits.append(text)
        inits += [v.name for v in written] + (["torch.zeros((), dtype=torch.int64)"] if counter else [])
        targets = [v.name for v in node.outputs] + [f"_written_{v.name}_{k}" for v in written]
        targets += [f"_{counter}"] if counter else []
        w.line(f"{', '.join(targets)}{',' if len(targets) == 1 else ''} = torch.while_loop(_while_cond_{k}, "
               f"_while_body_{k}, ({', '.join(inits)}{',' if len(inits) == 1 else ''}))", node.origin)
        self.carried_sizes(list(node.outputs), capacities)
        self.write_back(written, k, node)

    def function(self, name: str, params: list[str], g: Graph, written: list[Value], inputs: list[Value],
                 like: Any, extra_outputs: list[str] = (), carried: tuple | None = None,
                 cloned: list[Value] | None = None) -> None:
        """A nested function running sub-graph `g`: the outer tensors it updates (`written`) are cloned on entry
        and returned after its outputs; `cloned`: every input it updates (a loop body's loop variables too)."""
        w = self.w
        w.line(f"def {name}({', '.join(params)}):")
        with w.indented():
            for v in (written if cloned is None else cloned):
                if any(v is i for i in inputs):
                    w.line(f"{v.name} = {v.name}.clone()")
            inner = Scope(g, params={id(v) for v in inputs})
            if carried is not None:
                self.carried_sizes(*carried)
            self.nodes(g.nodes, inner)
            outs = [self.branch_output(o, inner, out, written if cloned is None else cloned)
                    for o, out in zip(g.outputs, like)]
            outs += [v.name for v in written if any(v is i for i in inputs)] + list(extra_outputs)
            w.line(f"return ({', '.join(outs)}{',' if len(outs) == 1 else ''})")

    def branch_output(self, o: Any, scope: Scope, like: Value, written: list[Value]) -> str:
        if not isinstance(o, Value):
            return self.constant_or_name(o, like)
        made_here = any(o is x for n in scope.graph.nodes for x in n.outputs)
        if made_here or any(o is v for v in written):
            return o.name
        # torch.cond and torch.while_loop reject an output that is one of their inputs: a copy.
        if o.kind is ValueKind.LIST:
            return f"({o.name}[0].clone(), {o.name}[1].clone())"
        return f"{o.name}.clone()"

    def constant_or_name(self, a: Any, like: Value) -> str:
        if isinstance(a, Value):
            return a.name
        if like.kind is ValueKind.LIST or a is None or not isinstance(a, (bool, int, float)):
            raise AssertionError(f"bug in torch_autograph: cannot export the constant {a!r} for %{like.name}")
        return f"torch.full((), {a!r}, dtype={like.dtype})"

    def carried_sizes(self, values: list[Value], capacities: list[str | None]) -> None:
        """Tell torch the sizes it cannot know of values a `torch.cond`/`torch.while_loop` passes on (it gives
        them fresh symbols): sizes of the inputs (`x.size(0)`), and a list's capacity (`capacities[i]`, code)."""
        for v, capacity in zip(values, capacities):
            if not isinstance(v, Value):
                continue
            if v.kind is ValueKind.TENSOR:
                for d, size in enumerate(v.shape):
                    code = self.size_code(size)
                    if code is not None:
                        self.w.line(f"torch._check({v.name}.size({d}) == {code})")
            elif v.kind is ValueKind.LIST and capacity is not None:
                self.w.line(f"torch._check({v.name}[0].size(0) == {capacity})")

    def size_code(self, size: Any) -> str | None:
        """A symbolic size as code over the inputs' sizes (`2 * x.size(0)`), None if it is not one."""
        if type(size) is int or not isinstance(size, torch.SymInt):
            return None
        expr = size.node.shape_env.replace(size.node.expr)
        names = {str(s) for s in expr.free_symbols}
        if not names or not names <= set(self.graph.sizes):
            return None
        from torch.utils._sympy.printers import PythonPrinter

        text = PythonPrinter().doprint(expr)
        for name in sorted(names, key=len, reverse=True):
            text = re.sub(rf"\b{name}\b", size_name(name), text)
        return text

    def write_back(self, written: list[Value], k: int, node: Node) -> None:
        for v in written:
            new = f"_written_{v.name}_{k}"
            detach = ".detach()" if id(v) in self.captures else ""  # state: updated, not differentiated
            self.w.line(f"{v.name}.copy_({new}{detach})", node.origin)


_VARIABLE_UPDATES = {assign: ("copy_", False), assign_add: ("add_", False),
                     assign_sub: ("sub_", False), assign_index: ("copy_", True),
                     assign_add_index: ("add_", True), assign_sub_index: ("sub_", True)}


def _detached(w: _Writer, a: Any) -> str:
    text = w.arg(a)
    return f"{text}.detach()" if isinstance(a, Value) and a.kind is ValueKind.TENSOR else text


def _outside_grad_mode(node: Node) -> Node:
    """`node` (an in-place update recorded under no_grad) updating its target with detached values, in the
    caller's grad mode.

    torch.export (2.13) drops an input updated inside a no_grad region whose new value nothing reads later
    from the program's mutations, and the saved program then fails to load (SpecViolationError:
    wrap_with_set_grad_enabled is missing val field); an update by detached values records no autograd
    history either, without the region.
    """
    def detach(a: Any) -> Any:
        return _Detached(a) if isinstance(a, Value) and a.kind is ValueKind.TENSOR else a

    args = (node.args[0],) + tuple(map_nest(detach, a) for a in node.args[1:])
    return dataclasses.replace(node, args=args, kwargs=map_nest(detach, node.kwargs), grad_enabled=None)


class _Detached:
    """A tensor argument written as `name.detach()`."""

    def __init__(self, value: Value) -> None:
        self.value = value


def size_name(symbol: str) -> str:
    """The variable holding an input's symbolic size in exported code (`_size_u0 = x.size(0)`)."""
    return f"_size_{symbol}"


def _is_list(v: Any) -> bool:
    return isinstance(v, Value) and v.kind is ValueKind.LIST


def _nodes_after(graph: Graph, node: Node) -> list[Node]:
    for i, n in enumerate(graph.nodes):
        if n is node:
            return graph.nodes[i + 1:]
    return []


def compile_forward(graph: Graph, capture_attrs: dict[int, str] | None,
                    autocast: tuple | None = None) -> tuple[Any, str]:
    """The forward function (taking the module, then the graph inputs; with `capture_attrs` None, the captured
    tensors after them) and its source."""
    src, namespace = ExportCodegen(graph, capture_attrs, autocast or None).source()
    filename = f"<torch_autograph export {graph.name} #{next(_counter)}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    exec(compile(src, filename, "exec"), namespace)
    return namespace["forward"], src

