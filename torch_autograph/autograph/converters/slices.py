"""Reads a subscript with a computed index through `ag__.get_item`.

    y = l[i - 1]          ->  y = ag__.get_item(l, i - 1)
    z = l[0] + x[1:n]     ->  (unchanged: a constant index or a slice)

On a Python list or tuple whose index is known only when the graph runs (a
loop counter of a tensor loop), `get_item` reads the element at run time:
Python's `list.__getitem__` would need the index now. Every other read is
`target[index]`, exactly as written.
"""

from __future__ import annotations

import gast

from torch_autograph.autograph.pyct import templates, transformer


class _SliceTransformer(transformer.Transformer):
    def visit_Subscript(self, node: gast.Subscript) -> gast.expr:
        self.generic_visit(node)
        if (not isinstance(node.ctx, gast.Load)
                or isinstance(node.slice, (gast.Constant, gast.Slice, gast.Tuple))):
            return node
        new = templates.replace_as_expression("ag__.get_item(target, index)", target=node.value,
                                              index=node.slice)
        return gast.copy_location(new, node)


def transform(fn: gast.FunctionDef, ctx: transformer.ConversionContext) -> None:
    _SliceTransformer().visit(fn)
