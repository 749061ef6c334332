"""Call arguments: binding them canonically, checking them against trace types, making placeholders.

A call `f(x, scale=2.0)` is bound to the signature with defaults applied; each
argument's trace type (signatures.py) is checked against the ConcreteFunction's
(`collect_inputs` also gathers the tensor leaves the graph takes, in the same
depth-first order in which `placeholders_for` made them while tracing).
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import torch

from .. import nest
from ..errors import InvalidArgumentError
from ..tracing import GraphArray, Scope, Traced
from . import signatures as sig
from .signatures import ArraySpec, Identity, Literal, Structure, TensorSpec


def collect_inputs(t: Any, value: Any, path: str, out: list, fn_name: str) -> None:
    """Append the tensor leaves of `value` (checked against trace type `t`) to `out`."""
    if isinstance(t, TensorSpec):
        out.append(as_input_tensor(value, t, path, fn_name))
    elif isinstance(t, Structure):
        kids = nest.children(value)
        keys = tuple(k for k, _ in kids) if kids is not None else None
        if kids is None or keys != t.keys or (type(value) if not isinstance(value, dict) else dict) != t.kind or (
                t.context is not None and nest.context_key(value) != t.context):
            raise TypeError(f"{fn_name}: argument {path} must have the structure {t!r}, got {short_repr(value)}")
        for (k, child), ct in zip(kids, t.items):
            collect_inputs(ct, child, f"{path}[{k!r}]", out, fn_name)
    elif isinstance(t, Literal):
        if not (type(value) is type(t.value) and value == t.value):
            raise TypeError(f"{fn_name}: argument {path} was traced as {t!r}; can not cast {short_repr(value)} to it. "
                            f"Call the Function (not this ConcreteFunction) to trace the new value.")
    elif isinstance(t, Identity):
        if value is not t.obj:
            raise TypeError(f"{fn_name}: argument {path} was traced for the object {t!r}, got {short_repr(value)}")


def as_input_tensor(value: Any, spec: TensorSpec, path: str, fn_name: str) -> torch.Tensor:
    if isinstance(value, np.ndarray):
        value = torch.from_numpy(value)  # (shares the array's memory: an in-place update reaches the caller's array)
    elif isinstance(spec, ArraySpec):
        raise TypeError(f"{fn_name}: argument {path} was traced for a NumPy array ({spec!r}), got "
                        f"{short_repr(value)}: call the Function, which traces again for it")
    elif isinstance(value, (int, float, bool, list)):
        check_python_numbers(value, spec, path, fn_name)
        try:
            value = torch.tensor(value, dtype=spec.dtype)
        except (ValueError, TypeError, RuntimeError) as e:  # ragged, not numbers, or out of the dtype's range
            raise TypeError(f"{fn_name}: argument {path} expected a tensor matching {spec!r}, got "
                            f"{short_repr(value)}, which is not a tensor: {e}") from None
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{fn_name}: argument {path} expected a tensor matching {spec!r}, got {short_repr(value)}")
    if not spec.is_compatible_with(value):
        # TensorFlow's InvalidArgumentError for a ConcreteFunction fed a tensor of the wrong type (a ConcreteFunction never retraces).
        raise InvalidArgumentError(f"{fn_name}: argument {path} expected {spec!r}, got a tensor with shape "
                        f"{tuple(value.shape)}, dtype {value.dtype}, device {value.device}")
    return value


def check_python_numbers(value: Any, spec: TensorSpec, path: str, fn_name: str) -> None:
    """Raise unless every Python number in `value` converts to `spec.dtype` exactly (TensorFlow's rule).

    `torch.tensor(2.7, dtype=torch.int64)` truncates, `torch.tensor(-1, dtype=torch.uint8)` wraps and
    `torch.tensor(True, dtype=torch.float32)` makes 1.0: the function would silently compute on a
    different number than the caller passed, so a float for an integer spec, a bool for a numeric
    spec (or a number for a bool spec) is a TypeError, and an integer outside the dtype's range a
    ValueError. Ints are accepted by float and complex specs, floats by complex ones.
    """
    dtype = spec.dtype
    if dtype is None:
        return
    for x in _python_leaves(value):
        if dtype is torch.bool:
            ok = isinstance(x, bool)
        elif isinstance(x, bool):
            ok = False
        elif dtype.is_complex:
            ok = isinstance(x, (int, float, complex))
        elif dtype.is_floating_point:
            ok = isinstance(x, (int, float))
        else:
            ok = isinstance(x, int)
            if ok and not torch.iinfo(dtype).min <= x <= torch.iinfo(dtype).max:
                info = torch.iinfo(dtype)
                raise ValueError(f"{fn_name}: argument {path} expected {spec!r}, got {short_repr(value)}: "
                                 f"{x} is out of the range of {dtype} [{info.min}, {info.max}]")
        if not ok:
            raise TypeError(f"{fn_name}: argument {path} expected {spec!r}, got {short_repr(value)}: can not "
                            f"convert the Python {type(x).__name__} {x!r} to {dtype} without changing it. Pass a "
                            f"tensor of that dtype, or a Python value of the matching kind.")


def _python_leaves(value: Any):
    if isinstance(value, (list, tuple)):
        for v in value:
            yield from _python_leaves(v)
    elif isinstance(value, (bool, int, float, complex)):
        yield value


def short_repr(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"Tensor(shape={tuple(value.shape)}, dtype={value.dtype}, device={value.device})"
    r = repr(value)
    return r if len(r) < 80 else r[:77] + "..."


def bind_arguments(signature: inspect.Signature, args: tuple, kwargs: dict, fn_name: str) -> dict[str, Any]:
    try:
        b = signature.bind(*args, **kwargs)
    except TypeError as e:
        shown = ", ".join(short_repr(a) for a in args)
        shown_kw = ", ".join(f"{k}={short_repr(v)}" for k, v in kwargs.items())
        raise TypeError(f"Binding inputs to {fn_name} failed: {e}. Received args: ({shown}) and kwargs: "
                        f"{{{shown_kw}}} for signature: {signature}.") from None
    b.apply_defaults()
    return dict(b.arguments)


def iter_type_leaves(types_: Any):
    for t in types_:
        if isinstance(t, Structure):
            yield from iter_type_leaves(t.items)
        else:
            yield t


def resolve_device(t: Any) -> Any:
    if isinstance(t, TensorSpec) and t.device is None:
        return TensorSpec(t.shape, t.dtype, t.name, torch.get_default_device())
    if isinstance(t, Structure):
        return Structure(t.kind, t.keys, tuple(resolve_device(i) for i in t.items), t.context)
    return t


def check_against_spec(spec: Any, value: Any, name: str, fn_name: str, signature: inspect.Signature) -> Any:
    if isinstance(spec, TensorSpec):
        if isinstance(value, TensorSpec):
            t = value
        else:
            why = ""
            if isinstance(value, np.ndarray):
                value = torch.from_numpy(value)
            elif isinstance(value, (list, int, float, bool)):
                check_python_numbers(value, spec, repr(name), fn_name)
                try:
                    value = torch.as_tensor(value, dtype=spec.dtype)
                except (TypeError, ValueError, RuntimeError) as e:  # e.g. 300 for uint8: out of its range
                    why = f", which does not convert to {spec.dtype} ({e})"
            if not isinstance(value, torch.Tensor):
                raise TypeError(f"Binding inputs to {fn_name} failed: argument {name!r} expected a tensor matching "
                                f"{spec!r}, received {short_repr(value)}{why}. Signature: {signature}.")
            t = TensorSpec.from_tensor(value)
        if not sig.is_subtype(TensorSpec(t.shape, t.dtype), TensorSpec(spec.shape, spec.dtype)):
            raise TypeError(f"Binding inputs to {fn_name} failed: argument {name!r} can not be cast: expected "
                            f"{spec!r}, received {describe_value(value)}. Signature: {signature}.")
        return TensorSpec(spec.shape, spec.dtype, spec.name or name,
                          t.device if t.device is not None else torch.get_default_device())
    kids_spec = nest.children(spec)
    kids_val = nest.children(value)
    if kids_spec is None or kids_val is None or [k for k, _ in kids_spec] != [k for k, _ in kids_val]:
        raise TypeError(f"Binding inputs to {fn_name} failed: argument {name!r} must have the structure of "
                        f"{spec!r}, received {short_repr(value)}")
    items = tuple(check_against_spec(s, v, f"{name}[{k!r}]", fn_name, signature)
                  for (k, s), (_, v) in zip(kids_spec, kids_val))
    return Structure(dict if isinstance(spec, dict) else type(spec), tuple(k for k, _ in kids_spec), items,
                     nest.context_key(spec))


def describe_value(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {tuple(value.shape)} and dtype {value.dtype}"
    return short_repr(value)


def placeholders_for(state: Scope, t: Any, value: Any, name: str) -> Any:
    """The argument value seen by the traced Python code: graph tensors for the tensor leaves.

    A None dim of a TensorSpec becomes a size symbol, backed by the size of `value` when it is the
    call's tensor (the first call of an input_signature, a generalised reduce_retracing trace).
    """
    if isinstance(t, ArraySpec):
        return GraphArray(placeholders_for(state, TensorSpec(t.shape, t.dtype, t.name, t.device), value, name),
                          t.name or name)
    if isinstance(t, TensorSpec):
        if t.shape is None:
            raise TypeError(f"argument {name!r}: TensorSpec(shape=None) (unknown rank) cannot be traced: the graph "
                            f"needs the rank of each tensor. Give the rank, with None for the sizes that vary: "
                            f"e.g. ta.TensorSpec([None, None], {t.dtype})")
        hints = tuple(value.shape) if isinstance(value, torch.Tensor) and value.dim() == len(t.shape) else None
        if hints is None and state.trace.request.spec_hint is not None:
            hints = tuple(state.trace.request.spec_hint if s is None else s for s in t.shape)
        real = isinstance(value, torch.Tensor) and not isinstance(value, Traced)
        grad_hint = (value.requires_grad, value.is_leaf) if real else None
        return state.placeholder(t.name or name, t.dtype, t.shape, t.device, hints=hints, grad_hint=grad_hint)
    if isinstance(t, Structure):
        kids = dict(nest.children(value)) if nest.children(value) is not None else {}
        items = {k: placeholders_for(state, ct, kids.get(k), f"{name}_{k}") for k, ct in zip(t.keys, t.items)}
        if t.kind is dict:
            return {k: items[k] for k in (value.keys() if isinstance(value, dict) else t.keys)}
        if t.kind in (list, tuple):
            return t.kind(items[i] for i in range(len(t.keys)))
        return nest.rebuild(value, items)
    if isinstance(t, Literal):
        return t.value
    if isinstance(t, Identity):
        return t.obj
    return value


def rebuild_call(signature: inspect.Signature, values: dict[str, Any]) -> tuple[list, dict]:
    """(args, kwargs) calling the function with `values` as a user would: the parameters without a default
    by position, those with one by keyword (unless a `*args` after them needs them by position). A decorator
    that reads the call's keywords (transformers' `merge_with_config_defaults`) sees what eager calls give it."""
    return call_arguments(signature, values, defaults_by_keyword=True)


def call_arguments(signature: inspect.Signature, values: dict[str, Any],
                   defaults_by_keyword: bool = False) -> tuple[list, dict]:
    """(args, kwargs) that bind to `values` (a value per parameter name): positional parameters by position,
    `*args` spread, keyword-only ones and `**kwargs` by keyword (`defaults_by_keyword`: a positional parameter
    with a default by keyword too, unless a `*args` needs it by position)."""
    args: list = []
    kwargs: dict = {}
    params = signature.parameters.values()
    by_keyword = defaults_by_keyword and not any(p.kind is p.VAR_POSITIONAL for p in params)
    for p in params:
        v = values[p.name]
        if p.kind is p.VAR_POSITIONAL:
            args.extend(v)
        elif p.kind is p.VAR_KEYWORD:
            kwargs.update(v)
        elif p.kind is p.KEYWORD_ONLY or (by_keyword and p.kind is p.POSITIONAL_OR_KEYWORD
                                          and p.default is not p.empty):
            kwargs[p.name] = v
        else:
            args.append(v)
    return args, kwargs
