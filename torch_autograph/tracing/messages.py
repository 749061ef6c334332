"""The trace-time errors and warnings that tell a user what went wrong, at their line, and how to fix it."""

from __future__ import annotations

import warnings
from typing import Any


from ..errors import InaccessibleTensorError, OperatorNotAllowedInGraphError
from .locations import user_location


class GraphAttributeError(OperatorNotAllowedInGraphError, AttributeError):
    """Reading a tensor attribute whose value is unknown while tracing (hasattr() sees it as missing)."""


def not_allowed(g: Any, what: str, fix: str, error: type = OperatorNotAllowedInGraphError) -> Exception:
    """`what` cannot be done to graph tensor `g` while tracing: the error, naming it and the user's line.

    After its trace ended (a graph tensor kept in an attribute or a global, used after the call) the
    error is `InaccessibleTensorError`: nothing is being traced, the tensor escaped.
    """
    trace = getattr(g, "_trace", None)
    if trace is not None and trace.root.closed:
        return leaked_tensor_error(g)
    loc = user_location()
    where = f" at {loc}" if loc else ""
    code = f"\n    {loc.line}" if loc and loc.line else ""
    cls = GraphAttributeError if error is AttributeError else error
    return cls(f"{what} is not allowed while tracing: the tensor %{g._value.name} "
               f"({g._value.type_str()}) has no value yet{where}.{code}\nFix: {fix}.")


def leaked_tensor_error(g: Any) -> InaccessibleTensorError:
    """A graph tensor used after its trace ended (stored in a global, a list or an attribute)."""
    loc = user_location()
    where = f" (used at {loc})" if loc else ""
    owner = g._trace.graph.name if g._trace is not None else "?"
    return InaccessibleTensorError(
        f"{g!r} is out of scope and cannot be used here{where}: it was created while tracing {owner!r}, "
        f"which has ended. A graph tensor stored in a global, a list or an attribute is symbolic: such Python "
        f"side effects run once, while tracing, so it holds no value of any call (in eager PyTorch it would "
        f"hold the last call's). Return it from the function instead (`loss = step(x)`, then `loss.item()`).")


def warn_at_user_line(warning: Warning, loc: Any = None) -> None:
    """Issue `warning` attributed to the user's file and line, so `warnings.filterwarnings(module=...)` can target it."""
    loc = loc if loc is not None else user_location()
    if loc is None:
        warnings.warn(warning, stacklevel=2)
        return
    module = _module_name(loc.filename)
    warnings.warn_explicit(warning, type(warning), loc.filename, loc.lineno, module=module)


def _module_name(filename: str) -> str:
    """The module name `warnings` derives from a filename (the basename without `.py`)."""
    name = filename.rsplit("/", 1)[-1]
    return name[:-3] if name.endswith(".py") else name


