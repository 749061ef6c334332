"""Every torch attribute the package replaces and every process-wide hook it registers, in one table, on only
while something needs it.

Importing torch_autograph changes nothing in torch. A trace needs a few of
torch's methods to record a node instead of acting at trace time (an optimizer
step would update the parameters once, with stale gradients; a collective would
communicate once); frozen code needs to see writes that version counters miss.
Each such replacement is a `Patch`, and each registration that is not an
attribute (a global module or optimizer hook of torch, a finder on
`sys.meta_path`) a `Hook`, declared next to the code it serves and listed in
one of the tables (interop/torch_patches.py); a `PatchSet` applies a table
while it has users and puts back every original, and removes every hook, when
the last one leaves::

    with TRACE_PATCHES.while_tracing():    # entered by every root trace (staging's TraceHooks)
        ...                                # Optimizer.step & co. are the staged wrappers here
    # torch's own methods again

    WATCH_PATCHES.acquire()                # the first frozen variant (data_watch.FrozenDataWatch)
    WATCH_PATCHES.release()                # the last one collected

The users are counted across threads: a patch stays on while any thread
traces, and each wrapper checks the calling thread's own trace (outside one,
it is the original method). Classes defined while a table is on (an optimizer
subclass made between two traces of a long-running trace in another thread)
are patched by the next trace that starts.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator

_MISSING = object()


@dataclass(frozen=True)
class Patch:
    """One replacement of torch attributes.

    Attributes:
        owner: where, as a user would spell it (`torch.optim.Optimizer and its subclasses`).
        attributes: the attribute names replaced on it.
        why: what goes wrong without it.
        targets: the (object, attribute name) pairs to replace now (subclasses are found when applied).
        replacement: (object, name, original) -> the value to install.
    """

    owner: str
    attributes: tuple[str, ...]
    why: str
    targets: Callable[[], Iterable[tuple[Any, str]]]
    replacement: Callable[[Any, str, Any], Any]


@dataclass(frozen=True)
class Hook:
    """One process-wide registration that is not an attribute: a global hook of torch, an import finder.

    Attributes:
        owner: where it is registered, as a user would spell it (`torch.nn.modules.module`).
        what: what is registered there (`global forward pre-hook`).
        why: what goes wrong without it.
        install: registers it now; returns what removes it again (None: nothing to register now).
    """

    owner: str
    what: str
    why: str
    install: Callable[[], Callable[[], None] | None]

    @property
    def attributes(self) -> tuple[str, ...]:
        return (self.what,)


class PatchSet:
    """A table of patches applied while it has users (counted across threads), reverted by the last one."""

    def __init__(self, name: str, patches: tuple[Patch | Hook, ...]) -> None:
        self.name = name
        self.patches = patches
        self._lock = threading.RLock()
        self._users = 0
        self._removers: list[tuple[Hook, Callable[[], None]]] = []  # the hooks registered now, in order
        # (id(obj), name) -> (patch, obj, name, original, new), in the order applied
        self._applied: dict[tuple[int, str], tuple[Patch, Any, str, Any, Any]] = {}
        # (id(obj), name) -> (original, replacement) last made for it: reused while the original is the same
        # (the objects are classes and functions of torch, which live as long as the process).
        self._made: dict[tuple[int, str], tuple[Any, Any]] = {}

    def acquire(self) -> None:
        """One more user: apply every patch not applied yet (new subclasses included)."""
        with self._lock:
            self._users += 1
            for patch in self.patches:
                if isinstance(patch, Hook):
                    if not any(h is patch for h, _ in self._removers):
                        remove = patch.install()
                        if remove is not None:
                            self._removers.append((patch, remove))
                    continue
                for obj, attr in patch.targets():
                    key = (id(obj), attr)
                    if key in self._applied:
                        continue
                    original = vars(obj).get(attr, _MISSING)
                    made = self._made.get(key)
                    if made is not None and made[0] is original:
                        new = made[1]  # the wrapper made last time for the same original
                    else:
                        new = patch.replacement(obj, attr, getattr(obj, attr, None) if original is _MISSING
                                                else original)
                        self._made[key] = (original, new)
                    setattr(obj, attr, new)
                    self._applied[key] = (patch, obj, attr, original, new)

    def release(self) -> None:
        """One user fewer: the last one puts every original back (in reverse order of application)."""
        with self._lock:
            self._users -= 1
            if self._users == 0:
                self.revert()

    def revert(self, only: Patch | Hook | None = None) -> None:
        """Put back the originals and remove the hooks now (of `only`, else all), whoever still uses the table."""
        with self._lock:
            for hook, remove in reversed(list(self._removers)):
                if only is None or hook is only:
                    self._removers.remove((hook, remove))
                    remove()
            for key, (patch, obj, attr, original, new) in reversed(list(self._applied.items())):
                if only is not None and patch is not only:
                    continue
                del self._applied[key]
                if vars(obj).get(attr, _MISSING) is not new:
                    continue  # replaced again since (torch hooks `step` at an optimizer's first instance)
                if original is _MISSING:
                    delattr(obj, attr)
                else:
                    setattr(obj, attr, original)

    @contextmanager
    def while_tracing(self) -> Iterator[None]:
        self.acquire()
        try:
            yield
        finally:
            self.release()

    def active(self) -> bool:
        """Whether any patch or hook of the table is on now."""
        return bool(self._applied or self._removers)

    def __repr__(self) -> str:
        return f"<PatchSet {self.name}: {len(self.patches)} patches, {self._users} users, {len(self._applied)} on>"
