"""Regions of jit_compile=True (backends/regions.py): sizes recomputed inside a region, checks moved before it."""

import logging
import shutil

import pytest
import torch
import torch.nn.functional as F

import torch_autograph as ta
from torch_autograph.backends import regions
from torch_autograph.graph import CheckOp, OpKind, ValueKind
from torch_autograph.graph.ops import Expression


def _attend(x, limit):
    while x.size(1) < limit:  # the sequence grows by one step per iteration, as in greedy decoding
        B, T, C = x.size()
        assert T <= 100, "sequence too long"  # (T >= 1 would be decided: the loop only grows T from 3)
        q = (x * 0.5).view(B, T, 2, C // 2).transpose(1, 2)  # views on the run-time length T
        k = torch.tanh(x).view(B, T, 2, C // 2).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, k, is_causal=True).transpose(1, 2).reshape(B, T, C)
        x = torch.cat([x, (y[:, -1:] + x[:, -1:]).sin()], dim=1)
    return x


def _split(fn, *args):
    graph = ta.function(fn).get_concrete_function(*args).graph
    made = []
    split = regions.split(graph, lambda g, grad: made.append(g) or (lambda *a: None))
    split.verify()
    for g in made:
        g.verify()
    return split, made


def _body(split):
    return next(n for n in split.nodes if n.subgraphs).subgraphs[1]


def test_a_loop_body_reading_its_length_is_one_region_after_its_checks():
    split, made = _split(_attend, torch.randn(2, 3, 8), torch.tensor(6))
    assert len(made) == 1
    body = _body(split)
    kinds = [n.op.name for n in body.nodes]
    # the user's assert (SDPA's "length != 0" needs no check: the length enters at 3 and only grows)
    assert kinds[-1] == "region" and kinds.count("check") == 1
    assert [n.op.target.message for n in body.nodes if isinstance(n.op.target, CheckOp)][0].startswith(
        "assertion failed: sequence too long")
    region = made[0]
    assert all(v.kind is ValueKind.TENSOR for v in region.inputs)  # the length is recomputed inside, from x
    sizes = [n for n in region.nodes if n.op.kind is OpKind.METHOD and n.op.target == "size"]
    assert len(sizes) == 1 and region.nodes.index(sizes[0]) < next(
        i for i, n in enumerate(region.nodes) if n.op.target == "view")


def _update_then_check(x, limit):
    while x.size(1) < limit:
        y = ((x * 2.0).sin() * x).cos()
        y.add_(1.0)  # an effect: nothing after it moves before the region that runs it
        assert x.size(1) <= 100, "too long"
        x = torch.cat([x, (y.sin() + y.cos() * y).tanh()[:, -1:]], dim=1)
    return x


def test_a_check_never_moves_before_an_effect():
    split, made = _split(_update_then_check, torch.randn(2, 3), torch.tensor(6))
    names = [n.op.name for n in _body(split).nodes]
    assert len(made) == 2 and names.count("region") == 2
    assert names.index("region") < names.index("check") < len(names) - 1 == names.index("region", 2)
    assert made[0].nodes[-1].stateful
    f = ta.function(_update_then_check, jit_compile=True)
    x = torch.randn(2, 3)
    torch.testing.assert_close(f(x, torch.tensor(6)), _update_then_check(x, 6))


@pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                    reason="inductor on CPU needs a C++ compiler")
def test_the_one_region_compiles_once_for_every_length_and_matches_eager(caplog):
    caplog.set_level(logging.INFO, logger="torch_autograph.jit")
    f = ta.function(_attend, jit_compile=True)
    for limit in (9, 5, 12):
        x = torch.randn(2, 3, 8)
        torch.testing.assert_close(f(x, torch.tensor(limit)), _attend(x, limit))
    compiles = [r.getMessage() for r in caplog.records if r.getMessage().startswith("compiling")]
    assert len(compiles) == 1 and "(open sizes symbolic)" in compiles[0]
    assert f.concrete_functions[0].graph.python_source.count("compiled with inductor:") == 1


PROJECTIONS = [torch.randn(8, 8) * 0.3 for _ in range(8)]


def _project_and_attend(x, limit):
    while x.size(1) < limit:
        h = x
        for w in PROJECTIONS:  # 8 captured weights: inductor's wrapper checks 9 tensors per call
            h = torch.tanh(h @ w)
        B, T, C = h.size()
        q = h.view(B, T, 2, C // 2).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, q, q, is_causal=True).transpose(1, 2).reshape(B, T, C)
        x = torch.cat([x, y[:, -1:].sin()], dim=1)
    return x


@pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                    reason="inductor on CPU needs a C++ compiler")
def test_an_inference_region_with_many_inputs_runs_inductors_cpp_wrapper_and_matches_eager(monkeypatch):
    from torch_autograph.backends import inductor

    chosen = []
    original = inductor._Runner.cpp_wrapper
    monkeypatch.setattr(inductor._Runner, "cpp_wrapper", lambda self, args, frozen=False: chosen.append(
        original(self, args, frozen)) or chosen[-1])
    f = ta.function(_project_and_attend, jit_compile=True)
    with torch.no_grad():
        for limit in (9, 5, 12):
            x = torch.randn(2, 3, 8)
            torch.testing.assert_close(f(x, torch.tensor(limit)), _project_and_attend(x, limit))
    assert chosen == [True]  # one compile (open sizes), inference on CPU, 9 tensors checked per call


def _reshaped(x, limit):
    while x.size(1) < limit:
        B, T, C = x.shape
        y = (x * 0.5).reshape(B, T * 2, C // 2).sin().reshape(B, T, C).cos() + x.tanh()  # a size 2*T
        x = torch.cat([x, (y[:, -1:] + y.new_zeros(B, T + 1, C)[:, -1:]).sin()], dim=1)
    return x


def test_sizes_derived_by_int_arithmetic_are_recomputed_too():
    split, made = _split(_reshaped, torch.randn(2, 3, 8), torch.tensor(6))
    assert len(made) == 1 and [n.op.name for n in _body(split).nodes][-1] == "region"
    assert sum(isinstance(n.op.target, Expression) for n in made[0].nodes) == 2  # 2*T and T + 1


def test_only_int_arithmetic_expressions_are_lowered_to_fx():
    assert Expression("2*_a0 + _a1 // 4 - (_a0 % 3)", 2, torch.int64).is_int_arithmetic()
    for text in ("max(0, _a0 - 1)", "_a0 >= 1", "_a0 / 2", "math.floor(_a0)", "_a0 * 0.5"):
        assert not Expression(text, 1, torch.int64).is_int_arithmetic(), text


@pytest.mark.skipif(shutil.which("g++") is None and shutil.which("c++") is None,
                    reason="inductor on CPU needs a C++ compiler")
def test_a_graph_with_a_derived_size_compiles_whole_for_every_size():
    def f(x):
        B, C = x.shape
        return (x * 2).reshape(B * 2, C // 2).sin().sum(0)  # B * 2 is a number computed when the graph runs

    J = ta.function(f, jit_compile=True, input_signature=[ta.TensorSpec([None, 8], torch.float32)])
    for n in (5, 7, 2):
        x = torch.randn(n, 8)
        torch.testing.assert_close(J(x), f(x))
    assert "mul_1 = 2 * x_size0" in J.concrete_functions[0].graph.python_source  # the fx code, one graph


def _merged_number(x):
    # From TensorFlow AutoGraph's reference test basic_ifexp_test.consecutive_conds: the else branch gives the
    # Python number 1, merged with the tensor of the other branch.
    if x > 0:
        x = -x if x < 5 else x
    else:
        x = -2 * x if x < 5 else 1
    return x


def _number_rebound(x):
    if x > 0:
        y = 1
    else:
        y = x * 1
    z = y
    y -= 4  # a Python number on one path (rebinds y; z keeps 1), a tensor on the other (updates z too)
    return y, z


@pytest.mark.parametrize("fn", [_merged_number, _number_rebound])
def test_numbers_a_tensor_if_merged_run_as_python_between_regions(fn):
    # They look up at every call which tensors stand for Python numbers: torch.fx cannot trace that (it was an
    # internal error, `UncapturedHigherOrderOpError` / "'Augmented' object has no attribute '__name__'").
    compiled = ta.function(fn, jit_compile=True)
    for x in (torch.tensor(1), torch.tensor(-1), torch.tensor(7)):
        expected = fn(x.clone())
        got = compiled(x.clone())
        expected = expected if isinstance(expected, tuple) else (expected,)
        got = got if isinstance(got, tuple) else (got,)
        for e, g in zip(expected, got):
            assert torch.equal(g, torch.as_tensor(e)) and g.dtype == torch.int64, (x, expected, got)
    with pytest.raises(ta.errors.GraphLoweringError, match=r"test_regions.py\", line \d+.*\n.*\nFix:"):
        ta.function(fn).get_concrete_function(torch.tensor(1)).to_fx()
