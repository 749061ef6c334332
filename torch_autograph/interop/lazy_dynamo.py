"""Keep `torch._dynamo` (about 1 s to import) out of a process until something really uses it.

Shape inference runs ops on meta tensors, and many of torch's meta kernels
are Python reference implementations (`torch._refs`, `torch._decomp`)
wrapped in `torch._disable_dynamo`. That wrapper imports `torch._dynamo` on
its first call, only to mark the function as one dynamo must not trace into;
so the first `relu` a trace records would cost a second of imports even when
nothing in the process ever compiles with dynamo.

While `torch._dynamo` is not imported, no dynamo frame evaluation can be
active, and calling such a reference function directly is exactly what the
wrapper ends up doing. `defer()` therefore hands each wrapper the function
itself as its cached "disabled" version (the `__dynamo_disable` attribute
the wrapper looks up first). A finder on `sys.meta_path`, there while the
table is on, undoes it when `torch._dynamo` starts to import (`jit_compile`, `torch.compile`, anything
else): the attributes are removed before dynamo can run, and every wrapper
goes back to torch's own behaviour, building its real disabled version on
its next call. Functions the walk does not reach keep torch's behaviour: a
miss costs time, never correctness.
"""

from __future__ import annotations

import importlib.abc
import sys
import threading
import types
from typing import Any

from .patches import Hook, Patch

_ATTR = "__dynamo_disable"
_MODULE_PREFIXES = ("torch._refs", "torch._prims", "torch._decomp", "torch._meta_registrations",
                    "torch._subclasses")
_MAX_DEPTH = 8  # wrapper chains (out_wrapper -> disable -> type promotion -> the reference) are short


class _RestoreOnDynamoImport(importlib.abc.MetaPathFinder):
    """Puts torch's own lazy disabling back the moment `torch._dynamo` begins to import, mid-trace too."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> None:
        if name == "torch._dynamo":
            _stop()
        return None  # the normal finders import it


_lock = threading.Lock()
_found: list[Any] | None = None  # the wrapped functions, found once: reading torch changes nothing


def _targets() -> list[tuple[Any, str]]:
    global _found
    if "torch._dynamo" in sys.modules:
        return []  # already paid for: nothing to save
    with _lock:
        if _found is None:
            _found = _disable_wrapped_functions()
    return [(fn, _ATTR) for fn in _found if isinstance(fn, types.FunctionType) and fn.__dict__.get(_ATTR) is None]


def _prefill(fn: Any, name: str, original: Any) -> Any:
    return fn


def _install_finder() -> Any:
    """The finder first on `sys.meta_path` (nothing while torch._dynamo is imported: nothing to undo then)."""
    if "torch._dynamo" in sys.modules:
        return None
    finder = _RestoreOnDynamoImport()
    sys.meta_path.insert(0, finder)
    return lambda: _remove_finders(finder)


def _remove_finders(only: Any = None) -> None:
    for finder in [f for f in sys.meta_path if isinstance(f, _RestoreOnDynamoImport) and only in (None, f)]:
        try:
            sys.meta_path.remove(finder)
        except ValueError:  # removed by another thread
            pass


def _stop() -> None:
    """Every pre-filled function back to torch's behaviour now (the patch set's own revert then skips them)."""
    _remove_finders()
    for fn in _found or ():
        if fn.__dict__.get(_ATTR) is fn:
            del fn.__dict__[_ATTR]


PATCHES = (
    Hook("sys.meta_path", "a finder that sees torch._dynamo begin to import",
         "puts torch's own lazy disabling back (the patch below undone) before dynamo can run", _install_finder),
    Patch("the functions torch wraps with torch._disable_dynamo (torch._refs, _prims, _decomp, meta kernels)",
          (_ATTR,),
          "their wrapper imports torch._dynamo (about 1 s) at its first call only to mark them; a trace's shape "
          "inference calls many. Pre-filled with the function itself (what the wrapper calls once dynamo is "
          "imported and not running); undone the moment torch._dynamo starts to import",
          _targets, _prefill),
)


def prefilled_count() -> int:
    """How many functions are currently pre-filled (0 outside traces and once dynamo has been imported)."""
    return sum(1 for fn in (_found or ()) if fn.__dict__.get(_ATTR) is fn)


def _wrapper_code() -> types.CodeType | None:
    import torch._compile as compile_module

    probe = getattr(compile_module, "_disable_dynamo", None)
    if probe is None:
        return None
    code = getattr(probe(lambda: None), "__code__", None)
    return code if code is not None and "fn" in code.co_freevars else None


def _disable_wrapped_functions() -> list[Any]:
    """The functions wrapped by `torch._disable_dynamo` among torch's loaded reference and meta modules."""
    code = _wrapper_code()
    if code is None:  # another torch: its wrapper looks different, leave it alone
        return []
    fn_cell = code.co_freevars.index("fn")
    seen: set[int] = set()
    found: list[Any] = []

    def visit(f: Any, depth: int) -> None:
        if depth > _MAX_DEPTH or not isinstance(f, types.FunctionType) or id(f) in seen:
            return
        seen.add(id(f))
        cells = f.__closure__ or ()
        if f.__code__ is code:
            found.append(cells[fn_cell].cell_contents)
        for cell in cells:
            try:
                inner = cell.cell_contents
            except ValueError:  # an empty cell
                continue
            visit(inner, depth + 1)
        visit(getattr(f, "__wrapped__", None), depth + 1)

    for name, module in list(sys.modules.items()):
        if module is not None and name.startswith(_MODULE_PREFIXES):
            for value in list(vars(module).values()):
                visit(value, 0)
    tables = getattr(sys.modules.get("torch._decomp"), "global_decomposition_table", {})
    for table in list(tables.values()):
        for value in list(table.values()):
            visit(value, 0)
    return found
