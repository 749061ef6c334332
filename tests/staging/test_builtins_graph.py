"""Python builtins over graph tensors, compared with eager PyTorch.

The same function runs eagerly on tensors and under `ta.function`; Python
numbers the eager run returns come back from the graph as tensors, so the
comparison (`eager_reference.assert_matches_eager`) turns them into tensors.
"""

import pytest
import torch
from eager_reference import assert_matches_eager, graph_ops, line_of

import torch_autograph as ta

X = torch.tensor([3.0, -1.0, 2.0, 0.5, 1.5])
M = torch.tensor([[1.0, 2.0], [3.0, -4.0], [0.5, 0.0], [-1.0, 1.0]])


def b_len(x, m, n):
    return len(x), len(m), len(range(n)), len(range(1, n, 2)), x * len(x)


def b_range_enumerate_zip(x, m, n):
    s = torch.zeros(())
    for i in range(n):
        s = s + x[i % 4]
    for i in range(1, n, 2):
        s = s * 0.5 + i
    for i, row in enumerate(m):
        s = s + row.sum() * i
    for a, row in zip(x, m):
        s = s + a * row[0]
    return s


def b_int_float(x, m, n):
    k = int(x[0])
    f = float(x[2].long())
    return x * k, x + f, int(n) + 1, float(n) / 2


def b_abs(x, m, n):
    return abs(x), abs(x[1]), abs(m).sum(), abs(-n)


def b_min_max(x, m, n):
    return (min(x), max(x), min(x[0], x[1]), max(x[1], 2.5), min(x[0], x[1], x[3]), max(n, 2), min(3, n),
            max([x[0], x[2]]))


def b_sum(x, m, n):
    return sum(x), sum(x, 10), sum(m), sum([x[0], x[1]]), sum((x[2], x[3]), x[0])


def b_any_all(x, m, n):
    return (any(x > 2), all(x > -5), any(x > 10), all(x > 0), any([x[0] > 5, x[1] > -2]),
            all([x[0] > 0, x[1] > 0]), any((False, n > 3)), all([True, n > 3]))


def b_sorted(x, m, n):
    up, down = sorted(x), sorted(x, reverse=True)
    return torch.stack(up), down[0], up[-1], sum(up), len(down)


def b_isinstance(x, m, n):
    return (isinstance(x, torch.Tensor), isinstance(x, (int, float)), isinstance(m[0], torch.Tensor),
            isinstance(x, (list, torch.Tensor)), x * 2 if isinstance(x, torch.Tensor) else x)


@pytest.mark.parametrize("fn", [b_len, b_range_enumerate_zip, b_int_float, b_abs, b_min_max, b_sum, b_any_all,
                                b_sorted, b_isinstance], ids=lambda f: f.__name__[2:])
@pytest.mark.parametrize("n", [4, 5])
def test_builtins_match_eager(fn, n):
    g = assert_matches_eager(fn, X, M, torch.tensor(n))
    assert g.experimental_get_tracing_count() == 1


@pytest.mark.parametrize("fn", [b_len, b_range_enumerate_zip, b_min_max, b_sum, b_any_all, b_sorted],
                         ids=lambda f: f.__name__[2:])
def test_builtins_with_a_run_time_length(fn):
    g = ta.function(fn, input_signature=[ta.TensorSpec([None]), ta.TensorSpec([None, 2]),
                                         ta.TensorSpec([], torch.int64)])
    for k in (4, 5):
        assert_matches_eager(fn, X[:k], M[:k - 1], torch.tensor(k), traced=g)


def test_builtins_over_a_list_grown_in_a_graph_loop():
    def f(x, n):
        out = []
        for i in range(n):
            out.append(x[i] * i)
        return sum(out), sum(out, 10), max(out), min(out), any(out), all(out), len(out)

    g = assert_matches_eager(f, X, torch.tensor(3))
    assert "while" in graph_ops(g, X, torch.tensor(3))


def test_builtins_on_python_values_stay_python():
    def f(x):
        return x * (len([1, 2]) + abs(-3) + int(2.7) + float(1) + min(4, 5) + max(0, 1) + sum([1, 2]) +
                    all([1, 1]) + any([0]) + sorted([3, 1])[0])

    g = assert_matches_eager(f, X)
    assert graph_ops(g, X) == ["mul"]


def test_len_of_a_tensor_loop_bound_is_a_range_loop():
    def f(x):
        s = torch.zeros(())
        for i in range(len(x)):
            s = s + x[i] * i
        return s

    g = ta.function(f, input_signature=[ta.TensorSpec([None])])
    for k in (0, 1, 4):
        assert_matches_eager(f, X[:k], traced=g)
    assert "while" in graph_ops(g, X)


def test_len_of_a_0d_tensor_is_an_error_like_eager():
    def f(x):
        return len(x.sum())  # <-

    with pytest.raises(TypeError, match="len") as eager:
        f(X)
    with pytest.raises(TypeError) as info:
        ta.function(f)(X)
    assert "len() of a 0-d tensor" in str(eager.value) and "len() of a 0-d tensor" in str(info.value)
    assert line_of(f, "# <-") in str(info.value)


# ----- print vs ta.print -------------------------------------------------------------------
def test_print_runs_at_trace_time_ta_print_at_every_call(capsys):
    def f(x):
        print("python print", x.shape)
        ta.print("ta.print", x.sum())
        if x.sum() > 0:
            ta.print("positive")
        else:
            ta.print("not positive")
        return x * 2

    g = ta.function(f)
    g(X)
    first = capsys.readouterr().out
    assert first.count("python print") == 1 and "ta.print tensor(6.)" in first and "positive" in first
    g(-X)
    second = capsys.readouterr().out
    assert "python print" not in second
    assert "ta.print tensor(-6.)" in second and "not positive" in second
    assert g.experimental_get_tracing_count() == 1


def test_ta_print_inside_a_graph_loop_prints_each_iteration(capsys):
    def f(x, n):
        for i in range(n):
            ta.print("step", i)
            x = x + 1
        return x

    g = ta.function(f)
    torch.testing.assert_close(g(X, torch.tensor(3)), X + 3)
    assert capsys.readouterr().out.split("\n")[:3] == ["step 0", "step 1", "step 2"]
