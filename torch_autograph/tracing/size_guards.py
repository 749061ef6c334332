"""What a trace assumed about the sizes of its inputs, checked at each call that reuses it.

Tracing with a None dim makes a size symbol (`s0`); torch's meta kernels may
need to know more (`s0 != 1` to broadcast without expanding, `Eq(s0, s1)` to
add two tensors): the ShapeEnv then assumes it, records a guard, and may
replace one symbol by another. A graph is right only for calls where every
such assumption holds, so `compile_guards` turns them into one small Python
function of the call's placeholder tensors. It returns None when all hold,
else the first broken assumption in the user's terms (`x.size(0) != 1`); the
trace cache then traces again, saying so in `trace_history()`.
"""

from __future__ import annotations

from typing import Any, Callable

import torch

from ..graph import Value


def compile_guards(env: Any, input_dims: list[tuple[Any, Any]], inputs: list[Value]
                   ) -> Callable[[list[torch.Tensor]], str | None] | None:
    """A checker of the assumptions `env` made about the sizes of `inputs` (placeholders in graph order)."""
    from torch.utils._sympy.printers import PythonPrinter

    printer = PythonPrinter()
    position = {id(v): i for i, v in enumerate(inputs)}
    names = {}  # symbol -> local variable name
    lines = []
    readable = {}
    for symbol, source in input_dims:
        i = position.get(id(source.value))
        if i is None:
            continue
        var = f"_s{len(names)}"
        names[symbol] = var
        readable[str(symbol)] = f"{source.value.name}.size({source.dim})"
        lines.append(f"    {var} = inputs[{i}].size({source.dim})")
    if not names:
        return None

    def text(expr: Any) -> str:
        out = printer.doprint(expr)
        for symbol in sorted(names, key=lambda s: -len(str(s))):
            out = _replace(out, str(symbol), names[symbol])
        return out

    def words(expr: Any) -> str:
        out = str(expr)
        for sym, name in sorted(readable.items(), key=lambda kv: -len(kv[0])):
            out = _replace(out, sym, name)
        return out

    checks: list[tuple[str, str]] = []
    for symbol in names:
        replaced = env.replace(symbol)
        if replaced != symbol and replaced.free_symbols <= set(names):
            checks.append((f"{names[symbol]} == ({text(replaced)})", f"{words(symbol)} == {words(replaced)}"))
        vr = _range(env, symbol)
        if vr is not None:
            lower, upper = vr
            if lower is not None and lower > 0:
                checks.append((f"{names[symbol]} >= {lower}", f"{words(symbol)} >= {lower}"))
            if upper is not None:
                checks.append((f"{names[symbol]} <= {upper}", f"{words(symbol)} <= {upper}"))
    for guard in getattr(env, "guards", ()):
        expr = guard.expr
        if expr.free_symbols <= set(names):
            checks.append((text(expr), words(expr)))
    for asserts in getattr(env, "deferred_runtime_asserts", {}).values():
        for ra in asserts:
            if ra.expr.free_symbols and ra.expr.free_symbols <= set(names):
                checks.append((text(ra.expr), words(ra.expr)))
    if not checks:
        return None
    body = lines + [f"    if not ({code}):\n        return {message!r}" for code, message in checks] + ["    return None"]
    source = "def check(inputs):\n" + "\n".join(body) + "\n"
    namespace: dict[str, Any] = {"torch": torch}
    exec(compile(source, "<torch_autograph size guards>", "exec"), namespace)  # noqa: S102
    check = namespace["check"]
    check.__doc__ = source
    return check


def _range(env: Any, symbol: Any) -> tuple[int | None, int | None] | None:
    ranges = getattr(env, "var_to_range", None)
    vr = ranges.get(symbol) if ranges is not None else None
    if vr is None:
        return None
    return _finite(vr.lower), _finite(vr.upper)


def _finite(bound: Any) -> int | None:
    """A range bound as an int, or None for an infinite one (sympy's oo, torch's int_oo)."""
    try:
        return int(bound) if bound.is_number and abs(float(bound)) < float("inf") else None
    except (TypeError, ValueError, OverflowError, AttributeError):
        return None


def _replace(text: str, word: str, new: str) -> str:
    import re

    return re.sub(rf"(?<![A-Za-z0-9_]){re.escape(word)}(?![A-Za-z0-9_])", new, text)
