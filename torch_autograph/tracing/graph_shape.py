"""`x.shape` of a graph tensor while tracing: a tuple whose unknown dims are None."""

from __future__ import annotations


class GraphShape(tuple):
    """A tuple of ints, with None for each dim unknown until the graph runs."""

    def __repr__(self) -> str:
        return f"GraphShape({list(self)})"

    def numel(self) -> int | None:
        n = 1
        for d in self:
            if d is None:
                return None
            n *= d
        return n
