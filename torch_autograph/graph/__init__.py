"""The graph IR, standing alone: values, ops, graphs, printing, walkers and passes, and `TensorSpec` (the
type of a graph input or output a signature names).

Nothing here knows how a graph was traced or how it will run: tracing
(`torch_autograph.tracing`) builds graphs, backends (`torch_autograph.backends`)
turn them into callables.
"""

from . import list_ops
from .graph import Graph, Node
from .interpreter import NodeVisitor
from .ops import (
           CheckOp,
           CondOp,
           Effect,
           Expression,
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
from .passes import eliminate_common_subexpressions, fold_constants
from .passes.constant_folding import run_now
from .passes.dead_code import eliminate_dead_code
from .passes.effects import possibly_mutated, writes_only_its_own
from .printing import qualified_name, render_call, render_pattern
from .specs import ArraySpec, TensorSpec
from .values import SourceLocation, Value, ValueKind, is_static
from .walkers import fits, iter_leaves, iter_values, map_nest, merge_dims, substitute, unique_values, walk_nodes

__all__ = ["ArraySpec", "CheckOp", "CondOp", "Effect", "Expression", "Graph", "Node", "NodeVisitor", "Op", "OpKind", "SourceLocation", "TensorSpec", "Trait",
           "TryOp", "Value", "ValueKind", "WhileOp", "autocast_state", "control_op", "eliminate_common_subexpressions",
           "eliminate_dead_code", "fits", "fold_constants", "is_static", "iter_leaves", "iter_values", "list_ops", "map_nest",
           "merge_dims", "possibly_mutated", "qualified_name", "render_call", "render_pattern", "run_check", "run_now",
           "substitute", "under_autocast", "unique_values", "walk_nodes", "writes_only_its_own"]
