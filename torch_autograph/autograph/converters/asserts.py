"""Converts `assert` into `ag__.assert_stmt` (a run-time check on graph values).

    assert x > 0, 'x must be positive'
        ->  ag__.assert_stmt(x > 0, lambda: 'x must be positive')
"""

from __future__ import annotations

import gast

from torch_autograph.autograph.pyct import templates, transformer


class _AssertTransformer(transformer.StatementTransformer):
    def visit_Assert(self, node: gast.Assert) -> gast.stmt:
        if node.msg is None:
            new = templates.replace("ag__.assert_stmt(test)", test=node.test)
        else:
            new = templates.replace("ag__.assert_stmt(test, lambda: msg)", test=node.test,
                                    msg=node.msg)
        return transformer.copy_location(new[0], node)


def transform(fn: gast.FunctionDef, ctx: transformer.ConversionContext) -> None:
    _AssertTransformer().visit(fn)
