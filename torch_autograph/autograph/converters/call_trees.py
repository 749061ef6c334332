"""Routes every call through `ag__.converted_call` so called functions get converted too.

    y = f(x, *rest, k=1)  ->  y = ag__.converted_call(f, (x, *rest), {'k': 1})
    z = g()               ->  z = ag__.converted_call(g, (), None)

Calls that must see the caller's frame or that only make sense as
written stay as they are: `print`, `super`, `locals`, `globals`, `vars`,
`dir`, `eval`, `exec` (Python's builtins, not a user's function of that name),
and the generated `ag__.*` calls. A zero-argument
`super()` gets its arguments spelled out, because control flow conversion may
move it into a generated inner function where Python cannot infer them:

    super().f(x)          ->  ag__.converted_call(super(__class__, self).f, (x,), None)
"""

from __future__ import annotations

import builtins

import gast

from torch_autograph.autograph.pyct import activity, transformer

# As TF: these either inspect the calling frame (super, locals, ...) or are
# trace-time side effects users expect verbatim (print).
UNCONVERTED_NAMES = frozenset({"print", "super", "locals", "globals", "vars", "dir", "eval",
                               "exec", "breakpoint", "__import__"})


class _CallTreeTransformer(transformer.Transformer):
    def __init__(self, ctx: transformer.ConversionContext) -> None:
        self.functions: list = []
        self.ctx = ctx
        self._rebound: dict[str, bool] = {}

    def _is_builtin(self, name: str) -> bool:
        """Whether `name` is Python's builtin of that name here (not a user's local, global or closure name)."""
        if any(name in activity.function_locals(fn) for fn in self.functions):
            return False
        if name not in self._rebound:
            found = self.ctx.namespace(name)
            self._rebound[name] = found is not transformer.MISSING and found is not getattr(builtins, name, None)
        return not self._rebound[name]

    def visit_FunctionDef(self, node: gast.FunctionDef) -> gast.FunctionDef:
        self.functions.append(node)
        self.generic_visit(node)
        self.functions.pop()
        return node

    visit_AsyncFunctionDef = visit_FunctionDef

    def _explicit_super(self, node: gast.Call) -> None:
        fn = self.functions[-1] if self.functions else None
        params = (fn.args.posonlyargs + fn.args.args) if fn is not None else []
        if params and isinstance(params[0], gast.Name):
            node.args = [transformer.name("__class__"), transformer.name(params[0].id)]

    def visit_Call(self, node: gast.Call) -> gast.expr:
        self.generic_visit(node)
        if transformer.is_ag_call(node):
            return node
        if isinstance(node.func, gast.Name) and node.func.id in UNCONVERTED_NAMES and self._is_builtin(node.func.id):
            if node.func.id == "super" and not node.args and not node.keywords:
                self._explicit_super(node)
            return node
        args = gast.Tuple(elts=node.args, ctx=gast.Load())
        if node.keywords:
            kwargs = gast.Dict(
                keys=[transformer.constant(k.arg) if k.arg is not None else None
                      for k in node.keywords],
                values=[k.value for k in node.keywords])
        else:
            kwargs = transformer.constant(None)
        func = gast.Attribute(value=transformer.name("ag__"), attr="converted_call",
                              ctx=gast.Load())
        new = gast.Call(func=func, args=[node.func, args, kwargs], keywords=[])
        return gast.copy_location(new, node)


def transform(fn: gast.FunctionDef, ctx: transformer.ConversionContext) -> None:
    t = _CallTreeTransformer(ctx)
    t.functions.append(fn)
    t.generic_visit(fn)
