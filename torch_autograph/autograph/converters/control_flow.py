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

That functional form is the staged path. Statements in the function's own
body (and, recursively, in plain-path blocks) get a dual-path shape, so
that converted code run on plain Python values stays close to the original:

    if x > 0:                         cond = x > 0
        y = x             ->          if cond is True or cond is False or ag__.is_plain(cond):
                                          if cond:
                                              y = x
                                      else:
                                          <the functional form, with `cond` as the test>

    while i < n:                      while True:
        i += 1            ->              test = i < n
                                          if test is True or test is False or ag__.is_plain(test):
                                              if not test:
                                                  break
                                          else:  # staged now: while_stmt continues from here
                                              <the functional form>
                                              break
                                          i += 1

    for x in xs:                      loop_iter = xs
        s += x            ->          if ag__.is_plain(loop_iter):
                                          for x in loop_iter:
                                              s += x
                                      else:
                                          <the functional form over loop_iter>

A `for` with break/return flags (its extra test) loops over
`plain_iter = ag__.plain_iter(loop_iter)` while every flag is False; when
one is set it stops, and a flag that is not plain True (staged) hands the
remaining iterator to `for_stmt` (the remaining iterations are guarded by the flag). The
generated functions of the staged path are exactly the functional form:
statements nested in them are not dual-path.

The state of a statement is every name it modifies that is live after it
or read before being written inside it (liveness), plus the attributes and
constant subscripts it assigns (see `state.py`). A state name that may be
unbound where the operator call reads it (no definition reaches it, or
every branch of an `if` overwrites it) is first set to
`ag__.Undefined('name')`. An `if` without `else` passes None as `false_fn`.
A name a branch reads before assigning it but that is dead after the `if`
(assigned in a loop that may not run) is passed in and comes out undefined.
A state name that a nested def or lambda reads comes into each generated
function that calls something under a fresh parameter and is stored into the
enclosing variable (`nonlocal i; i = i_1`), so that a closure called while
the body is traced sees the traced iteration's value.
"""

from __future__ import annotations

from typing import Optional

import gast

from torch_autograph.autograph.converters import state as state_lib
from torch_autograph.autograph.converters import try_statements
from torch_autograph.autograph.pyct import activity, anno, liveness, templates, transformer

_Static = anno.Static


class _ControlFlowTransformer(transformer.StatementTransformer):
    def __init__(self, ctx: transformer.ConversionContext, fn: gast.FunctionDef, captured: tuple[set, set]):
        self.ctx = ctx
        # Parameters of the generated function immediately enclosing the
        # statement being converted: bound there, so no Undefined init. (Only
        # the innermost: a function that assigns a name makes it local, so an
        # outer function's parameter of that name is not visible.)
        self.params: list = [frozenset()]
        # Whether the statement being visited gets the dual-path shape: True in
        # the function's own body and in plain-path blocks, False inside the
        # generated functions of the staged path (which stay as they were).
        self.dual: list = [ctx.dual_path]
        self.globals: set = set()
        self.nonlocals: set = set()
        # Names a nested def or lambda reads or assigns (`nonlocal`): see `_write_through`.
        read, written = captured
        self.captured = frozenset(read | written)
        self.closure_writes = frozenset(written)
        for n in transformer.walk_statements(fn.body):
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
        if self.closure_writes and _calls(node):
            # A call may run a nested def that assigns these (`nonlocal`).
            modified = modified | self.closure_writes
        # A list or dict whose elements the statement assigns (`keys[i] = k`) is state too, though the name
        # is not rebound: see `_element_writes`.
        element_writes = anno.getanno(node, _Static.ELEMENT_WRITES, frozenset())
        # A `global`/`nonlocal` name the statement rebinds outlives the function: state whether or not this
        # function reads it later (a staged loop or branch gives its value back; the call then rebinds it).
        escaping = modified & (self.globals | self.nonlocals)
        names = sorted((((modified | element_writes) & live) - self.globals - self.nonlocals) | escaping)
        return state_lib.State.build(names, anno.getanno(node, _Static.MODIFIED_QNS, ()),
                                     modified | element_writes | self.globals | self.nonlocals, self.ctx.namer)

    @staticmethod
    def _element_writes(call: gast.Call, node: gast.stmt, state: state_lib.State) -> gast.Call:
        """Name the state entries that are only element-written (`keys[i] = k`, never `keys = ...`) in the
        operator call (`element_writes=('keys',)`): the operator carries them through a staged loop or branch
        when they hold a list or dict, whose new elements must come out of it, and passes them through
        untouched otherwise (`z[i] = v` on a tensor is an in-place write the graph records on `z` itself)."""
        only = sorted(anno.getanno(node, _Static.ELEMENT_WRITES, frozenset())
                      - anno.getanno(node, _Static.MODIFIED) & set(state.names))
        if only:
            call.keywords.append(gast.keyword(arg="element_writes", value=templates.strings_tuple(only)))
        return call

    def _declarations(self, body: list, state: state_lib.State) -> list:
        """global/nonlocal statements the generated function needs to modify those names (not its state's:
        parameters, or declared by `_write_through`)."""
        if not (self.globals or self.nonlocals):
            return []
        modified = activity.activity_of(body).modified - set(state.names)
        decls = []
        if modified & self.globals:
            decls.append(gast.Global(names=sorted(modified & self.globals)))
        if modified & self.nonlocals:
            decls.append(gast.Nonlocal(names=sorted(modified & self.nonlocals)))
        return decls

    def _function(self, fname: str, state: state_lib.State, body: list, returns: gast.expr,
                  origin: gast.AST, extra_params: tuple = ()) -> tuple[str, gast.FunctionDef]:
        body = [s for s in body if not isinstance(s, gast.Pass)]  # the return follows
        state_lib.undeclare(body, set(state.names))
        params, through = self._write_through(state, body, returns)
        (fn,) = templates.replace("def fname(params):\n    body\n    return ret",
                                  fname=fname, params=list(extra_params) + params,
                                  body=self._declarations(body, state) + through + state.restores() + body,
                                  ret=returns)
        return fname, transformer.copy_location(fn, origin)

    def _write_through(self, state: state_lib.State, body: list, returns: gast.expr) -> tuple[list, list]:
        """(parameters, prologue) binding the state names a nested def or lambda reads.

        A closure defined outside the generated function reads the enclosing
        function's variable, not a parameter that shadows it, so each such name
        comes in under a fresh parameter and is stored into that variable
        (`nonlocal i; i = i_1`): a closure called while the body is traced sees
        the value of the iteration (or branch) being traced. Only functions that
        call something can run a closure. The same holds for the function's own
        `global` and `nonlocal` names (`global g; g = g_1`): any function called
        may read them.
        """
        params = state.params
        shared = [n for n in state.names if n in self.captured or n in self.globals or n in self.nonlocals]
        if not shared or not any(_calls(part) for part in body + [returns]):
            return params, []
        fresh = {n: self.ctx.namer.new_symbol(n) for n in shared}
        prologue = []
        if [n for n in shared if n in self.globals]:
            prologue.append(gast.Global(names=[n for n in shared if n in self.globals]))
        if [n for n in shared if n not in self.globals]:
            prologue.append(gast.Nonlocal(names=[n for n in shared if n not in self.globals]))
        for n in shared:
            prologue += templates.replace("var = param", var=n, param=fresh[n])
        return [fresh.get(p, p) for p in params], prologue

    def _visit_children(self, node: gast.stmt, params: list) -> None:
        self.params.append(frozenset(params))
        self.dual.append(False)
        self.generic_visit(node)
        self.dual.pop()
        self.params.pop()

    def _plain_copy(self, node: gast.stmt) -> gast.stmt:
        """A copy of `node` whose nested statements are converted dual-path, in the same scope."""
        plain = templates.copy_tree(node)
        self.dual.append(True)
        self.generic_visit(plain)
        self.dual.pop()
        return plain

    @staticmethod
    def _plain_check(var: str) -> gast.expr:
        """`var is True or var is False or ag__.is_plain(var)`: a bool costs two identity tests."""
        expr = templates.replace_as_expression(
            "var is True or var is False or ag__.is_plain(var)", var=var)
        anno.setanno(expr, anno.Basic.SKIP_PROCESSING, True)
        return expr

    @staticmethod
    def _skip(expr: gast.expr) -> gast.expr:
        anno.setanno(expr, anno.Basic.SKIP_PROCESSING, True)
        return expr

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
            if n in self.params[-1] or n in self.globals or n in self.nonlocals:
                continue  # a parameter of the enclosing generated function, or bound outside the function
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

    def _options(self, node: gast.stmt, state: state_lib.State) -> Optional[gast.Dict]:
        """The loop's options: `set_loop_options`'s, and `unused_after`, the state names unbound before the loop
        that no code after it reads (carried only because an iteration may read them): a loop that runs zero
        times leaves them unbound without a run-time check."""
        options = dict(anno.getanno(node, anno.Basic.LOOP_OPTIONS) or {})
        live_out = anno.getanno(node, _Static.LIVE_OUT, frozenset())
        defined = anno.getanno(node, _Static.MAYBE_DEFINED_IN, frozenset())
        unused = [n for n in state.names if n not in defined and n not in live_out
                  and n not in self.globals and n not in self.nonlocals and n not in self.captured]
        if unused:
            options["unused_after"] = templates.strings_tuple(unused)
        if not options:
            return None
        return gast.Dict(keys=[transformer.constant(k) for k in options],
                         values=list(options.values()))

    # -- statements ----------------------------------------------------------

    # Each `_*_functional` builds the staged path (the functional form) and
    # returns (Undefined inits, defs + operator call).

    def _if_functional(self, node: gast.If, test: gast.expr) -> tuple[list, list]:
        branches_in = (anno.getanno(node, _Static.BODY_LIVE_IN, frozenset())
                       | anno.getanno(node, _Static.ORELSE_LIVE_IN, frozenset()))
        live_out = anno.getanno(node, _Static.LIVE_OUT, frozenset())
        # The condition is evaluated first, with the incoming values too.
        incoming_used = branches_in | frozenset(activity.activity_of(node.test).read)
        # Names are taken before visiting nested statements so they number outside-in.
        true_name = self.ctx.namer.new_symbol("if_true")
        state = self._state(node, live_out | branches_in)
        # Read by a branch before it assigns them (e.g. after a loop that may not run) but
        # dead after the `if`: passed in, and left undefined by both branches.
        # A container the branches only assign elements of is never dead: other names may hold it.
        dead = (frozenset(state.names) - live_out - anno.getanno(node, _Static.ELEMENT_WRITES, frozenset())
                - self.globals - self.nonlocals)
        false_name = self.ctx.namer.new_symbol("if_false") if node.orelse or dead else None
        self._visit_children(node, state.params)
        returns = self._branch_outputs(state, dead)
        true_name, true_fn = self._function(true_name, state, node.body, returns, node)
        functions = [true_fn]
        if false_name is not None:
            false_name, false_fn = self._function(false_name, state, node.orelse,
                                                  templates.copy_tree(returns), node)
            functions.append(false_fn)
        else:
            false_name = transformer.constant(None)  # if_stmt keeps the state as it is
        call = templates.replace_as_expression(
            "ag__.if_stmt(test, true_name, false_name, state, names)", test=test,
            true_name=true_name, false_name=false_name, state=state.values(),
            names=templates.strings_tuple(state.labels))
        self._element_writes(call, node, state)
        return (transformer.copy_location(self._inits(state, node, incoming_used), node),
                transformer.copy_location(functions + self._result(call, state), node))

    @staticmethod
    def _branch_outputs(state: state_lib.State, dead: frozenset) -> gast.Tuple:
        """What each branch returns: the state's values, `ag__.Undefined('x')` for the dead names."""
        out = state.values()
        for k, n in enumerate(state.names):
            if n in dead:
                out.elts[k] = templates.replace_as_expression("ag__.Undefined(var_name)",
                                                              var_name=transformer.constant(n))
        return out

    def _while_functional(self, node: gast.While) -> tuple[list, list]:
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
        options = self._options(node, state)
        if options is not None:
            call.args.append(options)
        self._element_writes(call, node, state)
        return (transformer.copy_location(self._inits(state, node), node),
                transformer.copy_location([test_fn, body_fn] + self._result(call, state), node))

    def _for_functional(self, node: gast.For, iter_: gast.expr) -> tuple[list, list]:
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
        inits, out = self._inits(state, node), []
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
            "ag__.for_stmt(iter_, extra_test, body_name, state, names)", iter_=iter_,
            extra_test=extra_name, body_name=body_name, state=state.values(),
            names=templates.strings_tuple(state.labels))
        options = self._options(node, state)
        if options is not None:
            call.args.append(options)
        self._element_writes(call, node, state)
        out += [body_fn] + self._result(call, state)
        return transformer.copy_location(inits, node), transformer.copy_location(out, node)

    # -- dual path ------------------------------------------------------------

    def visit_If(self, node: gast.If) -> list:
        if not self.dual[-1]:
            inits, staged = self._if_functional(node, node.test)
            return inits + staged
        plain = self._plain_copy(node)
        cond = self.ctx.namer.new_symbol("cond")
        inits, staged = self._if_functional(node, transformer.name(cond))
        plain_if = gast.If(test=transformer.name(cond), body=plain.body, orelse=plain.orelse)
        out = [transformer.assign(cond, plain.test),
               gast.If(test=self._plain_check(cond), body=[plain_if], orelse=inits + staged)]
        return transformer.copy_location(out, node)

    def visit_While(self, node: gast.While) -> list:
        if not self.dual[-1]:
            inits, staged = self._while_functional(node)
            return inits + staged
        plain = self._plain_copy(node)
        test = self.ctx.namer.new_symbol("test")
        plain_test = plain.test
        node.test = templates.copy_tree(node.test)
        inits, staged = self._while_functional(node)
        stop = gast.If(test=self._skip(transformer.not_expr(transformer.name(test))),
                       body=[gast.Break()], orelse=[])
        check = gast.If(test=self._plain_check(test), body=[stop],
                        orelse=staged + [gast.Break()])
        loop = gast.While(test=transformer.constant(True),
                          body=[transformer.assign(test, plain_test), check] + plain.body,
                          orelse=[])
        return transformer.copy_location(inits + [loop], node)

    def visit_For(self, node: gast.For) -> list:
        if not self.dual[-1]:
            inits, staged = self._for_functional(node, node.iter)
            return inits + staged
        plain = self._plain_copy(node)
        iter_name = self.ctx.namer.new_symbol("loop_iter")
        extra = anno.getanno(node, anno.Basic.EXTRA_LOOP_TEST)
        if extra is not None:
            anno.setanno(node, anno.Basic.EXTRA_LOOP_TEST, templates.copy_tree(extra))
        inits, staged = self._for_functional(node, transformer.name(iter_name))
        out = inits + [transformer.assign(iter_name, plain.iter)]
        if extra is None:
            is_plain = templates.replace_as_expression("ag__.is_plain(it)", it=iter_name)
            loop = gast.For(target=plain.target, iter=transformer.name(iter_name),
                            body=plain.body, orelse=[], type_comment=None)
            out.append(gast.If(test=is_plain, body=[loop], orelse=staged))
            return transformer.copy_location(out, node)
        # Break/return flags: the Python loop runs while every flag is False; once one is
        # not, the extra test decides, and a staged one hands the rest to for_stmt.
        flags = sorted(activity.activity_of(extra).read)
        fast = self.ctx.namer.new_symbol("fast")
        all_false = [templates.replace_as_expression("f is False", f=f) for f in flags]
        plain_name = self.ctx.namer.new_symbol("plain_iter")
        has_plain = templates.replace_as_expression("p is not None", p=plain_name)
        entry = self._skip(gast.BoolOp(op=gast.And(), values=all_false + [has_plain]))
        some_set = [templates.replace_as_expression("f is not False", f=f) for f in flags]
        some_set = some_set[0] if len(some_set) == 1 else self._skip(
            gast.BoolOp(op=gast.Or(), values=some_set))
        if len(flags) == 1:
            # `not flag` is False exactly when the flag is True; staged: leave it to for_stmt.
            stopped = templates.replace_as_expression("f is True", f=flags[0])
        else:
            stopped = templates.replace_as_expression("e is False", e=extra)
        leave = gast.If(test=some_set, body=[transformer.assign(fast, stopped), gast.Break()],
                        orelse=[])
        loop = gast.For(target=plain.target, iter=transformer.name(plain_name),
                        body=plain.body + [leave], orelse=[], type_comment=None)
        resume = templates.replace("if plain is not None:\n    it = plain",
                                   plain=plain_name, it=iter_name)
        out += [transformer.assign(plain_name, templates.replace_as_expression(
                    "ag__.plain_iter(it)", it=iter_name)),
                transformer.assign(fast, entry),
                gast.If(test=transformer.name(fast), body=[loop], orelse=[]),
                gast.If(test=self._skip(transformer.not_expr(transformer.name(fast))),
                        body=resume + staged, orelse=[])]
        return transformer.copy_location(out, node)


    def visit_Try(self, node: gast.Try) -> list:
        return try_statements.convert(self, node)


def _calls(node: gast.AST) -> bool:
    """Whether `node` calls something (which may run a nested def)."""
    return any(type(n) is gast.Call for n in transformer.walk(node))


def transform(fn: gast.FunctionDef, ctx: transformer.ConversionContext) -> None:
    """Converts the control flow of `fn`'s own scope (nested defs are done separately).

    reaching_definitions.analyze(fn) must have run (the variables converter
    shares it); liveness runs here, on the tree as it is now.
    """
    try_statements.guard_else(fn, ctx)
    captured = activity.captured_by_nested_scopes(fn)
    liveness.analyze(fn, captured)
    t = _ControlFlowTransformer(ctx, fn, captured)
    new_body = []
    for s in fn.body:
        r = t.visit(s)
        new_body.extend(r if isinstance(r, list) else [r])
    fn.body = new_body
