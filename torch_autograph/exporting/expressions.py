"""Sizes and numbers known only when the graph runs, as code over 0-d tensors (exported code carries them so).

An `Expression` node's text is Python that sympy printed for Python numbers
(`_a1 != 1 and _a0 < max(0, _a2)`); exported code holds those numbers as 0-d
tensors, so `and`/`or`/`not`, `max`/`min`, conditional expressions and the
`math` functions become calls of `runtime` that work on tensors.
"""

from __future__ import annotations

import ast

import torch

from ..backends import lowering_error
from ..graph import Node

_RT = "_rt"
_CASTS = {"int": torch.int64, "float": torch.float64, "bool": torch.bool}
_CALLS = {"max": "maximum", "min": "minimum", "abs": "absolute", "math.floor": "floor", "math.ceil": "ceil",
          "floor": "floor", "ceil": "ceil"}


def tensor_expression(text: str, args: list[str], node: Node) -> str:
    """The Python text of an Expression (printed by sympy for Python numbers) rewritten for 0-d tensors."""
    tree = ast.parse(text, mode="eval")

    class Rewrite(ast.NodeTransformer):
        def visit_Name(self, n: ast.Name) -> ast.AST:
            if n.id.startswith("_a") and n.id[2:].isdigit():
                return ast.parse(args[int(n.id[2:])], mode="eval").body
            if n.id in ("True", "False"):
                return n
            raise lowering_error(node, f"its size expression {text!r} uses {n.id!r}", "report this",
                                 to="torch.export")

        def visit_BoolOp(self, n: ast.BoolOp) -> ast.AST:
            fn = "logical_and" if isinstance(n.op, ast.And) else "logical_or"
            return _call(fn, [self.visit(v) for v in n.values])

        def visit_UnaryOp(self, n: ast.UnaryOp) -> ast.AST:
            if isinstance(n.op, ast.Not):
                return _call("logical_not", [self.visit(n.operand)])
            return self.generic_visit(n)

        def visit_IfExp(self, n: ast.IfExp) -> ast.AST:
            return _call("where", [self.visit(n.test), self.visit(n.body), self.visit(n.orelse)])

        def visit_Call(self, n: ast.Call) -> ast.AST:
            name = ast.unparse(n.func)
            if name in ("int", "float", "bool") and len(n.args) == 1:
                dtype = ast.parse(str(_CASTS[name]), mode="eval").body
                return _call("scalar", [self.visit(n.args[0]), dtype])
            if name not in _CALLS:
                raise lowering_error(node, f"its size expression {text!r} calls {name}()", "report this",
                                     to="torch.export")
            return _call(_CALLS[name], [self.visit(a) for a in n.args])

    out = Rewrite().visit(tree)
    return ast.unparse(ast.fix_missing_locations(out))


def _call(fn: str, args: list[ast.AST]) -> ast.Call:
    return ast.Call(ast.Attribute(ast.Name(_RT, ast.Load()), fn, ast.Load()), args, [])
