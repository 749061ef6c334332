"""Turns `set_loop_options(...)` calls at the top of a loop body into loop options.

    while i < n:                              while i < n:   # anno LOOP_OPTIONS =
        ta.autograph.experimental.set_loop_options(            {'maximum_iterations': 3,
            maximum_iterations=3,     ->                        'shape_invariants': {'x': (None,)}}
            shape_invariants=[(x, (None,))])   ...
        ...

control_flow passes the options as the last argument of while_stmt/for_stmt:
`{'maximum_iterations': 3, 'shape_invariants': {'x': (None,)}}`. The call is
recognised by resolving its target in the function's namespace at
conversion time, so any import style works.
"""

from __future__ import annotations

import gast

from torch_autograph import errors
from torch_autograph.autograph import experimental
from torch_autograph.autograph.pyct import anno, parser, transformer

_KNOWN = ("shape_invariants", "maximum_iterations", "parallel_iterations", "swap_memory")


def _resolve(node: gast.expr, ctx: transformer.ConversionContext):
    if isinstance(node, gast.Name):
        return ctx.namespace(node.id)
    if isinstance(node, gast.Attribute):
        base = _resolve(node.value, ctx)
        return transformer.MISSING if base is transformer.MISSING else getattr(
            base, node.attr, transformer.MISSING)
    return transformer.MISSING


def _is_directive(stmt: gast.stmt, ctx: transformer.ConversionContext) -> bool:
    return (isinstance(stmt, gast.Expr) and isinstance(stmt.value, gast.Call)
            and _resolve(stmt.value.func, ctx) is experimental.set_loop_options)


def _options(call: gast.Call, ctx: transformer.ConversionContext) -> dict:
    where = f"{ctx.filename}:{call.lineno} (`{parser.source_line(ctx.filename, call.lineno)}`)"
    if call.args:
        raise errors.ConversionError(f"{where}: pass set_loop_options arguments by keyword")
    options = {}
    for kw in call.keywords:
        if kw.arg not in _KNOWN:
            raise errors.ConversionError(f"{where}: unknown loop option {kw.arg!r}")
        if kw.arg == "maximum_iterations":
            options[kw.arg] = kw.value
        elif kw.arg == "shape_invariants":
            if not isinstance(kw.value, (gast.List, gast.Tuple)):
                raise errors.ConversionError(
                    f"{where}: shape_invariants must be a literal list of (variable, shape) pairs")
            keys, values = [], []
            for pair in kw.value.elts:
                if not (isinstance(pair, gast.Tuple) and len(pair.elts) == 2
                        and isinstance(pair.elts[0], gast.Name)):
                    raise errors.ConversionError(
                        f"{where}: each shape invariant must be a (variable_name, shape) pair")
                keys.append(transformer.constant(pair.elts[0].id))
                values.append(pair.elts[1])
            options[kw.arg] = gast.Dict(keys=keys, values=values)
    return options


class _DirectivesTransformer(transformer.StatementTransformer):
    def __init__(self, ctx: transformer.ConversionContext):
        self.ctx = ctx

    def _visit_loop(self, node: gast.stmt) -> gast.stmt:
        self.generic_visit(node)
        options = {}
        while node.body and _is_directive(node.body[0], self.ctx):
            options.update(_options(node.body.pop(0).value, self.ctx))
        if not node.body:
            node.body = [gast.Pass()]
        if options:
            anno.setanno(node, anno.Basic.LOOP_OPTIONS, options)
        return node

    visit_While = visit_For = _visit_loop


def transform(fn: gast.FunctionDef, ctx: transformer.ConversionContext) -> None:
    _DirectivesTransformer(ctx).visit(fn)
