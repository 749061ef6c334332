"""ta.GradientTape eagerly and inside ta.function, every result compared with torch.autograd."""

import re

import pytest
import torch

import torch_autograph as ta

HERE = __file__.rsplit("/", 1)[-1]


def _ref_grad(fn, *xs):
    xs = [x.detach().clone().requires_grad_() for x in xs]
    return torch.autograd.grad(fn(*xs), xs)


def test_watch_and_gradient_of_nests():
    x, y = torch.tensor([1.0, 2.0]), torch.tensor(3.0)
    with ta.GradientTape() as tape:
        tape.watch([x, {"y": y}])
        z = (x * x * y).sum()
    g = tape.gradient(z, {"a": x, "b": [y]})
    gx, gy = _ref_grad(lambda a, b: (a * a * b).sum(), x, y)
    torch.testing.assert_close(g["a"], gx)
    torch.testing.assert_close(g["b"][0], gy)


def test_nonscalar_and_nested_targets_are_summed_and_output_gradients():
    w = torch.tensor([1.0, 2.0])
    with ta.GradientTape(persistent=True) as tape:
        tape.watch(w)
        sq = w * w
        cube = w * w * w
    torch.testing.assert_close(tape.gradient([sq, {"c": cube}], w), 2 * w + 3 * w * w)
    torch.testing.assert_close(tape.gradient(sq, w, output_gradients=torch.tensor([10.0, 100.0])),
                               torch.tensor([20.0, 400.0]))


def test_unconnected_and_integer_sources():
    x, z, i = torch.tensor(2.0), torch.tensor([1.0, 1.0]), torch.tensor(3)
    with pytest.warns(UserWarning, match=r"must be floating \(e\.g\. torch\.float32\), got torch\.int64"):
        with ta.GradientTape(persistent=True) as tape:
            tape.watch([x, z, i])
            y = x * x + i
    assert tape.gradient(y, [x, z, i])[1:] == [None, None]
    g = tape.gradient(y, [x, z, i], unconnected_gradients="zero")
    torch.testing.assert_close(g[1], torch.zeros(2))
    assert g[2] is None
    torch.testing.assert_close(tape.gradient(y, z, unconnected_gradients=ta.UnconnectedGradients.ZERO),
                               torch.zeros(2))


def test_bad_input_messages():
    x = torch.tensor(1.0)
    with ta.GradientTape(persistent=True) as tape:
        with pytest.raises(ValueError, match="Passed in object 'abc' of type 'str', not torch.Tensor or ta.Variable"):
            tape.watch("abc")
        tape.watch(x)
        y = x * 2
    with pytest.raises(TypeError, match=rf"`target` should be .* but received None \(at .*{HERE}:\d+\)"):
        tape.gradient(None, x)
    with pytest.raises(ValueError, match="Unknown value for unconnected_gradients: 'foo'"):
        tape.gradient(y, x, unconnected_gradients="foo")
    with pytest.raises(TypeError, match=rf"`sources` must hold Tensors .* leaf #1 is 'w' of type 'str' \(at "
                                        rf".*{HERE}:\d+\)"):
        tape.gradient(y, [x, "w"])


def test_non_persistent_tape_is_single_use():
    x = torch.tensor(3.0)
    with ta.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    torch.testing.assert_close(tape.gradient(y, x), torch.tensor(6.0))
    with pytest.raises(RuntimeError, match=re.escape("A non-persistent GradientTape can only be used to compute one "
                                                     "set of gradients (or jacobians)")):
        tape.gradient(y, x)


def test_variables_and_parameters_are_watched_automatically():
    a = ta.Variable(2.0, name="a")
    frozen = ta.Variable(5.0, trainable=False, name="frozen")
    lin = torch.nn.Linear(2, 1)
    b = ta.Variable(1.0, name="b")
    with ta.GradientTape() as tape:
        out = lin(torch.ones(1, 2)).sum() * b * a * frozen
    assert [v.name for v in tape.watched_variables()[:2]] == ["a:0", "b:0"]
    assert {id(p) for p in tape.watched_variables()[2:]} == {id(p) for p in lin.parameters()}
    ga, gf, gw = tape.gradient(out, [a, frozen, lin.weight])
    ref = _ref_grad(lambda w, a_: (torch.ones(1, 2) @ w.T + lin.bias).sum() * 1.0 * a_ * 5.0,
                    lin.weight.detach(), torch.tensor(2.0))
    torch.testing.assert_close(gw, ref[0])
    torch.testing.assert_close(ga, ref[1])
    assert gf is None


def test_watch_accessed_variables_false():
    a, b = ta.Variable(2.0), ta.Variable(3.0)
    with ta.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(a)
        y = a * b
    assert tape.watched_variables() == (a,)
    ga, gb = tape.gradient(y, [a, b])
    torch.testing.assert_close(ga, torch.tensor(3.0))
    assert gb is None


def test_stop_recording_and_reset():
    x = torch.tensor(2.0)
    tape = ta.GradientTape(persistent=True)
    with pytest.raises(RuntimeError, match="Trying to stop recording a tape which is not recording."):
        with tape.stop_recording():
            pass
    with tape:
        tape.watch(x)
        with tape.stop_recording():
            hidden = x * x
        y = x * 3
    assert tape.gradient(hidden, x) is None
    torch.testing.assert_close(tape.gradient(y, x), torch.tensor(3.0))
    with tape:
        tape.reset()
        y2 = x * 5
    assert tape.gradient(y2, x) is None


def test_nested_tapes_give_higher_derivatives():
    x = torch.tensor(1.0)
    with ta.GradientTape() as t2:
        t2.watch(x)
        with ta.GradientTape() as t1:
            t1.watch(x)
            y = x * x * x
        dy = t1.gradient(y, x)
    d2y = t2.gradient(dy, x)
    assert (dy.item(), d2y.item()) == (3.0, 6.0)


def _f(x):
    return torch.stack([x[0] * x[1], torch.sin(x[2]), x.sum() ** 2])


def test_jacobian_and_hessian_match_torch_functional():
    x = torch.tensor([0.5, -1.0, 2.0], dtype=torch.float64)
    with ta.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = _f(x)
    torch.testing.assert_close(tape.jacobian(y, x), torch.autograd.functional.jacobian(_f, x))
    with ta.GradientTape() as outer:
        outer.watch(x)
        with ta.GradientTape() as inner:
            inner.watch(x)
            s = _f(x).sum()
        g = inner.gradient(s, x)
    hess = outer.jacobian(g, x)
    torch.testing.assert_close(hess, torch.autograd.functional.hessian(lambda v: _f(v).sum(), x))


def test_batch_jacobian():
    x = torch.randn(4, 3, dtype=torch.float64)
    w = torch.randn(3, 2, dtype=torch.float64)
    with ta.GradientTape() as tape:
        tape.watch(x)
        y = torch.tanh(x @ w)
    bj = tape.batch_jacobian(y, x)
    full = torch.autograd.functional.jacobian(lambda v: torch.tanh(v @ w), x)  # [4, 2, 4, 3]
    torch.testing.assert_close(bj, torch.stack([full[b, :, b] for b in range(4)]))
    with ta.GradientTape() as tape:
        tape.watch(x)
        y = x[:3] * 2
    with pytest.raises(ValueError, match=r"Need first dimension of target shape \(3, 3\) and source shape \(4, 3\)"):
        tape.batch_jacobian(y, x)


def test_tape_inside_function_matches_eager():
    w = ta.Variable(torch.tensor([[1.0, -1.0], [0.5, 2.0]]))

    def body(x):
        with ta.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = torch.tanh(x @ w).sum()
        gx, gw = tape.gradient(y, [x, w])
        return y, gx, gw, tape.jacobian(torch.tanh(x @ w), x)

    traced = ta.function(body)
    for _ in range(2):
        x = torch.randn(3, 2)
        for got, want in zip(traced(x), body(x.clone())):
            torch.testing.assert_close(got, want)
    g = traced.get_concrete_function(x).graph
    assert [n.op.name for n in g.nodes].count("watch") == 1


def test_nested_tapes_inside_function():
    @ta.function
    def derivs(x):
        with ta.GradientTape() as t2:
            t2.watch(x)
            with ta.GradientTape() as t1:
                t1.watch(x)
                y = x * x * x
            dy = t1.gradient(y, x)
        return dy, t2.gradient(dy, x)

    for v in (1.0, 2.0):
        dy, d2y = derivs(torch.tensor(v))
        assert (dy.item(), d2y.item()) == (3 * v * v, 6 * v)


def test_unconnected_inside_function_is_none_at_trace_time():
    @ta.function
    def f(x, z):
        with ta.GradientTape() as tape:
            tape.watch([x, z])
            y = x * 2
        gz = tape.gradient(y, z)
        return gz is None

    assert f(torch.tensor(1.0), torch.tensor(2.0)).item() is True


def test_tape_spanning_function_calls():
    lin = torch.nn.Linear(3, 1)
    predict = ta.function(lambda x: torch.sigmoid(lin(x)).sum())
    x = torch.randn(5, 3)
    with ta.GradientTape() as tape:
        tape.watch(x)
        y = predict(x) * 2
    gx, gw = tape.gradient(y, [x, lin.weight])
    x2 = x.detach().clone().requires_grad_()
    rx, rw = torch.autograd.grad(torch.sigmoid(lin(x2)).sum() * 2, [x2, lin.weight])
    torch.testing.assert_close(gx, rx)
    torch.testing.assert_close(gw, rw)
