"""Reads of variables that may be unbound go through `ag__.ld`.

    if c:                          if c:
        y = 1                          y = 1
    return y           ->          return ag__.ld(y)

After control flow is converted, an unbound `y` holds `ag__.Undefined('y')`
instead of being unbound, so `ld` is what raises UnboundLocalError where
Python would. Only loads that reaching-definitions analysis flags
(anno.Static.MAYBE_UNDEFINED) are wrapped. For the same reason `del x` of a
local becomes `x = ag__.Undefined('x')`: inside a generated branch function
a plain `del` would unbind that function's own copy and break state passing.
"""

from __future__ import annotations

import gast

from torch_autograph.autograph.pyct import anno, templates, transformer


class _LoadTransformer(transformer.Transformer):
    def __init__(self, declared: set):
        self.declared = declared  # global/nonlocal names: a real `del` is needed

    def visit_Delete(self, node: gast.Delete) -> list:
        if not all(isinstance(t, gast.Name) and t.id not in self.declared
                   for t in node.targets):
            return self.generic_visit(node)
        out = []
        for t in node.targets:
            out += templates.replace("var = ag__.Undefined(var_name)", var=t.id,
                                     var_name=transformer.constant(t.id))
        return transformer.copy_location(out, node)

    def visit_FunctionDef(self, node: gast.FunctionDef) -> gast.FunctionDef:
        return node

    visit_AsyncFunctionDef = visit_ClassDef = visit_Lambda = visit_FunctionDef

    def visit_Name(self, node: gast.Name) -> gast.expr:
        if isinstance(node.ctx, gast.Load) and anno.getanno(node, anno.Static.MAYBE_UNDEFINED):
            new = templates.replace_as_expression("ag__.ld(var)", var=node.id)
            return transformer.copy_location(new, node)
        return node


def transform(fn: gast.FunctionDef, ctx: transformer.ConversionContext) -> None:
    """Wraps flagged loads; reaching_definitions.analyze(fn) must have run just before."""
    declared = {n for s in transformer.walk_statements(fn.body)
                if isinstance(s, (gast.Global, gast.Nonlocal)) for n in s.names}
    t = _LoadTransformer(declared)
    t.generic_visit(fn)
