"""Reaching definitions: which names may, or must, be bound at each point.

A forward pass over one function scope's structured control flow. It
annotates If/While/For with anno.Static.MAYBE_DEFINED_IN (a name not in it
is certainly unbound there, so control_flow initialises it with
`ag__.Undefined('x')`), and every local Name load that some path reaches
unbound with anno.Static.MAYBE_UNDEFINED (read through `ag__.ld(x)`).
"""

from __future__ import annotations

from typing import Iterable

import gast

from torch_autograph.autograph.pyct import activity, anno, transformer

_Static = anno.Static
_SCOPES = (gast.FunctionDef, gast.AsyncFunctionDef, gast.Lambda, gast.ClassDef,
           gast.ListComp, gast.SetComp, gast.DictComp, gast.GeneratorExp)


class _Defs:
    def __init__(self, local_names: frozenset):
        self.locals = local_names
        self.flagged = False  # whether some load may see an unbound local

    def mark(self, node: gast.AST, must: frozenset) -> None:
        """Flags Name loads of locals that are not bound on every path."""
        todo = [node]
        while todo:
            n = todo.pop()
            if isinstance(n, gast.Name):
                if isinstance(n.ctx, gast.Load) and n.id in self.locals:
                    maybe_undefined = n.id not in must
                    anno.setanno(n, _Static.MAYBE_UNDEFINED, maybe_undefined)
                    self.flagged |= maybe_undefined
                continue
            if isinstance(n, _SCOPES):
                continue  # runs later, or has its own bindings
            todo.extend(transformer.iter_children(n))

    def block(self, stmts: Iterable[gast.stmt], maybe: frozenset, must: frozenset):
        for s in stmts:
            maybe, must = self.stmt(s, maybe, must)
        return maybe, must

    def stmt(self, s: gast.stmt, maybe: frozenset, must: frozenset):
        if isinstance(s, gast.If):
            anno.setanno(s, _Static.MAYBE_DEFINED_IN, maybe)
            self.mark(s.test, must)
            m1, d1 = self.block(s.body, maybe, must)
            m2, d2 = self.block(s.orelse, maybe, must)
            return m1 | m2, d1 & d2
        if isinstance(s, (gast.While, gast.For, gast.AsyncFor)):
            is_for = not isinstance(s, gast.While)
            targets = frozenset(activity.activity_of(s.target).modified) if is_for else frozenset()
            if is_for:
                self.mark(s.iter, must)
            head = maybe
            while True:
                m_body, _ = self.block(s.body, head | targets, must | targets)
                if m_body <= head:
                    break
                head = head | m_body
            anno.setanno(s, _Static.MAYBE_DEFINED_IN, maybe)
            if not is_for:
                self.mark(s.test, must)
            return self.block(s.orelse, head, must)
        if isinstance(s, gast.Try):
            anno.setanno(s, _Static.MAYBE_DEFINED_IN, maybe)
            m_body, _ = self.block(s.body, maybe, must)
            m_all, d_else = self.block(s.orelse, m_body, must)
            d_all = must
            for h in s.handlers:
                m_h, _ = self.block(h.body, m_all, must)
                m_all |= m_h
            m_fin, d_fin = self.block(s.finalbody, m_all, d_all)
            return m_fin, d_fin
        if isinstance(s, (gast.With, gast.AsyncWith)):
            for item in s.items:
                self.mark(item.context_expr, must)
            bound = frozenset(activity.activity_of(
                [i.optional_vars for i in s.items if i.optional_vars is not None]).modified)
            return self.block(s.body, maybe | bound, must | bound)
        self.mark(s, must)
        written = frozenset(activity.activity_of(s).modified)
        if isinstance(s, gast.Delete):
            # `del x` unbinds x: it stays "maybe defined" (it is state-passed as
            # ag__.Undefined), but later reads must go through ag__.ld.
            return maybe | written, must - written
        return maybe | written, must | written


def analyze(fn: gast.FunctionDef) -> bool:
    """Annotates `fn`'s own scope (see module docstring).

    Returns:
        True if some load may see an unbound local (the variables converter
        has work to do).
    """
    local_names = frozenset(activity.function_locals(fn))
    params = frozenset(activity.activity_of(fn.args).modified)
    defs = _Defs(local_names)
    defs.block(fn.body, params, params)
    return defs.flagged
