"""Shared lowering of jump statements (break, continue, return) into flags and guards.

A jump becomes an assignment to a flag, and every statement that follows
a statement containing the jump is wrapped in `if not flag:`:

    body1                       body1
    if c:                       if c:
        break          ->           break_ = True
    body2                       if not break_:
                                    body2

When the jump ends the `if` branch, the rest moves into the `else` branch
instead (`if c: break_ = True` / `else: body2`), saving the guard.
"""

from __future__ import annotations

from typing import Callable

import gast

from torch_autograph.autograph.pyct import transformer

_LOOPS = (gast.While, gast.For, gast.AsyncFor)
_SCOPES = transformer.FUNCTION_NODES + (gast.ClassDef, gast.Lambda)


def contains(node: gast.AST, jump: type, enter_loops: bool) -> bool:
    """True if statement `node` holds a `jump` that belongs to the current loop (or function).

    Jumps are statements: only statement blocks are searched, not expressions.
    """
    todo = [node]
    while todo:
        n = todo.pop()
        if isinstance(n, jump):
            return True
        if isinstance(n, _SCOPES):
            continue
        if isinstance(n, _LOOPS) and not enter_loops and n is not node:
            todo.extend(n.orelse)  # a jump in a loop's else belongs to the outer loop
            continue
        d = n.__dict__
        for field in transformer.BLOCK_FIELDS:
            block = d.get(field)
            if block.__class__ is list:
                todo.extend(block)
    return False


class Lowering:
    """Rewrites the jumps `jump` in statement lists into `replace(jump_node)` plus guards.

    Attributes:
        flag: name of the flag the replacement sets.
        on_loop: called with each nested loop holding a jump (only when
            `enter_loops`, i.e. for `return`), to add the flag to its test.
    """

    def __init__(self, jump: type, flag: str, replace: Callable[[gast.stmt], list],
                 enter_loops: bool = False, on_loop: Callable[[gast.stmt], None] = None):
        self.jump, self.flag, self.replace = jump, flag, replace
        self.enter_loops, self.on_loop = enter_loops, on_loop

    def block(self, stmts: list) -> list:
        out: list = []
        for i, s in enumerate(stmts):
            if isinstance(s, self.jump):
                out.extend(transformer.copy_location(self.replace(s), s))
                return out  # the rest of the block is unreachable
            had = contains(s, self.jump, self.enter_loops)
            rest = stmts[i + 1:]
            if had and rest and isinstance(s, gast.If) and s.body and isinstance(
                    s.body[-1], self.jump):
                # `if c: ...; break` then rest: the rest belongs in the else
                # branch, which saves a guard `if` (and its functions).
                s.body = self.block(s.body)
                s.orelse = self.block(s.orelse + rest)
                out.append(s)
                return out
            if had:
                self._rewrite_children(s)
            out.append(s)
            if had and rest:
                guard = gast.If(test=transformer.not_expr(transformer.name(self.flag)),
                                body=self.block(rest), orelse=[])
                out.append(transformer.copy_location(guard, rest[0]))
                return out
        return out

    def _rewrite_children(self, s: gast.stmt) -> None:
        if isinstance(s, gast.If):
            s.body, s.orelse = self.block(s.body), self.block(s.orelse)
        elif isinstance(s, gast.Try):
            jumps_out = any(contains(b, self.jump, self.enter_loops) for b in s.body)
            s.body, s.orelse = self.block(s.body), self.block(s.orelse)
            if jumps_out and s.orelse:
                # Python runs `else:` only when the body ended normally, not by the jump.
                guard = gast.If(test=transformer.not_expr(transformer.name(self.flag)),
                                body=s.orelse, orelse=[])
                s.orelse = [transformer.copy_location(guard, s.orelse[0])]
            s.finalbody = self.block(s.finalbody)
            for h in s.handlers:
                h.body = self.block(h.body)
        elif isinstance(s, (gast.With, gast.AsyncWith)):
            s.body = self.block(s.body)
        elif isinstance(s, _LOOPS):
            s.orelse = self.block(s.orelse)
            if self.enter_loops and any(contains(b, self.jump, True) for b in s.body):
                s.body = self.block(s.body)
                if self.on_loop is not None:
                    self.on_loop(s)
