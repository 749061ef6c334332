"""Prepares the converted function's own definition.

    @decorator                              def f(x: int, n=3):   # decorators and
    def f(x: int, n=3) -> int:      ->      def f(x, n=3):        # annotations dropped
        ...                                     ...

Decorators would re-wrap the converted function, and annotations and
non-constant defaults would be evaluated in the loader's namespace instead
of the user's (shown as None; the converted function gets the original's
`__annotations__` and defaults back). Nested
defs keep theirs: they are re-created by the converted code itself.
A lambda becomes `def <name>(args): return <body>` so every converter sees a
function.
"""

from __future__ import annotations

import gast

from torch_autograph.autograph.pyct import templates, transformer


def _strip_annotations(args: gast.arguments) -> None:
    for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
        if a is not None:
            a.annotation = None


def _neutral_defaults(args: gast.arguments) -> None:
    # Defaults are restored from the original function object; evaluating a
    # non-constant default again at load time could fail or have effects.
    args.defaults = [d if isinstance(d, gast.Constant) else transformer.constant(None)
                     for d in args.defaults]
    args.kw_defaults = [d if d is None or isinstance(d, gast.Constant)
                        else transformer.constant(None) for d in args.kw_defaults]


def transform(node: gast.AST, ctx: transformer.ConversionContext) -> gast.FunctionDef:
    """Returns the top-level FunctionDef to convert (a lambda is turned into one)."""
    if isinstance(node, gast.Lambda):
        (fn,) = templates.replace("def fname():\n    return body", fname=ctx.function_name,
                                  body=node.body)
        fn.args = node.args
        node = transformer.copy_location(fn, node)
    node.decorator_list = []
    node.returns = None
    _strip_annotations(node.args)
    _neutral_defaults(node.args)
    return node
