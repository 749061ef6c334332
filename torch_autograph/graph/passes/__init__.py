"""Graph-to-graph passes; each keeps `Graph.verify()` true."""

from .common_subexpressions import eliminate_common_subexpressions
from .constant_folding import fold_constants
from .dead_code import eliminate_dead_code

__all__ = ["eliminate_common_subexpressions", "eliminate_dead_code", "fold_constants"]
