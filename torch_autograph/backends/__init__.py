"""Backends turn a Graph into something that runs."""

from typing import Any, Callable, Protocol

from ..graph.graph import Graph


class Backend(Protocol):
    """Compiles a finished graph to a callable taking the graph inputs positionally."""

    def __call__(self, graph: Graph) -> Callable[..., Any]: ...
