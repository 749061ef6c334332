"""Makes list mutations inside loops and branches explicit state (decision 4).

    for x in xs:                       for x in xs:
        l.append(x)           ->           l = ag__.list_append(l, x)
        y = l.pop()                        l, y = ag__.list_pop(l)

Only `name.append(e)` / `name.pop(...)` statements on a plain name that is
local to the function (a parameter or assigned in it) are rewritten; the name
then counts as modified, so control_flow threads it through the loop like any
other loop variable. A global or closure list is left alone: rebinding it
would make it a local of the function (UnboundLocalError).
"""

from __future__ import annotations

import gast

from torch_autograph.autograph.pyct import templates, transformer

_CONTROL = (gast.If, gast.While, gast.For)


def _method_call(node: gast.AST, method: str):
    if (isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute)
            and node.func.attr == method and isinstance(node.func.value, gast.Name)
            and not node.keywords and not any(isinstance(a, gast.Starred) for a in node.args)):
        return node.func.value.id, node.args
    return None


def _local_names(fn: gast.AST) -> set[str]:
    """Names bound in `fn` itself (parameters and assignments), minus global/nonlocal declarations."""
    names: set[str] = set()
    declared: set[str] = set()
    args = fn.args
    for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
        if a is not None:
            names.add(a.id if isinstance(a, gast.Name) else a.arg)
    stack = list(fn.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
            names.add(node.name)
            continue  # a nested scope
        if isinstance(node, gast.Lambda):
            continue
        if isinstance(node, (gast.Global, gast.Nonlocal)):
            declared.update(node.names)
        if isinstance(node, gast.Name) and isinstance(node.ctx, gast.Store):
            names.add(node.id)
        stack.extend(gast.iter_child_nodes(node))
    return names - declared


class _ListTransformer(transformer.Transformer):
    def __init__(self) -> None:
        self.depth = 0  # how many if/while/for bodies enclose the current statement
        self.local: set[str] = set()

    def visit_FunctionDef(self, node: gast.FunctionDef) -> gast.FunctionDef:
        saved, self.depth = (self.depth, self.local), 0
        self.local = _local_names(node)
        self.generic_visit(node)
        self.depth, self.local = saved
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def _visit_control(self, node: gast.stmt) -> gast.stmt:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1
        return node

    visit_If = visit_While = visit_For = _visit_control

    def visit_Expr(self, node: gast.Expr) -> gast.stmt:
        if self.depth:
            append = _method_call(node.value, "append")
            if append is not None and len(append[1]) == 1 and append[0] in self.local:
                new = templates.replace("l = ag__.list_append(l, x)", l=append[0],
                                        x=append[1][0])
                return transformer.copy_location(new[0], node)
            pop = _method_call(node.value, "pop")
            if pop is not None and len(pop[1]) <= 1 and pop[0] in self.local:
                new = templates.replace("l = ag__.list_pop(l, args)[0]", l=pop[0],
                                        args=pop[1][0] if pop[1] else "placeholder_")
                return transformer.copy_location(_drop_placeholder(new[0]), node)
        return node

    def visit_Assign(self, node: gast.Assign) -> gast.stmt:
        pop = _method_call(node.value, "pop") if self.depth else None
        if (pop is not None and len(pop[1]) <= 1 and len(node.targets) == 1 and pop[0] in self.local
                and isinstance(node.targets[0], gast.Name)):
            new = templates.replace("l, target = ag__.list_pop(l, args)", l=pop[0],
                                    target=node.targets[0],
                                    args=pop[1][0] if pop[1] else "placeholder_")
            return transformer.copy_location(_drop_placeholder(new[0]), node)
        return node


def _drop_placeholder(stmt: gast.stmt) -> gast.stmt:
    for n in gast.walk(stmt):
        if isinstance(n, gast.Call):
            n.args = [a for a in n.args
                      if not (isinstance(a, gast.Name) and a.id == "placeholder_")]
    return stmt


def transform(fn: gast.FunctionDef, ctx: transformer.ConversionContext) -> None:
    t = _ListTransformer()
    t.depth = 0
    t.local = _local_names(fn)
    t.generic_visit(fn)
