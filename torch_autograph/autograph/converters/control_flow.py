"""Converts `if`, `while` and `for` into operator calls with explicit state.

State flows through arguments and return values:

    if x > 0:                         def if_true(x, y):
        y = x                             y = x
    else:                 ->              return (x, y)  # (only what is modified
        x = -x                        def if_false(x, y):  #  and used later)
                                          x = -x
                                          return (x, y)
                                      x, y = ag__.if_stmt(x > 0, if_true, if_false, (x, y), ('x', 'y'))

    while i < n:                      def loop_test(i):
        i += 1            ->              return i < n
                                      def loop_body(i):
                                          i += 1
                                          return (i,)
                                      i, = ag__.while_stmt(loop_test, loop_body, (i,), ('i',))

    for x in xs:                      def loop_body(x, s):
        s += x            ->              s += x
                                          return (s,)
                                      s, = ag__.for_stmt(xs, None, loop_body, (s,), ('s',))

The state of a statement is every name it modifies that is live after it
or read before being written inside it (liveness); a state name that no
definition reaches is first set to `ag__.Undefined('name')`
(reaching definitions).
"""

from __future__ import annotations

from typing import Optional

import gast

from torch_autograph.autograph.pyct import (activity, anno, liveness, reaching_definitions,
                                            templates, transformer)

_Static = anno.Static


class _ControlFlowTransformer(gast.NodeTransformer):
    def __init__(self, ctx: transformer.ConversionContext, fn: gast.FunctionDef):
        self.ctx = ctx
        self.globals: set = set()
        self.nonlocals: set = set()
        for n in transformer.walk_scope(fn.body):
            if isinstance(n, gast.Global):
                self.globals.update(n.names)
            elif isinstance(n, gast.Nonlocal):
                self.nonlocals.update(n.names)

    def visit_FunctionDef(self, node: gast.FunctionDef) -> gast.FunctionDef:
        return node  # converted on its own, before its parent

    visit_AsyncFunctionDef = visit_ClassDef = visit_Lambda = visit_FunctionDef

    # -- helpers -------------------------------------------------------------

    def _state(self, modified: set, live: frozenset) -> list:
        return sorted((modified & live) - self.globals - self.nonlocals)

    def _declarations(self, body: list) -> list:
        """global/nonlocal statements the generated function needs to modify those names."""
        if not (self.globals or self.nonlocals):
            return []
        modified = activity.activity_of(body).modified
        decls = []
        if modified & self.globals:
            decls.append(gast.Global(names=sorted(modified & self.globals)))
        if modified & self.nonlocals:
            decls.append(gast.Nonlocal(names=sorted(modified & self.nonlocals)))
        return decls

    def _function(self, fname: str, params: list, body: list, returns: gast.expr,
                  origin: gast.AST) -> tuple[str, gast.FunctionDef]:
        (fn,) = templates.replace("def fname(params):\n    body\n    return ret",
                                  fname=fname, params=params,
                                  body=self._declarations(body) + body, ret=returns)
        return fname, transformer.copy_location(fn, origin)

    @staticmethod
    def _inits(state: list, node: gast.stmt) -> list:
        defined = anno.getanno(node, _Static.MAYBE_DEFINED_IN, frozenset())
        inits = []
        for n in state:
            if n not in defined:
                inits += templates.replace("var = ag__.Undefined(var_name)", var=n,
                                           var_name=transformer.constant(n))
        return inits

    @staticmethod
    def _result(call: gast.expr, state: list) -> gast.stmt:
        if not state:
            return gast.Expr(value=call)
        return gast.Assign(targets=[templates.names_tuple(state, gast.Store)], value=call,
                           type_comment=None)

    @staticmethod
    def _options(node: gast.stmt) -> Optional[gast.Dict]:
        options = anno.getanno(node, anno.Basic.LOOP_OPTIONS)
        if not options:
            return None
        return gast.Dict(keys=[transformer.constant(k) for k in options],
                         values=list(options.values()))

    # -- statements ----------------------------------------------------------

    def visit_If(self, node: gast.If) -> list:
        live = (anno.getanno(node, _Static.LIVE_OUT, frozenset())
                | anno.getanno(node, _Static.BODY_LIVE_IN, frozenset())
                | anno.getanno(node, _Static.ORELSE_LIVE_IN, frozenset()))
        # Names are taken before visiting nested statements so they number outside-in.
        true_name = self.ctx.namer.new_symbol("if_true")
        false_name = self.ctx.namer.new_symbol("if_false") if node.orelse else None
        self.generic_visit(node)
        state = self._state(anno.getanno(node, _Static.MODIFIED), live)
        ret = templates.names_tuple(state)
        true_name, true_fn = self._function(true_name, state, node.body, ret, node)
        functions = [true_fn]
        if node.orelse:
            false_name, false_fn = self._function(false_name, state, node.orelse,
                                                  templates.names_tuple(state), node)
            functions.append(false_fn)
        else:
            false_name = transformer.constant(None)  # if_stmt keeps the state as it is
        call = templates.replace_as_expression(
            "ag__.if_stmt(test, true_name, false_name, state, names)", test=node.test,
            true_name=true_name, false_name=false_name, state=templates.names_tuple(state),
            names=templates.strings_tuple(state))
        out = self._inits(state, node) + functions + [self._result(call, state)]
        return transformer.copy_location(out, node)

    def visit_While(self, node: gast.While) -> list:
        live = (anno.getanno(node, _Static.LIVE_OUT, frozenset())
                | anno.getanno(node, _Static.BODY_LIVE_IN, frozenset()))
        test_name = self.ctx.namer.new_symbol("loop_test")
        body_name = self.ctx.namer.new_symbol("loop_body")
        self.generic_visit(node)
        state = self._state(anno.getanno(node, _Static.MODIFIED), live)
        test_name, test_fn = self._function(test_name, state, [], node.test, node)
        body_name, body_fn = self._function(body_name, state, node.body,
                                            templates.names_tuple(state), node)
        call = templates.replace_as_expression(
            "ag__.while_stmt(test_name, body_name, state, names)", test_name=test_name,
            body_name=body_name, state=templates.names_tuple(state),
            names=templates.strings_tuple(state))
        options = self._options(node)
        if options is not None:
            call.args.append(options)
        out = self._inits(state, node) + [test_fn, body_fn, self._result(call, state)]
        return transformer.copy_location(out, node)

    def visit_For(self, node: gast.For) -> list:
        live = (anno.getanno(node, _Static.LIVE_OUT, frozenset())
                | anno.getanno(node, _Static.BODY_LIVE_IN, frozenset()))
        extra = anno.getanno(node, anno.Basic.EXTRA_LOOP_TEST)
        extra_name = self.ctx.namer.new_symbol("extra_test") if extra is not None else None
        body_name = self.ctx.namer.new_symbol("loop_body")
        self.generic_visit(node)
        state = self._state(anno.getanno(node, _Static.MODIFIED), live)
        body = node.body
        if isinstance(node.target, gast.Name) and node.target.id not in state:
            target_param = node.target.id
        else:
            # The target is unpacked, or must survive the loop: bind it from a fresh parameter.
            target_param = self.ctx.namer.new_symbol("itr")
            target = node.target
            transformer.copy_location(target, node)
            body = [gast.Assign(targets=[target], value=transformer.name(target_param),
                                type_comment=None)] + body
        out = self._inits(state, node)
        if extra is not None:
            extra_name, extra_fn = self._function(extra_name, state, [], extra, node)
            out.append(extra_fn)
        else:
            extra_name = transformer.constant(None)
        body_name, body_fn = self._function(body_name, [target_param] + state, body,
                                            templates.names_tuple(state), node)
        call = templates.replace_as_expression(
            "ag__.for_stmt(iter_, extra_test, body_name, state, names)", iter_=node.iter,
            extra_test=extra_name, body_name=body_name, state=templates.names_tuple(state),
            names=templates.strings_tuple(state))
        options = self._options(node)
        if options is not None:
            call.args.append(options)
        out += [body_fn, self._result(call, state)]
        return transformer.copy_location(out, node)


def transform(fn: gast.FunctionDef, ctx: transformer.ConversionContext) -> None:
    """Converts the control flow of `fn`'s own scope (nested defs are done separately)."""
    liveness.analyze(fn)
    reaching_definitions.analyze(fn)
    t = _ControlFlowTransformer(ctx, fn)
    new_body = []
    for s in fn.body:
        r = t.visit(s)
        new_body.extend(r if isinstance(r, list) else [r])
    fn.body = new_body
