"""Runtime of a converted `try` statement with `except` handlers.

The statement stays a Python `try`: what the body raises while it runs (a
KeyError on a dict, in plain Python or while tracing) is caught there, exactly
as written. Two calls mark it for a backend that records the body as graph ops
whose failure is known only when the graph runs:

    x, token = ag__.try_begin((x,), ('x',))  # the state before the body, and a token
    try:
        x = torch.linalg.cholesky(a)
    except torch.linalg.LinAlgError:
        x = torch.zeros(2, 2)
    else:
        def except_body(exc, x):          # the handler again, as a function of the state
            x = torch.zeros(2, 2)
            return (x,)
        x, = ag__.try_end(token, (x,), ('x',), ((lambda: torch.linalg.LinAlgError, except_body, False, False),))

Each `except` clause and the `finally` clause start with `ag__.let_library_errors_through(token)`: an
error of the backend itself (a refusal, a signal of its loop machinery) raised while tracing is not the
program's exception, and goes on to the caller instead of running the program's handler on the trace. A
`finally:` entered with no exception on its way is told to the backend (`finally_starts`): one inside the
body of an enclosing staged `try` runs there too when that body fails as the graph runs.

`try_end` runs only when the body raised nothing while it ran; when the body
recorded graph ops, the backend makes them a run-time handler node (the body and
each handler as sub-graphs) and returns the state after it.
"""

from __future__ import annotations

import sys
from typing import Any, Callable, Sequence

from torch_autograph.autograph.operators import dispatch

_registry = dispatch._registry

# One handler: (a thunk giving the exception class or classes it catches, the handler as a function of
# (exception, *state) returning the state, whether it reads the exception's name, whether it re-raises with
# a bare `raise`).
Handler = tuple[Callable[[], Any], Callable[..., tuple], bool, bool]


def try_begin(init_vars: tuple, names: Sequence[str] = ()) -> tuple:
    """The state the body starts from, then a token for the `try` (None when no backend records graph ops now).
    `names`: the state's names, as `try_end` gets them."""
    b = _registry.backend
    if b is None or not hasattr(b, "try_begin"):
        return init_vars + (None,)
    return b.try_begin(init_vars, sys._getframe(1), names)


def try_end(token: Any, out_vars: tuple, names: Sequence[str], handlers: Sequence[Handler],
            has_else: bool = False, unused_after: Sequence[str] = (),
            finally_body: tuple | None = None) -> tuple:
    """The state after the `try` whose body finished with `out_vars` (no exception while it ran); with
    `has_else`, followed by whether the body succeeded (True, or a graph bool: False when a handler ran).
    `unused_after`: the names of the state that only the `else:` or a handler reads; `finally_body`: (the
    `finally:` clause as a function of the state, the state names it reads), when it calls something."""
    if token is None:
        return out_vars + (True,) if has_else else out_vars
    return _registry.backend.try_end(token, out_vars, names, handlers, has_else, dispatch.caller_origin(),
                                     unused_after, finally_body)


def let_library_errors_through(token: Any = None) -> None:
    """At the start of an `except` or `finally` clause: re-raise the exception on its way if it is the backend's
    own error, raised while tracing (the backend's `own_error`), not the program's. `token`: the `try`'s
    (`try_begin`), whose body is over (it raised while it ran, or `try_end` was reached)."""
    b = _registry.backend
    if b is None or not hasattr(b, "own_error"):
        return
    if token is not None:
        b.try_over(token)
    e = sys.exc_info()[1]
    if e is None:  # (a `finally:` entered as its body ended: no exception is on its way)
        if hasattr(b, "finally_starts"):
            b.finally_starts(sys._getframe(1))
    elif b.own_error(e):
        raise e
