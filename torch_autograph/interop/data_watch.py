"""Writes to the tensors that frozen code folded in as constants (`freeze_captures`) that version counters miss.

Frozen code checks its captures' version counters and data pointers at every
call. Three ways to write a tensor move neither, and this module makes each
visible while frozen code is alive (`FrozenDataWatch`):

- `t.data` is an alias of `t` with a version counter of its own: a write through
  it (`p.data.mul_(2)`, `p.data.copy_(ema)`, an old-style optimizer) leaves
  `t._version` alone. For a watched tensor, `torch.Tensor.data` gives
  `t.detach()` instead: the same alias except that it shares `t`'s version
  counter, so a write through it (or a view of it) moves `t._version`.
  Assigning `t.data = u` sets `touched`.
- `t.numpy()` (and `np.asarray(t)`, which calls it) and `t.__dlpack__()`
  (`torch.from_dlpack`, `np.from_dlpack`) share memory with a view that torch
  does not see written. Called on any tensor whose storage a watched tensor
  uses, they set `touched`: the frozen code is compiled again by reference
  (a read counts as a write: what the caller does with the array is not known).

    watch = FrozenDataWatch(captures)      # before compiling: a use during the compile counts

The one difference a caller can meet: a write through a watched tensor's
`.data` between a forward pass that saved the tensor and its backward makes
the backward raise autograd's in-place error, where `.data` would silently use
the new values in the gradient. Reads of `.data` (torch itself reads it, e.g.
AOT autograd's runtime wrappers on Parameters) change nothing.

The replacements (`PATCHES`, in interop/patches.py's table) are installed by
the first open `FrozenDataWatch` and removed when the last one closes or is collected;
while they are on, a tensor that no `FrozenDataWatch` names pays one dict lookup per
`.data`, `.numpy()` or `__dlpack__()`. `ta.config.set_watch_frozen_data(False)`
leaves torch alone: frozen code then sees only what version counters and data
pointers show, so `jit_compile=True` no longer freezes by default.
Not seen: a DLPack capsule made by `torch.utils.dlpack.to_dlpack` (a C
function), and memory written outside torch's Python API.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, Iterable

import torch

from .. import config
from .patches import Patch, PatchSet

_BASE = torch._C.TensorBase.data
_BASE_NUMPY = torch._C.TensorBase.numpy
_BASE_DLPACK = torch.Tensor.__dlpack__
# id(tensor) -> {id(watch): weak reference to the watch}; the watched tensors are kept alive by their watchers'
# owners (the frozen code holds its captures), so an id names one tensor for as long as it is here. The same
# for the data pointers of their storages.
_by_tensor: dict[int, dict[int, weakref.ref]] = {}
_by_storage: dict[int, dict[int, weakref.ref]] = {}
_lock = threading.Lock()


class FrozenDataWatch:
    """While open, `.data` of `tensors` shares their version counters, and `touched` becomes True when it is
    assigned or when their memory is handed to NumPy or DLPack; `close()` (a `weakref.finalize`, also run when
    the watch is collected) stops watching."""

    def __init__(self, tensors: Iterable[torch.Tensor]) -> None:
        tensors = list(tensors)
        self.touched = False
        keys = ((_by_tensor, tuple({id(t) for t in tensors})),
                (_by_storage, tuple({p for p in map(_storage_ptr, tensors) if p})))
        me = weakref.ref(self)
        with _lock:
            for registry, ids in keys:
                for i in ids:
                    registry.setdefault(i, {})[id(self)] = me
        watching = config.watch_frozen_data()
        if watching:
            WATCH_PATCHES.acquire()  # the first open watch installs the properties, the last one removes them
        self.close = weakref.finalize(self, _forget, keys, id(self), watching)  # on close() or when collected


def _forget(keys: tuple, key: int, watching: bool) -> None:
    with _lock:
        for registry, ids in keys:
            for i in ids:
                watchers = registry.get(i)
                if watchers is not None:
                    watchers.pop(key, None)
                    if not watchers:
                        del registry[i]
    if watching:
        WATCH_PATCHES.release()


def _touch(watchers: dict[int, weakref.ref] | None) -> None:
    for ref in list((watchers or {}).values()):
        w = ref()
        if w is not None:
            w.touched = True


def _storage_ptr(t: torch.Tensor) -> int | None:
    try:
        with torch._C.DisableTorchFunction():  # a graph tensor: its own error comes from the call itself
            return t.untyped_storage().data_ptr()
    except (RuntimeError, NotImplementedError):  # a fake or meta tensor: no memory to share
        return None


def _get(t: torch.Tensor) -> torch.Tensor:
    if _by_tensor and id(t) in _by_tensor:
        return t.detach()
    return _BASE.__get__(t)


def _set(t: torch.Tensor, value: torch.Tensor) -> None:
    if _by_tensor:
        _touch(_by_tensor.get(id(t)))
    _BASE.__set__(t, value)


def _numpy(t: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
    if _by_storage:
        _touch(_by_storage.get(_storage_ptr(t)))
    return _BASE_NUMPY(t, *args, **kwargs)


def _dlpack(t: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
    if _by_storage:
        _touch(_by_storage.get(_storage_ptr(t)))
    return _BASE_DLPACK(t, *args, **kwargs)


def _replacement(cls: type, name: str, original: Any) -> Any:
    if name == "data":
        return property(_get, _set, doc=_BASE.__doc__)
    fn = {"numpy": _numpy, "__dlpack__": _dlpack}[name]
    # Under the names torch passes to __torch_function__ for `t.numpy()`: a graph tensor's tracer recognises
    # the call by its name.
    fn.__doc__, fn.__name__, fn.__qualname__ = original.__doc__, name, f"Tensor.{name}"
    return fn


PATCHES = (
    Patch("torch.Tensor", ("data", "numpy", "__dlpack__"),
          "frozen code folds captured tensors in as constants; writes through `.data`, a NumPy view or a DLPack "
          "view move no version counter, so without these it would silently keep the old values",
          lambda: [(torch.Tensor, "data"), (torch.Tensor, "numpy"), (torch.Tensor, "__dlpack__")], _replacement),
)
WATCH_PATCHES = PatchSet("while frozen code is alive", PATCHES)
