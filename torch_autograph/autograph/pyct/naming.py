"""The package's one namer (`torch_autograph/naming.py`) over a user's tree: generated identifiers that clash with
no name of the user's code."""

from __future__ import annotations

import gast

from torch_autograph.autograph.pyct import transformer
from torch_autograph.naming import Namer as _Namer


class Namer(_Namer):
    """Hands out identifiers that do not clash with any name in the user's code.

    The first request for `base` gets `base` itself, later ones `base_1`,
    `base_2`, ... in request order, so the same function always converts to
    the same text.
    """

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
