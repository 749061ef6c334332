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

A function whose only `return` is its last statement is left as it is. When
some path may reach the end of the function without a `return`, the last line
is `return ag__.retval(retval_, do_return)`: that path returns None, and a
graph value deciding between a value and None is an error (a graph cannot
return None on only some paths).
"""

from __future__ import annotations

import gast

from torch_autograph.autograph.converters import jumps
from torch_autograph.autograph.pyct import anno, templates, transformer
from torch_autograph.errors import GENERATED_VARIABLES

RETURN_SLOT, RETURN_FLAG = GENERATED_VARIABLES  # the names messages describe in words (errors.py)


def _needs_lowering(fn: gast.FunctionDef) -> bool:
    body = fn.body
    for i, s in enumerate(body):
        if isinstance(s, gast.Return):
            return i != len(body) - 1
        if jumps.contains(s, gast.Return, True):
            return True
    return False


def _always_returns(stmts: list) -> bool:
    """Whether every path through `stmts` ends in `return` or `raise` (conservatively: False if unsure).

    A `with` body that returns counts (a context manager that swallows the
    exception of a `return` expression is rare enough); a loop counts only as
    `while True:` without `break`.
    """
    for s in stmts:
        if isinstance(s, (gast.Return, gast.Raise)):
            return True
        if isinstance(s, gast.If) and _always_returns(s.body) and _always_returns(s.orelse):
            return True
        if (isinstance(s, gast.While) and isinstance(s.test, gast.Constant) and s.test.value is True
                and not any(jumps.contains(b, gast.Break, False) for b in s.body)):
            return True
        if isinstance(s, (gast.With, gast.AsyncWith)) and _always_returns(s.body):
            return True
        if isinstance(s, gast.Try) and (
                _always_returns(s.finalbody)
                or ((_always_returns(s.body) or _always_returns(s.orelse))
                    and all(_always_returns(h.body) for h in s.handlers))):
            return True
    return False


def transform(fn: gast.FunctionDef, ctx: transformer.ConversionContext) -> None:
    """Lowers the returns of `fn`'s own scope in place."""
    if not _needs_lowering(fn):
        return
    flag = ctx.namer.new_symbol(RETURN_FLAG)
    slot = ctx.namer.new_symbol(RETURN_SLOT)
    falls_off = not _always_returns(fn.body)

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
    if falls_off:
        # Some path may end without `return`: whether one ran decides between the value and None.
        epilogue = templates.replace("return ag__.retval(slot, flag)", slot=slot, flag=flag)
    else:
        epilogue = templates.replace("return ag__.retval(slot)", slot=slot)
    last = fn.body[-1]
    fn.body = (transformer.copy_location(prologue, first) + body
               + transformer.copy_location(epilogue, last))
