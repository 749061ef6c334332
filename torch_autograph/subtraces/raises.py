"""A `raise` on a path the graph chooses when it runs: raised then, with the user's exception type and message.

Both branches of a tensor `if` are traced, and a graph loop's body is traced
once for all its iterations, so an exception the user's code raises while one
of them is traced says nothing about the call: it is raised only if the graph
takes that path. The sub-graph being traced ends with a node that raises a copy
of the exception when it runs (a `check` node whose condition is False,
carrying the exception), after the ops the path ran before its `raise`.

What the path "returns" is never read: the node raises before the `if` or the
loop hands on any value, so its outputs are stand-ins (the other branch's
Python values pass through, tensors are zeros of their type; a loop body hands
its variables on unchanged).

Staged: exceptions raised by the user's own code (the innermost frame is the
user's, or AutoGraph's code generated from it), and torch's refusal of an
op's arguments that torch repeats when the op runs eagerly on zeros of the
same types and shapes (`rejected_eagerly`: an int tensor updated in place by
a float). Not staged, raised while tracing as before: the library's errors
(`TorchAutographError`, misuse of graph values, leaked tensors), other errors
raised inside torch or this package, `RecursionError`, and the
`UnboundLocalError` the loop machinery reads to find variables first assigned
inside a loop.
"""

from __future__ import annotations

import linecache
from typing import Any, Callable

import torch

from .. import errors, nest
from ..graph import CheckOp, Effect, Node, Op, OpKind, SourceLocation, Value, ValueKind, run_now
from ..tracing import PACKAGE_DIR, SYMBOLIC, GraphList, Traced, bind_results, current, is_library_file
from .branches import Branch, where

_NOT_STAGED = (errors.TorchAutographError, errors.OperatorNotAllowedInGraphError, errors.InaccessibleTensorError,
               RecursionError, UnboundLocalError)


def run_or_raise(branch: Branch, fn: Callable[[], Any], instead: Callable[[], Any]) -> tuple[Any, bool]:
    """`branch.run(fn)`; when the user's code raises in it, a node raising that exception ends the branch.

    Returns `(fn's result, False)`, or `(instead(), True)` when the branch raises at run time.
    """
    try:
        return branch.run(fn), False
    except Exception as e:
        origin = raised_by_user(e)
        if origin is None:
            eager = rejected_eagerly(e)
            if eager is None:
                raise
            e, origin = eager
        error = _stored(e, origin)
    branch.record(lambda: record_raise(error, origin))
    return instead(), True


def raised_by_user(e: BaseException) -> SourceLocation | None:
    """The user's line that raised `e` (mapped from AutoGraph's generated code), if `e` is to be staged."""
    if isinstance(e, _NOT_STAGED) or not isinstance(e, Exception):
        return None
    tb = _innermost(e)
    if tb is None:
        return None
    filename, lineno = tb.tb_frame.f_code.co_filename, tb.tb_lineno
    state = current()
    mapped = state.trace.hooks.map_origin(filename, lineno) if state is not None else None
    if mapped is not None:
        return mapped
    if is_library_file(filename):
        return None
    return SourceLocation(filename, lineno, tb.tb_frame.f_code.co_name, linecache.getline(filename, lineno).strip())


_ARGUMENT_ERRORS = (RuntimeError, TypeError, ValueError, IndexError)


def rejected_eagerly(e: BaseException) -> tuple[Exception, SourceLocation] | None:
    """(the exception, the user's line) where `e` is torch refusing an op's arguments while tracing (an in-place
    op of an int tensor by a float: a matter of types), and torch refuses them the same way run eagerly on
    zeros of the same types and shapes: the path raises that when the graph takes it. None otherwise (an
    error of the tracer, an op that cannot be run here): it is raised while tracing.

    The arguments are zeros: an error that depends on the values is not confirmed, and stays a trace-time
    error. Ops that draw random numbers or run Python are never run for it."""
    call = getattr(e, "rejected_call", None)
    if call is None or not isinstance(e, _ARGUMENT_ERRORS) or isinstance(e, NotImplementedError):
        return None
    op, func, vargs, vkwargs, origin = call
    if op.effects & (Effect.RANDOM | Effect.RUNS_PYTHON) or not callable(func):
        return None
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    try:
        with unset_fake_temporarily(), torch._C.DisableTorchFunction():
            args, kwargs = nest.map_structure(_real_value, (vargs, vkwargs))  # real tensors: no fake mode
            func(*args, **kwargs)
    except _NoRealValue:
        return None
    except type(e) as eager:  # raised by torch as eagerly: its own message, not the meta kernel's
        eager.__traceback__ = None
        return eager, origin
    except Exception:  # noqa: BLE001 - another error on zeros: not the same refusal
        return None
    return None


def kernels_exist(nodes: list[Node]) -> bool:
    """Whether each op of `nodes` has a kernel for its arguments' types: run in order on zeros of the types and
    shapes of what they read from before them (and on each other's results), none raises NotImplementedError,
    torch's error for an op without a kernel for a device, dtype or layout. Those are part of the trace's
    signature, so no call of the trace can raise it there.

    False where that is not shown: a node that draws random numbers, runs Python or holds sub-graphs, a value
    without a real stand-in (a symbolic shape, a graph list), or any error on zeros."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    env: dict[int, Any] = {}
    try:
        with unset_fake_temporarily(), torch._C.DisableTorchFunction():  # real tensors: no fake mode, no trace
            for node in nodes:
                if node.subgraphs or node.op.kind is OpKind.CONTROL or \
                        node.op.effects & (Effect.RANDOM | Effect.RUNS_PYTHON | Effect.UNKNOWN):
                    return False
                for v in node.input_values():
                    if id(v) not in env:
                        env[id(v)] = _real_value(v)
                if not bind_results(node.pattern, run_now(node, env), env):
                    return False
    except Exception:  # noqa: BLE001 - NotImplementedError, another error on zeros, no stand-in: not shown
        return False
    return True


class _NoRealValue(Exception):
    pass


def _real_value(v: Any) -> Any:
    """A real value of `v`'s type and shape: zeros for a tensor of static shape, 0 of a run-time number's kind."""
    if not isinstance(v, Value):
        return v
    if v.kind is ValueKind.TENSOR and all(type(d) is int for d in v.shape):
        return torch.zeros(v.shape, dtype=v.dtype, device=v.device)
    if v.kind is ValueKind.SCALAR:
        return False if v.dtype == torch.bool else 0.0 if v.dtype.is_floating_point else 0
    raise _NoRealValue


# What this package raises itself as refusals (a `raise` statement of its code): the classes Python code raises.
_REFUSAL_CLASSES = (TypeError, ValueError, RuntimeError, NotImplementedError, AssertionError)


def raised_by_the_library(e: BaseException, own: tuple[type, ...] = ()) -> bool:
    """Whether `e`, on its way while tracing, is this package's own: one of its error classes (or of `own`,
    the signals of its machinery), or raised by a `raise` statement of its code (a refusal: a TypeError
    naming the user's line). Not: what user code, torch, or a builtin called by this package raises (a
    KeyError of `d["k"]`), which eager PyTorch raises too.
    """
    if current() is None:
        return False
    if isinstance(e, _NOT_STAGED + own):
        return True
    if not isinstance(e, _REFUSAL_CLASSES):
        return False
    tb = _innermost(e)
    if tb is None:
        return False
    filename = tb.tb_frame.f_code.co_filename
    return filename.startswith(PACKAGE_DIR) and linecache.getline(filename, tb.tb_lineno).lstrip().startswith("raise")


def _innermost(e: BaseException) -> Any:
    """The traceback entry of the frame that raised `e` (None if it has no traceback)."""
    tb = e.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb


def record_raise(error: BaseException, origin: SourceLocation | None) -> None:
    """Record, in the current trace, a node raising `error` when the graph runs it."""
    state = current()
    text = f"{type(error).__name__}: {error}"
    check = CheckOp(f"{text}\n  at {origin}", label=f"raise {type(error).__name__}", error=error)
    state.add_node(Node(Op(OpKind.CONTROL, check, "raise", effects=Effect.RAISES), (False,), {}, (), origin=origin))


def _stored(e: Exception, origin: SourceLocation) -> Exception:
    """`e` as the graph keeps it: without the trace's frames, and refused if it holds a graph value."""
    held = [x for x in nest.flatten(list(e.args)) if isinstance(x, (Traced, GraphList)) or isinstance(x, SYMBOLIC)]
    if held or "GraphTensor(" in str(e):
        what = f"holds the graph value {held[0]!r}" if held else f"formats a graph tensor ({e})"
        raise errors.StagedBranchError(
            f"the {type(e).__name__} raised{where(origin)} is raised only when the graph runs and takes that path "
            f"(its condition is a graph value), but its message {what}, which has no value until then. Build the "
            f"message from Python values only (print the tensor with ta.print before the raise), or use `assert` "
            f"on the tensor.") from None
    e.__traceback__ = None
    e.__context__ = None
    return e
