"""Lowers `continue` into a flag that guards the rest of the loop body.

    for x in xs:                      for x in xs:
        if x < 0:                         continue_ = False
            continue          ->          if x < 0:
        s += x                                continue_ = True
                                          if not continue_:
                                              s += x
"""

from __future__ import annotations

import gast

from torch_autograph.autograph.converters import jumps
from torch_autograph.autograph.pyct import transformer


class _ContinueTransformer(transformer.StatementTransformer):
    def __init__(self, ctx: transformer.ConversionContext):
        self.ctx = ctx

    def visit_FunctionDef(self, node: gast.FunctionDef) -> gast.FunctionDef:
        return node

    visit_AsyncFunctionDef = visit_ClassDef = visit_Lambda = visit_FunctionDef

    def _visit_loop(self, node: gast.stmt) -> gast.stmt:
        self.generic_visit(node)
        if not any(jumps.contains(s, gast.Continue, False) for s in node.body):
            return node
        flag = self.ctx.namer.new_symbol("continue_")
        lowering = jumps.Lowering(gast.Continue, flag,
                                  lambda s: [transformer.assign(flag, transformer.constant(True))])
        reset = transformer.copy_location(
            transformer.assign(flag, transformer.constant(False)), node.body[0])
        node.body = [reset] + lowering.block(node.body)
        if not _is_read(node.body, flag):
            # Every `continue` ended an `if` branch, so the rest went to the
            # else branches and the flag is never consulted: drop it (a body
            # that was only `continue` keeps a `pass`).
            node.body = _without_assignments(node.body, flag) or [gast.Pass()]
        return node

    visit_While = visit_For = visit_AsyncFor = _visit_loop


def _is_read(stmts: list, flag: str) -> bool:
    return any(isinstance(n, gast.Name) and n.id == flag and isinstance(n.ctx, gast.Load)
               for s in stmts for n in transformer.walk(s))


def _without_assignments(stmts: list, flag: str) -> list:
    out = []
    for s in stmts:
        if (isinstance(s, gast.Assign) and len(s.targets) == 1
                and isinstance(s.targets[0], gast.Name) and s.targets[0].id == flag):
            continue
        if not isinstance(s, transformer.FUNCTION_NODES):
            for field in ("body", "orelse", "finalbody"):
                block = getattr(s, field, None)
                if block:
                    # A block that was not empty stays a block (`pass`); an absent
                    # `else:`/`finally:` stays absent (`try: ... else: pass` needs an except).
                    setattr(s, field, _without_assignments(block, flag) or [gast.Pass()])
            for handler in getattr(s, "handlers", ()):
                handler.body = _without_assignments(handler.body, flag) or [gast.Pass()]
        out.append(s)
    return out


def transform(fn: gast.FunctionDef, ctx: transformer.ConversionContext) -> None:
    """Lowers the continues of `fn`'s own scope in place."""
    t = _ContinueTransformer(ctx)
    t.generic_visit(fn)
