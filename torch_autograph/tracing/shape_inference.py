"""Output metadata of an op, found by running it on meta tensors behind a memo cache.

Unknown sizes (None dims, run-time Python ints) are replaced by a sentinel
size; the op runs twice with two different sentinels and every output dim that
differs between the runs is unknown (None). A run-time number computed from
sizes (`x.size(0) * 3`) remembers its value in each run (`Value.stand_ins`),
so that it agrees with the sentinel dims it came from (51 beside a dim of 17). Ops whose output shape depends on
the data (nonzero, unique, boolean masks) cannot run on meta; they run once on
small real CPU tensors filled with zeros and once filled with varied data, and
dims that differ are unknown. The memo makes a repeated op cost about 1 µs.
"""

from __future__ import annotations

import operator
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Callable

import torch

from ..graph import Value, ValueKind, iter_values

_SENTINELS = (17, 19)
_SCALAR_TYPES = {torch.bool: bool, torch.float64: float, torch.int64: int}
_SCALAR_DTYPES = {bool: torch.bool, float: torch.float64, int: torch.int64}


@dataclass(frozen=True)
class Meta:
    """Inferred metadata of one output: like a Value without a name."""

    dtype: torch.dtype
    shape: tuple[int | None, ...] | None
    device: torch.device | None
    kind: ValueKind = ValueKind.TENSOR
    stand_ins: tuple | None = None  # a SCALAR's value in each sentinel run (see `Value.stand_ins`)


class UnknownOutputCount(Exception):
    """An op returned a different number of tensors in the sentinel runs (e.g. `x.split(1)` of a None dim)."""


class DataDependentValue(Exception):
    """An op returned a Python value that depends on tensor data (e.g. torch.equal)."""


class ShapeInference:
    """Infers output metadata; owns the memo cache, which keeps the `max_entries` most recently used results."""

    def __init__(self, max_entries: int = 4096) -> None:
        self._memo: OrderedDict[Any, Any] = OrderedDict()
        self._max_entries = max_entries
        self._lock = threading.Lock()

    def infer(self, func: Callable, args: tuple, kwargs: dict, device_hint: torch.device | None) -> Any:
        """The output structure of `func(*args, **kwargs)` with `Meta` leaves.

        `args`/`kwargs` hold `Value`s where graph values go. Non-tensor outputs
        that depend only on metadata come back as Python values. `device_hint`
        is the device of outputs of ops with no tensor input and no `device=`
        (factories such as `torch.zeros(3)`): the default device.

        Raises:
            DataDependentValue: the op returns a Python value computed from data.
            Exception: whatever torch raises for invalid arguments (a user error).
        """
        key = _memo_key(func, args, kwargs, device_hint)
        if key is not None:
            hit = self._memo.get(key)
            if hit is not None:
                return hit
        out = self._infer_uncached(func, args, kwargs, device_hint)
        if key is not None:
            with self._lock:
                self._memo[key] = out
                if len(self._memo) > self._max_entries:
                    self._memo.popitem(last=False)
        return out

    def _infer_uncached(self, func: Callable, args: tuple, kwargs: dict, device_hint: torch.device | None) -> Any:
        values = [v for v in iter_values((args, kwargs))]
        unknown = any(v.kind in (ValueKind.SCALAR, ValueKind.LIST) or v.shape is None or None in v.shape
                      for v in values)
        unknown_rank = any(v.kind is ValueKind.TENSOR and v.shape is None for v in values)
        device = _output_device(func, args, kwargs, values, device_hint)
        scalars = any(v.kind is ValueKind.SCALAR for v in values)
        try:
            try:
                runs = [_run(func, args, kwargs, r, "meta") for r in range(2 if unknown else 1)]
            except (IndexError, RuntimeError, ValueError) as first_error:
                if not scalars:
                    raise
                # A run-time scalar with no stand-ins (a loop counter) used as an index: retry with
                # small numbers for it; the first error is the one that describes the user's call.
                try:
                    runs = [_run(func, args, kwargs, r, "meta", scalar) for r, scalar in enumerate((0, 1))]
                except (IndexError, RuntimeError, ValueError) as retry_error:
                    if isinstance(retry_error, RuntimeError) and _looks_data_dependent(retry_error):
                        raise
                    raise first_error from None
        except (NotImplementedError, RuntimeError) as meta_error:
            if not _looks_data_dependent(meta_error):
                raise
            runs = _run_on_real_data(func, args, kwargs)
            return _merge(runs, device, data_dependent=True, unknown_rank=unknown_rank)
        return _merge(runs, device, data_dependent=False, unknown_rank=unknown_rank, unknown=unknown)


def _looks_data_dependent(err: Exception) -> bool:
    text = str(err)
    return isinstance(err, NotImplementedError) or any(
        s in text for s in ("meta", "data-dependent", "Meta", "item()", "cannot be called on", "data dependent"))


def _memo_key(func: Callable, args: tuple, kwargs: dict, device_hint: torch.device | None) -> Any:
    try:
        key = (func, _key_of(args), _key_of(kwargs), device_hint)
        hash(key)
        return key
    except TypeError:
        return None


def _key_of(obj: Any) -> Any:
    if isinstance(obj, Value):
        return (obj.kind, obj.dtype, obj.shape, obj.device, obj.stand_ins)
    if isinstance(obj, (list, tuple)):
        return (type(obj), tuple(_key_of(x) for x in obj))
    if isinstance(obj, dict):
        return (dict, tuple((k, _key_of(v)) for k, v in obj.items()))
    if isinstance(obj, slice):
        return (slice, _key_of(obj.start), _key_of(obj.stop), _key_of(obj.step))
    if isinstance(obj, float) and obj != obj:
        return (float, "nan")
    return (type(obj), obj)


def _materialize(obj: Any, run: int, device: str, fill: str | None = None, scalar: int | None = None) -> Any:
    """`obj` with each Value replaced by a stand-in for shape inference's run number `run`."""
    sentinel = _SENTINELS[run]
    if isinstance(obj, Value):
        if obj.kind is ValueKind.SCALAR:
            if obj.stand_ins is not None:
                return obj.stand_ins[run]
            return _SCALAR_TYPES.get(obj.dtype, int)(sentinel if scalar is None else scalar)
        if obj.kind is ValueKind.LIST:
            if obj.dtype is None:
                return []
            elem = Value(obj.name, obj.dtype, obj.shape, obj.device)
            return [_materialize(elem, run, device, fill, scalar) for _ in range(sentinel)]
        shape = tuple(sentinel if d is None else d for d in (obj.shape if obj.shape is not None else (sentinel,)))
        t = torch.zeros(shape, dtype=obj.dtype, device=device)
        if fill == "large" and obj.dtype != torch.bool:
            t = torch.full(shape, sentinel, dtype=obj.dtype)
        elif fill == "varied":
            n = t.numel()
            if obj.dtype == torch.bool:
                t = (torch.arange(n) % 2 == 0).reshape(shape)
            else:
                t = (torch.arange(n) % 7 + 1).reshape(shape).to(obj.dtype)
        return t
    if isinstance(obj, (list, tuple)):
        items = [_materialize(x, run, device, fill, scalar) for x in obj]
        return type(obj)(items) if not hasattr(obj, "_fields") else type(obj)(*items)
    if isinstance(obj, dict):
        return {k: _materialize(v, run, device, fill, scalar) for k, v in obj.items()}
    if isinstance(obj, slice):
        return slice(*(_materialize(x, run, device, fill, scalar) for x in (obj.start, obj.stop, obj.step)))
    return obj


def _strip_device(func: Callable, args: tuple, kwargs: dict) -> tuple[tuple, dict]:
    """Keep factories and `.to(...)` on meta: the real device is tracked separately."""
    if "device" in kwargs:
        kwargs = {**kwargs, "device": "meta"}
    if func in (torch.Tensor.to,) and len(args) > 1 and isinstance(args[1], (str, torch.device)):
        args = (args[0], "meta") + tuple(args[2:])
    if func in (torch.Tensor.cuda, torch.Tensor.cpu):
        return (args[0],), {}
    return args, kwargs


def _run(func: Callable, args: tuple, kwargs: dict, run: int, device: str, scalar: int | None = None) -> Any:
    a, k = _strip_device(func, _materialize(args, run, device, None, scalar),
                         _materialize(kwargs, run, device, None, scalar))
    if func in (torch.Tensor.cuda, torch.Tensor.cpu):
        return a[0].clone()
    if device == "meta" and "device" not in k and not any(v.kind is ValueKind.TENSOR for v in iter_values((args, kwargs))):
        # A factory (torch.zeros(n), torch.randn(3)): on the default device it would allocate real memory
        # and draw from the global generator while tracing, shifting every later random number.
        try:
            return func(*a, **k, device="meta")
        except TypeError:
            pass  # no `device` argument: not a factory
    return func(*a, **k)


def _run_on_real_data(func: Callable, args: tuple, kwargs: dict) -> list:
    with torch.random.fork_rng(devices=[]):
        runs, error = [], None
        # Two runs on different data tell which output dims depend on the data. Some fills are
        # invalid for some ops (torch.arange(1, n, 2) with n = 0), so a third fill stands by.
        for fill in (None, "varied", "large"):
            a = _materialize(args, 0, "cpu", fill)
            k = _materialize(kwargs, 0, "cpu", fill)
            if "device" in k:
                k["device"] = "cpu"
            try:
                runs.append(func(*a, **k))
            except (RuntimeError, ValueError, IndexError) as e:
                error = e
            if len(runs) == 2:
                return runs
        raise error


def _merge(runs: list, device: torch.device | None, *, data_dependent: bool, unknown_rank: bool,
           unknown: bool = False) -> Any:
    first = runs[0]
    if isinstance(first, torch.Tensor):
        if unknown_rank:
            shape = None
        else:
            shape = tuple(d if all(_same_dim(r, i, d) for r in runs[1:]) else None for i, d in enumerate(first.shape))
            if data_dependent and shape and shape == tuple(first.shape):
                # Identical sizes on two different fills are not proof of a static shape for
                # a data-dependent op; only dims the op cannot change are kept.
                shape = tuple(None if i == 0 else d for i, d in enumerate(shape))
        return Meta(first.dtype, shape, device)
    if isinstance(first, (tuple, list)) and not isinstance(first, torch.Size):
        if any(len(r) != len(first) for r in runs[1:]):
            raise UnknownOutputCount(tuple(len(r) for r in runs))
        merged = [_merge([r[i] for r in runs], device, data_dependent=data_dependent, unknown_rank=unknown_rank,
                         unknown=unknown) for i in range(len(first))]
        if hasattr(first, "_fields") or type(first).__module__ == "torch.return_types":
            return type(first)(merged)
        return type(first)(merged)
    if isinstance(first, (bool, int, float)):
        if data_dependent:
            raise DataDependentValue(first)
        if unknown:
            # Equal values in both runs may be a coincidence (17 // 4 == 19 // 4): such a number gets the
            # sentinels instead, so that sizes made from it stay unknown rather than wrongly static.
            stand_ins = tuple(runs) if len(runs) == len(_SENTINELS) and len(set(runs)) == len(runs) else None
            return Meta(_SCALAR_DTYPES[type(first)], (), None, ValueKind.SCALAR, stand_ins)
        return first
    if isinstance(first, torch.Size):
        return tuple(first)
    return first


def _same_dim(run: Any, i: int, d: int) -> bool:
    return isinstance(run, torch.Tensor) and run.dim() > i and run.shape[i] == d


_CUDA_METHODS = {torch.Tensor.cuda: "cuda", torch.Tensor.cpu: "cpu"}


def _output_device(func: Callable, args: tuple, kwargs: dict, values: list[Value],
                   device_hint: torch.device | None) -> torch.device | None:
    if func in _CUDA_METHODS:
        return torch.device(_CUDA_METHODS[func])
    dev = kwargs.get("device")
    if dev is None and func is torch.Tensor.to:
        for a in args[1:]:
            if isinstance(a, (str, torch.device)):
                dev = a
            elif isinstance(a, Value) and a.kind is ValueKind.TENSOR:
                dev = a.device
    if dev is not None and not isinstance(dev, Value):
        return torch.device(dev)
    for v in values:
        if v.kind is ValueKind.TENSOR and v.device is not None:
            return v.device
    return device_hint


# Python-level operators used when every graph operand is a run-time Python scalar.
SCALAR_OPERATORS = {
    "__add__": operator.add, "__sub__": operator.sub, "__mul__": operator.mul,
    "__floordiv__": operator.floordiv, "__truediv__": operator.truediv, "__mod__": operator.mod,
    "__neg__": operator.neg, "__lt__": operator.lt, "__le__": operator.le, "__gt__": operator.gt,
    "__ge__": operator.ge, "__eq__": operator.eq, "__ne__": operator.ne, "__pow__": operator.pow,
    "abs": abs, "__abs__": abs, "neg": operator.neg, "negative": operator.neg,
}


shape_inference = ShapeInference()  # shared by every trace: the memo is keyed by metadata only
