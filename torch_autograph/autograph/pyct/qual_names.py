"""Qualified names: `a`, `a.b`, `a[0]` as hashable values.

Static analysis tracks these symbols; a simple name is a QN with no parent.
"""

from __future__ import annotations

import dataclasses
from typing import Optional, Union

import gast


@dataclasses.dataclass(frozen=True)
class QN:
    """A qualified name.

    Example: `QN('a')` is `a`; `QN('b', parent=QN('a'))` is `a.b`;
    `QN(0, parent=QN('a'), subscript=True)` is `a[0]`.
    """

    name: Union[str, int, float]
    parent: Optional["QN"] = None
    subscript: bool = False

    @property
    def is_simple(self) -> bool:
        return self.parent is None

    @property
    def root(self) -> "QN":
        return self if self.parent is None else self.parent.root

    def __str__(self) -> str:
        if self.parent is None:
            return str(self.name)
        if self.subscript:
            return f"{self.parent}[{self.name!r}]"
        return f"{self.parent}.{self.name}"


def from_node(node: gast.AST) -> Optional[QN]:
    """Returns the QN of a Name/Attribute/constant Subscript node, else None."""
    if isinstance(node, gast.Name):
        return QN(node.id)
    if isinstance(node, gast.Attribute):
        parent = from_node(node.value)
        return QN(node.attr, parent) if parent is not None else None
    if isinstance(node, gast.Subscript) and isinstance(node.slice, gast.Constant):
        parent = from_node(node.value)
        if parent is not None and isinstance(node.slice.value, (str, int, float)):
            return QN(node.slice.value, parent, subscript=True)
    return None
