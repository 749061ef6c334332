"""GraphTensor: Python operators, indexing, methods and static metadata, each compared with eager."""

import re

import pytest
import torch

import torch_autograph as ta
from tests.eager_reference import line_of


def check(fn, *args):
    """Run `fn` traced and eagerly on the same inputs; results must match."""
    traced = ta.function(fn, autograph=False)
    torch.testing.assert_close(traced(*args), fn(*args))
    return traced


X = torch.randn(3, 4)
XI = torch.arange(1, 13).reshape(3, 4)


@pytest.mark.parametrize("fn", [
    lambda x: x + 2, lambda x: 2 + x, lambda x: x - 2, lambda x: 2 - x, lambda x: x * 3, lambda x: 3 * x,
    lambda x: x / 2, lambda x: 2 / x, lambda x: x ** 2, lambda x: 2 ** x, lambda x: x // 0.7, lambda x: 7 // x,
    lambda x: x % 0.7, lambda x: 7 % x, lambda x: x @ x.T, lambda x: torch.ones(2, 3) @ x, lambda x: -x,
    lambda x: +x, lambda x: abs(x), lambda x: x + x * x - x / (x + 10),
], ids=lambda f: "")
def test_arithmetic_operators_and_reflected(fn):
    check(fn, X)


@pytest.mark.parametrize("fn", [
    lambda x: x & 6, lambda x: 6 & x, lambda x: x | 1, lambda x: 1 | x, lambda x: x ^ 5, lambda x: 5 ^ x,
    lambda x: x << 1, lambda x: 1 << x, lambda x: x >> 1, lambda x: 4096 >> x, lambda x: ~x,
])
def test_bitwise_operators(fn):
    check(fn, XI)


def test_comparisons_both_ways():
    check(lambda x: (x < 0, x <= 0, x > 0, x >= 0, x == 0, x != 0, 0 < x, 0 >= x, 0 == x, x == x), X)


def test_inplace_operators():
    def f(x):
        y = x.clone()
        y += 1
        y -= 0.5
        y *= 3
        y /= 4
        y **= 2
        return y

    def g(x):
        y = x.clone()
        y //= 2
        y %= 5
        y &= 6
        y |= 1
        y ^= 2
        y <<= 2
        y >>= 1
        return y

    check(f, X)
    check(g, XI)


@pytest.mark.parametrize("fn", [
    lambda x: x[0], lambda x: x[-1], lambda x: x[:, 1], lambda x: x[1:, ::2], lambda x: x[None],
    lambda x: x[..., 1], lambda x: x[0, None, ...], lambda x: x[torch.tensor([0, 2])], lambda x: x[x > 0],
    lambda x: x[:, None, 1:3], lambda x: x[[0, 2], [1, 3]],
])
def test_getitem(fn):
    check(fn, X)


def test_getitem_with_graph_tensor_indices():
    check(lambda x, i: (x[i], x[:, i], x[i.clamp(max=1)]), X, torch.tensor([2, 0]))


def test_setitem():
    def f(x, v):
        y = x.clone()
        y[0] = 5.0
        y[:, 1] = v
        y[y < 0] = 0.0
        y[1:, ::2] += 1
        return y

    check(f, X, torch.randn(3))


def test_tensor_methods():
    check(lambda x: (x.sum(), x.mean(1), x.view(4, 3), x.reshape(-1), x.t(), x.T, x.transpose(0, 1),
                     x.unsqueeze(0), x.permute(1, 0), x.clamp(-0.5, 0.5), x.softmax(-1), x.to(torch.float64),
                     x.float(), x.exp(), x.max(dim=1).values, x.chunk(2, dim=1), x.flatten(), x.expand(2, 3, 4)), X)


def test_torch_functions_on_graph_tensors():
    check(lambda x: (torch.cat([x, x]), torch.stack([x, x], 1), torch.where(x > 0, x, 0.0),
                     torch.nn.functional.gelu(x), torch.split(x, 2, dim=1), torch.einsum("ij,kj->ik", x, x)), X)


def test_metadata_is_answered_statically():
    seen = {}

    def f(x):
        seen.update(shape=x.shape, size=x.size(), size1=x.size(1), dim=x.dim(), ndim=x.ndim, dtype=x.dtype,
                    device=x.device, numel=x.numel(), fp=x.is_floating_point(), len=len(x))
        return x * 1

    ta.function(f, autograph=False)(X)
    assert seen == dict(shape=(3, 4), size=(3, 4), size1=4, dim=2, ndim=2, dtype=torch.float32,
                        device=torch.device("cpu"), numel=12, fp=True, len=3)
    assert all(type(v) is int for k, v in seen.items() if k in ("size1", "dim", "ndim", "numel", "len"))


def test_none_dims_are_symbolic_sizes_and_sizes_are_run_time_values():
    seen = {}

    def f(x):
        seen["shape"] = x.shape
        seen["size1"] = x.size(1)
        n = x.size(0)
        assert ta.shape(x)[1] == 4 and isinstance(n, torch.SymInt)
        a = x.view(n, 2, 2).sum(-1)
        b = x.reshape(ta.shape(x)[0] * 2, -1)
        c = torch.zeros((n, 2)) + a
        d = torch.ones(n * 2 - 1)
        return a, b, c, d, n * 3 + 1, x.numel()

    def eager(x):
        n = x.size(0)
        return (x.view(n, 2, 2).sum(-1), x.reshape(n * 2, -1), torch.zeros((n, 2)) + x.view(n, 2, 2).sum(-1),
                torch.ones(n * 2 - 1), torch.tensor(n * 3 + 1), torch.tensor(x.numel()))

    cf = ta.function(f, autograph=False).get_concrete_function(ta.TensorSpec([None, 4]))
    assert seen == {}  # written after each call, with its sizes (the trace leaves the dict as it was)
    assert re.search(r"float32\[\w+, 4\]", str(cf.graph))
    for batch in (1, 3, 8):
        x = torch.randn(batch, 4)
        torch.testing.assert_close(cf(x), eager(x))
        assert seen == {"shape": torch.Size([batch, 4]), "size1": 4} and type(seen["shape"]) is torch.Size
        assert type(seen["shape"][0]) is int and type(seen["size1"]) is int


# Python operators on run-time Python numbers (`n` an int, `b` a float, both known only when the graph runs):
# Python's semantics, result types included (int / int is a float, int ** -1 a float, -7 // n rounds down).
RUN_TIME_NUMBER_EXPRESSIONS = [
    "n + 3", "3 + n", "n - 3", "3 - n", "n * 3", "3 * n", "n / 3", "3 / n", "n / b", "b / n",
    "n // 3", "7 // n", "(n - 5) // 3", "-7 // n", "n // b", "b // 0.3", "0.3 // b",
    "n % 3", "7 % n", "(n - 5) % 3", "-7 % n", "n % b", "b % 0.3", "-b % 0.7",
    "n ** 2", "2 ** n", "n ** -1", "n ** 0.5", "n ** n", "b ** 0.5", "2.0 ** b", "b ** n",
    "-n", "+n", "abs(n - 5)", "-b", "+b", "abs(1 - b)", "-(n > 2)", "(n > 2) + (n > 1)",
    "n < 3", "3 < n", "n <= 3", "n > 3", "n >= 3", "n == 3", "3 == n", "n != 3", "b < n",
    "n & 6", "6 & n", "n | 1", "1 | n", "n ^ 5", "5 ^ n", "n << 2", "1 << n", "n >> 1", "4096 >> n", "~n",
    "(n > 2) & (n < 9)", "~(n > 2)",
]


def _augmented(n, b):
    s = n
    s += 1
    s -= 3
    s *= 2
    s //= 3
    s %= 5
    s **= 2
    s /= 4
    t = n
    t &= 6
    t |= 1
    t ^= 2
    t <<= 2
    t >>= 1
    u = b
    u += 1
    u -= 0.25
    u *= 2
    u /= 3
    u //= 0.5
    u %= 0.7
    u **= 2
    return s, t, u


@pytest.mark.parametrize("expr", RUN_TIME_NUMBER_EXPRESSIONS + [_augmented], ids=lambda e: getattr(e, "__name__", e))
def test_operators_on_run_time_python_numbers_follow_python(expr):
    fn = expr if callable(expr) else eval(f"lambda n, b: {expr}")

    def f(x):
        n = x.size(0)
        return fn(n, n * 0.5 + 0.25)

    cf = ta.function(f, autograph=False).get_concrete_function(ta.TensorSpec([None]))
    for size in (1, 3, 8):
        x = torch.zeros(size)
        # A graph returns Python numbers as tensors: same value, and int / float / bool as int64 / float64 / bool.
        torch.testing.assert_close(cf(x), ta.nest.map_structure(torch.tensor, f(x)))


def test_operators_mixing_run_time_numbers_and_tensors_match_eager_with_gradients():
    def f(x):
        n = x.size(0)
        b = n * 0.5 + 0.25
        return (n ** x + x ** n + n / x + x / n + b ** x + x ** b - (x * n) + abs(x - b) + (+x) * b
                + n // (x.detach() + 3) + (x.detach() * 4) // n + n % (x.detach() + 3) + x % b)

    cf = ta.function(f, autograph=False).get_concrete_function(ta.TensorSpec([None]))
    for size in (1, 3):
        x_eager, x_graph = (torch.linspace(0.5, 2, size).requires_grad_() for _ in range(2))
        want, got = f(x_eager), cf(x_graph)
        torch.testing.assert_close(got, want)
        want.sum().backward()
        got.sum().backward()
        torch.testing.assert_close(x_graph.grad, x_eager.grad)


def test_unknown_rank_is_a_clear_error_and_reduce_retracing_traces_once_per_rank():
    f = ta.function(lambda x: x * 2 + x.sum(), autograph=False)
    with pytest.raises(TypeError, match=r"argument 'x': TensorSpec\(shape=None\) \(unknown rank\) cannot be traced"):
        f.get_concrete_function(ta.TensorSpec(None))
    g = ta.function(lambda x: x * 2 + x.sum(), autograph=False, reduce_retracing=True)
    for x in (torch.randn(3), torch.randn(2, 5), torch.randn(()), torch.randn(4), torch.randn(3, 1)):
        torch.testing.assert_close(g(x), x * 2 + x.sum())
    assert g.experimental_get_tracing_count() == 5  # ranks 1, 2, 0, then rank 1 and 2 generalised


def test_repr_names_the_value():
    seen = []
    ta.function(lambda x: seen.append(repr(x)) or x, autograph=False)(X)
    assert seen == ["GraphTensor('x', shape=(3, 4), dtype=torch.float32, device=cpu)"]


@pytest.mark.parametrize("method, args", [
    ("stride", ()), ("stride", (0,)), ("is_contiguous", ()), ("storage_offset", ()), ("is_shared", ()),
    ("is_inference", ()), ("_is_view", ()),
])
@pytest.mark.parametrize("of", ["input", "result", "view"])
def test_a_graph_tensors_layout_is_refused_not_answered_from_the_traced_example(method, args, of):
    # A call's inputs may arrive with other strides, another storage offset, in shared memory or as
    # inference tensors than the example the trace saw (and a backend may lay values out its own way):
    # the trace once answered these from its example, silently wrong on the next call (`x.t()` said
    # contiguous, `x[2].storage_offset()` said 0).
    def f(x):
        y = x if of == "input" else x * 1 if of == "result" else x[1]
        return getattr(y, method)(*args)  # <- the read

    g = ta.function(f, autograph=False)
    with pytest.raises(ta.errors.OperatorNotAllowedInGraphError) as info:
        g(torch.randn(4, 4).t())
    msg = str(info.value)
    assert msg.startswith(f"x.{method}() is not allowed while tracing") and "has no layout" in msg
    assert line_of(f, "# <-") in msg


def test_contiguous_still_records_and_matches_eager():
    check(lambda x: x.t().contiguous() + 1, X)


def test_every_metadata_answer_holds_for_inputs_laid_out_otherwise_than_the_example():
    # The class of the layout bug: whatever the trace answers from metadata must be the same for every call the
    # trace serves, so each answered method is checked on inputs of one signature and other layouts.
    from torch_autograph.tracing import recording

    names = sorted(n for n in recording._NATIVE_METHODS - {"__hash__", "size"} if hasattr(torch.Tensor, n))
    base = torch.randn(6, 4)
    layouts = [torch.randn(4, 6).t().contiguous(), torch.randn(4, 6).t(), base[:, :], torch.randn(7, 4)[1:].clone(),
               torch.randn(7, 4)[1:], torch.randn(6, 4).share_memory_()]

    def f(x):
        return tuple(getattr(x, name)() for name in names), x.size()

    g = ta.function(f, autograph=False)
    for x in layouts:
        assert g(x) == f(x), (names, x.stride(), x.storage_offset())
    assert g.experimental_get_tracing_count() == 1
