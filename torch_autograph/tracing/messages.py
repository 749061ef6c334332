"""The trace-time errors and warnings that tell a user what went wrong, at their line, and how to fix it."""

from __future__ import annotations

import re
import traceback
import warnings
from typing import Any, Callable

from ..errors import InaccessibleTensorError, OperatorNotAllowedInGraphError
from ..graph import SourceLocation
from .locations import is_library_file, user_location


class GraphAttributeError(OperatorNotAllowedInGraphError, AttributeError):
    """Reading a tensor attribute whose value is unknown while tracing (hasattr() sees it as missing)."""


def not_allowed(g: Any, what: str, fix: str, error: type = OperatorNotAllowedInGraphError,
                lacks: str = "value") -> Exception:
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
               f"({g._value.type_str()}) has no {lacks} yet{where}.{code}\nFix: {fix}.")


def leaked_tensor_error(g: Any) -> InaccessibleTensorError:
    """A graph tensor used after its trace ended (stored in a global, a list or an attribute)."""
    loc = user_location()
    where = f" (used at {loc})" if loc else ""
    owner = g._trace.graph.name if g._trace is not None else "?"
    made = _creation(g)
    failed = getattr(g._trace, "failed", None) if g._trace is not None else None
    if failed is not None:
        return InaccessibleTensorError(
            f"{g!r} is out of scope and cannot be used here{where}: it was created{made} while tracing {owner!r}, "
            f"which raised {type(failed).__name__}: {failed}\nAn `except` in the program caught that error while "
            f"the graph was traced, and the code after it went on with this value of the failed trace.")
    return InaccessibleTensorError(
        f"{g!r} is out of scope and cannot be used here{where}: it was created{made} while tracing {owner!r}, "
        f"which has ended (a tensor `if` or loop body, if it is not the function: a value kept in a Python object "
        f"there, e.g. appended to a list by a called function, is not the branch's or loop's state). "
        f"A graph tensor stored in a global, a list or an attribute is symbolic: such Python "
        f"side effects run once, while tracing, so it holds no value of any call (in eager PyTorch it would "
        f"hold the last call's). Return it from the function instead (`loss = step(x)`, then `loss.item()`).")


def hidden_value_error(g: Any, why: str) -> InaccessibleTensorError:
    """A graph tensor this trace no longer has (a value made inside a `try` body, read after the `try`)."""
    loc = user_location()
    where = f" at {loc}" if loc else ""
    code = f" (`{loc.line}`)" if loc and loc.line else ""
    return InaccessibleTensorError(
        f"%{g._value.name} cannot be used here{where}{code}: {why}. Assign it in the `try` body to a "
        f"variable that every `except` clause assigns too, and read that variable after the `try`.")


def _creation(g: Any) -> str:
    """` at <the user's line>` of the op that made graph tensor `g`, or ''."""
    trace, value = getattr(g, "_trace", None), getattr(g, "_value", None)
    if trace is None or value is None:
        return ""
    node = next((n for n in trace.graph.nodes if any(o is value for o in n.outputs)), None)
    return f" at {node.origin}" if node is not None and node.origin is not None else ""


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




# What a torch dunder converts a size symbol to, and so what the user's code asked of it.
_CONVERSIONS = {"__bool__": "a Python bool", "__int__": "a Python int", "__index__": "a Python int (an index or "
                "a range bound)", "__float__": "a Python float"}
_STATEMENTS = ("if", "elif", "while", "assert")


def data_dependent_error(e: BaseException, fn_name: str, map_origin: Callable[[str, int], SourceLocation | None]
                         ) -> OperatorNotAllowedInGraphError | None:
    """torch's GuardOnDataDependentSymNode (a Python decision on a size known only when the graph runs) as our
    error: the user's line, the construct that needed the value and the fix; None when `e` is another error.
    `map_origin`: the trace's mapper from generated lines to the user's (`TraceHooks.map_origin`)."""
    from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

    if not isinstance(e, GuardOnDataDependentSymNode):
        return None
    frames = traceback.extract_tb(e.__traceback__)
    user, converted, after = None, False, len(frames)
    for i, f in enumerate(frames):
        loc = map_origin(f.filename, f.lineno)
        if loc is not None or not is_library_file(f.filename):
            user = loc or SourceLocation(f.filename, f.lineno, f.name, (f.line or "").strip())
            converted, after = loc is not None, i + 1
    if user is None:
        return None
    conversion = next((_CONVERSIONS[f.name] for f in frames[after:] if f.name in _CONVERSIONS), "a Python value")
    line = user.line or ""
    keyword = line.split(" ", 1)[0].rstrip(":")
    construct = f"the `{keyword}`" if keyword in _STATEMENTS and conversion.startswith("a Python bool") else "this line"
    found = re.search(r"data-dependent expression (.*?) \(unhinted", str(e))
    expr = f" from `{found.group(1)}`" if found else ""
    if converted:
        fix = ("AutoGraph stages a plain `if`/`while`/`for` on it, but `bool()`, `int()` and `float()` run as "
               "Python while tracing. Fix: write the decision as a plain `if`/`while` on it, compute it with tensor "
               "ops (torch.where), or use ta.cond")
    else:
        fix = ("AutoGraph did not convert this code (autograph=False, do_not_convert, or a function it leaves as "
               "it is), so the decision could not become a graph `cond` or `while`. Fix: let AutoGraph convert it "
               "(autograph=True, the default), compute it with tensor ops (torch.where), or use ta.cond")
    return OperatorNotAllowedInGraphError(
        f"{fn_name}: {construct} at {user} needs {conversion}{expr}, which depends on a size known only when the "
        f"graph runs (the length of a nonzero, masked-select or unique result): tracing has no value to decide "
        f"on.\n    {line}\n{fix}.")
