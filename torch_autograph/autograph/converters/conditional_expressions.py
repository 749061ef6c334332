"""Converts ternaries into lazy `ag__.if_exp` calls.

    y = a if c else b  ->  y = ag__.if_exp(c, lambda: a, lambda: b)
"""

from __future__ import annotations

import gast

from torch_autograph.autograph.pyct import templates, transformer


class _IfExpTransformer(transformer.Transformer):
    def visit_IfExp(self, node: gast.IfExp) -> gast.expr:
        self.generic_visit(node)
        new = templates.replace_as_expression(
            "ag__.if_exp(test, lambda: body, lambda: orelse)",
            test=node.test, body=node.body, orelse=node.orelse)
        return transformer.copy_location(new, node)


def transform(fn: gast.FunctionDef, ctx: transformer.ConversionContext) -> None:
    t = _IfExpTransformer()
    t.generic_visit(fn)
