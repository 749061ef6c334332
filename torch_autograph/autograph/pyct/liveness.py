"""Liveness analysis: which names may be read later, before being reassigned.

Runs after break/continue/return have been lowered, so control flow is
structured (if / while / for / try / with) and a backward pass over the
statement lists, with a fixpoint per loop, is exact enough. Results are
annotated on If/While/For nodes (anno.Static.LIVE_OUT, BODY_LIVE_IN,
ORELSE_LIVE_IN); control_flow uses them to choose branch outputs and loop
variables. Nested function bodies are analysed when they are converted.
"""

from __future__ import annotations

from typing import Iterable, Optional

import gast

from torch_autograph.autograph.pyct import activity, anno

_Static = anno.Static


class _Liveness:
    def __init__(self, always_live: frozenset):
        # Names captured by nested defs and lambdas may be read whenever those run.
        self.always_live = always_live
        self._act_cache: dict[int, activity.Activity] = {}

    def act(self, node: gast.AST) -> activity.Activity:
        key = id(node)
        a = self._act_cache.get(key)
        if a is None:
            a = self._act_cache[key] = activity.activity_of(node)
        return a

    def _annotate_modified(self, s: gast.stmt) -> None:
        act = self.act(s)
        anno.setanno(s, _Static.MODIFIED, frozenset(act.modified))
        anno.setanno(s, _Static.MODIFIED_QNS, frozenset(act.modified_qns))
        anno.setanno(s, _Static.ELEMENT_WRITES, frozenset(act.element_writes))

    def _loop_head(self, body: list, head: frozenset, targets: frozenset) -> frozenset:
        """Names live at a loop's head: iterate the body's liveness to a fixpoint (targets are rebound)."""
        while True:
            new_head = head | (self.block(body, head) - targets)
            if new_head == head:
                return head
            head = new_head

    def block(self, stmts: Iterable[gast.stmt], live_out: frozenset) -> frozenset:
        live = live_out
        for s in reversed(list(stmts)):
            live = self.stmt(s, live)
        return live

    def stmt(self, s: gast.stmt, live_out: frozenset) -> frozenset:
        live_out = live_out | self.always_live
        if isinstance(s, gast.If):
            t = self.block(s.body, live_out)
            e = self.block(s.orelse, live_out)
            anno.setanno(s, _Static.LIVE_OUT, live_out)
            anno.setanno(s, _Static.BODY_LIVE_IN, t)
            anno.setanno(s, _Static.ORELSE_LIVE_IN, e)
            self._annotate_modified(s)
            return frozenset(self.act(s.test).read) | t | e
        if isinstance(s, gast.While):
            after = self.block(s.orelse, live_out)
            head = self._loop_head(s.body, after | frozenset(self.act(s.test).read), frozenset())
            anno.setanno(s, _Static.LIVE_OUT, live_out)
            anno.setanno(s, _Static.BODY_LIVE_IN, head)
            self._annotate_modified(s)
            return head
        if isinstance(s, (gast.For, gast.AsyncFor)):
            after = self.block(s.orelse, live_out)
            targets = frozenset(self.act(s.target).modified)
            # break/return flags checked before each iteration (for_stmt's extra_test).
            extra = anno.getanno(s, anno.Basic.EXTRA_LOOP_TEST)
            head = after | (frozenset(self.act(extra).read) if extra is not None else frozenset())
            head = self._loop_head(s.body, head, targets)
            anno.setanno(s, _Static.LIVE_OUT, live_out)
            anno.setanno(s, _Static.BODY_LIVE_IN, head)
            self._annotate_modified(s)
            return head | frozenset(self.act(s.iter).read)
        if isinstance(s, gast.Return):
            return frozenset(self.act(s).read) | self.always_live
        if isinstance(s, gast.Try):
            final = self.block(s.finalbody, live_out)
            orelse = self.block(s.orelse, final)
            handlers = frozenset()
            for h in s.handlers:
                h_live = self.block(h.body, final)
                if h.name is not None:
                    h_live -= frozenset(self.act(h.name).modified)
                if h.type is not None:
                    h_live |= frozenset(self.act(h.type).read)
                handlers |= h_live
            # A staged `try` (converters/control_flow.py) carries what its body or a handler assigns and is
            # read after them (the `else:`, then the `finally:` and what follows) or by a handler.
            anno.setanno(s, _Static.LIVE_OUT, orelse)
            anno.setanno(s, _Static.BODY_LIVE_IN, handlers)
            anno.setanno(s, _Static.FINALLY_LIVE_IN, final)
            guarded = activity.activity_of(s.body + [x for h in s.handlers for x in h.body])
            anno.setanno(s, _Static.MODIFIED, frozenset(guarded.modified))
            anno.setanno(s, _Static.MODIFIED_QNS, frozenset(guarded.modified_qns))
            anno.setanno(s, _Static.ELEMENT_WRITES, frozenset(guarded.element_writes))
            # Any statement of the body may raise, so handler inputs are live throughout.
            live_in = self.block(s.body, orelse | handlers) | handlers
            anno.setanno(s, _Static.LIVE_IN, live_in)
            return live_in
        if isinstance(s, (gast.With, gast.AsyncWith)):
            body = self.block(s.body, live_out)
            for item in reversed(s.items):
                if item.optional_vars is not None:
                    body = body - frozenset(self.act(item.optional_vars).modified)
                body = body | frozenset(self.act(item.context_expr).read)
            return body
        a = self.act(s)
        # A nested def is analysed on its own; here it only binds its name.
        return (live_out - frozenset(a.modified - a.read)) | frozenset(a.read)


def analyze(fn: gast.FunctionDef, captured: Optional[tuple[set, set]] = None) -> None:
    """Annotates the control-flow statements of `fn`'s own scope with liveness.

    `captured` is `activity.captured_by_nested_scopes(fn)`, if the caller has it already.
    """
    read, written = captured or activity.captured_by_nested_scopes(fn)
    always = frozenset(read | written)
    _Liveness(always).block(fn.body, always)
