"""Differential fuzzing: random Python programs give the same results, and gradients, as graphs.

Each program (nested if/elif/else, bounded while, for over range, break,
continue, early return, and/or/not, ternaries, chained comparisons, abs/min/
max, closures, a list changed by append/pop/insert/del, try/except/finally,
recursive and decorated helpers; see tests/autograph/program_gen.py) runs:

- on ints: the original on Python ints, AutoGraph's converted code on Python
  ints, and `ta.function` on int64 tensors (every condition on a tensor
  becomes a graph `cond`/`while`). All three must agree, and the graph must
  agree with the same program run eagerly on tensors. One difference between
  Python ints and tensors is not ours to hide: `z = a; z -= 1` updates the
  tensor in place, so `a` changes too (eager PyTorch does the same); for
  programs with augmented assignments, the graph is compared with eager
  PyTorch only.
- on floats: the same program with `/` for `//`, on float64 tensors that
  require grad, eagerly and as a `ta.function`: values and the gradients of
  the three inputs must agree.

`make test` runs 500 programs (`TA_GRAPH_FUZZ_EXAMPLES=n` sets the count);
the `slow` test, run by `make test-slow`, runs 10,000 and prints the tally
of `fuzz_outcomes` (the four counts that must be zero, the refusals that are
TensorFlow's own design rules).

A Python number that a tensor `if` promotes to a tensor on one path stays a
number on the others for in-place updates: after `z = y`, `y -= 4` rebinds
`y` where eager Python does and updates the tensor where eager PyTorch does.
A graph that differs from eager only there (it agrees once `v -= e` is
written `v = v - (e)`) counts as `aliasing`, which must stay at zero.
"""

import linecache
import os
import random
import re
import warnings

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import torch_autograph as ta

import program_gen  # tests/autograph, on sys.path by tests/conftest.py
from fuzz_outcomes import Tally, classify_error, without_augmented_assignment

EXAMPLES = int(os.environ.get("TA_GRAPH_FUZZ_EXAMPLES", "500"))

# `v op= ...` on a variable that may hold an argument tensor updates that tensor in place.
_MAY_ALIAS_AN_ARGUMENT = re.compile(r"^\s*[a-z]\w* [-+*/%]+= ", re.MULTILINE)


def _as_ints(result):
    return tuple(int(v) for v in result)


def _graph(prog, args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ta.function(prog)(*args)


def int_outcome(source, inputs):
    """The category of the program on ints: 'ok', 'mismatch', 'aliasing', a design rule, ..."""
    prog = program_gen.load(source)
    expected = prog(*inputs)
    if ta.autograph.to_graph(prog)(*inputs) != expected:
        return "mismatch", "converted code on ints"
    try:
        got = _graph(prog, [torch.tensor(v) for v in inputs])
    except Exception as e:  # noqa: BLE001 - classified
        return classify_error(e), f"{type(e).__name__}: {e}"
    eager = prog(*[torch.tensor(v) for v in inputs])
    agrees = _as_ints(got) == _as_ints(eager) and (
        _MAY_ALIAS_AN_ARGUMENT.search(source) or _as_ints(got) == _as_ints(expected))
    if agrees:
        return "ok", ""
    if source != without_augmented_assignment(source) and \
            int_outcome(without_augmented_assignment(source), inputs)[0] == "ok":
        return "aliasing", f"graph {_as_ints(got)}, eager {_as_ints(eager)}"
    return "mismatch", f"graph {_as_ints(got)}, eager {_as_ints(eager)}, Python {expected}"


def _forward(fn, inputs):
    leaves = [torch.tensor(float(v), dtype=torch.float64, requires_grad=True) for v in inputs]
    return fn(*[leaf * 1 for leaf in leaves]), leaves  # not leaves: `z -= 1` may update an argument


def _backward(out, leaves):
    needs = [o for o in out if isinstance(o, torch.Tensor) and o.requires_grad]
    if needs:
        sum(needs).backward()
    grads = [leaf.grad if leaf.grad is not None else torch.zeros((), dtype=torch.float64) for leaf in leaves]
    values = [float(o.detach()) if isinstance(o, torch.Tensor) else float(o) for o in out]
    return values, torch.stack(grads), [type(o) is float for o in out]


def float_outcome(source, inputs):
    """The category of the float program: values and gradients of the graph against eager's."""
    prog = program_gen.load(source)
    try:
        eager = _backward(*_forward(prog, inputs))
    except Exception as e:  # noqa: BLE001 - nothing to compare with
        return "eager raises", f"{type(e).__name__}: {e}"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out, leaves = _forward(ta.function(prog), inputs)
    except Exception as e:  # noqa: BLE001 - classified
        return classify_error(e), f"{type(e).__name__}: {e}"
    try:
        got = _backward(out, leaves)
    except Exception as e:  # noqa: BLE001 - eager's backward worked
        return "gradient failure", f"{type(e).__name__}: {e}"
    # A Python float the function returns comes back from a graph as a tensor, float32 when it
    # is a constant (as from tf.function): compared to float32 precision.
    rtol = torch.tensor([1e-6 if python_float else 1e-9 for python_float in eager[2]], dtype=torch.float64)
    values = [torch.tensor(v, dtype=torch.float64) for v in (got[0], eager[0])]
    if not bool(((values[0] - values[1]).abs() <= 1e-9 + rtol * values[1].abs()).all()):
        if source != without_augmented_assignment(source) and \
                float_outcome(without_augmented_assignment(source), inputs)[0] == "ok":
            return "aliasing", f"graph {got[0]}, eager {eager[0]}"
        return "mismatch", f"values: graph {got[0]}, eager {eager[0]}"
    if not torch.allclose(got[1], eager[1], rtol=1e-9, atol=1e-9, equal_nan=True):
        return "gradient failure", f"gradients: graph {got[1].tolist()}, eager {eager[1].tolist()}"
    return "ok", ""


def _check(sources, inputs):
    for outcome, source in ((int_outcome, sources[0]), (float_outcome, sources[1])):
        category, detail = outcome(source, inputs)
        assert category in ("ok", "eager raises") or category.startswith("design rule"), \
            f"{category}: {detail}\n{source}inputs={inputs}"


_SETTINGS = dict(deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))


@settings(max_examples=EXAMPLES, **_SETTINGS)
@given(sources=program_gen.program_pairs(), inputs=st.tuples(*[st.integers(-4, 6)] * 3))
def test_graph_matches_python(sources, inputs):
    _check(sources, inputs)


@pytest.mark.slow
def test_graph_matches_python_10000_programs():
    """10,000 programs (seeds 0..9999), each on ints and on floats with gradients: the tally."""
    ints, floats = Tally(), Tally()
    for seed in range(10_000):
        sources = program_gen.generate_pair(seed)
        rng = random.Random(seed)
        inputs = tuple(rng.randint(-4, 6) for _ in range(3))
        for tally, outcome, source in ((ints, int_outcome, sources[0]), (floats, float_outcome, sources[1])):
            try:
                category, detail = outcome(source, inputs)
            except Exception as e:  # noqa: BLE001 - the harness itself must not hide a failure
                category, detail = "internal error", f"{type(e).__name__}: {e}"
            tally.add(category, f"{source}inputs={inputs}", detail)
        ta.autograph.clear_cache()
        for name in [k for k in linecache.cache if k.startswith("<fuzz program")]:
            del linecache.cache[name]
    report = ints.summary("10,000 programs on ints:") + "\n" + floats.summary("the same on floats (gradients):")
    print(report)
    assert not ints.failures() and not floats.failures(), report
