"""One generated program run as Python, as eager PyTorch and as a graph: its `fuzz_outcomes` category.

`int_outcome(source, inputs)`: the program on Python ints (the original and
AutoGraph's converted code), then on int64 tensors eagerly and as a
`ta.function`, on `inputs` and on two other inputs that reuse the trace.
`float_outcome(source, inputs)`: the `/` version on float64 tensors that
require grad, eagerly and as a `ta.function`, values and gradients, on the
same three inputs. The rules (fuzz_outcomes names the categories):

- results compare in dtype, shape and value: a Python number is the tensor
  a graph returns for it (int -> int64, bool -> bool, float -> float32, the
  README's rule); ints, bools and float64 values and gradients exactly, Python
  floats to float32's precision; the one difference allowed is the README's:
  where a tensor `if` merges an int with a float the graph gives the float
  (equal in value);
- the objects a call changes besides its result (a `ta.Variable`, captured
  containers, a dict argument) are compared with eager's after each call;
- eager raising is fine only where the graph raises too;
- a design-rule refusal counts only if the program breaks the rule
  (`fuzz_structure.breaks`, from the syntax tree);
- the graph is compared with Python too, except where the program updates in
  place (`v op= e`) a name that may share its tensor (`fuzz_structure.skips_python`):
  there Python ints and eager tensors rightly differ, and eager is the reference;
- the trace made on `inputs` serves the two other inputs (no retrace).
"""

from __future__ import annotations

import warnings

import fuzz_structure
import graph_program_gen
import program_gen
import torch
from fuzz_outcomes import classify_refusal, without_augmented_assignment

import torch_autograph as ta

_PY_DTYPES = {bool: torch.bool, int: torch.int64, float: torch.float32}


def other_inputs(inputs: tuple) -> list:
    """Two more inputs of the same types, for the trace made on `inputs`."""
    return [tuple((3 * v + 1) % 11 - 4 for v in inputs), tuple(1 - v for v in reversed(inputs))]


def canon(v):
    """`v` as a graph gives it back: Python numbers as 0-dim tensors, containers element by element."""
    if isinstance(v, ta.Variable):
        return v.read_value().detach()
    if isinstance(v, torch.Tensor):
        try:
            return v.detach()
        except Exception as e:  # noqa: BLE001 - a graph tensor left in an object after its trace: never equal
            return f"<unusable tensor: {type(e).__name__}>"
    if type(v) in _PY_DTYPES:
        return torch.tensor(v, dtype=_PY_DTYPES[type(v)])
    if isinstance(v, (list, tuple)):
        return type(v)(canon(e) for e in v)
    if isinstance(v, dict):
        return {k: canon(e) for k, e in v.items()}
    return v


def differs(got, want, promote: bool = False, numbers: bool = False) -> str:
    """'' when `got` (graph) equals `want` (reference) in structure, dtype, shape and value; else what differs.
    `promote`: a float where the reference has an int of equal value is allowed (the README's merge rule);
    `numbers`: the same, only where the reference has a Python number (int programs, whose tensors are int64)."""
    merge = promote or (numbers and type(want) in (int, float))
    raw_got, raw_want = got, want
    got, want = canon(got), canon(want)
    if isinstance(want, (list, tuple, dict)):
        if type(got) is not type(want) or len(got) != len(want):
            return f"{got!r} is not like {want!r}"
        keys = want.keys() if isinstance(want, dict) else range(len(want))
        if isinstance(want, dict) and got.keys() != want.keys():
            return f"keys {sorted(got)} != {sorted(want)}"
        return next((f"[{k!r}]: {d}" for k in keys if (d := differs(raw_got[k], raw_want[k], promote, numbers))), "")
    if not isinstance(want, torch.Tensor) or not isinstance(got, torch.Tensor):
        return "" if got is want or got == want else f"{got!r} != {want!r}"
    # A Python number where the reference has one (float programs: any 0-dim value, their tensors are all
    # float64), and the graph a float, as where a tensor `if` merged it with a float (a float64 tensor, a Python
    # float: float32) on another path: the README's rule.
    merged = merge and want.dim() == 0 and (
        (want.dtype == torch.int64 and got.dtype in (torch.float32, torch.float64))
        or (want.dtype == torch.float32 and got.dtype == torch.float64))
    if got.dtype != want.dtype and not merged:
        return f"dtype {got.dtype} != {want.dtype} ({got.tolist()} vs {want.tolist()})"
    if got.shape != want.shape:
        return f"shape {tuple(got.shape)} != {tuple(want.shape)}"
    if got.is_floating_point():
        # float64: exactly (the default backend runs eager's ops in eager's order); a Python float the graph
        # gives as float32 (or a merged one): to float32's precision.
        rtol = 0.0 if got.dtype == want.dtype == torch.float64 else 1e-6
        close = torch.isclose(got.double(), want.double(), rtol=rtol, atol=0.0, equal_nan=True).all()
        return "" if bool(close) else f"{got.tolist()} != {want.tolist()}"
    return "" if torch.equal(got, want) else f"{got.tolist()} != {want.tolist()}"


def _call(fn, prog, args: list) -> tuple:
    """("ok", result, state) or ("raised", the exception): `fn(*args)` from the program's fresh state."""
    d = graph_program_gen.fresh_state(prog)
    args = args + [d] if graph_program_gen.takes_dict(prog) else args
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = fn(*args)
    except Exception as e:  # noqa: BLE001 - compared with what the reference does
        return "raised", e, graph_program_gen.state_of(prog, d)
    return "ok", graph_program_gen.unboxed(out), graph_program_gen.state_of(prog, d)


def _described(run: tuple) -> str:
    return f"{type(run[1]).__name__}: {run[1]}" if run[0] == "raised" else f"{run[1]!r}, state {run[2]!r}"


def _first_refusal(graph: tuple, eager: tuple, source: str, floats: bool, n: int) -> tuple:
    """The category of a graph that raised on the `n`th input."""
    if eager[0] == "raised":
        # The same exception as the graph ran: what the call changed before it (a `finally:`) as eagerly.
        if type(graph[1]) is type(eager[1]) and len(graph) > 2 and (d := differs(graph[2], eager[2])):
            return "mismatch", f"both raise {type(eager[1]).__name__}, the state after differs: {d}"
        return "eager raises", f"eager {_described(eager)}; graph {_described(graph)}"
    detail = f"{type(graph[1]).__name__}: {graph[1]}"
    if n == 0:
        return classify_refusal(graph[1], source, floats), detail
    return "mismatch", f"the trace raises on another input where eager does not: {detail}"


def int_outcome(source: str, inputs: tuple) -> tuple:
    """The category (and a detail) of the int program `source` on `inputs` and two more (module docstring)."""
    prog = program_gen.load(source)
    python = _call(prog, prog, list(inputs))
    try:
        converted = _call(ta.autograph.to_graph(prog), prog, list(inputs))
    except Exception as e:  # noqa: BLE001 - the conversion itself failed
        return "internal error", f"converting: {type(e).__name__}: {e}"
    same_raise = python[0] == converted[0] == "raised" and type(python[1]) is type(converted[1]) and \
        not differs(converted[2], python[2])  # (an exception no `except` catches, the state as Python's)
    if not same_raise and (python[0] == "raised" or converted[0] == "raised" or differs(converted[1:], python[1:])):
        return "mismatch", f"converted code on ints: {_described(converted)}; Python {_described(python)}"
    fn, with_python = ta.function(prog), not fuzz_structure.skips_python(source)
    for n, values in enumerate([inputs, *other_inputs(inputs)]):
        eager = _call(prog, prog, [torch.tensor(v) for v in values])  # fresh: `a -= 1` updates an argument
        graph = _call(fn, prog, [torch.tensor(v) for v in values])
        if graph[0] == "raised":
            return _first_refusal(graph, eager, source, False, n)
        if eager[0] == "raised":
            return "raises only eagerly", f"eager {_described(eager)}; graph {_described(graph)}, inputs {values}"
        if (d := differs(graph[1:], eager[1:], numbers=True)):
            if source != without_augmented_assignment(source) and \
                    int_outcome(without_augmented_assignment(source), inputs)[0] == "ok":
                return "aliasing", f"graph {_described(graph)}, eager {_described(eager)}: {d}"
            return "mismatch", f"inputs {values}: graph {_described(graph)}, eager {_described(eager)}: {d}"
        if with_python:
            python = _call(prog, prog, list(values))
            if python[0] == "raised" or (d := differs(eager[1:], python[1:])):
                return "eager differs from Python", (f"inputs {values}: eager {_described(eager)}, "
                                                     f"Python {_described(python)}")
    if fn.experimental_get_tracing_count() != 1:
        return "retraced", f"{fn.experimental_get_tracing_count()} traces for inputs of one type"
    return "ok", ""


def _float_call(fn, prog, values: tuple) -> tuple:
    """("ok", (result, state), gradients) or ("raised", e, where)."""
    leaves = [torch.tensor(float(v), dtype=torch.float64, requires_grad=True) for v in values]
    run = _call(fn, prog, [leaf * 1 for leaf in leaves])  # not leaves: `z -= 1` may update an argument
    if run[0] == "raised":
        return "raised", run[1], "forward"
    needs = [o for o in ta.nest.flatten(run[1]) if isinstance(o, torch.Tensor) and o.requires_grad]
    try:
        if needs:
            sum(o.sum() for o in needs).backward()
    except Exception as e:  # noqa: BLE001 - compared with eager's backward
        return "raised", e, "backward"
    grads = [leaf.grad if leaf.grad is not None else torch.zeros((), dtype=torch.float64) for leaf in leaves]
    return "ok", (run[1], run[2]), torch.stack(grads)


def float_outcome(source: str, inputs: tuple) -> tuple:
    """The category of the float program: values, dtypes, state and gradients of the graph against eager's."""
    prog = program_gen.load(source)
    fn = ta.function(prog)
    try:
        ta.autograph.to_graph(prog)
    except Exception as e:  # noqa: BLE001 - the conversion itself failed
        return "internal error", f"converting: {type(e).__name__}: {e}"
    for n, values in enumerate([inputs, *other_inputs(inputs)]):
        eager = _float_call(prog, prog, values)
        graph = _float_call(fn, prog, values)
        if graph[0] == "raised" and graph[2] == "backward" and eager[0] == "ok":
            return "gradient failure", f"{type(graph[1]).__name__}: {graph[1]}"
        if graph[0] == "raised":
            return _first_refusal(graph, eager, source, True, n)
        if eager[0] == "raised":
            return "raises only eagerly", (f"eager ({eager[2]}) {type(eager[1]).__name__}: {eager[1]}; "
                                           f"graph {graph[1][0]!r}, inputs {values}")
        if (d := differs(graph[1], eager[1], promote=True)):
            if source != without_augmented_assignment(source) and \
                    float_outcome(without_augmented_assignment(source), inputs)[0] == "ok":
                return "aliasing", f"graph {graph[1]!r}, eager {eager[1]!r}: {d}"
            return "mismatch", f"inputs {values}: graph {graph[1]!r}, eager {eager[1]!r}: {d}"
        if not bool(torch.isclose(graph[2], eager[2], rtol=0.0, atol=0.0, equal_nan=True).all()):  # bitwise
            return "gradient failure", (f"inputs {values}: gradients: graph {graph[2].tolist()}, "
                                        f"eager {eager[2].tolist()}")
    if fn.experimental_get_tracing_count() != 1:
        return "retraced", f"{fn.experimental_get_tracing_count()} traces for inputs of one type"
    return "ok", ""
