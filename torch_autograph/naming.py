"""The one namer: identifiers derived from a base name, unique among those taken, the same at every run.

Every generated name goes through it: AutoGraph's converted code (`autograph/pyct/naming.py` adds the names
of the user's tree), graph values (the trace's names), exported attributes and files, summary nodes::

    namer = Namer({"x"})
    namer.new_symbol("x"), namer.new_symbol("x"), namer.new_symbol("y")   # 'x_1', 'x_2', 'y'
"""

from __future__ import annotations

from typing import Callable, Iterable

_IDENTIFIERS: dict[str, str] = {}  # text -> that text as an identifier (a bounded cache: names repeat)
_IDENTIFIERS_CACHED = 10_000


def identifier(text: str) -> str:
    """`text` as a Python identifier: other characters become `_`; `v` before a leading digit or for nothing."""
    clean = _IDENTIFIERS.get(text)
    if clean is None:
        clean = "".join(c if c.isalnum() or c == "_" else "_" for c in text).strip("_") or "v"
        if clean[0].isdigit():
            clean = "v" + clean
        if len(_IDENTIFIERS) < _IDENTIFIERS_CACHED:
            _IDENTIFIERS[text] = clean
    return clean


class Namer:
    """Hands out names that clash with none taken: the first request for `base` gets `base` itself (when free),
    later ones `base_1`, `base_2`, ... in request order.

    Args:
        taken: names already in use (kept by reference when a set: a caller may add to it).
        clashes: also in use: a test for names the namer cannot list (`hasattr(module, name)`).
    """

    def __init__(self, taken: Iterable[str] = (), clashes: Callable[[str], bool] | None = None) -> None:
        self._taken = taken if isinstance(taken, set) else set(taken)
        self._clashes = clashes
        self._next: dict[str, int] = {}  # base -> the next suffix to try: no rescan of the suffixes handed out

    def _free(self, name: str) -> bool:
        return name not in self._taken and (self._clashes is None or not self._clashes(name))

    def new_symbol(self, base: str) -> str:
        """An unused name derived from `base`, now reserved."""
        name = base
        if not self._free(name):
            i = self._next.get(base, 1)
            while True:
                name = f"{base}_{i}"
                i += 1
                if self._free(name):
                    break
            self._next[base] = i
        self._taken.add(name)
        return name

    def reserve(self, name: str) -> None:
        self._taken.add(name)
