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
or read before being written inside it (liveness), plus the attributes and
constant subscripts it assigns (see `state.py`). A state name that may be
unbound where the operator call reads it (no definition reaches it, or
every branch of an `if` overwrites it) is first set to
`ag__.Undefined('name')`. An `if` without `else` passes None as `false_fn`.
"""

from __future__ import annotations

from typing import Optional

import gast

from torch_autograph.autograph.converters import state as state_lib
from torch_autograph.autograph.pyct import activity, anno, liveness, templates, transformer

_Static = anno.Static


class _ControlFlowTransformer(transformer.Transformer):
    def __init__(self, ctx: transformer.ConversionContext, fn: gast.FunctionDef):
        self.ctx = ctx
        # Parameters of the generated function immediately enclosing the
        # statement being converted: bound there, so no Undefined init. (Only
        # the innermost: a function that assigns a name makes it local, so an
        # outer function's parameter of that name is not visible.)
        self.params: list = [frozenset()]
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

    def _state(self, node: gast.stmt, live: frozenset) -> state_lib.State:
        modified = anno.getanno(node, _Static.MODIFIED)
        names = sorted((modified & live) - self.globals - self.nonlocals)
        return state_lib.State.build(names, anno.getanno(node, _Static.MODIFIED_QNS, ()),
                                     modified | self.globals | self.nonlocals, self.ctx.namer)

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

    def _function(self, fname: str, state: state_lib.State, body: list, returns: gast.expr,
                  origin: gast.AST, extra_params: tuple = ()) -> tuple[str, gast.FunctionDef]:
        body = [s for s in body if not isinstance(s, gast.Pass)]  # the return follows
        (fn,) = templates.replace("def fname(params):\n    body\n    return ret",
                                  fname=fname, params=list(extra_params) + state.params,
                                  body=self._declarations(body) + state.restores() + body,
                                  ret=returns)
        return fname, transformer.copy_location(fn, origin)

    def _visit_children(self, node: gast.stmt, params: list) -> None:
        self.params.append(frozenset(params))
        self.generic_visit(node)
        self.params.pop()

    def _inits(self, state: state_lib.State, node: gast.stmt,
               incoming_used: Optional[frozenset] = None) -> list:
        """`x = ag__.Undefined('x')` for state that may be unbound where the operator reads it.

        That is a name no definition reaches, or (for an `if`) a name every
        branch overwrites: Python never reads its incoming value, so it may be
        unbound here even though some earlier definition reaches it.
        """
        defined = anno.getanno(node, _Static.MAYBE_DEFINED_IN, frozenset())
        inits = []
        for n in state.names:
            if n in self.params[-1]:
                continue  # a parameter of the enclosing generated function: bound
            if n not in defined or (incoming_used is not None and n not in incoming_used):
                inits += templates.replace("var = ag__.Undefined(var_name)", var=n,
                                           var_name=transformer.constant(n))
        return inits

    @staticmethod
    def _result(call: gast.expr, state: state_lib.State) -> list:
        if not state:
            return [gast.Expr(value=call)]
        return [gast.Assign(targets=[state.targets()], value=call, type_comment=None)
                ] + state.restores()

    @staticmethod
    def _options(node: gast.stmt) -> Optional[gast.Dict]:
        options = anno.getanno(node, anno.Basic.LOOP_OPTIONS)
        if not options:
            return None
        return gast.Dict(keys=[transformer.constant(k) for k in options],
                         values=list(options.values()))

    # -- statements ----------------------------------------------------------

    def visit_If(self, node: gast.If) -> list:
        branches_in = (anno.getanno(node, _Static.BODY_LIVE_IN, frozenset())
                       | anno.getanno(node, _Static.ORELSE_LIVE_IN, frozenset()))
        live = anno.getanno(node, _Static.LIVE_OUT, frozenset()) | branches_in
        # The condition is evaluated first, with the incoming values too.
        incoming_used = branches_in | frozenset(activity.activity_of(node.test).read)
        # Names are taken before visiting nested statements so they number outside-in.
        true_name = self.ctx.namer.new_symbol("if_true")
        false_name = self.ctx.namer.new_symbol("if_false") if node.orelse else None
        state = self._state(node, live)
        self._visit_children(node, state.params)
        true_name, true_fn = self._function(true_name, state, node.body, state.values(), node)
        functions = [true_fn]
        if node.orelse:
            false_name, false_fn = self._function(false_name, state, node.orelse,
                                                  state.values(), node)
            functions.append(false_fn)
        else:
            false_name = transformer.constant(None)  # if_stmt keeps the state as it is
        call = templates.replace_as_expression(
            "ag__.if_stmt(test, true_name, false_name, state, names)", test=node.test,
            true_name=true_name, false_name=false_name, state=state.values(),
            names=templates.strings_tuple(state.labels))
        out = self._inits(state, node, incoming_used) + functions + self._result(call, state)
        return transformer.copy_location(out, node)

    def visit_While(self, node: gast.While) -> list:
        live = (anno.getanno(node, _Static.LIVE_OUT, frozenset())
                | anno.getanno(node, _Static.BODY_LIVE_IN, frozenset()))
        test_name = self.ctx.namer.new_symbol("loop_test")
        body_name = self.ctx.namer.new_symbol("loop_body")
        state = self._state(node, live)
        self._visit_children(node, state.params)
        test_name, test_fn = self._function(test_name, state, [], node.test, node)
        body_name, body_fn = self._function(body_name, state, node.body, state.values(), node)
        call = templates.replace_as_expression(
            "ag__.while_stmt(test_name, body_name, state, names)", test_name=test_name,
            body_name=body_name, state=state.values(),
            names=templates.strings_tuple(state.labels))
        options = self._options(node)
        if options is not None:
            call.args.append(options)
        out = self._inits(state, node) + [test_fn, body_fn] + self._result(call, state)
        return transformer.copy_location(out, node)

    def visit_For(self, node: gast.For) -> list:
        live = (anno.getanno(node, _Static.LIVE_OUT, frozenset())
                | anno.getanno(node, _Static.BODY_LIVE_IN, frozenset()))
        extra = anno.getanno(node, anno.Basic.EXTRA_LOOP_TEST)
        extra_name = self.ctx.namer.new_symbol("extra_test") if extra is not None else None
        body_name = self.ctx.namer.new_symbol("loop_body")
        state = self._state(node, live)
        target_names = activity.activity_of(node.target).modified
        self._visit_children(node, state.params + sorted(target_names))
        body = node.body
        if isinstance(node.target, gast.Name) and node.target.id not in state.names:
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
            # The extra test reads only break/return flags: no compound restores needed.
            flags_only = state_lib.State(state.params)
            extra_name, extra_fn = self._function(extra_name, flags_only, [], extra, node)
            out.append(extra_fn)
        else:
            extra_name = transformer.constant(None)
        body_name, body_fn = self._function(body_name, state, body, state.values(), node,
                                            extra_params=(target_param,))
        call = templates.replace_as_expression(
            "ag__.for_stmt(iter_, extra_test, body_name, state, names)", iter_=node.iter,
            extra_test=extra_name, body_name=body_name, state=state.values(),
            names=templates.strings_tuple(state.labels))
        options = self._options(node)
        if options is not None:
            call.args.append(options)
        out += [body_fn] + self._result(call, state)
        return transformer.copy_location(out, node)


def transform(fn: gast.FunctionDef, ctx: transformer.ConversionContext) -> None:
    """Converts the control flow of `fn`'s own scope (nested defs are done separately).

    reaching_definitions.analyze(fn) must have run (the variables converter
    shares it); liveness runs here, on the tree as it is now.
    """
    liveness.analyze(fn)
    t = _ControlFlowTransformer(ctx, fn)
    new_body = []
    for s in fn.body:
        r = t.visit(s)
        new_body.extend(r if isinstance(r, list) else [r])
    fn.body = new_body
