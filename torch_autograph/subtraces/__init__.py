"""Control-flow sub-traces: the branches of a tensor `if` and the bodies of graph loops, traced into sub-graphs.

- `branches.py`: what `cond` and `while_loop` share (`Branch`, the UNSET marker, `Leaf` kinds, messages).
- `cond.py`: `cond` nodes (both branches traced) and run-time checks.
- `while_loop.py`: `while` nodes (condition and body traced once each, to a fixpoint of their types).
- `retype.py`: giving a traced loop body's inputs new types without running the user's Python again.
- `user_ops.py`: what users call directly: `ta.cond`, `ta.while_loop`, `ta.print`, `ta.shape`, `ta.py_function`.

They record through tracing/ and import nothing above it.
"""

from .branches import UNSET, number_to_tensor, quoted

# The staged forms AutoGraph calls (user_ops holds the public `cond`/`while_loop` that users call).
from .cond import check as check_condition
from .cond import cond as stage_cond
from .handlers import close as close_try
from .handlers import finally_starts, try_begin, try_end
from .raises import raised_by_the_library
from .user_ops import cond, label_of, print, py_function, shape, while_loop
from .while_loop import FirstAssignedInBranch
from .while_loop import while_loop as stage_while

__all__ = ["FirstAssignedInBranch", "UNSET", "check_condition", "close_try", "cond", "finally_starts", "label_of",
           "number_to_tensor", "print", "py_function", "quoted", "raised_by_the_library", "shape", "stage_cond",
           "stage_while", "try_begin", "try_end", "while_loop"]
