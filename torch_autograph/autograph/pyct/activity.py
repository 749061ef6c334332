"""Activity analysis: which names a piece of code reads and which it modifies.

Works on one function scope at a time. Nested functions, lambdas and
comprehensions are separate scopes: they contribute only the free names
they read (and a def its own name, which it binds).
"""

from __future__ import annotations

import dataclasses
from typing import Iterable, Union

import gast

from torch_autograph.autograph.pyct import anno, qual_names, transformer

_FUNCS = (gast.FunctionDef, gast.AsyncFunctionDef)
_COMPS = (gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp)
_STORES = frozenset({"st_attr", "st_item"})


@dataclasses.dataclass
class Activity:
    """Names read and modified in one scope (simple names as str).

    Attributes:
        read: names whose value is used.
        modified: names bound (assignment, augmented assignment, for target,
            def, import, with-as, except-as, del).
        modified_qns: attributes/subscripts assigned, e.g. `self.y`, `d['k']`.
        element_writes: names whose elements are assigned at an index that is not a constant
            (`keys[i] = k`, `acc[i] += x`): the name is not rebound, but a list or dict it holds changes.
        declared: names declared `global` or `nonlocal` in this scope.
        nonlocal_: names declared `nonlocal` in this scope.
        closure_writes: names of this scope that a nested def assigns
            through `nonlocal` (whenever that def runs).
    """

    read: set = dataclasses.field(default_factory=set)
    modified: set = dataclasses.field(default_factory=set)
    modified_qns: set = dataclasses.field(default_factory=set)
    element_writes: set = dataclasses.field(default_factory=set)
    declared: set = dataclasses.field(default_factory=set)
    nonlocal_: set = dataclasses.field(default_factory=set)
    closure_writes: set = dataclasses.field(default_factory=set)


class _Collector(transformer.Visitor):
    def __init__(self) -> None:
        self.act = Activity()

    def visit_Name(self, node: gast.Name) -> None:
        if anno.hasanno(node, anno.Basic.EXPRESSION_TEMP):
            return  # lives inside one expression: not state of anything
        if isinstance(node.ctx, gast.Load):
            self.act.read.add(node.id)
        else:
            self.act.modified.add(node.id)

    def _visit_target_compound(self, node: Union[gast.Attribute, gast.Subscript]) -> None:
        if not isinstance(node.ctx, gast.Load):
            qn = qual_names.from_node(node)
            if qn is not None:
                self.act.modified_qns.add(qn)
            elif isinstance(node, gast.Subscript) and isinstance(node.value, gast.Name):
                self.act.element_writes.add(node.value.id)
        self.generic_visit(node)

    visit_Attribute = _visit_target_compound
    visit_Subscript = _visit_target_compound

    def visit_Call(self, node: gast.Call) -> None:
        # Generated `ag__.st_attr(obj, 'y', v)` / `ag__.st_item(obj, k, v)` assign obj.y / obj[k].
        if (transformer.is_ag_call(node) and node.func.attr in _STORES and len(node.args) == 3
                and isinstance(node.args[1], gast.Constant)):
            parent = qual_names.from_node(node.args[0])
            key = node.args[1].value
            if parent is not None and isinstance(key, (str, int, float)):
                self.act.modified_qns.add(
                    qual_names.QN(key, parent, subscript=node.func.attr == "st_item"))
        self.generic_visit(node)

    def visit_AugAssign(self, node: gast.AugAssign) -> None:
        if isinstance(node.target, gast.Name):
            self.act.read.add(node.target.id)
        self.generic_visit(node)

    def visit_Global(self, node: gast.Global) -> None:
        self.act.declared.update(node.names)

    def visit_Nonlocal(self, node: gast.Nonlocal) -> None:
        self.act.declared.update(node.names)
        self.act.nonlocal_.update(node.names)

    def visit_alias(self, node: gast.alias) -> None:
        self.act.modified.add((node.asname or node.name).split(".")[0])

    def visit_ExceptHandler(self, node: gast.ExceptHandler) -> None:
        if node.name is not None:
            self.visit(node.name)
        if node.type is not None:
            self.visit(node.type)
        for s in node.body:
            self.visit(s)

    def _visit_scope(self, node: gast.AST, params: gast.arguments, body: Iterable) -> None:
        for d in list(params.defaults) + [d for d in params.kw_defaults if d is not None]:
            self.visit(d)
        inner = _Collector()
        inner.visit(params)
        for s in body:
            inner.visit(s)
        own = inner.act.modified - inner.act.declared
        self.act.read.update(inner.act.read - own)
        self.act.closure_writes.update((inner.act.modified & inner.act.nonlocal_)
                                       | (inner.act.closure_writes - own))

    def visit_FunctionDef(self, node: gast.FunctionDef) -> None:
        for d in node.decorator_list:
            self.visit(d)
        self.act.modified.add(node.name)
        self._visit_scope(node, node.args, node.body)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: gast.Lambda) -> None:
        self._visit_scope(node, node.args, [node.body])

    def visit_ClassDef(self, node: gast.ClassDef) -> None:
        for d in node.decorator_list + node.bases + node.keywords:
            self.visit(d)
        self.act.modified.add(node.name)
        inner = _Collector()
        for s in node.body:
            inner.visit(s)
        self.act.read.update(inner.act.read - inner.act.modified)

    def _visit_comp(self, node: gast.AST) -> None:
        inner = _Collector()
        inner.generic_visit(node)
        targets = set()
        for gen in node.generators:
            t = _Collector()
            t.visit(gen.target)
            targets |= t.act.modified
        self.act.read.update(inner.act.read - targets)
        # Walrus targets inside a comprehension bind in the enclosing scope.
        self.act.modified.update(inner.act.modified - targets)

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _visit_comp


def activity_of(nodes: Union[gast.AST, Iterable[gast.AST]]) -> Activity:
    """Read/modified names of a node or a list of nodes (same scope)."""
    c = _Collector()
    if isinstance(nodes, gast.AST):
        c.visit(nodes)
    else:
        for n in nodes:
            c.visit(n)
    return c.act


def function_locals(fn: Union[gast.FunctionDef, gast.Lambda]) -> set:
    """Names local to `fn`: parameters and everything it binds, minus global/nonlocal."""
    body = fn.body if isinstance(fn.body, list) else [fn.body]
    act = activity_of([fn.args] + list(body))
    return act.modified - act.declared


def captured_by_nested_scopes(fn: gast.FunctionDef) -> tuple[set, set]:
    """(names read, names assigned) by the defs and lambdas nested in `fn`, whenever those run.

    The assigned names are those a nested def declares `nonlocal`; both sets
    hold names of `fn`'s scope only if `fn` binds them. Thunks the
    converters generate as arguments of an `ag__` call (an assert's message)
    run on the spot and are not counted.
    """
    c = _Collector()
    # Only scopes directly in `fn`: a deeper scope's free names are accounted
    # for in those of the scope that encloses it.
    todo = list(fn.body)
    while todo:
        n = todo.pop()
        if isinstance(n, _FUNCS):
            todo.extend(n.decorator_list)
            c._visit_scope(n, n.args, n.body)
        elif isinstance(n, gast.Lambda):
            c._visit_scope(n, n.args, [n.body])
        elif isinstance(n, gast.ClassDef):
            c.visit_ClassDef(n)
        elif transformer.is_ag_call(n):
            todo.extend(a for a in n.args if not isinstance(a, gast.Lambda))
            todo.extend(k.value for k in n.keywords)
        else:
            todo.extend(transformer.iter_children(n))
    return c.act.read, c.act.closure_writes
