"""Closures passed to staged calls (`optimizer.step(closure)`) run at every call of the graph, as a graph of their
own: LBFGS (whose step calls the closure a data-dependent number of times) and SGD/Adam with a closure train inside
a `ta.function` as they do eagerly. The time_sequence_prediction pattern of pytorch/examples.
"""

import copy

import pytest
import torch
import torch.nn as nn

import torch_autograph as ta


def _make(opt_class, **kw):
    torch.manual_seed(0)
    lin = nn.Linear(2, 1)
    ref = copy.deepcopy(lin)
    return lin, opt_class(lin.parameters(), **kw), ref, opt_class(ref.parameters(), **kw)


def _step_fn(lin, opt):
    def step(inp, tgt):
        def closure():
            opt.zero_grad()
            loss = ((lin(inp) - tgt) ** 2).mean()
            loss.backward()
            return loss

        return opt.step(closure)

    return step


@pytest.mark.parametrize("opt_class,kw", [
    (torch.optim.LBFGS, dict(lr=0.1)),
    (torch.optim.LBFGS, dict(lr=0.5, max_iter=5, history_size=3, line_search_fn="strong_wolfe")),
    (torch.optim.SGD, dict(lr=0.1, momentum=0.9)),
    (torch.optim.Adam, dict(lr=0.05)),
])
def test_a_step_with_a_closure_trains_as_eager(opt_class, kw):
    lin, opt, ref, ref_opt = _make(opt_class, **kw)
    f = ta.function(_step_fn(lin, opt))
    eager = _step_fn(ref, ref_opt)
    torch.manual_seed(1)
    inp, tgt = torch.randn(4, 2), torch.randn(4, 1)
    for i in range(10):
        got, want = f(inp, tgt), eager(inp, tgt)
        torch.testing.assert_close(got, want, rtol=0, atol=1e-5)
        for p, q in zip(lin.parameters(), ref.parameters()):
            torch.testing.assert_close(p, q, rtol=0, atol=1e-5)
    assert f.experimental_get_tracing_count() == 1
    state, ref_state = opt.state_dict()["state"], ref_opt.state_dict()["state"]
    assert state.keys() == ref_state.keys()


def test_the_closure_reads_values_the_function_computed_and_the_step_result_is_used():
    lin, opt, ref, ref_opt = _make(torch.optim.LBFGS, lr=0.1, max_iter=4)

    def make(lin, opt):
        def step(inp, tgt):
            x = inp * 2  # a graph value computed before the step, read by the closure
            target = {"y": tgt}  # and one in a dict
            losses = []

            def forward():
                return ((lin(x) - target["y"]) ** 2).mean()

            def closure():
                opt.zero_grad()
                loss = forward()  # a helper closing over graph values too
                loss.backward()
                return loss

            loss = opt.step(closure)
            losses.append(loss)
            return loss * 10, lin(inp)

        return step

    f, eager = ta.function(make(lin, opt)), make(ref, ref_opt)
    torch.manual_seed(2)
    inp, tgt = torch.randn(4, 2), torch.randn(4, 1)
    for _ in range(5):
        (a, b), (c, d) = f(inp, tgt), eager(inp, tgt)
        torch.testing.assert_close(a, c, rtol=0, atol=1e-5)
        torch.testing.assert_close(b, d, rtol=0, atol=1e-5)
    assert f.experimental_get_tracing_count() == 1


def test_a_closure_reading_no_graph_value_still_returns_its_loss():
    lin, opt, ref, ref_opt = _make(torch.optim.SGD, lr=0.1)
    data = torch.randn(4, 2)

    def make(lin, opt):
        def closure():
            opt.zero_grad()
            loss = lin(data).pow(2).mean()
            loss.backward()
            return loss

        return lambda scale: opt.step(closure) * scale

    f, eager = ta.function(make(lin, opt)), make(ref, ref_opt)
    for _ in range(4):
        torch.testing.assert_close(f(torch.tensor(2.0)), eager(torch.tensor(2.0)), rtol=0, atol=1e-6)
    torch.testing.assert_close(lin.weight, ref.weight, rtol=0, atol=1e-6)


def test_lbfgs_with_a_closure_in_code_autograph_does_not_convert():
    lin, opt, ref, ref_opt = _make(torch.optim.LBFGS, lr=0.1, max_iter=5)
    f = ta.function(_step_fn(lin, opt), autograph=False)
    eager = _step_fn(ref, ref_opt)
    inp, tgt = torch.ones(4, 2), torch.zeros(4, 1)
    for _ in range(4):
        torch.testing.assert_close(f(inp, tgt), eager(inp, tgt), rtol=0, atol=1e-5)
    torch.testing.assert_close(lin.weight, ref.weight, rtol=0, atol=1e-5)
