"""Writes through `.data` to the tensors that frozen code folded in as constants (`freeze_captures`).

`t.data` is an alias of `t` with a version counter of its own: a write through
it (`p.data.mul_(2)`, `p.data.copy_(ema)`, an old-style optimizer) leaves
`t._version` alone, so the version-counter guard of frozen code cannot see it.
While frozen code is alive, `torch.Tensor.data` is a property that gives, for a
watched tensor, `t.detach()` instead: the same alias except that it shares
`t`'s version counter, so a write through it (or through a view of it) moves
`t._version` and the guard sees it. Assigning `t.data = u` sets `touched`.

    watch = Watch(captures)      # before compiling: a use during the compile counts

The one difference a caller can meet: a write through a watched tensor's
`.data` between a forward pass that saved the tensor and its backward makes
the backward raise autograd's in-place error, where `.data` would silently use
the new values in the gradient. Reads of `.data` (torch itself reads it, e.g.
AOT autograd's runtime wrappers on Parameters) change nothing.

The property is installed with the first `Watch` and stays; a tensor that no
`Watch` names pays one dict lookup per `.data` (about 0.1 us). Writes that
bypass version counters altogether (a NumPy view of the tensor, DLPack) are not
seen by this or by the version guard.
"""

from __future__ import annotations

import threading
import weakref
from typing import Iterable

import torch

_BASE = torch._C.TensorBase.data
# id(tensor) -> {id(watch): weak reference to the watch}; the watched tensors are kept alive by their watchers'
# owners (the frozen code holds its captures), so an id names one tensor for as long as it is here.
_watchers: dict[int, dict[int, weakref.ref]] = {}
_lock = threading.Lock()
_installed = False


class Watch:
    """While open, `.data` of `tensors` shares their version counters, and `touched` becomes True when it is
    assigned; `close()` stops watching."""

    def __init__(self, tensors: Iterable[torch.Tensor]) -> None:
        self.touched = False
        self._ids = tuple({id(t) for t in tensors})
        me = weakref.ref(self, lambda _, ids=self._ids, key=id(self): _forget(ids, key))
        with _lock:
            for i in self._ids:
                _watchers.setdefault(i, {})[id(self)] = me
        _install()

    def close(self) -> None:
        _forget(self._ids, id(self))


def _forget(ids: tuple[int, ...], key: int) -> None:
    with _lock:
        for i in ids:
            of_tensor = _watchers.get(i)
            if of_tensor is not None:
                of_tensor.pop(key, None)
                if not of_tensor:
                    del _watchers[i]


def _note(t: torch.Tensor) -> None:
    of_tensor = _watchers.get(id(t))
    if of_tensor:
        for ref in list(of_tensor.values()):
            w = ref()
            if w is not None:
                w.touched = True


def _get(t: torch.Tensor) -> torch.Tensor:
    if _watchers and id(t) in _watchers:
        return t.detach()
    return _BASE.__get__(t)


def _set(t: torch.Tensor, value: torch.Tensor) -> None:
    if _watchers:
        _note(t)
    _BASE.__set__(t, value)


def _install() -> None:
    global _installed
    with _lock:
        if not _installed:
            torch.Tensor.data = property(_get, _set, doc=_BASE.__doc__)
            _installed = True
