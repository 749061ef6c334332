"""Lowers `return` statements not at the end of a function into a flag and a return slot.

    def f(x):                          def f(x):
        for i in x:                        do_return = False
            if i > 0:                      retval_ = ag__.UndefinedReturnValue()
                return i       ->          for i in x:       # extra test: not do_return
        return -1                              if i > 0:
                                                   retval_ = i
                                                   do_return = True
                                           if not do_return:
                                               retval_ = -1
                                               do_return = True
                                           return ag__.retval(retval_)

A function whose only `return` is its last statement is left as it is.
"""

from __future__ import annotations

import gast

from torch_autograph.autograph.converters import jumps
from torch_autograph.autograph.pyct import anno, templates, transformer


def _needs_lowering(fn: gast.FunctionDef) -> bool:
    body = fn.body
    for i, s in enumerate(body):
        if isinstance(s, gast.Return):
            return i != len(body) - 1
        if jumps.contains(s, gast.Return, True):
            return True
    return False


def transform(fn: gast.FunctionDef, ctx: transformer.ConversionContext) -> None:
    """Lowers the returns of `fn`'s own scope in place."""
    if not _needs_lowering(fn):
        return
    flag = ctx.namer.new_symbol("do_return")
    slot = ctx.namer.new_symbol("retval_")

    def replace(ret: gast.Return) -> list:
        value = ret.value if ret.value is not None else transformer.constant(None)
        # The value first: if evaluating it raises (and an enclosing `try` catches
        # that), the function has not returned.
        return templates.replace("slot = value\nflag = True", flag=flag, slot=slot, value=value)

    def on_loop(loop: gast.stmt) -> None:
        not_flag = transformer.not_expr(transformer.name(flag))
        if isinstance(loop, gast.While):
            loop.test = transformer.and_exprs(not_flag, loop.test)
        else:
            extra = anno.getanno(loop, anno.Basic.EXTRA_LOOP_TEST)
            anno.setanno(loop, anno.Basic.EXTRA_LOOP_TEST, transformer.and_exprs(not_flag, extra))

    lowering = jumps.Lowering(gast.Return, flag, replace, enter_loops=True, on_loop=on_loop)
    body = lowering.block(fn.body)
    first = fn.body[0]
    prologue = templates.replace("flag = False\nslot = ag__.UndefinedReturnValue()",
                                 flag=flag, slot=slot)
    epilogue = templates.replace("return ag__.retval(slot)", slot=slot)
    last = fn.body[-1]
    fn.body = (transformer.copy_location(prologue, first) + body
               + transformer.copy_location(epilogue, last))
