"""Every exception class torch_autograph raises, with its causes and fixes.

This module imports nothing from torch so that the pure source transformer
(`torch_autograph.autograph`) can raise these too.
"""

from __future__ import annotations


class TorchAutographError(Exception):
    """Base class of the library's own errors (not of the TypeError/ValueError it raises)."""


class ConversionError(TorchAutographError):
    """AutoGraph could not convert a function.

    Causes: syntax AutoGraph does not support, an ambiguous lambda (several
    lambdas with the same arguments on one line), source that cannot be parsed.
    Fix: rewrite the construct the message names, or decorate the function with
    `ta.autograph.experimental.do_not_convert` to run it as plain Python.
    """


class OperatorNotAllowedInGraphError(TypeError):
    """A graph tensor was used where Python needs a concrete value while tracing.

    Causes: `bool(t)`, `t.item()`, `t.tolist()`, `t.numpy()`, `int(t)`, or
    iterating a graph tensor in code AutoGraph did not convert (autograph=False,
    `do_not_convert`, or a function whose source is not available).
    Fixes: let AutoGraph convert the code (the default), use `ta.cond` /
    `ta.while_loop` explicitly, or compute the value outside the function and
    pass it as a Python argument.
    """


class InaccessibleTensorError(ValueError):
    """A graph tensor was used outside the trace that created it (a leaked tensor).

    Cause: a tensor stored in a global, a list or an attribute while tracing and
    used after the trace ended or in another function's trace.
    Fix: return the tensor from the function instead.
    """


class StagedBranchError(TorchAutographError):
    """An exception raised on a path the graph chooses when it runs cannot be staged.

    A `raise` in a branch of an `if` whose condition is a graph value (or in a
    graph loop's body) is raised when the graph runs and takes that path, with
    the user's own exception type and message. Its message must then be made of
    Python values: one that formats or holds a graph tensor has no value while
    tracing, and is refused with this error at the `raise` line.
    Fixes: build the message from Python values (print the tensor with
    `ta.print` before the raise), or use `assert` on the tensor.
    """


class InvalidArgumentError(TorchAutographError):
    """A check inside a graph failed when the graph ran.

    Causes: an `assert` on a tensor that was false, a loop that had to run at
    least once to define a variable, a ConcreteFunction called with inputs of
    the wrong dtype or shape.
    """


class OutOfRangeError(TorchAutographError):
    """An index was outside the valid range (e.g. writing past a fixed-size TensorArray)."""


class GraphLoweringError(TorchAutographError):
    """A graph cannot be lowered, exported or compiled (`to_fx`, `export`, `jit_compile=True`, `cuda_graphs=True`).

    Causes:
    - `ConcreteFunction.to_fx`: a `while` loop or a run-time check (`assert` on a tensor);
      a `cond` whose branches mutate state, return Python values or read a
      run-time Python number as predicate. (`jit_compile=True` splits such
      graphs at their control flow instead.)
    - `ConcreteFunction.export` (and `ta.export`, `ta.saved_model.save`, `ta.onnx.export`): Python that runs
      at every call (`ta.py_function`, `ta.print`, a staged optimizer step), autograd inside the graph, a list
      grown by a `while` loop whose number of iterations is unknown before it runs, a loop variable whose
      shape changes between iterations, a returned graph list, or torch.export refusing the code of a line.
    - `jit_compile=True`: an op, or a region of ops, inductor cannot compile.
    - `cuda_graphs=True`: a node that cannot be captured into a CUDA graph: a
      host sync (`if`/`while` on a tensor, `.item()`), Python run per call
      (`ta.print`, `ta.py_function`), a data-dependent shape, a CPU<->GPU copy;
      or a capture torch refused.
    The message names the node (or region) and the user line it came from.
    Fixes: use `jit_compile="auto"` to fall back to the default backend with one
    warning, move the construct out of the compiled function, or turn the
    option off.
    """


class GraphInvariantError(TorchAutographError, AssertionError):
    """A graph broke an invariant every pass and backend relies on (a value used before it is defined, two values
    of one name, a capture that is no tensor): a bug in torch_autograph. Raised by `Graph.verify`, also under
    `python -O`; an `AssertionError` too, as the checks it replaces were."""


class GraphvizNotFoundError(TorchAutographError, FileNotFoundError):
    """Rendering a graph picture (`Graph.render`, the CLI's `graph --svg`) needs Graphviz's `dot` program.

    Cause: Graphviz is not installed, or its `dot` is not on PATH.
    Fix: install it (`apt-get install graphviz`, `brew install graphviz`,
    `conda install -c conda-forge graphviz`), or use `Graph.to_dot()`, which
    needs nothing, and render the text elsewhere.
    """


class DistributedTracingError(TorchAutographError):
    """A torch.distributed object was used while tracing in a way the graph cannot replay at every call.

    Causes: a collective that would run once, at trace time (`dist.barrier()`
    called from code AutoGraph did not convert, a collective of Python objects
    such as `all_gather_object`); a Work handle of `async_op=True` asked
    anything but `wait()`, or used after its trace; DDP's `mixed_precision`
    (its hooks swap parameter storage in Python at every forward); FSDP2
    features the graph cannot replay (see docs/distributed.md).
    The message names the object and the user line.
    Fixes: call tensor collectives (`all_reduce`, `broadcast`, ...) in converted
    code, where each call becomes a graph node run at every call; keep object
    collectives and model wrapping outside the `ta.function`.
    """


class JitFallbackWarning(RuntimeWarning):
    """`jit_compile=True`: a graph or region inductor could not lower or compile runs on the default backend.

    Once per trace; the warning points at the user's line of the region's first node and says what inductor
    refused. `ConcreteFunction.jit_report()` lists every region and what became of it. Results are the
    default backend's. `ta.config.set_jit_strict(True)` raises `GraphLoweringError` instead.
    """


class TraceTimeValueWarning(UserWarning):
    """A value was read while tracing and is frozen into the graph, where it probably should not be.

    Cause: e.g. reading `p.grad` of a parameter inside a traced training step:
    the graph keeps the value from trace time instead of the gradient computed
    when it runs. Fix: move the code into `ta.py_function` (runs every call),
    or compute gradients with `ta.GradientTape`.
    """


# The variables AutoGraph makes for `return` inside converted control flow (its namer may add a suffix:
# `retval__1`), and how messages about them name them: one table, read by the converter that makes them and by
# the messages that name them.
GENERATED_VARIABLES = {"retval_": "the return value", "do_return": "whether the function returned"}


def variable_in_words(name: str) -> str:
    """A variable as messages name it: `'x'`, or in words for the variables AutoGraph makes for `return`."""
    for base, words in GENERATED_VARIABLES.items():
        if name == base or name.startswith(base + "_"):
            return words
    return f"'{name}'"
