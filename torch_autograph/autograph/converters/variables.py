"""Reads of variables that may be unbound go through `ag__.ld`.

    if c:                          if c:
        y = 1                          y = 1
    return y           ->          return ag__.ld(y)

After control flow is converted, an unbound `y` holds `ag__.Undefined('y')`
instead of being unbound, so `ld` is what raises UnboundLocalError where
Python would. Only loads that reaching-definitions analysis flags
(anno.Static.MAYBE_UNDEFINED) are wrapped.
"""

from __future__ import annotations

import gast

from torch_autograph.autograph.pyct import anno, templates, transformer


class _LoadTransformer(transformer.Transformer):
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
    t = _LoadTransformer()
    fn.body = [t.visit(s) for s in fn.body]
