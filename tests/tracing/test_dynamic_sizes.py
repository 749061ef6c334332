"""Run-time sizes (None dims of a signature): a dim unknown while tracing is a size symbol used as in eager code.

Every pattern is traced once with a None dim and compared with eager PyTorch on
inputs of several sizes. Inside the trace `x.shape` is a `torch.Size` whose
unknown dims are `torch.SymInt`s; sizes computed from them are expressions
(`2*u0`), so later ops see exactly how a size was made.
"""


import pytest
import torch

import torch_autograph as ta
from torch_autograph.errors import OperatorNotAllowedInGraphError
from torch_autograph.graph import Graph
from torch_autograph.tracing import trace as tracer

SPEC = [ta.TensorSpec([None, 3], torch.float32)]
P = torch.randn(1, 3)  # a tensor the functions close over (captured)


def zeros_varargs(x):
    return torch.zeros(x.size(0), 2) + x[:, :2]


def zeros_tuple(x):
    return torch.zeros((x.size(0), 2)) + x[:, :2]


def zeros_keyword(x):
    return torch.zeros(size=(x.size(0), 2)) + x[:, :2]


def zeros_ta_shape(x):
    return torch.zeros(ta.shape(x)[0], 2) + x[:, :2]


def zeros_size_tuple(x):
    return torch.zeros(x.size()) + x


def zeros_second(x):
    return torch.zeros(2, x.size(0)).T + x[:, :2]


def ones_len(x):
    return torch.ones(len(x)) * x[:, 0]


def ones_varargs(x):
    return torch.ones(x.size(0), 3) - x


def full_tuple(x):
    return torch.full((x.size(0), 3), 2.0) * x


def eye_n(x):
    return torch.eye(x.size(0)) @ x


def empty_fill(x):
    return torch.empty(x.size(0), 3).fill_(1.5) + x


def randn_times_zero(x):
    return torch.randn(x.size(0), 3) * 0 + x


def arange_n(x):
    return torch.arange(x.size(0)) * x[:, 0]


def expand_graph_tensor(x):
    return x[:, :1].expand(x.size(0), 4)


def expand_captured(x):
    return P.expand(x.size(0), 3) + x


def new_zeros_graph_tensor(x):
    return x.new_zeros(x.size(0), 2) + x[:, :2]


def new_zeros_captured(x):
    return P.new_zeros(x.size(0), 3) + x


def new_ones_size(x):
    return x.new_ones(x.size()) + x


def reshape_n_times_3(x):
    return x.reshape(x.size(0) * 3)


def view_n_times_3(x):
    return x.view(x.size(0) * 3)


def view_n_minus_one(x):
    return x.view(x.size(0), -1)


def reshape_floordiv(x):
    return x.reshape(x.size(0) // 1, 3)


def narrow_half(x):
    return x.narrow(0, 0, x.size(0) // 2 + 1)


def torch_narrow_half(x):
    return torch.narrow(x, 0, 0, x.size(0) // 2 + 1)


def slice_n_minus_one(x):
    return x[: x.size(0) - 1]


def index_last(x):
    return x[x.size(0) - 1]


def split_columns(x):
    a, b = x.split(2, dim=1)
    return b * a[:, :1]


def flip_rows(x):
    n = x.size(0)
    return torch.cat([x[n // 2:], x[: n // 2]])


PATTERNS = [
    zeros_varargs, zeros_tuple, zeros_keyword, zeros_ta_shape, zeros_size_tuple, zeros_second,
    ones_len, ones_varargs, full_tuple, eye_n, empty_fill, randn_times_zero, arange_n, expand_graph_tensor,
    expand_captured, new_zeros_graph_tensor, new_zeros_captured, new_ones_size, reshape_n_times_3,
    view_n_times_3, view_n_minus_one, reshape_floordiv, narrow_half, torch_narrow_half, slice_n_minus_one,
    index_last, split_columns, flip_rows,
]


@pytest.mark.parametrize("fn", PATTERNS, ids=lambda f: f.__name__)
def test_run_time_sizes_match_eager_with_one_trace(fn):
    f = ta.function(fn, input_signature=SPEC)
    for n in (2, 5, 8):
        x = torch.randn(n, 3)
        torch.testing.assert_close(f(x), fn(x))
    assert f.experimental_get_tracing_count() == 1


@pytest.mark.parametrize("fn", [zeros_varargs, reshape_n_times_3, narrow_half, expand_captured],
                         ids=lambda f: f.__name__)
def test_reduce_retracing_generalises_to_run_time_sizes(fn):
    f = ta.function(fn, reduce_retracing=True)
    for n in (2, 5, 8, 11):
        x = torch.randn(n, 3)
        torch.testing.assert_close(f(x), fn(x))
    assert f.experimental_get_tracing_count() == 2  # the exact shape, then the generalised one


def zeros_by_twice_n(x):
    return torch.zeros(x.size(0) * 2)[x.size(0):] + x[:, 0]


def reshape_zeros_of_twice_n(x):
    n = x.size(0)
    y = torch.zeros(2 * n)
    return y.reshape(n, 2) + x[:, :2]


@pytest.mark.parametrize("fn", [zeros_by_twice_n, reshape_zeros_of_twice_n], ids=lambda f: f.__name__)
def test_dims_made_from_run_time_sizes_remember_how(fn):
    f = ta.function(fn, input_signature=SPEC)
    for n in (1, 4, 7):
        x = torch.randn(n, 3)
        torch.testing.assert_close(f(x), fn(x))
    assert f.experimental_get_tracing_count() == 1


def test_sizes_computed_from_sizes_stay_exact_expressions():
    def fn(x):
        return torch.zeros(x.size(0) // 4 + 1, 3), x.narrow(0, 0, x.size(0) // 4)

    f = ta.function(fn, input_signature=SPEC)
    for n in (4, 8, 13):
        x = torch.randn(n, 3)
        for got, want in zip(f(x), fn(x)):
            torch.testing.assert_close(got, want)
    n = _input_symbol(fn)
    types = _result_types(fn)
    assert f"float32[(({n}//4)) + 1, 3] cpu" in types and f"float32[({n}//4), 3] cpu" in types, types


def test_gradient_through_reshape_by_run_time_size():
    w = torch.randn(30)

    def loss(x):
        flat = x.reshape(x.size(0) * 3)
        return (flat * w[: flat.size(0)]).sum()

    f = ta.function(loss, input_signature=SPEC)
    for n in (2, 5):
        x = torch.randn(n, 3, requires_grad=True)
        f(x).backward()
        x_ref = x.detach().clone().requires_grad_(True)
        loss(x_ref).backward()
        torch.testing.assert_close(x.grad, x_ref.grad)
    assert f.experimental_get_tracing_count() == 1


def test_gradient_through_factory_of_run_time_size():
    def fn(x):
        return (torch.ones(x.size(0), 3) * x * x).sum()

    f = ta.function(fn, input_signature=SPEC)
    x = torch.randn(4, 3, requires_grad=True)
    f(x).backward()
    torch.testing.assert_close(x.grad, 2 * x.detach())


def _graph(fn) -> Graph:
    return ta.function(fn, input_signature=SPEC).get_concrete_function().graph


def _result_types(fn) -> list[str]:
    return [v.type_str() for node in _graph(fn).nodes for v in node.outputs]


def _input_symbol(fn) -> str:
    return str(_graph(fn).inputs[0].shape[0])


@pytest.mark.parametrize("fn, expected", [
    (zeros_varargs, "float32[{n}, 2] cpu"),
    (reshape_n_times_3, "float32[3*{n}] cpu"),
    (reshape_floordiv, "float32[{n}, 3] cpu"),
    (narrow_half, "float32[(({n}//2)) + 1, 3] cpu"),
    (expand_captured, "float32[{n}, 3] cpu"),
    (eye_n, "float32[{n}, {n}] cpu"),
], ids=lambda x: getattr(x, "__name__", ""))
def test_graph_shows_dims_that_depend_on_the_run_time_size_by_their_symbol(fn, expected):
    types = _result_types(fn)
    assert expected.format(n=_input_symbol(fn)) in types, types
    assert "int" in types  # x.size(0): a run-time Python number


def test_graph_keeps_static_dims_static():
    def fn(x):
        return torch.zeros(x.size(1), 2) + x.narrow(1, 0, 2).sum()

    text = str(_graph(fn))
    assert "float32[3, 2] cpu = torch.zeros(3, 2)" in text and f"float32[{_input_symbol(fn)}, 2]" in text, text


def test_printed_graph_of_zeros_with_run_time_size():
    text = str(_graph(zeros_varargs))
    n = _input_symbol(zeros_varargs)
    assert "%x_size0: int = %x.size(0)" in text, text
    assert f"%zeros: float32[{n}, 2] cpu = torch.zeros(%x_size0, 2)" in text, text


def test_sizes_are_symbols_and_arithmetic_on_them_is_exact():
    graph = Graph("symbols")
    with tracer.tracing(graph) as state:
        x = state.placeholder("x", torch.float32, (None, 3), torch.device("cpu"))
        n = x.size(0)
        m = n * 3 + 1
        assert isinstance(n, torch.SymInt) and isinstance(m, torch.SymInt)
        assert str(m) == f"3*{n} + 1"
        assert x.reshape(n * 3).shape == (n * 3,)
        assert torch.zeros((n // 4, 2)).shape[0] is not None


def test_converted_code_calls_torch_as_usual_outside_a_trace():
    converted = ta.autograph.to_graph(zeros_varargs)
    x = torch.randn(3, 3)
    torch.testing.assert_close(converted(x), zeros_varargs(x))


def test_unconverted_code_uses_run_time_sizes_like_converted_code():
    def fn(x):
        return torch.zeros(x.size(0), 2) + P.expand((x.size(0), 3))[:, :2] + torch.ones((x.size(0), 2))

    f = ta.function(fn, input_signature=SPEC, autograph=False)
    for n in (2, 5):
        x = torch.randn(n, 3)
        torch.testing.assert_close(f(x), fn(x))


# ----- x.shape holds the symbols: code written for eager PyTorch works ---------------------------
def zeros_of_shape(x):
    return torch.zeros(x.shape) + x


def full_of_shape0(x):
    return torch.full((x.shape[0], 3), 2.0) * x


def new_zeros_of_shape0(x):
    return x.new_zeros(x.shape[0], 2)


def ones_of_shape0(x):
    return torch.ones(x.shape[0])


def reshape_shape0_times_3(x):
    return x.reshape(x.shape[0] * 3)


def unpacked_sizes(x):
    b, c = x.size()
    return x.view(b, c, 1).sum(-1) * c


@pytest.mark.parametrize("fn", [zeros_of_shape, full_of_shape0, new_zeros_of_shape0, ones_of_shape0,
                                reshape_shape0_times_3, unpacked_sizes], ids=lambda f: f.__name__)
def test_shape_of_a_none_dim_is_a_size_usable_as_in_eager_code(fn):
    f = ta.function(fn, input_signature=SPEC)
    for n in (1, 2, 6):
        x = torch.randn(n, 3)
        torch.testing.assert_close(f(x), fn(x))
    assert f.experimental_get_tracing_count() == 1


def test_unrelated_type_errors_say_nothing_about_sizes():
    def fn(x):
        return torch.zeros(x.size(0), 2) + "a"

    with pytest.raises(TypeError) as info:
        ta.function(fn, input_signature=SPEC)(torch.randn(2, 3))
    assert "size" not in str(info.value)


def _where(fn, offset: int = 1) -> str:
    return f"{__file__}:{fn.__code__.co_firstlineno + offset}"


def _reverse_rows(x):
    return torch.cat(x.split(1)[::-1])


def test_a_number_of_results_that_depends_on_a_size_is_a_guard_checked_at_each_call():
    # split() gives as many tensors as x has rows: the trace assumes the size of the call that traced it,
    # checks that assumption at every call, and traces again (saying why) when a call breaks it.
    f = ta.function(_reverse_rows, input_signature=SPEC)
    for n in (2, 2, 3, 2):
        x = torch.randn(n, 3)
        torch.testing.assert_close(f(x), _reverse_rows(x))
    history = f.trace_history()
    assert len(history) == 2
    assert "which this call breaks" in "; ".join(history[1].reasons), history[1]


def test_a_number_of_results_that_depends_on_a_size_is_refused_when_traced_from_a_spec_alone():
    with pytest.raises(OperatorNotAllowedInGraphError) as info:
        ta.function(_reverse_rows, input_signature=SPEC).get_concrete_function()
    msg = str(info.value)
    assert "split() needs the value of a size" in msg and _where(_reverse_rows) in msg
