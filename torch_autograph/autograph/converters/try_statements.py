"""Converts a `try` with `except` clauses: it stays a Python `try`, marked for a backend that records graph ops.

    try:                              y, try_token = ag__.try_begin((y,), ('y',))
        y = f(x)                      try:
    except E:                ->           y = f(x)
        y = g(x)                      except E:
    else:                                 y = g(x)
        z = y                         else:
                                          def except_body(exc, y):   # the handler, as a function of the state
                                              y = g(x)
                                              return (y,)
                                          y, try_ok = ag__.try_end(try_token, (y,), ('y',),
                                                                   ((lambda: E, except_body, False, False),), True)
                                          if try_ok:                 # False when a handler ran as the graph ran
                                              z = y

What the body raises while it runs is caught by the Python `try` as written (see operators/exceptions.py).
The state is what the body or a handler assigns that is read after them or by a handler (liveness).
"""

from __future__ import annotations

from typing import Any

import gast

from torch_autograph.autograph.pyct import activity, anno, templates, transformer

_Static = anno.Static


def convert(t: Any, node: gast.Try) -> list:
    """A `try` with handlers stays a Python `try`; its `else:` first hands the body's graph ops, if any, to
    `ag__.try_end` with each handler as a function of the state (operators/exceptions.py)."""
    if not node.handlers:
        node = t.generic_visit(node)
        _let_library_errors_through(node, None)
        return node
    state = t._state(node, anno.getanno(node, _Static.LIVE_OUT, frozenset())
                        | anno.getanno(node, _Static.BODY_LIVE_IN, frozenset()))
    copies = [templates.copy_tree(h.body) for h in node.handlers]
    # A `finally:` that calls something may change state (`v.assign_add(1)`): the backend runs its effects
    # when the `try` raises as the graph runs, so it gets the clause as a function of the state too.
    # (Only one that rebinds no name but the state's: the function has no other parameters.)
    final_copy = templates.copy_tree(node.finalbody) if any(
        isinstance(n, gast.Call) for s in node.finalbody for n in gast.walk(s)) and \
        set(activity.activity_of(node.finalbody).modified) <= set(state.names) else None
    t.generic_visit(node)  # the Python path, as written
    token = t.ctx.namer.new_symbol("try_token")
    _let_library_errors_through(node, token)
    functions, specs = [], []
    for h, body in zip(node.handlers, copies):
        holder = gast.If(test=transformer.constant(True), body=body, orelse=[])
        exc = h.name if isinstance(h.name, str) else getattr(h.name, "id", None)
        t._visit_children(holder, state.params + ([exc] if exc else []))
        fname = t.ctx.namer.new_symbol("except_body")
        param = exc or t.ctx.namer.new_symbol("exc")
        fname, fn = t._function(fname, state, holder.body, state.values(), h, extra_params=(param,))
        functions.append(fn)
        reads = exc is not None and exc in activity.activity_of(h.body).read
        reraises = any(isinstance(n, gast.Raise) and n.exc is None for n in transformer.walk_statements(h.body))
        types = h.type if h.type is not None else transformer.name("BaseException")
        specs.append(templates.replace_as_expression(
            "(lambda: types, fname, reads, reraises)", types=templates.copy_tree(types), fname=fname,
            reads=transformer.constant(reads), reraises=transformer.constant(reraises)))
    final_fn = None
    if final_copy is not None:
        holder = gast.If(test=transformer.constant(True), body=final_copy, orelse=[])
        t._visit_children(holder, state.params)
        final_fn, fn = t._function(t.ctx.namer.new_symbol("finally_body"), state, holder.body, state.values(),
                                   node.finalbody[0])
        functions.append(fn)
    # The state comes back from try_begin too: a backend may hand the body graph lists for Python lists.
    begin_call = templates.replace_as_expression("ag__.try_begin(state, names)", state=state.values(),
                                                 names=templates.strings_tuple(state.labels))
    begin = transformer.copy_location(
        [gast.Assign(targets=[templates.names_tuple(state.params + [token], gast.Store)], value=begin_call,
                     type_comment=None)] + state.restores(), node)
    ok = anno.getanno(node, anno.Basic.TRY_SUCCEEDED)
    # The state only the `else:` or a handler reads (not the `finally:` or what follows): one path may leave it
    # unassigned.
    after = anno.getanno(node, _Static.FINALLY_LIVE_IN, frozenset())
    unused = [n for n in state.names if n not in after]
    extra = (", unused_after=unused" if unused else "") + (", finally_body=(final_fn, final_reads)" if final_fn else "")
    final_reads = templates.strings_tuple(sorted(set(state.names) & activity.activity_of(node.finalbody).read))
    call = templates.replace_as_expression(
        "ag__.try_end(token, state, names, handlers, has_else" + extra + ")",
        token=token, state=state.values(), names=templates.strings_tuple(state.labels),
        handlers=gast.Tuple(elts=specs, ctx=gast.Load()), has_else=transformer.constant(ok is not None),
        unused=templates.strings_tuple(unused), final_fn=final_fn or "_", final_reads=final_reads)
    if ok is None:
        result = t._result(call, state)
    else:  # the state, then whether the body succeeded (the guarded `else:` tests it)
        targets = templates.names_tuple(state.params + [ok], gast.Store)
        result = [gast.Assign(targets=[targets], value=call, type_comment=None)] + state.restores()
    node.orelse = transformer.copy_location(functions + result, node.handlers[0]) + node.orelse
    # The state's incoming values, which `try_begin` reads: a name whose incoming value nothing reads may be
    # unbound there (assigned in a loop body that does not carry it), and starts as a placeholder.
    inits = t._inits(state, node, anno.getanno(node, _Static.LIVE_IN))
    return transformer.copy_location(inits, node) + begin + [node]


def _let_library_errors_through(node: gast.Try, token: str | None) -> None:
    """Each `except` and the `finally` of the Python path first let a backend's own error go on (a refusal
    raised while tracing is not the program's exception: operators/exceptions.py); they end the body of the
    `try` of `token`."""
    for body in [h.body for h in node.handlers] + ([node.finalbody] if node.finalbody else []):
        call = templates.replace_as_expression("ag__.let_library_errors_through()") if token is None else \
            templates.replace_as_expression("ag__.let_library_errors_through(token)", token=token)
        body.insert(0, transformer.copy_location(gast.Expr(value=call), body[0]))


def guard_else(fn: gast.FunctionDef, ctx: transformer.ConversionContext) -> None:
    """`else: B` of a `try` with handlers becomes `else: if <ok>: B`, `ok` from `ag__.try_end` (visit_Try): True
    in Python; staged, a run-time bool that is False when a handler ran as the graph ran, so B is skipped."""
    for s in transformer.walk_statements(fn.body):
        if isinstance(s, gast.Try) and s.handlers and s.orelse:
            ok = ctx.namer.new_symbol("try_ok")
            guard = transformer.copy_location(gast.If(test=transformer.name(ok), body=s.orelse, orelse=[]), s.orelse[0])
            defined = anno.getanno(s, _Static.MAYBE_DEFINED_IN, frozenset())
            anno.setanno(guard, _Static.MAYBE_DEFINED_IN, defined | frozenset(activity.activity_of(s.body).modified))
            s.orelse = [guard]
            anno.setanno(s, anno.Basic.TRY_SUCCEEDED, ok)
