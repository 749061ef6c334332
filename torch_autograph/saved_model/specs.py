"""What a saved function's arguments and results look like, as JSON: written by `save`, matched by `load`.

A concrete function's trace types (`TensorSpec`, literals, lists, tuples and
dicts of them) are encoded per parameter::

    {"name": "x", "kind": "POSITIONAL_OR_KEYWORD",
     "type": {"tensor": {"shape": [null, 3], "dtype": "float32"}}}

and its result as a template (containers with `{"leaf": null}` leaves) plus one
entry per flat output: `{"value": "tensor"}`, `{"value": "number"}` (a run-time
Python number, returned as a 0-d tensor by the program) or `{"constant": 2}`.
Nothing in this form needs the function's source to be read back.
"""

from __future__ import annotations

import collections
import inspect
from typing import Any

import torch

from .. import nest
from ..function import Identity, Literal, Structure
from ..graph import TensorSpec, Value, ValueKind

_JSON_SCALARS = (bool, int, float, str, type(None))


class UnsavableError(TypeError):
    """A function's arguments or results have a part that a saved model cannot hold without its source."""


def encode_type(t: Any, where: str) -> dict:
    if isinstance(t, TensorSpec):
        return {"tensor": {"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", "")}}
    if isinstance(t, Literal):
        if not isinstance(t.value, _JSON_SCALARS):
            raise UnsavableError(f"{where} was traced with the Python value {t.value!r}, which cannot be saved")
        return {"literal": t.value}
    if isinstance(t, Structure):
        if t.kind not in (list, tuple, dict):
            raise UnsavableError(f"{where} is a {getattr(t.kind, '__name__', t.kind)}: a saved function takes "
                                 f"tensors, Python numbers and strings, and lists, tuples and dicts of them")
        return {"structure": t.kind.__name__, "keys": list(t.keys) if t.kind is dict else None,
                "items": [encode_type(x, f"{where}[{k!r}]") for k, x in zip(t.keys, t.items)]}
    if isinstance(t, Identity):
        raise UnsavableError(f"{where} was traced for the object {t!r}, which a saved model cannot hold: pass "
                             f"tensors (or save the object's ta.functions themselves)")
    raise UnsavableError(f"{where} has the trace type {t!r}, which cannot be saved")


def encode_parameters(signature: inspect.Signature, arg_types: dict[str, Any], fn_name: str) -> list[dict]:
    out = []
    for p in signature.parameters.values():
        entry = {"name": p.name, "kind": p.kind.name, "type": encode_type(arg_types[p.name], f"{fn_name}: {p.name}")}
        if p.default is not p.empty and isinstance(p.default, _JSON_SCALARS):
            entry["default"] = p.default
        out.append(entry)
    return out


def encode_outputs(result: Any, outputs: list[Any], single: bool) -> dict:
    """The result template and what each flat graph output is (see the module docstring)."""
    flat = []
    for o in outputs:
        if isinstance(o, Value):
            flat.append({"value": "number" if o.kind is ValueKind.SCALAR else "tensor"})
        elif isinstance(o, _JSON_SCALARS):
            flat.append({"constant": o})
        else:
            raise UnsavableError(f"the function returns the Python value {o!r}, which cannot be saved")
    return {"single": single, "template": None if single else _template(result), "flat": flat}


def _template(x: Any) -> Any:
    """The result's structure as JSON; a namedtuple keeps its name and fields (loaded as a namedtuple of those)."""
    t = type(x)
    if t is dict:
        return {"dict": [[k, _template(v)] for k, v in x.items()]}
    if t in (list, tuple):
        return {"list" if t is list else "tuple": [_template(v) for v in x]}
    if isinstance(x, tuple) and hasattr(t, "_fields"):
        return {"namedtuple": t.__name__, "fields": list(t._fields), "tuple": [_template(v) for v in x]}
    if nest.is_structure(x):
        raise UnsavableError(f"the function returns a {t.__qualname__}, a structure a saved model cannot rebuild "
                             f"without its source: return a tuple, list, dict or namedtuple of tensors")
    return {"leaf": None}


# ----- loading -------------------------------------------------------------------------------------------
def signature_of(params: list[dict]) -> inspect.Signature:
    return inspect.Signature([inspect.Parameter(p["name"], getattr(inspect.Parameter, p["kind"]),
                                                default=p.get("default", inspect.Parameter.empty))
                              for p in params])


def flatten_args(params: list[dict], bound: dict[str, Any]) -> list[torch.Tensor] | None:
    """The tensor leaves of `bound` in the program's input order, or None if they do not fit these types."""
    out: list[torch.Tensor] = []
    for p in params:
        if p["name"] not in bound or not _flatten(p["type"], bound[p["name"]], out):
            return None
    return out


def _flatten(t: dict, value: Any, out: list) -> bool:
    if "tensor" in t:
        spec = t["tensor"]
        if isinstance(value, (int, float, bool)):
            value = torch.tensor(value, dtype=getattr(torch, spec["dtype"]))
        if not isinstance(value, torch.Tensor) or str(value.dtype).replace("torch.", "") != spec["dtype"]:
            return False
        if value.dim() != len(spec["shape"]) or any(d is not None and d != n for d, n in zip(spec["shape"],
                                                                                            value.shape)):
            return False
        out.append(value)
        return True
    if "literal" in t:
        return type(value) is type(t["literal"]) and value == t["literal"]
    kind = t["structure"]
    if kind == "dict":
        if not isinstance(value, dict) or list(value) != t["keys"]:
            return False
        return all(_flatten(it, value[k], out) for k, it in zip(t["keys"], t["items"]))
    if type(value) is not {"list": list, "tuple": tuple}[kind] or len(value) != len(t["items"]):
        return False
    return all(_flatten(it, v, out) for it, v in zip(t["items"], value))


def describe(params: list[dict]) -> str:
    return "(" + ", ".join(f"{p['name']}: {_describe(p['type'])}" for p in params) + ")"


def _describe(t: dict) -> str:
    if "tensor" in t:
        shape = ", ".join("None" if d is None else str(d) for d in t["tensor"]["shape"])
        return f"{t['tensor']['dtype']}[{shape}]"
    if "literal" in t:
        return repr(t["literal"])
    inner = ", ".join(_describe(i) for i in t["items"])
    return {"list": f"[{inner}]", "tuple": f"({inner})", "dict": f"{{{inner}}}"}[t["structure"]]


def pack_outputs(spec: dict, program_outputs: tuple) -> Any:
    values = iter(program_outputs)
    flat = []
    for entry in spec["flat"]:
        if "constant" in entry:
            flat.append(entry["constant"])
        else:
            v = next(values)
            flat.append(v.item() if entry["value"] == "number" else v)
    if spec["single"]:
        return flat[0] if flat else None
    return nest.pack_sequence_as(_structure(spec["template"]), flat)


def _structure(t: Any) -> Any:
    """The result's structure with None leaves (what `nest` packs the flat outputs into, in its order)."""
    if "leaf" in t:
        return None
    if "dict" in t:
        return {k: _structure(v) for k, v in t["dict"]}
    items = [_structure(v) for v in t.get("list", t.get("tuple"))]
    if "namedtuple" in t:
        return collections.namedtuple(t["namedtuple"], t["fields"])(*items)
    return items if "list" in t else tuple(items)
