"""Gradients through graphs equal eager gradients, for inputs and parameters."""

import copy

import pytest
import torch

import torch_autograph as ta


def _grads(fn, module, x):
    module.zero_grad()
    x = x.detach().clone().requires_grad_(True)
    out = fn(x)
    out.sum().backward()
    return out.detach(), x.grad, {n: p.grad.clone() for n, p in module.named_parameters() if p.grad is not None}


def _compare(module, x, seed=0):
    eager_module = copy.deepcopy(module)
    traced = ta.function(lambda x: module(x), autograph=False)
    torch.manual_seed(seed)
    got = _grads(traced, module, x)
    torch.manual_seed(seed)
    expected = _grads(eager_module, eager_module, x)
    torch.testing.assert_close(got, expected)
    for (name, b1), (_, b2) in zip(module.named_buffers(), eager_module.named_buffers()):
        torch.testing.assert_close(b1, b2, msg=f"buffer {name}")
    return traced


@pytest.mark.parametrize("make, shape", [
    (lambda: torch.nn.Linear(5, 3), (4, 5)),
    (lambda: torch.nn.Conv2d(2, 3, 3, padding=1), (2, 2, 6, 6)),
    (lambda: torch.nn.LayerNorm(5), (4, 5)),
    (lambda: torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.Dropout(0.5), torch.nn.ReLU(),
                                 torch.nn.Linear(8, 2)), (4, 5)),
])
def test_layers_match_eager(make, shape):
    torch.manual_seed(1)
    _compare(make(), torch.randn(*shape))


def test_batch_norm_train_updates_running_stats_like_eager_and_eval_uses_them():
    torch.manual_seed(2)
    bn = torch.nn.BatchNorm1d(3)
    eager_bn = copy.deepcopy(bn)
    traced = ta.function(lambda x: bn(x) * 2, autograph=False)
    for step in range(3):
        x = torch.randn(8, 3)
        got = _grads(traced, bn, x)
        expected = _grads(lambda v: eager_bn(v) * 2, eager_bn, x)
        torch.testing.assert_close(got, expected)
        torch.testing.assert_close(bn.running_mean, eager_bn.running_mean)
        torch.testing.assert_close(bn.running_var, eager_bn.running_var)
        assert bn.num_batches_tracked.item() == step + 1
    bn.eval()
    eager_bn.eval()
    x = torch.randn(8, 3)
    torch.testing.assert_close(_grads(traced, bn, x), _grads(lambda v: eager_bn(v) * 2, eager_bn, x))
    assert traced.experimental_get_tracing_count() == 2


def test_gradients_of_several_inputs_and_a_closure_parameter():
    w = torch.randn(3, requires_grad=True)

    def f(a, b):
        return (a * w).sin().sum() + (b @ b.T).trace() * w.sum()

    traced = ta.function(f, autograph=False)
    a = torch.randn(3, requires_grad=True)
    b = torch.randn(2, 3, requires_grad=True)
    got = torch.autograd.grad(traced(a, b), [a, b, w])
    expected = torch.autograd.grad(f(a, b), [a, b, w])
    torch.testing.assert_close(got, expected)


def test_second_order_gradients():
    f = ta.function(lambda x: (x ** 3).sum(), autograph=False)
    x = torch.tensor([1.0, 2.0], requires_grad=True)
    (g,) = torch.autograd.grad(f(x), x, create_graph=True)
    (gg,) = torch.autograd.grad(g.sum(), x)
    torch.testing.assert_close(g, 3 * x.detach() ** 2)
    torch.testing.assert_close(gg, 6 * x.detach())


def test_no_grad_trace_gives_no_graph():
    f = ta.function(lambda x: x * 2, autograph=False)
    x = torch.ones(2, requires_grad=True)
    with torch.no_grad():
        assert not f(x).requires_grad
    assert f(x).requires_grad
