"""Control-flow sub-traces: the branches of a tensor `if` and the bodies of graph loops, traced into sub-graphs.

- `branches.py`: what `cond` and `while_loop` share (`Branch`, the UNSET marker, `Leaf` kinds, messages).
- `cond.py`: `cond` nodes (both branches traced) and run-time checks.
- `while_loop.py`: `while` nodes (condition and body traced once each, to a fixpoint of their types).
- `retype.py`: giving a traced loop body's inputs new types without running the user's Python again.
- `user_ops.py`: what users call directly: `ta.cond`, `ta.while_loop`, `ta.print`, `ta.shape`, `ta.py_function`.

They record through tracing/ and import nothing above it.
"""
