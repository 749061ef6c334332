"""An exported program that takes and returns the function's own structures, as `torch.export` of it would.

`exporting.export_graph` lowers a graph to a module computing its flat tensor
inputs to its flat tensor outputs. Here that module's class gets a `forward`
with the function's signature: it takes the arguments that hold tensors (a
tensor, a tuple, a dict, a namedtuple, a dataclass registered with pytree...),
picks their tensors in the graph's input order, runs the graph and packs its
outputs (constants put back) into the structure the function returned. So
`ep.module()(x)` returns what `f(x)` returns, and the program's in/out specs are
torch's pytree specs of those structures. Arguments traced as Python values
(`n=2`, an object) are fixed to the traced ones and are not inputs of the
program (torch.export, too, specialises a program on its Python arguments).
"""

from __future__ import annotations

import inspect
from typing import Any

from .. import nest
from ..errors import GraphLoweringError
from ..graph import Value
from .arguments import call_arguments
from .signatures import Identity, Literal, Structure, TensorSpec


def holds_tensors(t: Any) -> bool:
    if isinstance(t, TensorSpec):
        return True
    return isinstance(t, Structure) and any(holds_tensors(i) for i in t.items)


def tensor_leaves(t: Any, value: Any, out: list) -> None:
    """Append the tensors of `value` (of trace type `t`) in the graph's input order."""
    if isinstance(t, TensorSpec):
        out.append(value)
    elif isinstance(t, Structure):
        kids = dict(nest.children(value))
        for k, ct in zip(t.keys, t.items):
            tensor_leaves(ct, kids[k], out)


def value_of(t: Any, tensors: Any, like: Any, name: str) -> Any:
    """An argument value of trace type `t`: its tensors drawn from `tensors`, its Python values the traced ones;
    a container type other than list, tuple, dict or namedtuple is rebuilt like the example `like`."""
    if isinstance(t, TensorSpec):
        return next(tensors)
    if isinstance(t, Literal):
        return t.value
    if isinstance(t, Identity):
        return t.obj
    if not isinstance(t, Structure):
        return like
    kids = dict(nest.children(like)) if like is not None and nest.children(like) is not None else {}
    items = {k: value_of(ct, tensors, kids.get(k), f"{name}[{k!r}]") for k, ct in zip(t.keys, t.items)}
    if t.kind in (list, tuple):
        return t.kind(items[i] for i in range(len(t.keys)))
    if t.kind is dict:  # in the example's key order: the program's input spec is the caller's dict
        return {k: items[k] for k in like} if isinstance(like, dict) and set(like) == set(items) else dict(items)
    if like is not None:
        return nest.rebuild(like, items)
    if issubclass(t.kind, tuple) and hasattr(t.kind, "_fields"):
        return t.kind(**items)
    raise GraphLoweringError(f"cannot export with example inputs made from the trace types: argument {name} is a "
                             f"{t.kind.__name__}; pass example arguments to export()")


def structured_interface(cf: Any, bound: dict[str, Any] | None) -> Any:
    """The `interface` for `export_graph`: (module, flat example, flat dims) -> (module, args, kwargs, dims)."""
    if cf.effects is not None:
        raise GraphLoweringError(
            f"cannot export graph {cf.graph.name} with the function's structures: the function changes Python "
            f"objects (their new values are extra outputs of the graph), which a program returning the function's "
            f"result would drop. Fix: return those values, or export(flat=True) for the graph's flat outputs.")
    signature: inspect.Signature = cf._signature
    types = cf.arg_types
    params = [p for p in signature.parameters.values() if holds_tensors(types[p.name])]
    kept = {p.name for p in params}
    outputs = list(cf.graph.outputs)
    spec = None if cf._pack is None else nest.flatten_spec(cf.structured_outputs)[1]

    def pack(out: tuple) -> Any:
        it = iter(out)
        flat = [next(it) if isinstance(o, Value) else o for o in outputs]
        return flat[0] if spec is None else nest.pack_sequence_as(spec, flat)

    def interface(module: Any, example: list, dims: tuple | None) -> tuple:
        tensors = iter(example)
        values = {}
        for p in signature.parameters.values():
            like = bound.get(p.name) if bound is not None else None
            values[p.name] = value_of(types[p.name], tensors, like, p.name)
        reduced = inspect.Signature([p.replace(default=p.empty) for p in params])
        inner = type(module).forward

        def forward(self: Any, *args: Any, **kwargs: Any) -> Any:
            given = reduced.bind(*args, **kwargs).arguments
            flat: list = []
            for p in signature.parameters.values():
                if p.name in kept:
                    tensor_leaves(types[p.name], given[p.name], flat)
            return pack(inner(self, *flat))

        forward.__signature__ = reduced.replace(  # type: ignore[attr-defined]
            parameters=[inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD), *params])
        module.__class__ = type(type(module).__name__, (type(module),), {"forward": forward,
                                                                       "__module__": type(module).__module__})
        shapes = iter(dims) if dims is not None else None
        dyn = {p.name: _dims_like(types[p.name], values[p.name], shapes) for p in params} if shapes is not None \
            else None
        args, kwargs = call_arguments(reduced, values)
        return module, tuple(args), kwargs, dyn

    return interface


def _dims_like(t: Any, value: Any, shapes: Any) -> Any:
    """`value`'s structure with each tensor's dynamic-shape entry (from `shapes`, in input order), None elsewhere."""
    if isinstance(t, TensorSpec):
        return next(shapes)
    if not isinstance(t, Structure):
        return None
    kids = dict(nest.children(value))
    dims = {k: _dims_like(ct, kids[k], shapes) for k, ct in zip(t.keys, t.items)}
    return nest.rebuild(value, {k: dims.get(k) for k, _ in nest.children(value)})
