"""Converts `and`/`or`/`not` and chained comparisons into lazy operator calls.

    a and b or not c   ->  ag__.or_(ag__.and_(a, lambda: b), lambda: ag__.not_(c))
    0 < x < n          ->  ag__.and_(0 < x, lambda: x < n)
    0 < f(y) < n       ->  ag__.and_(0 < (cmp_ := f(y)), lambda: cmp_ < n)
    c in t             ->  ag__.in_(c, t)              (a graph bool where `t` is a graph tensor)
    c not in t         ->  ag__.not_(ag__.in_(c, t))

The right operands stay lazy (thunks), preserving short-circuiting. An and/or
read only by a test (`if a and b:`) passes `True` (`truth`): only its truth
matters, so operands of different kinds may meet. A middle
operand of a chain that is not a plain name or constant is evaluated once
through a named temporary, as Python does.
"""

from __future__ import annotations

import gast

from torch_autograph.autograph.pyct import anno, templates, transformer


class _LogicalTransformer(transformer.Transformer):
    def __init__(self, ctx: transformer.ConversionContext):
        self.ctx = ctx

    def visit_BoolOp(self, node: gast.BoolOp) -> gast.expr:
        if anno.hasanno(node, anno.Basic.SKIP_PROCESSING):
            return node  # a generated check on plain values (control_flow's dual path)
        self.generic_visit(node)
        op = "ag__.and_" if isinstance(node.op, gast.And) else "ag__.or_"
        truth = ", True" if anno.getanno(node, anno.Basic.TRUTH_ONLY) else ""
        result = node.values[-1]
        for left in reversed(node.values[:-1]):
            result = templates.replace_as_expression(f"{op}(left, lambda: right{truth})",
                                                     left=left, right=result)
        return transformer.copy_location(result, node)

    def visit_UnaryOp(self, node: gast.UnaryOp) -> gast.expr:
        if anno.hasanno(node, anno.Basic.SKIP_PROCESSING):
            return node
        self.generic_visit(node)
        if not isinstance(node.op, gast.Not):
            return node
        new = templates.replace_as_expression("ag__.not_(operand)", operand=node.operand)
        return transformer.copy_location(new, node)

    def visit_Compare(self, node: gast.Compare) -> gast.expr:
        self.generic_visit(node)
        if len(node.ops) == 1:
            return _membership(node)
        operands = [node.left] + list(node.comparators)
        compares = []
        for i, op in enumerate(node.ops):
            left, right = operands[i], operands[i + 1]
            if i > 0:
                left = operands[i]  # the temp / plain operand prepared below
            if i + 1 < len(operands) - 1 and not isinstance(right, (gast.Name, gast.Constant)):
                tmp = self.ctx.namer.new_symbol("cmp_")
                operands[i + 1] = transformer.name(tmp)
                right = gast.NamedExpr(target=transformer.name(tmp, gast.Store), value=right)
            compares.append(_membership(gast.Compare(left=left, ops=[op], comparators=[right])))
        result = compares[-1]
        for left in reversed(compares[:-1]):
            result = templates.replace_as_expression("ag__.and_(left, lambda: right)",
                                                     left=left, right=result)
        return transformer.copy_location(result, node)


def mark_tests(fn: gast.AST) -> None:
    """Annotate the and/or expressions whose value only an `if`/`while`/`assert`/ternary test reads."""
    for node in transformer.walk(fn):
        if isinstance(node, (gast.If, gast.While, gast.Assert, gast.IfExp)):
            todo = [node.test]
        elif isinstance(node, (gast.For, gast.AsyncFor)) and anno.hasanno(node, anno.Basic.EXTRA_LOOP_TEST):
            todo = [anno.getanno(node, anno.Basic.EXTRA_LOOP_TEST)]
        else:
            continue
        while todo:
            e = todo.pop()
            if isinstance(e, gast.BoolOp):
                anno.setanno(e, anno.Basic.TRUTH_ONLY, True)
                todo.extend(e.values)
            elif isinstance(e, gast.UnaryOp) and isinstance(e.op, gast.Not):
                todo.append(e.operand)


def _membership(node: gast.Compare) -> gast.expr:
    """A single `in` / `not in` comparison as the operator call (Python makes `__contains__`'s answer a bool at
    once, so a graph tensor's membership must not go through it)."""
    op = node.ops[0]
    if not isinstance(op, (gast.In, gast.NotIn)):
        return node
    call = "ag__.in_(element, container)" if isinstance(op, gast.In) else "ag__.not_(ag__.in_(element, container))"
    new = templates.replace_as_expression(call, element=node.left, container=node.comparators[0])
    return transformer.copy_location(new, node)


def transform(fn: gast.FunctionDef, ctx: transformer.ConversionContext) -> None:
    t = _LogicalTransformer(ctx)
    t.generic_visit(fn)
