"""Lowers `break` (and loop `else:` clauses) into a flag that stops the loop.

    while i < n:                      break_ = False
        if x > 3:                     while not break_ and i < n:
            break             ->          if x > 3:
        i += 1                                break_ = True
    else:                             if not break_:
        x = 0                                 i += 1
                                      if not break_:
                                          x = 0

For `for` loops the flag becomes the loop's extra test (anno
EXTRA_LOOP_TEST), which `for_stmt` checks before each iteration.
"""

from __future__ import annotations

import gast

from torch_autograph.autograph.converters import jumps
from torch_autograph.autograph.pyct import anno, transformer


class _BreakTransformer(transformer.StatementTransformer):
    def __init__(self, ctx: transformer.ConversionContext):
        self.ctx = ctx

    def visit_FunctionDef(self, node: gast.FunctionDef) -> gast.FunctionDef:
        return node  # nested scopes are converted on their own

    visit_AsyncFunctionDef = visit_ClassDef = visit_Lambda = visit_FunctionDef

    def _visit_loop(self, node: gast.stmt) -> list:
        self.generic_visit(node)
        orelse, node.orelse = node.orelse, []
        if not any(jumps.contains(s, gast.Break, False) for s in node.body):
            return [node] + orelse
        flag = self.ctx.namer.new_symbol("break_")
        lowering = jumps.Lowering(gast.Break, flag,
                                  lambda s: [transformer.assign(flag, transformer.constant(True))])
        node.body = lowering.block(node.body)
        not_flag = transformer.not_expr(transformer.name(flag))
        if isinstance(node, gast.While):
            node.test = transformer.and_exprs(not_flag, node.test)
        else:
            extra = anno.getanno(node, anno.Basic.EXTRA_LOOP_TEST)
            anno.setanno(node, anno.Basic.EXTRA_LOOP_TEST, transformer.and_exprs(not_flag, extra))
        out = [transformer.assign(flag, transformer.constant(False)), node]
        if orelse:
            out.append(gast.If(test=transformer.not_expr(transformer.name(flag)), body=orelse,
                               orelse=[]))
        return transformer.copy_location(out, node)

    visit_While = visit_For = visit_AsyncFor = _visit_loop


def transform(fn: gast.FunctionDef, ctx: transformer.ConversionContext) -> None:
    """Lowers the breaks of `fn`'s own scope in place."""
    t = _BreakTransformer(ctx)
    fn.body = [r for s in fn.body for r in _as_list(t.visit(s))]


def _as_list(x):
    return x if isinstance(x, list) else [x]
