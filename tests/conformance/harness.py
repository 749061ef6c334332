"""Run one corpus program eagerly and through `ta.function`, and say what came of it.

The truth is the plain Python/PyTorch run. Per input, both runs start from
fresh copies of the input and the same random seed; their results, the
inputs afterwards (what the call changed) and what they printed must agree:
the same structure, and per tensor the same dtype, shape and values (floats
within `torch.testing.assert_close`'s tolerance, bitwise everything else).
A Python number may come back as a 0-d tensor of its kind (bool, integer,
floating) and value: a graph's results are tensors (the graph cannot return
Python's type, which may depend on how many times a loop ran).
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
import io
import functools
import signal
import sys
from typing import Any, Callable

import torch

import torch_autograph as ta

from cases import A, Case, fresh

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


def _plain(value: Any) -> bool:
    return not (callable(value) or isinstance(value, type(contextlib)))


def _call(fn: Callable, args: A, scope: dict, start: dict) -> _Run:
    """`fn(*args)` from the same seed, and with the program's module globals as they were before the case."""
    scope.update(start)  # a global the other run set must not be seen by this one
    torch.manual_seed(0)
    out = io.StringIO()
    run = _Run(args=args)
    signal.alarm(SECONDS_PER_CALL)
    with contextlib.redirect_stdout(out):
        try:
            run.result = fn(*args)
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


def difference(expected: Any, got: Any, where: str = "result") -> str | None:
    """Why `got` is not `expected` (eager's), or None where they agree."""
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
        try:
            torch.testing.assert_close(got, expected, equal_nan=True, rtol=1e-5, atol=1e-6)
        except AssertionError:
            return f"{where}: eager {_short(expected)}, graph {_short(got)}"
        return None
    if isinstance(expected, dict) and isinstance(got, dict):
        if list(expected) != list(got):
            return f"{where}: eager keys {list(expected)}, graph keys {list(got)}"
        return next((d for k in expected if (d := difference(expected[k], got[k], f"{where}[{k!r}]"))), None)
    if isinstance(expected, (list, tuple)) and isinstance(got, (list, tuple)):
        if len(expected) != len(got) or hasattr(expected, "_fields") != hasattr(got, "_fields"):
            return f"{where}: eager {_short(expected)}, graph {_short(got)}"
        return next((d for k, (e, g) in enumerate(zip(expected, got))
                     if (d := difference(e, g, f"{where}[{k}]"))), None)
    if type(expected) is not type(got) or expected != got:
        return f"{where}: eager {_short(expected)}, graph {_short(got)}"
    return None


def _short(value: Any) -> str:
    text = repr(value).replace("\n", " ")
    return text if len(text) < 80 else text[:77] + "..."


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
    eager = c.program()
    traced = ta.function(c.program(), jit_compile=jit)
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    try:
        eager_errors = 0
        for k, inputs in enumerate(c.inputs):
            expected, got = _call(eager, fresh(inputs), scope, start), _call(traced, fresh(inputs), scope, start)
            outcome = _compare(expected, got, path, f"input {k} {_short(inputs)}",
                               compare_printed=not c.prints_while_tracing)
            if outcome.kind != EQUAL:
                return outcome
            eager_errors += expected.error is not None
        if eager_errors == len(c.inputs) and not c.raises:
            return Outcome(CORPUS, "eager raises on every input: the port is wrong, or its inputs are")
        return Outcome(EQUAL)
    finally:
        scope.update(start)
        signal.signal(signal.SIGALRM, previous)


def _compare(expected: _Run, got: _Run, path: str, label: str, compare_printed: bool = True) -> Outcome:
    """The outcome of one input: the eager run `expected` against the graph run `got`."""
    if expected.hung:
        return Outcome(CORPUS, f"{label}: eager does not finish within {SECONDS_PER_CALL} s")
    if got.hung:
        return Outcome(HANG, f"{label}: no result within {SECONDS_PER_CALL} s (eager finishes)")
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
        why = (difference(expected.result, got.result)
               or difference(list(expected.args), list(got.args), "arguments after")
               or difference(expected.globals_set, got.globals_set, "globals set")
               or (None if expected.printed == got.printed or not compare_printed else
                   f"printed: eager {expected.printed!r}, graph {got.printed!r}"))
    except Exception as e:  # a graph value that leaked out of its trace cannot even be read
        why = f"the graph's result cannot be read: {first_line(e)}"
    return Outcome(WRONG, f"{label}: {why}") if why else Outcome(EQUAL)
