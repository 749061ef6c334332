"""`ta.saved_model.save`: every concrete function of an object as an exported program, its tensors saved once.

The directory holds::

    saved_model.json      what was saved: per attribute, its concrete functions (arguments, results, the
                          program file, the variables it reads); the signatures; the variable names
    variables.pt          every tensor the functions read (weights, Variables, buffers), once, by name
    programs/NAME_K.pt2   one `torch.export.save`d program per concrete function; it takes the captured
                          tensors as inputs after the arguments (and updates the Variables it assigns)
    aoti/NAME_K.pt2       with aot_compile=True: the same program compiled by AOTInductor, weights inside

Programs that read the same tensor get the same `variables.pt` entry, so a
Variable one signature assigns is seen by the others after loading, as in
TensorFlow.
"""

from __future__ import annotations

import json
import os
import re
import types
from typing import Any

import torch

from ..exporting import export_graph
from ..function import BoundFunction, ConcreteFunction, Function, user_facing
from ..naming import Namer
from ..state import Variable
from . import specs

FORMAT_VERSION = 1


@user_facing
def save(obj: Any, export_dir: str | os.PathLike, signatures: Any = None, aot_compile: bool = False) -> None:
    """Save the ta.functions of `obj` to `export_dir` so that `ta.saved_model.load` runs them without the source.

    Args:
        obj: a `ta.function` (or a ConcreteFunction), or an object (an `nn.Module`, any object) whose attributes
            include ta.functions; those of its submodules and attribute objects are saved under their paths
            (`blocks.0.encode`). Every concrete function is saved: those already traced, and for a function
            with an `input_signature` the one it fixes (traced now if needed).
        export_dir: the directory to write (created if needed).
        signatures: a ta.function or ConcreteFunction (saved as "serving_default"), or a dict of them by name.
            By default, the one function of `obj` that has an input_signature, if there is exactly one.
        aot_compile: also compile each program with AOTInductor into `aoti/` (a package C++ can run with
            `torch::inductor::AOTIModelPackageLoader`); slow (tens of seconds per function).

    Raises:
        GraphLoweringError: a function cannot be exported (see `ConcreteFunction.export`).
        TypeError: `obj` has no ta.function, or a function takes arguments a saved model cannot hold.
    """
    found = collect_functions(obj)
    functions = {path: cfs for path, (_, cfs) in found.items()}
    if not functions:
        raise TypeError(f"ta.saved_model.save: {type(obj).__name__} object has no ta.function (nor traced concrete "
                        f"function) among its attributes: nothing to save")
    os.makedirs(os.path.join(export_dir, "programs"), exist_ok=True)
    names = _variable_names(obj)
    variables: dict[str, torch.Tensor] = {}
    meta: dict[str, Any] = {"format": FORMAT_VERSION, "kind": "function" if _is_function(obj) else "object",
                            "functions": {}, "signatures": {}}
    for attr, cfs in functions.items():
        entries = []
        for k, cf in enumerate(cfs):
            entries.append(_save_concrete(cf, attr, k, export_dir, names, variables, aot_compile))
        meta["functions"][attr] = entries
    meta["signatures"] = _signatures(found, signatures)
    meta["variables"] = list(variables)
    meta["attributes"] = {n: n for n in variables if n.isidentifier() and n not in functions}
    torch.save(variables, os.path.join(export_dir, "variables.pt"))
    with open(os.path.join(export_dir, "saved_model.json"), "w") as f:
        json.dump(meta, f, indent=1)


def collect_functions(obj: Any) -> dict[str, tuple[Any, list[ConcreteFunction]]]:
    """{path: (the function, its concrete functions)}; a function itself is saved as "__call__". The functions
    of submodules and of objects held in attributes are found too, under dotted paths (`blocks.0.encode`): see
    `_walk`."""
    if _is_function(obj):
        return {"__call__": (obj, _concretes(obj))}
    out: dict[str, tuple[Any, list[ConcreteFunction]]] = {}
    for prefix, o in _walk(obj):
        attrs = dict(vars(o)) if hasattr(o, "__dict__") else {}
        for name in dir(type(o)):
            if isinstance(getattr(type(o), name, None), Function):
                attrs[name] = getattr(o, name)  # a decorated method: the instance's own Function
        for name in sorted(attrs):
            value = attrs[name]
            if _is_function(value):
                cfs = _concretes(value)
                if cfs:
                    out[prefix + name] = (value, cfs)
    return out


def _walk(obj: Any) -> list[tuple[str, Any]]:
    """(path prefix, object) for `obj` ("") and every object reachable from it through submodules
    (`named_children`) and attributes holding objects of user classes, each once (cycles are cut); the
    prefix of `obj.blocks[0]` is "blocks.0."."""
    seen: set[int] = set()
    out: list[tuple[str, Any]] = []

    def visit(o: Any, prefix: str) -> None:
        if id(o) in seen:
            return
        seen.add(id(o))
        out.append((prefix, o))
        children = dict(o.named_children()) if isinstance(o, torch.nn.Module) else {}
        for name, value in (vars(o).items() if hasattr(o, "__dict__") else ()):
            if not name.startswith("_") and name not in children and _holds_functions(value):
                children[name] = value
        for name in sorted(children, key=lambda n: (not n.isdigit(), int(n) if n.isdigit() else 0, n)):
            visit(children[name], f"{prefix}{name}.")

    visit(obj, "")
    return out


def _holds_functions(value: Any) -> bool:
    """Whether an attribute's value is an object to look into for ta.functions: an instance of a class with
    instance attributes, not a tensor, function, class or Python module."""
    return hasattr(value, "__dict__") and not isinstance(value, (
        torch.Tensor, type, types.ModuleType, types.FunctionType, types.MethodType, Function, BoundFunction,
        ConcreteFunction, Variable))


def _is_function(x: Any) -> bool:
    return isinstance(x, (Function, BoundFunction, ConcreteFunction))


def _concretes(fn: Any) -> list[ConcreteFunction]:
    if isinstance(fn, ConcreteFunction):
        return [fn]
    cfs = []
    if fn.input_signature is not None:
        cfs.append(fn.get_concrete_function())
    cfs += [cf for cf in fn.concrete_functions if all(cf is not c for c in cfs)]
    return cfs


def _variable_names(obj: Any) -> dict[int, str]:
    """Names for the tensors `obj` holds: state_dict keys of a module, attribute paths of Variables and
    tensors (`tools.scale_table`), through the objects `_walk` reaches."""
    names: dict[int, str] = {}
    if isinstance(obj, torch.nn.Module):
        for key, t in obj.state_dict(keep_vars=True).items():
            names.setdefault(id(t), key)
    for prefix, o in _walk(obj):
        for key, value in (vars(o).items() if hasattr(o, "__dict__") else ()):
            if isinstance(value, Variable):
                names.setdefault(id(value._tensor), prefix + key)
            elif isinstance(value, torch.Tensor):
                names.setdefault(id(value), prefix + key)
    return names


def _save_concrete(cf: ConcreteFunction, attr: str, k: int, export_dir: Any, names: dict[int, str],
                   variables: dict[str, torch.Tensor], aot_compile: bool) -> dict:
    stem = f"{attr.strip('_') or 'call'}_{k}"
    params = specs.encode_parameters(cf._signature, cf.arg_types, _function_name(cf))
    result = cf.structured_outputs
    single = cf._pack is None
    outputs = specs.encode_outputs(result, list(cf.graph.outputs), single)
    captures = []
    for v, t in cf.graph.captures:
        name = names.get(id(t))
        if name is None:
            name = names[id(t)] = _fresh(v.name, variables)
        variables.setdefault(name, t.detach())
        captures.append(name)
    program = export_graph(cf.graph, captures_as_inputs=True, autocast=cf.autocast)
    path = os.path.join("programs", f"{stem}.pt2")
    torch.export.save(program, os.path.join(export_dir, path))
    entry = {"program": path, "params": params, "outputs": outputs, "captures": captures, "name": cf.name}
    if aot_compile:
        from torch._inductor import aoti_compile_and_package

        os.makedirs(os.path.join(export_dir, "aoti"), exist_ok=True)
        entry["aoti"] = os.path.join("aoti", f"{stem}.pt2")
        aoti_compile_and_package(cf.export(flat=True), package_path=os.path.join(export_dir, entry["aoti"]))
    return entry


def _function_name(cf: ConcreteFunction) -> str:
    """The user's name of the function `cf` traces (`predict` of `__inference_predict_3`)."""
    return re.sub(r"^__inference_(.*)_\d+$", r"\1", cf.name)


def _fresh(base: str, taken: dict[str, Any]) -> str:
    return Namer(clashes=taken.__contains__).new_symbol(base)


def _signatures(found: dict[str, tuple[Any, list[ConcreteFunction]]], signatures: Any) -> dict[str, list]:
    """{signature name: [attribute path, index of its concrete function]}."""
    if signatures is None:
        candidates = [a for a, (fn, _) in found.items() if _declared(fn)]
        return {"serving_default": [candidates[0], 0]} if len(candidates) == 1 else {}
    if not isinstance(signatures, dict):
        signatures = {"serving_default": signatures}
    out = {}
    for name, fn in signatures.items():
        cf = fn if isinstance(fn, ConcreteFunction) else _concretes(fn)[0]
        where = next(([a, i] for a, (_, cfs) in found.items() for i, c in enumerate(cfs) if c is cf), None)
        if where is None:
            raise TypeError(f"ta.saved_model.save: signature {name!r} is not one of the functions of the saved "
                            f"object (signatures name functions that are its attributes)")
        out[name] = where
    return out


def _declared(fn: Any) -> bool:
    """Whether a saved function was declared with an input_signature."""
    return not isinstance(fn, ConcreteFunction) and fn.input_signature is not None
