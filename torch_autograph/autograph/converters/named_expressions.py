"""Moves `:=` out of `if` and `while` tests into statements, so that the names they bind stay bound.

A converted `while` evaluates its test in a generated function, and a
converted `and`/`or` its right operand in a lambda: a walrus there would bind
the name in that function only. Each test holding one is computed into a
temporary by statements before the `if`, and for a `while` again at the end of
the body (after lowered `break`/`continue`, whose flags the test already
checks), keeping Python's order of evaluation and short-circuiting:

    while (s := x.sum() * i) < 10 and i < 20:      test_ = (s := x.sum() * i) < 10
        i += 1                                      if test_:
                                          ->            test_ = i < 20
                                                    while test_:
                                                        i += 1
                                                        test_ = (s := x.sum() * i) < 10
                                                        if test_:
                                                            test_ = i < 20
"""

from __future__ import annotations

import copy

import gast

from torch_autograph.autograph.pyct import transformer

_SCOPES = (gast.Lambda, gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp)


def _binds(node: gast.AST) -> bool:
    """Whether `node` holds a walrus that binds a name of the enclosing function."""
    todo = [node]
    while todo:
        n = todo.pop()
        if isinstance(n, gast.NamedExpr):
            return True
        if not isinstance(n, _SCOPES):
            todo.extend(transformer.iter_children(n))
    return False


def _compute(target: str, test: gast.expr) -> list:
    """Statements setting `target` to `test`'s value, its `and`/`or` operands evaluated as Python does."""
    if isinstance(test, gast.BoolOp) and any(_binds(v) for v in test.values[1:]):
        out = _compute(target, test.values[0])
        rest = test.values[1:]
        right = rest[0] if len(rest) == 1 else gast.BoolOp(op=test.op, values=rest)
        flag = transformer.name(target)
        cond = flag if isinstance(test.op, gast.And) else transformer.not_expr(flag)
        out.append(gast.If(test=cond, body=_compute(target, right), orelse=[]))
        return out
    return [transformer.assign(target, test)]


class _NamedExpressionTransformer(transformer.Transformer):
    def __init__(self, ctx: transformer.ConversionContext):
        self.ctx = ctx

    def visit_FunctionDef(self, node: gast.FunctionDef) -> gast.FunctionDef:
        return node  # nested scopes are converted on their own

    visit_AsyncFunctionDef = visit_ClassDef = visit_Lambda = visit_FunctionDef

    def visit_If(self, node: gast.If) -> list | gast.If:
        self.generic_visit(node)
        if not _binds(node.test):
            return node
        flag = self.ctx.namer.new_symbol("test_")
        before = _compute(flag, node.test)
        node.test = transformer.name(flag)
        return transformer.copy_location(before + [node], node)

    def visit_While(self, node: gast.While) -> list | gast.While:
        self.generic_visit(node)
        if not _binds(node.test):
            return node
        flag = self.ctx.namer.new_symbol("test_")
        before = _compute(flag, node.test)
        again = _compute(flag, copy.deepcopy(node.test))
        node.test = transformer.name(flag)
        node.body = node.body + transformer.copy_location(again, node)
        return transformer.copy_location(before + [node], node)


def transform(fn: gast.FunctionDef, ctx: transformer.ConversionContext) -> None:
    """Rewrites the tests of `fn`'s own scope in place."""
    t = _NamedExpressionTransformer(ctx)
    fn.body = [r for s in fn.body for r in _as_list(t.visit(s))]


def _as_list(x):
    return x if isinstance(x, list) else [x]
