"""Makes list mutations explicit state so lists can grow and shrink in tensor loops.

    for x in xs:                       for x in xs:
        l.append(x)           ->           l = ag__.list_append(l, x)
        y = l.pop()                        l, y = ag__.list_pop(l)
        s += l.pop(0)                      s += ag__.list_popped((popped := ag__.list_pop(l, 0)), (l := popped[0]))
        l.insert(0, x)                     l = ag__.list_insert(l, 0, x)
        del l[i]                           l = ag__.list_delitem(l, i)
        del l[1:]                          l = ag__.list_delitem(l, slice(1, None, None))
        l.extend(x)                        l = ag__.list_extend(l, x)
        l += [x]                           l = ag__.list_iadd(l, [x])
        self.out.append(x)                 ag__.st_attr(self, 'out', ag__.list_append(self.out, x))
        z = self.out.pop()                 list_, z = ag__.list_pop(self.out)
                                           ag__.st_attr(self, 'out', list_)
        self.out += [x]                    self.out = ag__.list_iadd(self.out, [x])

Every statement is rewritten, not only those in loops and branches: after a
tensor loop or `if` the list may be a graph list, whose mutations return the
list after them. A `pop` inside an expression rebinds the list where Python
pops it (an assignment expression; `popped` lives inside that expression
only, so the analyses ignore it). Where an assignment expression would bind
in a scope of its own or run lazily (a lambda, a comprehension, the branches
of a conditional expression, the right side of `and`/`or`, a `while`
condition) a `pop` stays as written: a graph list's own `pop` method still
pops when the graph runs, but a Python list popped there under a tensor
condition is popped while tracing. A `+=` whose right side is not visibly a
list (`l += other`, `i += 1`) is left to Python; on a graph list it raises
an error that says to use `extend`. `del d['key']` (a string key: a dict
entry) keeps Python's own `del`.

A simple name is rewritten when it is local to the function (a parameter or
assigned in it): it then counts as modified, so control_flow threads it
through the loop like any other loop variable. A global or closure list is
left alone: rebinding it would make it a local of the function
(UnboundLocalError).

On an attribute or constant subscript (`self.out`, `obj.a.b`, `d['k']`) the
list a method returns is stored back with `ag__.st_attr` / `ag__.st_item`,
which activity analysis counts as assigning that symbol, so control_flow
threads it like `self.out = ...` (see state.py). `+=` keeps Python's own
store (`self.out = ...`: Python assigns after `+=` too).

Plain Python values: `list_append` & co. mutate the list and return it, and
the stores skip an identical object, so nothing is assigned and the code
behaves as written; a read-only property holding a list keeps working (a
store such an object refuses is dropped when the value is plain).

Staged loops and branches: the list becomes a graph list (a new object
standing for the run-time list), which must be stored back. An attribute or
item that cannot be set (a property without a setter, a frozen dataclass, a
tuple) then raises AttributeError / TypeError naming the attribute, its class
and the user's line; keep such a list in a local variable instead. After the
call the attribute still holds that graph list, not a list of tensors: the
store was a Python side effect, run at trace time only, like every Python side effect.
Touching it outside the graph raises InaccessibleTensorError saying so;
return the list (or `torch.stack(lst)`) from the function instead.
"""

from __future__ import annotations

from typing import Optional

import gast

from torch_autograph.autograph.pyct import anno, qual_names, templates, transformer


def _method_call(node: gast.AST, method: str) -> Optional[tuple]:
    """(the list expression, args) of `<list>.method(args)` on a name or qualified symbol."""
    if (isinstance(node, gast.Call) and isinstance(node.func, gast.Attribute)
            and node.func.attr == method and qual_names.from_node(node.func.value) is not None
            and not node.keywords and not any(isinstance(a, gast.Starred) for a in node.args)):
        return node.func.value, node.args
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
        stack.extend(transformer.iter_children(node))
    return names - declared


class _ListTransformer(transformer.Transformer):
    def __init__(self, ctx: transformer.ConversionContext) -> None:
        self.ctx = ctx
        self.local: set[str] = set()

    def visit_FunctionDef(self, node: gast.FunctionDef) -> gast.FunctionDef:
        saved, self.local = self.local, _local_names(node)
        self.generic_visit(node)
        self.local = saved
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_While(self, node: gast.While) -> gast.stmt:
        # Not the test: it runs in its own generated function, where rebinding a list is lost.
        node.body = self._block(node.body)
        node.orelse = self._block(node.orelse)
        return node

    def _block(self, stmts: list) -> list:
        out = []
        for s in stmts:
            r = self.visit(s)
            out.extend(r if isinstance(r, list) else [r])
        return out

    # Where an expression is evaluated lazily or in a scope of its own, a pop cannot
    # rebind the list (see the module docstring): only the eager parts are entered.
    def visit_Lambda(self, node: gast.AST) -> gast.AST:
        return node

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = visit_Lambda

    def visit_IfExp(self, node: gast.IfExp) -> gast.expr:
        node.test = self.visit(node.test)
        return node

    def visit_BoolOp(self, node: gast.BoolOp) -> gast.expr:
        node.values[0] = self.visit(node.values[0])
        return node

    def visit_Call(self, node: gast.Call) -> gast.expr:
        self.generic_visit(node)
        pop = _method_call(node, "pop")
        if pop is None or len(pop[1]) > 1 or not self._rewritable(pop[0]):
            return node
        target, args = pop
        pair = self.ctx.namer.new_symbol("popped")
        call = templates.replace_as_expression("ag__.list_pop(l, args)", l=_load(target),
                                               args=args[0] if args else "placeholder_")
        _drop_placeholder(call)
        bind = gast.NamedExpr(target=transformer.name(pair, gast.Store), value=call)
        rebind_value = templates.replace_as_expression("pair[0]", pair=pair)
        for temp in (bind.target, rebind_value.value):
            anno.setanno(temp, anno.Basic.EXPRESSION_TEMP, True)
        if isinstance(target, gast.Name):
            rebind = gast.NamedExpr(target=transformer.name(target.id, gast.Store), value=rebind_value)
        else:
            rebind = _store(target, rebind_value).value
        return templates.replace_as_expression("ag__.list_popped(bind, rebind)", bind=bind,
                                               rebind=rebind)

    def _rewritable(self, target: gast.expr) -> bool:
        # A simple name must be local (see the module docstring); a compound is never rebound.
        return not isinstance(target, gast.Name) or target.id in self.local

    def visit_Expr(self, node: gast.Expr) -> gast.stmt:
        for method, arity, template in _STATEMENT_FORMS:
            call = _method_call(node.value, method)
            if call is not None and len(call[1]) in arity and self._rewritable(call[0]):
                target, args = call
                args = [self.visit(a) for a in args]
                if method == "pop":
                    args = args or ["placeholder_"]
                new = templates.replace_as_expression(template, l=_load(target),
                                                      **dict(zip(("x", "y"), args)))
                return transformer.copy_location(_store(target, _drop_placeholder(new)), node)
        return self.generic_visit(node)

    def visit_Delete(self, node: gast.Delete) -> list:
        out = []
        for t in node.targets:
            if (isinstance(t, gast.Subscript) and qual_names.from_node(t.value) is not None
                    and self._rewritable(t.value)
                    and not (isinstance(t.slice, gast.Constant) and isinstance(t.slice.value, str))):
                # `del l[i]`, but not `del d['key']` (a dict entry: its own state, see state.py).
                out.append(_store(t.value, templates.replace_as_expression(
                    "ag__.list_delitem(l, i)", l=_load(t.value), i=_index_value(t.slice))))
            else:
                out.append(gast.Delete(targets=[t]))
        return transformer.copy_location(out, node)

    def visit_AugAssign(self, node: gast.AugAssign) -> gast.stmt:
        # Only a visible list on the right: `i += 1` stays as written.
        if (isinstance(node.op, gast.Add) and isinstance(node.value, (gast.List, gast.ListComp))
                and qual_names.from_node(node.target) is not None and self._rewritable(node.target)):
            value = templates.replace_as_expression("ag__.list_iadd(l, x)", l=_load(node.target), x=node.value)
            return transformer.copy_location(gast.Assign(targets=[node.target], value=value), node)
        return self.generic_visit(node)

    def visit_Assign(self, node: gast.Assign) -> list:
        pop = _method_call(node.value, "pop")
        if (pop is None or len(pop[1]) > 1 or len(node.targets) != 1
                or not isinstance(node.targets[0], gast.Name) or not self._rewritable(pop[0])):
            return self.generic_visit(node)
        target, args = pop
        args = args[0] if args else "placeholder_"
        if isinstance(target, gast.Name):
            new = templates.replace("l, y = ag__.list_pop(l, args)", l=target.id,
                                    y=node.targets[0], args=args)
        else:
            popped = self.ctx.namer.new_symbol("list_")
            new = templates.replace("l, y = ag__.list_pop(target, args)", l=popped,
                                    y=node.targets[0], target=_load(target), args=args)
            new.append(_store(target, transformer.name(popped)))
        return transformer.copy_location([_drop_placeholder(s) for s in new], node)


# (method, numbers of arguments, the call that returns the list after it) for a statement
# `l.method(...)`, which becomes `l = <call>`.
_STATEMENT_FORMS = (("append", (1,), "ag__.list_append(l, x)"),
                    ("extend", (1,), "ag__.list_extend(l, x)"),
                    ("insert", (2,), "ag__.list_insert(l, x, y)"),
                    ("pop", (0, 1), "ag__.list_pop(l, x)[0]"))


def _load(target: gast.expr) -> object:
    """What a template placeholder takes to read `target`: a name as text, else a copy."""
    return target.id if isinstance(target, gast.Name) else templates.copy_tree(target)


def _store(target: gast.expr, value: gast.expr) -> gast.stmt:
    """`name = value` for a name; `ag__.st_attr(obj, 'attr', value)` / `ag__.st_item(obj, key, value)`."""
    if isinstance(target, gast.Name):
        return templates.replace("l = value", l=target.id, value=value)[0]
    obj = target.value
    if isinstance(target, gast.Attribute):
        return templates.replace("ag__.st_attr(obj, key, value)", obj=obj,
                                 key=transformer.constant(target.attr), value=value)[0]
    return templates.replace("ag__.st_item(obj, key, value)", obj=obj,
                             key=templates.copy_tree(target.slice), value=value)[0]


def _drop_placeholder(stmt: gast.stmt) -> gast.stmt:
    for n in gast.walk(stmt):
        if isinstance(n, gast.Call):
            n.args = [a for a in n.args
                      if not (isinstance(a, gast.Name) and a.id == "placeholder_")]
    return stmt


def transform(fn: gast.FunctionDef, ctx: transformer.ConversionContext) -> None:
    t = _ListTransformer(ctx)
    t.local = _local_names(fn)
    t.generic_visit(fn)


def _index_value(index: gast.expr) -> gast.expr:
    """A subscript's index as an argument: `a:b:c` is no expression outside brackets, `slice(a, b, c)` is."""
    if isinstance(index, gast.Slice):
        parts = [p if p is not None else transformer.constant(None) for p in (index.lower, index.upper, index.step)]
        return gast.Call(func=transformer.name("slice"), args=parts, keywords=[])
    if isinstance(index, gast.Tuple):
        return gast.Tuple(elts=[_index_value(e) for e in index.elts], ctx=gast.Load())
    return index
