"""`ta.saved_model.load`: the saved functions back as callables, run by their exported programs, no source needed.

What comes back mirrors what was saved: the object's function attributes by
their names, those of submodules and attribute objects under their paths
(`loaded.blocks[0].encode`; a saved function itself: the loaded object is callable), each
dispatching a call to the saved concrete function whose argument types match;
`signatures`, a dict of callables; `variables`, the saved tensors by name (also
attributes where the name is an identifier). Every program reads and updates
those same tensors, so a Variable one function assigns is seen by all.
"""

from __future__ import annotations

import json
import os
from typing import Any

import torch

from ..function import user_facing
from . import specs


class LoadedFunction:
    """A saved ta.function: calls run the exported program of the concrete function the arguments match.

    Gradients flow through the programs of `torch.export` (`torch.cond` and
    `torch.while_loop` included); an AOTInductor package computes forward only
    and says so when asked for gradients.
    """

    def __init__(self, name: str, entries: list["_Entry"]) -> None:
        self.name = name
        self._entries = entries

    @user_facing
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        for entry in self._entries:
            try:
                bound = entry.signature.bind(*args, **kwargs)
            except TypeError:
                continue
            bound.apply_defaults()
            flat = specs.flatten_args(entry.params, bound.arguments)
            if flat is not None:
                return entry.run(flat)
        saved = "\n  ".join(e.describe() for e in self._entries)
        given = ", ".join([_short(a) for a in args] + [f"{k}={_short(v)}" for k, v in kwargs.items()])
        raise TypeError(f"loaded function {self.name!r}: no saved signature matches the arguments ({given}). "
                        f"Saved signatures:\n  {saved}")

    @property
    def concrete_signatures(self) -> list[str]:
        """The argument types of each saved concrete function."""
        return [e.describe() for e in self._entries]

    def __repr__(self) -> str:
        return f"<loaded ta.function {self.name}: " + " | ".join(self.concrete_signatures) + ">"


class _Entry:
    """One saved concrete function: its argument types, result layout, program and the variables it reads."""

    def __init__(self, meta: dict, export_dir: str, variables: dict[str, torch.Tensor], aoti: bool) -> None:
        self.params = meta["params"]
        self.signature = specs.signature_of(self.params)
        self.outputs = meta["outputs"]
        self.name = meta["name"]
        self.aoti = aoti
        if aoti:
            if "aoti" not in meta:
                raise FileNotFoundError(f"{export_dir} has no AOTInductor package for {self.name}: save it with "
                                        f"ta.saved_model.save(..., aot_compile=True)")
            from torch._inductor import aoti_load_package

            # Its loader's `run` (what C++ calls): the package's Python wrapper re-reads its pytree specs per call.
            run = aoti_load_package(os.path.join(export_dir, meta["aoti"])).loader.run
            self._fn = lambda *flat: run(list(flat))
            self._captures: list[torch.Tensor] = []
        else:
            self._fn = torch.export.load(os.path.join(export_dir, meta["program"])).module()
            self._captures = [variables[n] for n in meta["captures"]]

    def run(self, flat: list[torch.Tensor]) -> Any:
        if self.aoti and torch.is_grad_enabled() and any(t.requires_grad for t in flat):
            raise RuntimeError(f"{self.name}: an AOTInductor package computes forward only, and an input requires "
                               f"grad; load without aoti=True (the exported program supports autograd), or call "
                               f"under torch.no_grad()")
        out = self._fn(*flat, *self._captures)
        return specs.pack_outputs(self.outputs, tuple(out) if isinstance(out, (list, tuple)) else (out,))

    def describe(self) -> str:
        return specs.describe(self.params)


class LoadedObject:
    """A submodule or attribute object of the saved object that held ta.functions: its functions (and those
    of its own children) as attributes; `obj[0]` reads attribute "0" (a ModuleList's children)."""

    def __getitem__(self, key: Any) -> Any:
        try:
            return getattr(self, str(key))
        except AttributeError:
            raise KeyError(key) from None

    def __repr__(self) -> str:
        return "<loaded object>\n" + "\n".join(_describe_functions(self, "  "))


def _describe_functions(obj: Any, indent: str, path: str = "") -> list[str]:
    """`predict(x: float32[None, 3])`, one line per saved signature of each function under `obj`."""
    lines = []
    for name, value in sorted(vars(obj).items()):
        if isinstance(value, LoadedFunction):
            lines += [f"{indent}{path}{name}{sig}" for sig in value.concrete_signatures]
        elif isinstance(value, LoadedObject):
            lines += _describe_functions(value, indent, f"{path}{name}.")
    return lines


def _place(root: Any, path: str, fn: LoadedFunction) -> None:
    """Set `fn` at dotted `path` under `root`, making the LoadedObjects on the way."""
    *parents, name = path.split(".")
    obj = root
    for p in parents:
        child = getattr(obj, p, None)
        if child is None:
            child = LoadedObject()
            setattr(obj, p, child)
        obj = child
    setattr(obj, name, fn)


class Loaded:
    """What `ta.saved_model.load` returns (see the module docstring)."""

    def __init__(self, functions: dict[str, LoadedFunction], signatures: dict[str, LoadedFunction],
                 variables: dict[str, torch.Tensor]) -> None:
        self.signatures = signatures
        self.variables = variables
        self._call = functions.get("__call__")
        for name, fn in functions.items():
            if name != "__call__":
                _place(self, name, fn)

    def __repr__(self) -> str:
        lines = [f"  __call__{sig}" for sig in self._call.concrete_signatures] if self._call is not None else []
        lines += _describe_functions(self, "  ")
        lines += [f"  signatures[{name!r}]{fn.concrete_signatures[0]}" for name, fn in sorted(self.signatures.items())]
        return "<loaded saved model>\n" + "\n".join(lines)

    @user_facing
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._call is None:
            raise TypeError("the loaded object is not callable: the saved object was not a ta.function (its "
                            "functions are attributes: " + ", ".join(sorted(
                                k for k, v in vars(self).items() if isinstance(v, LoadedFunction))) + ")")
        return self._call(*args, **kwargs)


@user_facing
def load(export_dir: str | os.PathLike, aoti: bool = False) -> Loaded:
    """Load what `ta.saved_model.save` wrote; `aoti=True` runs the AOTInductor packages (saved with aot_compile)."""
    export_dir = os.fspath(export_dir)
    with open(os.path.join(export_dir, "saved_model.json")) as f:
        meta = json.load(f)
    variables = torch.load(os.path.join(export_dir, "variables.pt"), weights_only=True)
    functions = {name: LoadedFunction(name, [_Entry(e, export_dir, variables, aoti) for e in entries])
                 for name, entries in meta["functions"].items()}
    signatures = {}
    for sig_name, (attr, index) in meta["signatures"].items():
        signatures[sig_name] = LoadedFunction(sig_name, [functions[attr]._entries[index]])
    loaded = Loaded(functions, signatures, variables)
    for attr in meta.get("attributes", {}):
        if not hasattr(loaded, attr):
            setattr(loaded, attr, variables[attr])
    return loaded


def _short(x: Any) -> str:
    if isinstance(x, torch.Tensor):
        return f"Tensor(shape={tuple(x.shape)}, dtype={x.dtype})"
    r = repr(x)
    return r if len(r) < 60 else r[:57] + "..."
