"""`ta.autograph.experimental`: directives users write inside converted code."""

from __future__ import annotations

from typing import Any, Optional, Sequence


def set_loop_options(shape_invariants: Optional[Sequence[tuple[Any, Any]]] = None,
                     maximum_iterations: Optional[Any] = None, parallel_iterations: Any = None,
                     swap_memory: Any = None) -> None:
    """Options for the immediately enclosing loop, used only when that loop is staged.

    Write it as the first statement(s) of the loop body:

        while x.sum() < 100:
            ta.autograph.experimental.set_loop_options(
                shape_invariants=[(x, (None,))], maximum_iterations=10)
            x = torch.cat([x, x])

    Args:
        shape_invariants: `(variable, shape)` pairs; a `None` dimension may
            change between iterations, and a shape of `None` lets every
            dimension change (the rank stays: a graph loop variable keeps it).
        maximum_iterations: stop after this many iterations.
        parallel_iterations: accepted for TF compatibility; ignored.
        swap_memory: accepted for TF compatibility; ignored.

    AutoGraph removes the call while converting; called outside converted
    code it does nothing.
    """
    del shape_invariants, maximum_iterations, parallel_iterations, swap_memory
