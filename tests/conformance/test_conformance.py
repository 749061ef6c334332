"""The conformance corpus's fast subset under pytest, and checks of the harness and its listings.

Every program of the TensorFlow and MindSpore ports runs on the default
backend and must keep the outcome `expected.txt` records for it (a change
either way fails: a newly fixed program updates the listing with
`python tests/conformance/run_conformance.py --update`). The pytorch/examples
models and the `jit_compile=True` runs are in `make conformance` only.
"""

from __future__ import annotations

import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import corpus  # noqa: E402
import harness  # noqa: E402
from cases import A  # noqa: E402

FAST_SOURCES = ("tf_autograph", "mindspore")
PROGRAMS = corpus.programs()
EXPECTED = corpus.expected()
ALLOWED = corpus.allowed_refusals()


@pytest.mark.parametrize("program", [p for p in PROGRAMS if p.source in FAST_SOURCES], ids=lambda p: p.id)
def test_outcome_is_the_listed_one(program):
    outcome = harness.run_case(program.case, program.path)
    kind = "unlisted refusal" if outcome.kind == harness.REFUSAL and program.id not in ALLOWED else outcome.kind
    assert kind == EXPECTED.get((program.id, "default")), f"{program.id}: now {kind}: {outcome.detail}"


def test_listings_name_corpus_programs():
    ids = {p.id for p in PROGRAMS}
    runs = {(p.id, "default") for p in PROGRAMS} | {(p.id, "jit") for p in PROGRAMS if p.case.jit}
    assert set(EXPECTED) == runs, (sorted(runs - set(EXPECTED))[:5], sorted(set(EXPECTED) - runs)[:5])
    assert set(ALLOWED) <= ids, sorted(set(ALLOWED) - ids)
    listed_refusals = {pid for (pid, _), kind in EXPECTED.items() if kind == "refusal"}
    assert listed_refusals <= set(ALLOWED)


def test_a_python_number_matches_a_tensor_of_its_kind_only():
    assert harness.difference(3, torch.tensor(3, dtype=torch.int32)) is None
    assert harness.difference(2.5, torch.tensor(2.5)) is None
    assert harness.difference(True, torch.tensor(True)) is None
    assert "graph tensor(True)" in harness.difference(1, torch.tensor(True))
    assert harness.difference(1, torch.tensor([1])) is not None
    assert "int32" in harness.difference(torch.tensor(1), torch.tensor(1, dtype=torch.int32))
    assert harness.difference((1, [torch.ones(2)]), (1, [torch.ones(2)])) is None
    assert "result[1][0]" in harness.difference((1, [torch.ones(2)]), (1, [torch.zeros(2)]))
    assert harness.difference({"a": 1}, {"b": 1}) is not None


def test_jit_runs_may_differ_by_rounding_at_the_scale_of_their_tensor_only():
    # A convolution's weight gradient from inductor: a sum of thousands of products in another order.
    want = torch.tensor([132.0, -0.25, 3e-3])
    rounded = want + torch.tensor([5e-4, 5e-4, -5e-4])
    assert harness.difference(want, rounded) is not None
    assert harness.difference(want, rounded, jit=True) is None
    assert harness.difference([want], [rounded], "gradients", jit=True) is None
    assert harness.difference(want, want + torch.tensor([0.0, 0.01, 0.0]), jit=True) is not None
    assert harness.difference(torch.tensor([1, 2]), torch.tensor([1, 3]), jit=True) is not None


def _silently_wrong(x):
    return x + 1


def _fails_inside(x):
    raise RuntimeError("bug in torch_autograph: something internal")


def _refuses_at_line(x):
    raise ValueError(f"'y' must also be initialised in the else branch of the `if` at {__file__}:7")


def test_harness_classifies_a_wrong_value_an_internal_error_and_a_refusal():
    # The graph side is a stand-in function: what each failure looks like to the harness.
    def run(graph_side):
        scope = {}
        expected = harness._call(lambda x: x + 2, A(torch.tensor(1.0)), scope, {})
        return harness._compare(expected, harness._call(graph_side, A(torch.tensor(1.0)), scope, {}), __file__,
                                "input 0")

    wrong = run(_silently_wrong)
    assert wrong.kind == harness.WRONG and "eager tensor(3.), graph tensor(2.)" in wrong.detail
    assert run(_fails_inside).kind == harness.INTERNAL
    assert run(_refuses_at_line).kind == harness.REFUSAL
    assert run(lambda x: x + 2).kind == harness.EQUAL


def test_harness_compares_gradients():
    def run(eager_side, graph_side):
        scope = {}
        expected = harness._call(eager_side, A(torch.tensor([1.0, 2.0])), scope, {})
        return harness._compare(expected, harness._call(graph_side, A(torch.tensor([1.0, 2.0])), scope, {}),
                                __file__, "input 0")

    same_value_other_gradient = run(lambda x: x * 2, lambda x: x.detach() * 2 + x * 0)
    assert same_value_other_gradient.kind == harness.WRONG and "gradients" in same_value_other_gradient.detail
    assert run(lambda x: x * 2, lambda x: x + x).kind == harness.EQUAL
