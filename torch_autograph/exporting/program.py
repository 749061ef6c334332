"""A traced graph as a `torch.export.ExportedProgram`: the exportable module, its example inputs and dynamic dims.

`export_graph(graph)` builds an `nn.Module` whose forward is the graph as
exportable Python (`codegen.py`): captured parameters stay parameters,
captured tensors become buffers (persistent: saved with the program), and
tensors the graph updates (Variables, BatchNorm's running statistics) become
mutated buffers. The signature's None dims are `torch.export.Dim`s, one per
size symbol (`u0` of `x.size(0)`): two inputs sharing a symbol share the Dim.

The program takes the graph's flat tensor inputs and returns its flat tensor
outputs (run-time Python numbers as 0-d tensors; constants are left out),
unless an `interface` gives it another calling convention (the function's own
argument and result structures: function/export_structured.py).
"""

from __future__ import annotations

import re
import traceback
from typing import Any, Callable, Sequence

import torch

from ..errors import GraphLoweringError
from ..graph import Graph, Value, ValueKind, walk_nodes
from .analysis import node_writes
from .codegen import compile_forward


def exportable_module(graph: Graph, captures_as_inputs: bool = False, autocast: tuple | None = None
                      ) -> torch.nn.Module:
    """An `nn.Module` computing `graph` with `torch.cond` / `torch.while_loop`, ready for `torch.export.export`.

    `autocast`: the autocast regions around the call the graph was traced for (the program enters them).
    With `captures_as_inputs` the captured tensors are not the module's: its forward takes them after the graph
    inputs (and updates those the graph updates), so programs exported from several graphs can share them.
    Its generated source is `module.ta_source`.
    """
    if graph.decisions:
        raise GraphLoweringError(
            f"cannot export graph {graph.name}: it holds a decision library code took on the traced call's values "
            f"({graph.decisions[0]}), which the program could not check when it runs.\nFix: give the decision "
            f"as a Python argument, or make it a tensor computation (torch.where).")
    written = {id(v) for n in walk_nodes(graph) for v in node_writes(n)}
    attrs = {id(v): v.name if not hasattr(torch.nn.Module, v.name) and v.name not in _RESERVED
             else f"capture_{v.name}" for v, _ in graph.captures}
    forward, src = compile_forward(graph, None if captures_as_inputs else attrs, autocast)
    cls = type(f"{_identifier(graph.name)}_export", (torch.nn.Module,), {"forward": forward, "__module__": __name__})
    module = cls()
    module.ta_source = src
    if captures_as_inputs:
        return module
    for v, t in graph.captures:
        name = attrs[id(v)]
        if isinstance(t, torch.nn.Parameter) and id(v) not in written:
            module.register_parameter(name, t)
        elif t.requires_grad and id(v) not in written:
            module.register_parameter(name, torch.nn.Parameter(t))
        elif id(v) in written:  # state the graph updates (a Variable, running statistics): the program's own
            module.register_buffer(name, t.detach().clone())
        else:
            module.register_buffer(name, t.detach())
    return module


def _dims(graph: Graph) -> list[list[Any]]:
    """Per input, per dim: an int, or (symbol, a, b, low, high) for a size `a * symbol + b` known when it runs.

    The trace's own assumptions decide: a None dim the trace found equal to another's is that one (`y.size(0)`
    assumed equal to `x.size(0)` shares its Dim), one it fixed is an int, one it found to be `2 * x.size(0)`
    is derived from it.
    """
    out = []
    equal: dict[Any, Any] = {}
    for v in graph.inputs:
        dims: list[Any] = []
        for d in v.shape:
            if type(d) is int:
                dims.append(d)
                continue
            env = d.node.shape_env
            if not equal:
                equal = _equalities(env)
            expr = env.replace(d.node.expr).xreplace(equal)
            if expr.is_Integer:
                dims.append(int(expr))
                continue
            (sym,) = expr.free_symbols if len(expr.free_symbols) == 1 else (None,)
            a, b = (expr.coeff(sym), expr.subs(sym, 0)) if sym is not None else (0, 0)
            if sym is None or not (a.is_Integer and b.is_Integer) or a * sym + b != expr:
                dims.append(None)  # no Dim expresses it: torch.export decides (Dim.AUTO)
                continue
            bounds = env.var_to_range.get(sym)
            low = _finite(bounds.lower) if bounds is not None else None
            high = _finite(bounds.upper) if bounds is not None else None
            dims.append((str(sym), int(a), int(b), max(low or 0, 0), high))
        out.append(dims)
    return out


def _equalities(env: Any) -> dict[Any, Any]:
    """What the trace asserted equal to what (`Eq(u0, u1)` of adding two tensors whose None dims met): a
    substitution mapping each size symbol to its class's first symbol, or to a number it was found to be."""
    import sympy

    pairs = []
    for asserts in env.deferred_runtime_asserts.values():
        for ra in asserts:
            e = ra.expr
            if isinstance(e, sympy.Eq) and (e.lhs.is_Symbol or e.rhs.is_Symbol):
                pairs.append((e.lhs, e.rhs))
    parent: dict[Any, Any] = {}

    def find(x: Any) -> Any:
        while x in parent:
            x = parent[x]
        return x

    for a, b in pairs:
        ra, rb = find(a), find(b)
        if ra == rb:
            continue
        if not ra.is_Symbol:  # `Eq(2*u0, u1)`: u1 is the one replaced
            ra, rb = rb, ra
        if not ra.is_Symbol:
            continue
        if rb.is_Symbol and str(rb) > str(ra):
            ra, rb = rb, ra
        parent[ra] = rb
    return {s: find(s) for s in parent}


def _finite(bound: Any) -> int | None:
    try:
        return int(bound)
    except (TypeError, ValueError, OverflowError, AttributeError):
        return None  # an infinite bound


# Attribute names the module cannot take: its own, and C++ keywords (AOTInductor names a buffer's C++ variable
# after it, and a buffer called `const`, the tracer's name for a captured constant, does not compile).
_RESERVED = frozenset({"forward", "training"}) | frozenset(
    "alignas alignof and asm auto bitand bitor bool break case catch char class compl const constexpr continue "
    "decltype default delete do double else enum explicit export extern false float for friend goto if inline int "
    "long mutable namespace new noexcept not nullptr operator or private protected public register return short "
    "signed sizeof static struct switch template this throw true try typedef typename union unsigned using "
    "virtual void volatile while xor".split())


def example_inputs(graph: Graph) -> list[torch.Tensor]:
    """Inputs for tracing when the caller gives none: zeros, a different size for each size symbol."""
    values: dict[str, int] = {}
    out = []
    for v, dims in zip(graph.inputs, _dims(graph)):
        shape = []
        for d in dims:
            if type(d) is int:
                shape.append(d)
            elif d is None:
                shape.append(_PRIMES[0])
            else:
                sym, a, b, low, high = d
                if sym not in values:
                    pick = next((p for p in _PRIMES if p >= low and (high is None or p <= high)), low)
                    values[sym] = pick
                shape.append(a * values[sym] + b)
        out.append(torch.zeros(shape, dtype=v.dtype, device=v.device))
    return out


_PRIMES = (3, 5, 7, 11, 13, 29, 31, 37)  # distinct, so that no two sizes look equal


def dynamic_shapes(graph: Graph) -> tuple | None:
    """One entry per input: {dim: Dim} for its symbolic dims (a shared symbol is a shared Dim), None if static."""
    roots: dict[str, Any] = {}
    spec = []
    for dims in _dims(graph):
        entry: dict[int, Any] = {}
        for i, d in enumerate(dims):
            if d is None:
                entry[i] = torch.export.Dim.AUTO
            elif type(d) is not int:
                sym, a, b, low, high = d
                if sym not in roots:
                    roots[sym] = torch.export.Dim(_identifier(sym), min=low, max=high) if high is not None else \
                        torch.export.Dim(_identifier(sym), min=low)
                entry[i] = roots[sym] if (a, b) == (1, 0) else roots[sym] * a + b
        spec.append(entry or None)
    return tuple(spec) if any(e is not None for e in spec) else None


def export_graph(graph: Graph, example: Sequence[torch.Tensor] | None = None, strict: bool = False,
                 captures_as_inputs: bool = False, autocast: tuple | None = None,
                 interface: Callable[[torch.nn.Module, list, tuple | None], tuple] | None = None
                 ) -> torch.export.ExportedProgram:
    """`torch.export.export` of `graph` (see the module docstring; `captures_as_inputs`: see `exportable_module`).

    `interface(module, flat example inputs, flat dynamic shapes)` may give the program another calling
    convention: it returns the module to export, its example args and kwargs, and their dynamic shapes.

    Raises:
        GraphLoweringError: a node that cannot be exported, or torch.export failing on the code of one (named
            with the user's line).
    """
    for v in graph.outputs:
        if isinstance(v, Value) and v.kind is ValueKind.LIST:
            raise GraphLoweringError(f"cannot export graph {graph.name}: it returns the graph list %{v.name} "
                                     f"(a Python list of tensors), which an exported program cannot return.\n"
                                     f"Fix: return torch.stack(lst) instead.")
    module = exportable_module(graph, captures_as_inputs, autocast)
    args = tuple(example) if example is not None else tuple(example_inputs(graph))
    dims = dynamic_shapes(graph)
    kwargs: dict = {}
    if captures_as_inputs:
        args += tuple(t.detach() for _, t in graph.captures)
        dims = None if dims is None else dims + (None,) * len(graph.captures)
    if interface is not None:
        module, args, kwargs, dims = interface(module, list(args), dims)
    try:
        return torch.export.export(module, args, kwargs or None, dynamic_shapes=dims, strict=strict)
    except GraphLoweringError:
        raise
    except Exception as e:  # torch's own error: say which user line's code it came from
        raise _export_failure(graph, module, e) from e


def _export_failure(graph: Graph, module: torch.nn.Module, e: Exception) -> GraphLoweringError:
    origins = module.forward.__globals__.get("__ta_origins__", {})
    filename = module.forward.__code__.co_filename
    lines = [fs.lineno for fs in traceback.extract_tb(e.__traceback__) if fs.filename == filename]
    lines += [int(m) for m in re.findall(re.escape(filename) + r'", line (\d+)', str(e))]
    origin = next((origins[n] for n in reversed(lines) if n in origins), None)
    where = f' at File "{origin.filename}", line {origin.lineno}' if origin else ""
    code = f"\n    {origin.line}" if origin and origin.line else ""
    first = "\n".join(str(e).strip().splitlines()[:6])
    return GraphLoweringError(f"torch.export could not export graph {graph.name}{where}: "
                              f"{type(e).__name__}: {first}{code}\n"
                              f"Fix: rewrite the line above (torch's message says what it refused), or run the "
                              f"function with the default backend instead of exporting it.")


def _identifier(name: str) -> str:
    out = "".join(c if c.isalnum() or c == "_" else "_" for c in name)
    return out if out and not out[0].isdigit() else f"g_{out}"
