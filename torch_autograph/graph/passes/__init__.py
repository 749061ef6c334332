"""Graph-to-graph passes; each keeps `Graph.verify()` true."""

from .dead_code import eliminate_dead_code

__all__ = ["eliminate_dead_code"]
