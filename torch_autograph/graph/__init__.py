"""The graph IR, standing alone: values, ops, graphs, printing, walkers and passes.

Nothing here knows how a graph was traced or how it will run: tracing
(`torch_autograph.tracing`) builds graphs, backends (`torch_autograph.backends`)
turn them into callables.
"""

from .graph import Graph, Node
from .ops import (
           CheckOp,
           CondOp,
           Effect,
           Op,
           OpKind,
           Trait,
           TryOp,
           WhileOp,
           autocast_state,
           control_op,
           run_check,
           under_autocast,
)
from .values import SourceLocation, Value, ValueKind, is_static
from .walkers import iter_values, map_nest, substitute, unique_values, walk_nodes

__all__ = ["CheckOp", "CondOp", "Effect", "Graph", "Node", "Op", "OpKind", "Trait", "TryOp", "SourceLocation", "Value", "ValueKind",
           "WhileOp", "control_op", "is_static", "iter_values", "run_check", "autocast_state", "under_autocast", "map_nest", "substitute", "unique_values", "walk_nodes"]
