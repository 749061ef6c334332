"""Run one corpus program eagerly and through `ta.function`, and say what came of it.

The truth is the plain Python/PyTorch run. Per input, both runs start from
fresh copies of the input and the same random seed; their results, the
inputs afterwards (what the call changed) and what they printed must agree:
the same structure, and per tensor the same dtype, shape and values (floats
within `torch.testing.assert_close`'s tolerance, bitwise everything else; under
`jit_compile=True` also within 1e-5 of the tensor's largest magnitude: `difference`).
A Python number may come back as a 0-d tensor of its kind (bool, integer,
floating) and value: a graph's results are tensors (the graph cannot return
Python's type, which may depend on how many times a loop ran).
Every floating-point tensor input is a fresh leaf that requires grad (passed
as `leaf * 1`); the sum of the outputs that require grad is backpropagated,
and the gradients of the inputs and of the program's parameters must agree.
Module globals the program sets are compared too, and put back before each
run (neither run sees what the other set). Where eager raises, the graph must
raise too.

An outcome is one of:
    equal           every input agrees
    refusal         the graph run raised a clear error naming the program's
                    file:line (allowed only where `allowed_refusals.txt` says
                    why the construct cannot be a graph)
    internal error  any other exception of the graph run (or an error on an
                    input where eager fails that is not a clear one)
    wrong value     results, changed inputs or printed text differ, or the
                    graph returns where eager raises
    hang            the graph run did not finish within the time limit (and
                    the eager run did)
    corpus error    eager raises on every input, or does not finish: nothing
                    is compared (a wrong port, or wrong inputs)
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import io
import signal
import sys
from typing import Any, Callable

import torch
from cases import A, Case, fresh

import torch_autograph as ta

EQUAL, REFUSAL, INTERNAL, WRONG, HANG = "equal", "refusal", "internal error", "wrong value", "hang"
CORPUS = "corpus error"
SECONDS_PER_CALL = 20


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What running a case came to: its class, and (unless equal) the first input that was not and why."""

    kind: str
    detail: str = ""


class _Hang(Exception):
    pass


def _on_alarm(signum: int, frame: Any) -> None:
    raise _Hang()


@dataclasses.dataclass
class _Run:
    """One call's result, its arguments afterwards, what it printed, what it raised and the globals it set."""

    result: Any = None
    args: Any = None
    printed: str = ""
    error: BaseException | None = None
    hung: bool = False
    globals_set: dict = dataclasses.field(default_factory=dict)
    grads: list | None = None
    grad_error: BaseException | None = None


def _plain(value: Any) -> bool:
    return not (callable(value) or isinstance(value, type(contextlib)))


def _differentiable(value: Any, leaves: list) -> Any:
    """`value` with each floating-point tensor replaced by `leaf * 1` of a fresh leaf that requires grad.

    Not the leaf itself: programs update their arguments in place (`x *= 3`), which autograd allows on a
    non-leaf only."""
    if isinstance(value, torch.Tensor) and value.is_floating_point():
        leaf = value.detach().clone().requires_grad_(True)
        leaves.append(leaf)
        return leaf * 1
    if isinstance(value, A):
        return A(*(_differentiable(v, leaves) for v in value))
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(_differentiable(v, leaves) for v in value)
    if isinstance(value, dict):
        return {k: _differentiable(v, leaves) for k, v in value.items()}
    return value


def _gradients(params: list, result: Any, leaves: list) -> tuple[list | None, BaseException | None]:
    """The gradients of the sum of every output that requires grad, for the inputs and the program's parameters."""
    outputs = [o for o in ta.nest.flatten(result) if isinstance(o, torch.Tensor) and o.requires_grad]
    if not outputs:
        return None, None
    try:
        sum(o.sum().float() for o in outputs).backward()
    except Exception as e:  # compared with eager's: backward failing in one run only is a finding
        return None, e
    return [t.grad for t in leaves + params], None


def _call(fn: Callable, args: A, scope: dict, start: dict, program: Any = None, seconds: int = 20) -> _Run:
    """`fn(*args)` from the same seed, and with the program's module globals as they were before the case.

    `program`: the module `fn` runs (itself, or the one a `ta.function` wraps), whose parameters' gradients
    are compared."""
    scope.update(start)  # a global the other run set must not be seen by this one
    params = list(program.parameters()) if isinstance(program, torch.nn.Module) else []
    for p in params:
        p.grad = None
    torch.manual_seed(0)
    out = io.StringIO()
    leaves: list = []
    args = _differentiable(args, leaves)
    run = _Run(args=args)
    signal.alarm(seconds)
    with contextlib.redirect_stdout(out):
        try:
            run.result = fn(*args)
            run.grads, run.grad_error = _gradients(params, run.result, leaves)
        except _Hang:
            run.hung = True
        except Exception as e:  # the outcome records it: the corpus classifies every exception
            run.error = e
        finally:
            signal.alarm(0)
    run.printed = out.getvalue()
    run.globals_set = {k: v for k, v in scope.items() if (k not in start or v is not start[k]) and _plain(v)}
    return run


def _as_tensor(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach()
    if isinstance(value, ta.Variable):
        return value.read_value().detach()
    return value


_KINDS = {bool: (torch.bool,), int: (torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64),
          float: (torch.float16, torch.bfloat16, torch.float32, torch.float64)}


def _number_difference(expected: Any, got: Any, where: str) -> str | None:
    """A Python number eager returns may come back from the graph as a 0-d tensor of the same kind and value."""
    number, tensor = (expected, got) if isinstance(got, torch.Tensor) else (got, expected)
    if tensor.dim() != 0 or tensor.dtype not in _KINDS[type(number)] or tensor.item() != number:
        return f"{where}: eager {_short(expected)}, graph {_short(got)}"
    return None


def difference(expected: Any, got: Any, where: str = "result", jit: bool = False) -> str | None:
    """Why `got` is not `expected` (eager's), or None where they agree.

    `jit`: `got` comes from inductor's code, which sums in another order and fuses convolutions' and batch
    norms' arithmetic: a float may also differ by 1e-5 of the largest magnitude in its tensor (a convolution's
    weight gradient, a sum of thousands of products, differs from eager's there).
    """
    if isinstance(expected, ta.TensorArray) or isinstance(got, ta.TensorArray):
        return f"{where}: a TensorArray (compare its stack())"
    expected, got = _as_tensor(expected), _as_tensor(got)
    if isinstance(expected, torch.Tensor) or isinstance(got, torch.Tensor):
        if not (isinstance(expected, torch.Tensor) and isinstance(got, torch.Tensor)):
            if type(expected) in _KINDS or type(got) in _KINDS:
                return _number_difference(expected, got, where)
            return f"{where}: eager {expected!r}, graph {got!r}"
        if expected.dtype != got.dtype or expected.shape != got.shape:
            return (f"{where}: eager {expected.dtype} {tuple(expected.shape)}, "
                    f"graph {got.dtype} {tuple(got.shape)}")
        scale = float(expected.abs().nan_to_num(0, 0, 0).max()) if jit and expected.is_floating_point() \
            and expected.numel() else 0.0
        try:
            torch.testing.assert_close(got, expected, equal_nan=True, rtol=1e-4 if jit else 1e-5,
                                       atol=max(1e-6, 1e-5 * scale))
        except AssertionError:
            return f"{where}: eager {_short(expected)}, graph {_short(got)}"
        return None
    if isinstance(expected, dict) and isinstance(got, dict):
        if list(expected) != list(got):
            return f"{where}: eager keys {list(expected)}, graph keys {list(got)}"
        return next((d for k in expected if (d := difference(expected[k], got[k], f"{where}[{k!r}]", jit))), None)
    if isinstance(expected, (list, tuple)) and isinstance(got, (list, tuple)):
        if len(expected) != len(got) or hasattr(expected, "_fields") != hasattr(got, "_fields"):
            return f"{where}: eager {_short(expected)}, graph {_short(got)}"
        return next((d for k, (e, g) in enumerate(zip(expected, got))
                     if (d := difference(e, g, f"{where}[{k}]", jit))), None)
    if type(expected) is not type(got) or expected != got:
        return f"{where}: eager {_short(expected)}, graph {_short(got)}"
    return None


def _short(value: Any) -> str:
    text = repr(value).replace("\n", " ")
    return text if len(text) < 80 else text[:77] + "..."


def _gradient_difference(expected: _Run, got: _Run, jit: bool = False) -> str | None:
    if got.grad_error is not None and expected.grad_error is None:
        return f"backward fails: {first_line(got.grad_error)}"
    if expected.grads is None or got.grads is None:
        return None if (expected.grads is None) == (got.grads is None) else \
            f"gradients: eager {'none' if expected.grads is None else 'some'}, graph {'none' if got.grads is None else 'some'}"
    return difference(expected.grads, got.grads, "gradients (inputs, then parameters)", jit)


def first_line(error: BaseException) -> str:
    """`Type: first line of the message`."""
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0] if lines else ''}"[:200]


def names_program_line(error: BaseException, path: str, notes: bool = False) -> bool:
    """Whether the error's own message (not the appended user-code frames; with `notes`, or a note) names `path:N`.

    A refusal must say itself where and why; a note (`while tracing X at ...`) only places another error.
    """
    text = "\n".join([str(error).split("\nin user code:")[0], *(getattr(error, "__notes__", ()) if notes else ())])
    if "bug in torch_autograph" in text:
        return False
    return f"{path}:" in text or f'"{path}", line' in text


def _module_globals(c: Case) -> dict:
    fn = c.fn.func if isinstance(c.fn, functools.partial) else c.fn
    return getattr(fn, "__globals__", None) or vars(sys.modules[fn.__module__])


def run_case(c: Case, path: str, jit: bool = False) -> Outcome:
    """Run every input of `c` eagerly and through one `ta.function(c.fn)`; the first that is not equal decides."""
    scope = _module_globals(c)
    start = dict(scope)
    eager, graph_program = c.program(), c.program()
    traced = ta.function(graph_program, jit_compile=jit)
    # inductor compiles the forward and the backward graph: a convolution net's backward took over 2 minutes on 2
    # busy cores (the alarm then raised inside inductor: a "backward fails" that was no finding).
    seconds = SECONDS_PER_CALL * (15 if jit else 1)
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    try:
        eager_errors = 0
        for k, inputs in enumerate(c.inputs):
            expected = _call(eager, fresh(inputs), scope, start, eager, seconds)
            got = _call(traced, fresh(inputs), scope, start, graph_program, seconds)
            outcome = _compare(expected, got, path, f"input {k} {_short(inputs)}",
                               compare_printed=not c.prints_while_tracing, jit=jit)
            if outcome.kind != EQUAL:
                return outcome
            eager_errors += expected.error is not None
        if eager_errors == len(c.inputs) and not c.raises:
            return Outcome(CORPUS, "eager raises on every input: the port is wrong, or its inputs are")
        return Outcome(EQUAL)
    finally:
        scope.update(start)
        signal.signal(signal.SIGALRM, previous)


def _compare(expected: _Run, got: _Run, path: str, label: str, compare_printed: bool = True,
             jit: bool = False) -> Outcome:
    """The outcome of one input: the eager run `expected` against the graph run `got`."""
    if expected.hung:
        return Outcome(CORPUS, f"{label}: eager does not finish in time")
    if got.hung:
        return Outcome(HANG, f"{label}: no result in time (eager finishes)")
    if got.error is not None:
        clear = names_program_line(got.error, path)
        if expected.error is not None and (names_program_line(got.error, path, notes=True)
                                           or type(got.error) is type(expected.error)):
            return Outcome(EQUAL)  # both raise: the graph's error names the line, or is eager's own
        return Outcome(REFUSAL if clear else INTERNAL, f"{label}: {first_line(got.error)}")
    if expected.error is not None:
        return Outcome(WRONG, f"{label}: eager raises {first_line(expected.error)}; the graph returns "
                              f"{_short(got.result)}")
    try:
        why = (difference(expected.result, got.result, jit=jit)
               or difference(list(expected.args), list(got.args), "arguments after", jit)
               or difference(expected.globals_set, got.globals_set, "globals set", jit)
               or _gradient_difference(expected, got, jit)
               or (None if expected.printed == got.printed or not compare_printed else
                   f"printed: eager {expected.printed!r}, graph {got.printed!r}"))
    except Exception as e:  # a graph value that leaked out of its trace cannot even be read
        why = f"the graph's result cannot be read: {first_line(e)}"
    return Outcome(WRONG, f"{label}: {why}") if why else Outcome(EQUAL)
