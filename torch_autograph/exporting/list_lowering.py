"""Graph lists and TensorArrays in exported code: `(buffer, length)` pairs with capacity reserved before loops.

A list made in a function scope is reserved there: before an append, a
TensorArray write, or a `cond`/`while` that grows it, its buffer gets the rows
that op may add. For a loop that is the loop's number of iterations (a `for`
loop's length, or `maximum_iterations`) times the rows one iteration adds; a
`while` with neither cannot be bounded before it runs, and exporting it raises
`GraphLoweringError` at the line that grows the list.

    lst = []                      lst = _rt.list_new([], (3,), torch.float32, ...)
    for i in range(n):            lst = _rt.reserve(lst, trip * 1)
        lst.append(x * i)   ->    ... torch.while_loop(..., (..., lst))   # body: lst_1 = _rt.append(lst, mul)
    torch.stack(lst)              stack = _rt.stack(lst_2)
"""

from __future__ import annotations

import operator
from typing import Any

import torch

from ..backends import lowering_error
from ..graph import CondOp, Graph, Node, OpKind, Value, ValueKind, WhileOp, iter_values, list_ops, walk_nodes
from ..state import ta_concat, ta_from_tensor, ta_gather, ta_new, ta_read, ta_size, ta_stack, ta_write

ExportCodegen = Scope = Any  # codegen's: codegen.py imports this module, so they are not imported here

_RT = "_rt"
_CREATE = {list_ops.list_new, ta_new, list_ops.list_from_rows, ta_from_tensor}
_APPEND = {list_ops.list_append}
_STACKS = {torch.stack: "stack", torch.cat: "cat", torch.concat: "cat", torch.concatenate: "cat"}


def _is_list(v: Any) -> bool:
    return isinstance(v, Value) and v.kind is ValueKind.LIST


class ListLowering:
    """The list half of `ExportCodegen` (a mixin: it uses the writer `self.w` and `self.list_types`)."""

    def list_op(self: "ExportCodegen", node: Node, scope: "Scope") -> bool:
        """Emit `node` if it is a list operation; False if it is not one."""
        op, args, w = node.op, node.args, self.w
        target = op.target
        out = node.outputs[0] if node.outputs else None
        if op.kind is OpKind.OPERATOR and target is operator.getitem and _is_list(args[0]):
            if isinstance(args[1], slice):
                raise lowering_error(node, "it slices a graph list", "index it element by element, or slice "
                                     "torch.stack(lst)", to="torch.export")
            w.line(f"{out.name} = {_RT}.get({w.raw(args[0])}, {w.raw(args[1])})", node.origin)
            return True
        if op.kind is OpKind.FUNCTION and target in _STACKS and args and _is_list(args[0]):
            dim = node.kwargs.get("dim", args[1] if len(args) > 1 else 0)
            w.line(f"{out.name} = {_RT}.{_STACKS[target]}({w.raw(args[0])}, {w.raw(dim)}, nonempty=True)",
                   node.origin)
            return True
        if op.kind is not OpKind.FUNCTION or not callable(target):
            return False
        if target in _CREATE:
            self.create_list(node, scope)
        elif target in _APPEND:
            self.reserve_here(args[0], "1", scope)
            w.line(f"{out.name} = {_RT}.append({w.raw(args[0])}, {w.raw(args[1])})", node.origin)
        elif target is ta_write:
            lst, index, value, dynamic = args
            if dynamic and id(lst) in scope.local_lists:
                w.line(f"{lst.name} = {_RT}.reserve_index({lst.name}, {w.raw(index)})")
            w.line(f"{out.name} = {_RT}.write({w.raw(lst)}, {w.raw(index)}, {w.raw(value)}, {dynamic!r})",
                   node.origin)
        elif target is list_ops.list_pop:
            index = args[1] if len(args) > 1 else -1
            if index != -1:
                raise lowering_error(node, "it pops a graph list at an index other than the last",
                                     "pop the last element (lst.pop())", to="torch.export")
            w.line(f"{render_pair(node)} = {_RT}.pop({w.raw(args[0])})", node.origin)
        elif target in (list_ops.list_len, ta_size):
            w.line(f"{out.name} = {_RT}.length({w.raw(args[0])})", node.origin)
        elif target is ta_read:
            w.line(f"{out.name} = {_RT}.get({w.raw(args[0])}, {w.raw(args[1])})", node.origin)
        elif target is ta_stack:
            w.line(f"{out.name} = {_RT}.stack({w.raw(args[0])})", node.origin)
        elif target is ta_concat:
            w.line(f"{out.name} = {_RT}.cat({w.raw(args[0])})", node.origin)
        elif target is ta_gather:
            w.line(f"{out.name} = {_RT}.gather({w.raw(args[0])}, {w.raw(args[1])})", node.origin)
        else:
            return False
        for v in node.outputs:
            if _is_list(v) and any(id(a) in scope.local_lists for a in node.input_values()):
                scope.local_lists.add(id(v))
        if target in _APPEND or target in (ta_write, list_ops.list_pop):
            # The run-time list is one object: what still refers to it by its old value sees the update.
            updated = node.pattern[0] if target is list_ops.list_pop else out
            if isinstance(updated, Value):
                w.line(f"{args[0].name} = {updated.name}")
        return True

    def create_list(self: "ExportCodegen", node: Node, scope: "Scope") -> None:
        out, w, target = node.outputs[0], self.w, node.op.target
        scope.local_lists.add(id(out))
        if target in (list_ops.list_from_rows, ta_from_tensor):
            w.line(f"{out.name} = {_RT}.list_from_rows({w.raw(node.args[0])})", node.origin)
            return
        element = self.list_types.element(out)
        if element is None:
            raise lowering_error(node, "nothing tells the type of this list's elements (it is never appended to)",
                                 "give the TensorArray an element_shape, or append to the list", to="torch.export")
        dtype, shape, device = element
        dims = "(" + "".join(f"{self.dim(d, node)}, " for d in shape) + ")"
        if target is list_ops.list_new:
            items = "[" + ", ".join(w.raw(a) for a in node.args) + "]"
            w.line(f"{out.name} = {_RT}.list_new({items}, {dims}, {dtype}, {w.arg(device)})", node.origin)
        else:
            w.line(f"{out.name} = {_RT}.list_sized({w.raw(node.args[0])}, {dims}, {dtype}, {w.arg(device)})",
                   node.origin)

    def dim(self: "ExportCodegen", d: Any, node: Node) -> str:
        """A list element's dim as code: an int, or the input size it is (`x.size(0)`)."""
        if d is not None and type(d) is int:
            return str(d)
        source = self.size_code(d) if d is not None else None
        if source is None:
            raise lowering_error(node, f"its elements have a size ({d}) known only when the graph runs, not one "
                                 "of the inputs' sizes", "make the elements' shape fixed (pad or slice them)",
                                 to="torch.export")
        return source

    # ----- capacity ----------------------------------------------------------------------------------------
    def reserve_here(self: "ExportCodegen", lst: Value, rows: str, scope: "Scope") -> None:
        if id(lst) in scope.local_lists and rows != "0":
            self.w.line(f"{lst.name} = {_RT}.reserve({lst.name}, {rows})")

    def reserve_for(self: "ExportCodegen", node: Node, scope: "Scope") -> None:
        """Before a `cond`/`while`: reserve what it appends to the lists made in this scope that it carries."""
        if isinstance(node.op.target, CondOp):
            for v in _unique_lists(node.args[1:]):
                if id(v) in scope.local_lists:
                    rows = _max([self.growth(g, {id(v)}, node) for g in node.subgraphs])
                    self.reserve_here(v, rows, scope)
        elif isinstance(node.op.target, WhileOp):
            target: WhileOp = node.op.target
            for init, lv in zip(node.args[0], target.loop_vars):
                if _is_list(init) and id(init) in scope.local_lists:
                    per_iteration = self.growth(node.subgraphs[1], {id(lv)}, node)
                    if per_iteration != "0":
                        self.reserve_here(init, _times(self.trips(node, node), per_iteration), scope)
        if any(_is_list(a) and id(a) in scope.local_lists for a in iter_values(node.args)):
            scope.local_lists.update(id(v) for v in node.outputs if _is_list(v))

    def trips(self: "ExportCodegen", loop: Node, where: Node) -> str:
        target: WhileOp = loop.op.target
        bound = target.trip_count if target.trip_count is not None else target.maximum_iterations
        if bound is None:
            raise lowering_error(where, "a list grows in a `while` loop whose number of iterations is known only "
                                 "as it runs, and an exported loop must hold it in a tensor of fixed size",
                                 "write the loop as `for i in range(n)` (or a `for` over a tensor), or set "
                                 "maximum_iterations with ta.autograph.experimental.set_loop_options",
                                 to="torch.export")
        return self.w.raw(bound)

    def hoist(self: "ExportCodegen", v: Value, graph: Graph) -> bool:
        """Compute `v`, defined inside `graph`, here too (before the loop that runs `graph`) if it is a pure
        function of values defined outside it (an inner loop's length `int(m)`); False if it is not."""
        inner = {id(o): n for n in walk_nodes(graph) for o in n.outputs}
        order: list[Node] = []

        def visit(value: Value) -> bool:
            node = inner.get(id(value))
            if node is None:
                return True  # defined outside: visible here
            if node.op.stateful or node.op.kind is OpKind.CONTROL or node.subgraphs:
                return False
            if not all(visit(a) for a in node.input_values()):
                return False
            if node not in order:
                order.append(node)
            return True

        if not visit(v):
            return False
        for node in order:
            self.node(node, self.scope)
        return True

    def growth(self: "ExportCodegen", graph: Graph, family: set[int], where: Node) -> str:
        """Code for how many rows running `graph` may add to the lists in `family` (Value ids), or "0"."""
        family = set(family)
        inner = {id(v) for n in graph.nodes for v in n.outputs}
        total = "0"
        for node in graph.nodes:
            target = node.op.target
            reads = [a for a in node.input_values() if id(a) in family]
            if isinstance(target, CondOp):
                reads = [a for a in node.args[1:] if isinstance(a, Value) and id(a) in family]
                if reads:
                    total = _plus(total, _max([self.growth(g, family, node) for g in node.subgraphs]))
            elif isinstance(target, WhileOp):
                carried = {id(lv) for init, lv in zip(node.args[0], target.loop_vars)
                           if isinstance(init, Value) and id(init) in family}
                if carried:
                    per_iteration = self.growth(node.subgraphs[1], carried, node)
                    if per_iteration != "0":
                        bound = target.trip_count if target.trip_count is not None else target.maximum_iterations
                        if isinstance(bound, Value) and id(bound) in inner and not self.hoist(bound, graph):
                            raise lowering_error(node, "a list grows in a loop whose number of iterations is "
                                                 "computed inside an enclosing loop, so the rows to reserve are "
                                                 "not known before the enclosing loop starts", "give the inner loop "
                                                 "a length computed before the outer loop", to="torch.export")
                        total = _plus(total, _times(self.trips(node, node), per_iteration))
            elif reads and target in _APPEND:
                total = _plus(total, "1")
            elif reads and target is ta_write and node.args[3]:
                total = _plus(total, "1")
            if reads or (isinstance(target, (CondOp, WhileOp)) and any(id(a) in family for a in node.input_values())):
                family.update(id(v) for v in node.outputs if _is_list(v))
            if isinstance(target, WhileOp):
                family.update(id(v) for init, v in zip(node.args[0], node.outputs)
                              if isinstance(init, Value) and id(init) in family)
        return total


def render_pair(node: Node) -> str:
    lst, item = node.pattern if isinstance(node.pattern, tuple) else (node.outputs[0], node.outputs[1])
    return f"{lst.name if lst is not None else '_'}, {item.name if item is not None else '_'}"


def _unique_lists(args: tuple) -> list[Value]:
    seen: set[int] = set()
    out = []
    for a in args:
        if _is_list(a) and id(a) not in seen:
            seen.add(id(a))
            out.append(a)
    return out


def _plus(a: str, b: str) -> str:
    if a == "0":
        return b
    if b == "0":
        return a
    if a.isdigit() and b.isdigit():
        return str(int(a) + int(b))
    return f"({a} + {b})"


def _times(a: str, b: str) -> str:
    if a == "0" or b == "0":
        return "0"
    if b == "1":
        return a
    if a.isdigit() and b.isdigit():
        return str(int(a) * int(b))
    return f"({a} * {b})"


def _max(parts: list[str]) -> str:
    parts = [p for p in parts if p != "0"]
    if not parts:
        return "0"
    if all(p.isdigit() for p in parts):
        return str(max(int(p) for p in parts))
    return parts[0] if len(parts) == 1 else f"{_RT}.maximum({', '.join(parts)})"
