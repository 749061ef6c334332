"""The one namer for generated identifiers: derived from user names, unique, deterministic."""

from __future__ import annotations

from typing import Iterable

import gast

from torch_autograph.autograph.pyct import transformer


class Namer:
    """Hands out identifiers that do not clash with any name in the user's code.

    The first request for `base` gets `base` itself, later ones `base_1`,
    `base_2`, ... in request order, so the same function always converts to
    the same text.
    """

    def __init__(self, used: Iterable[str]):
        self._used = set(used)

    @classmethod
    def for_tree(cls, node: gast.AST) -> "Namer":
        """A namer that avoids every identifier appearing anywhere in `node`."""
        used = set()
        for n in transformer.walk(node):
            if isinstance(n, gast.Name):
                used.add(n.id)
            elif isinstance(n, (gast.FunctionDef, gast.AsyncFunctionDef, gast.ClassDef)):
                used.add(n.name)
            elif isinstance(n, gast.Attribute):
                used.add(n.attr)
            elif isinstance(n, gast.alias):
                used.add((n.asname or n.name).split(".")[0])
        return cls(used)

    def new_symbol(self, base: str) -> str:
        """Returns an unused name derived from `base` and reserves it."""
        name, n = base, 0
        while name in self._used:
            n += 1
            name = f"{base}_{n}"
        self._used.add(name)
        return name

    def reserve(self, name: str) -> None:
        self._used.add(name)
