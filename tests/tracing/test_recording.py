"""Tracing: what the TorchFunctionMode records, captures by reference, program order, trace-time errors."""

import pytest
import torch

import torch_autograph as ta
from torch_autograph.errors import InaccessibleTensorError, OperatorNotAllowedInGraphError
from torch_autograph.tracing.tensor import GraphTensor


def check(fn, *args):
    traced = ta.function(fn, autograph=False)
    torch.testing.assert_close(traced(*args), fn(*args))
    return traced


X = torch.randn(3, 4)


def test_factories_are_recorded_not_frozen():
    def f(x):
        # z, a, t are returned: constant folding (graph/passes) may not turn them into shared constants
        z, a, t = torch.zeros(3), torch.arange(3), torch.tensor([1.0, 2.0, 3.0])
        return (z + a + t + x[0, :3], z, a, t, torch.ones_like(x),
                torch.full((2,), 7.0), torch.eye(3), torch.linspace(0, 1, 5), torch.empty(2).fill_(1.0))

    cf = check(f, X).get_concrete_function(X)
    names = [n.op.name for n in cf.graph.get_operations()]
    for factory in ("zeros", "arange", "tensor", "full", "eye", "linspace"):
        assert factory in names
    assert "%zeros: float32[3] cpu = torch.zeros(3)" in str(cf.graph)


def test_random_ops_match_eager_under_the_same_seed():
    def f(x):
        return (x + torch.randn(3, 4), torch.rand(2), torch.randint(0, 10, (5,)), torch.randn_like(x),
                torch.nn.functional.dropout(x, 0.5, training=True), torch.bernoulli(torch.full((4,), 0.5)))

    traced = ta.function(f, autograph=False)
    traced(X)
    for seed in (0, 1, 2):  # a fresh draw at every call, never a constant frozen at trace time
        torch.manual_seed(seed)
        got = traced(X)
        after_graph = torch.rand(1)
        torch.manual_seed(seed)
        torch.testing.assert_close(got, f(X))
        torch.testing.assert_close(after_graph, torch.rand(1))  # the generator advanced identically
    assert traced.experimental_get_tracing_count() == 1


def test_nn_dropout_module_matches_eager_under_the_same_seed():
    drop = torch.nn.Dropout(0.3)
    traced = ta.function(lambda x: drop(x) * 2, autograph=False)
    for seed in (3, 4):
        torch.manual_seed(seed)
        got = traced(X)
        torch.manual_seed(seed)
        torch.testing.assert_close(got, drop(X) * 2)


def test_a_dropout_that_is_the_identity_is_pure_and_draws_nothing():
    drop = torch.nn.Dropout(0.3).eval()
    F = torch.nn.functional

    def f(x):
        return (drop(x), F.dropout(x, 0.0, training=True), F.dropout2d(x[None, None], p=0.5, training=False),
                F.dropout(x, 0.5, training=True))

    traced = ta.function(f, autograph=False)
    for seed in (5, 6):
        torch.manual_seed(seed)
        got = traced(X)
        after_graph = torch.rand(1)
        torch.manual_seed(seed)
        torch.testing.assert_close(got, f(X))
        torch.testing.assert_close(after_graph, torch.rand(1))
    ops = [n.op for n in traced.get_concrete_function(X).graph.get_operations() if "dropout" in n.op.name]
    assert [op.pure for op in ops] == [True, True, True, False]  # only the training dropout with p > 0 draws


def test_unused_random_op_is_kept_so_the_generator_advances():
    def f(x):
        torch.randn(5)  # result unused: stateful, must still run
        return x + torch.rand(2)[0]

    traced = ta.function(f, autograph=False)
    torch.manual_seed(7)
    got = traced(X)
    torch.manual_seed(7)
    torch.testing.assert_close(got, f(X))


def test_module_parameters_and_buffers_are_captured_by_reference():
    lin = torch.nn.Linear(4, 2)
    bn = torch.nn.BatchNorm1d(2).eval()
    closure = torch.randn(2)

    def f(x):
        return bn(lin(x)) * closure

    traced = check(f, X)
    cf = traced.get_concrete_function(X)
    assert any(t is lin.weight for t in cf.captured_inputs)
    assert any(t is bn.running_mean for t in cf.captured_inputs)
    assert any(t is closure for t in cf.captured_inputs)
    with torch.no_grad():
        lin.weight.add_(1.0)
    bn.running_mean.fill_(0.5)
    closure.mul_(3)
    torch.testing.assert_close(traced(X), f(X))
    opt = torch.optim.SGD(lin.parameters(), lr=0.5)
    traced(X).sum().backward()
    opt.step()
    torch.testing.assert_close(traced(X), f(X))
    assert traced.experimental_get_tracing_count() == 1


def test_a_new_tensor_in_a_captured_dict_and_inplace_updates_are_both_seen():
    state = {"w": torch.ones(3)}
    traced = ta.function(lambda x: x * state["w"], autograph=False)
    x = torch.randn(3)
    torch.testing.assert_close(traced(x), x)
    state["w"] = torch.full((3,), 2.0)  # a new tensor: read from the entry at each call
    torch.testing.assert_close(traced(x), x * 2)
    state["w"].mul_(3)  # in place
    torch.testing.assert_close(traced(x), x * 6)
    assert traced.experimental_get_tracing_count() == 1


def test_inplace_ops_keep_program_order():
    def f(x):
        y = x.clone()
        before = y * 1
        y.add_(1)
        middle = y * 1
        y[0] = 10.0
        y.mul_(2)
        after = y.sum()
        return before, middle, after, y

    traced = check(f, X)
    ops = [n.op.name for n in traced.get_concrete_function(X).graph.get_operations()]
    assert ops.index("add") < ops.index("setitem") < ops.index("mul", ops.index("setitem"))


def test_inplace_update_of_a_captured_tensor_runs_every_call_even_unused():
    counter = torch.zeros(())

    def f(x):
        counter.add_(1)  # result unused: the stateful node is kept
        return x * 2

    traced = ta.function(f, autograph=False)
    for _ in range(3):
        torch.testing.assert_close(traced(X), X * 2)
    assert counter.item() == 3.0


def test_dead_code_is_pruned_and_never_runs():
    def f(x):
        torch.gather(x, 0, torch.tensor([[5, 5, 5, 5]]))  # would fail, but nothing needs it
        unused = x * 100  # noqa: F841
        return x + 1

    traced = ta.function(f, autograph=False)
    torch.testing.assert_close(traced(X), X + 1)
    assert [n.op.name for n in traced.get_concrete_function(X).graph.get_operations()] == ["add"]
    with pytest.raises(RuntimeError):
        f(X)  # eagerly it does fail: do not rely on non-strict execution


def test_grad_mode_set_inside_the_function_is_recorded():
    w = torch.randn(4, requires_grad=True)

    def f(x):
        with torch.no_grad():
            a = x * w
        return a + x * w

    traced = ta.function(f, autograph=False)
    out = traced(X)
    assert "[grad off]" in str(traced.get_concrete_function(X).graph)
    out.sum().backward()
    g = w.grad.clone()
    w.grad = None
    f(X).sum().backward()
    torch.testing.assert_close(g, w.grad)


def _line_of(fn, offset):
    return f"test_recording.py:{fn.__code__.co_firstlineno + offset}"


def _use_as_bool(x):
    return bool(x)


def _item(x):
    return x.item() + 1


def _tolist(x):
    return x.tolist()


def _numpy(x):
    return x.numpy()


def _iterate(x):
    return [row for row in x]


def _int(x):
    return int(x)


def _if(x):
    if x.sum() > 0:
        return x
    return -x


_DECIDED = [(_use_as_bool, "as a Python bool", "%x"), (_item, "x.item()", "%x"), (_tolist, "x.tolist()", "%x"),
            (_int, "int()", "%x"), (_if, "as a Python bool", "%gt")]


@pytest.mark.parametrize("fn, what, tensor", _DECIDED + [(_numpy, "x.numpy()", "%x")])
def test_values_python_needs_now_raise_with_tensor_and_user_line(fn, what, tensor):
    # From a signature alone (and numpy() always): no value to decide on.
    traced = ta.function(fn, autograph=False)
    with pytest.raises(OperatorNotAllowedInGraphError) as info:
        if fn is _numpy:
            traced(torch.tensor([1.0]))
        else:
            traced.get_concrete_function(ta.TensorSpec([1]))
    msg = str(info.value)
    assert what in msg and tensor in msg
    assert _line_of(fn, 1) in msg
    assert "Fix:" in msg


@pytest.mark.parametrize("fn", [fn for fn, *_ in _DECIDED])
def test_values_unconverted_code_reads_are_the_calls_and_guarded(fn):
    # Code AutoGraph does not convert (autograph=False) reads the call's value (tracing/decisions.py).
    traced = ta.function(fn, autograph=False)
    for x in (torch.tensor([1.0]), torch.tensor([1.0]), torch.tensor([0.0])):
        got, want = traced(x), fn(x)
        if isinstance(want, torch.Tensor):
            torch.testing.assert_close(got, want)
        else:  # Python numbers come back as tensors
            assert [t.item() for t in got] == want if isinstance(want, list) else got.item() == want
    assert len(traced.trace_history()) == 2


def test_error_while_tracing_shows_the_user_frame():
    def f(x):
        return torch.matmul(x, torch.ones(5, 2))  # shapes do not fit

    with pytest.raises(RuntimeError) as info:
        ta.function(f, autograph=False)(X)
    text = "\n".join(getattr(info.value, "__notes__", []))
    assert "in user code:" in text and f"line {f.__code__.co_firstlineno + 1}, in f" in text
    assert f"while tracing matmul at {__file__}:{f.__code__.co_firstlineno + 1}" in text


def test_a_graph_tensor_appended_to_a_captured_list_is_the_call_s_value_after_each_call():
    leaked = []

    def leak(x):
        y = x + 1
        leaked.append(y)
        return y

    f = ta.function(leak, autograph=False)
    for i in range(3):
        out = f(X + i)
        assert len(leaked) == i + 1 and not isinstance(leaked[i], GraphTensor)
        torch.testing.assert_close(leaked[i], X + i + 1)
        assert leaked[i] is out or torch.equal(leaked[i], out)
    # Empty when first traced, the list might have been cleared before the append (the same history): that
    # trace holds only for an empty list. The second call finds one item, and its trace sees appends only:
    # replayed as `extend` from then on, with no guard.
    assert f.experimental_get_tracing_count() == 2


def test_a_captured_list_cleared_then_appended_to_holds_only_the_calls_value():
    log = []

    def f(x):
        log.clear()
        log.append(x.sum())
        return x + 1

    g, want = ta.function(f, autograph=False), []
    for i in range(4):
        g(X + i)
        want = [(X + i).sum()]
        assert len(log) == 1 and torch.equal(log[0], want[0]), (i, log)
    assert g.experimental_get_tracing_count() == 2


def test_leaked_tensor_used_later_raises_inaccessible_tensor_error():
    # A list inside a tuple is not followed (a tuple can not change): a graph tensor left there is refused where
    # it is used, never read as a stale value. (A module's list is followed: it gets the call's tensor.)
    holder = torch.nn.Module()
    holder.kept = []
    box = ([],)

    def leak(x):
        y = x + 1
        holder.kept.append(y)
        box[0].append(y)
        return y

    ta.function(leak, autograph=False)(X)
    assert type(holder.kept[0]) is torch.Tensor
    torch.testing.assert_close(holder.kept[0], X + 1)
    leaked = box[0]
    with pytest.raises(InaccessibleTensorError, match=r"'add'.*out of scope.*'leak'.*Return it from the function"):
        leaked[0] + 1
    with pytest.raises(InaccessibleTensorError, match=r"used at .*test_recording.py:\d+"):
        torch.sin(leaked[0])
    other = ta.function(lambda x: x * leaked[0], autograph=False)
    with pytest.raises(InaccessibleTensorError, match="out of scope"):
        other(X)


def test_tracing_does_not_draw_random_numbers():
    def f(x):
        return x + torch.randn(3, 4), torch.randint(0, 5, (3,)), torch.nn.functional.dropout(x, 0.5, True)

    traced = ta.function(f, autograph=False)
    torch.manual_seed(11)
    got = traced(X)  # this call traces, then runs: the draws must be the graph's only
    after = torch.rand(1)
    torch.manual_seed(11)
    torch.testing.assert_close(got, f(X))
    torch.testing.assert_close(after, torch.rand(1))


def test_tracing_a_large_factory_allocates_nothing_real():
    traced = ta.function(lambda n: torch.zeros((n, 1 << 20)).sum(), autograph=False)
    cf = traced.get_concrete_function(ta.TensorSpec([], torch.int64))
    assert cf.graph.get_operations()[0].outputs[0].device == torch.device("cpu")


def test_reads_of_a_captured_tensor_see_inplace_updates_in_program_order():
    buf = torch.zeros(3)

    def f(x):
        buf.add_(1)
        y = x * buf  # sees the add, not the mul below
        buf.mul_(2)
        return y, buf * 1

    traced = ta.function(f, autograph=False)
    eager_buf = torch.zeros(3)
    for _ in range(3):
        got = traced(X[0, :3])
        eager_buf.add_(1)
        expected = (X[0, :3] * eager_buf, None)
        eager_buf.mul_(2)
        torch.testing.assert_close(got, (expected[0], eager_buf))
    torch.testing.assert_close(buf, eager_buf)


def test_iterating_a_tensor_of_known_length_outside_converted_code_gives_its_rows():
    traced = ta.function(_iterate, autograph=False)
    torch.testing.assert_close(traced(X), _iterate(X))


def _autocast_inside(lin, x):
    h = torch.tanh(x) * 2
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = lin(h)
        s = torch.softmax(y, -1)
        with torch.autocast("cpu", enabled=False):
            z = lin(h.float())  # float32 again inside
    return y, s, z, y.float() + x


@pytest.mark.parametrize("jit", [False, True], ids=["default", "jit"])
def test_autocast_inside_a_traced_function_is_recorded_and_runs_as_eager(jit):
    torch.manual_seed(0)
    lin = torch.nn.Linear(4, 4)
    f = ta.function(lambda x: _autocast_inside(lin, x), jit_compile=jit)
    x, xe = X.clone().requires_grad_(), X.clone().requires_grad_()
    got, want = f(x), _autocast_inside(lin, xe)
    for a, b in zip(got, want):
        assert a.dtype == b.dtype
        if jit:  # inductor fuses the bfloat16 ops (rounding at other points)
            torch.testing.assert_close(a, b, rtol=2e-2, atol=2e-2)
        else:
            assert torch.equal(a, b)
    sum(o.float().sum() for o in got).backward()
    sum(o.float().sum() for o in want).backward()
    if jit:  # the fused bfloat16 kernels round at other points: their gradients too
        torch.testing.assert_close(x.grad, xe.grad, rtol=2e-2, atol=2e-2)
    else:  # the default backend runs eager's ops in eager's order: bitwise the same gradients
        assert x.grad.dtype == xe.grad.dtype and torch.equal(x.grad, xe.grad)
    assert "[autocast cpu bfloat16]" in str(f.get_concrete_function(X).graph)


def test_autocast_turned_off_inside_stays_off_when_the_caller_has_autocast():
    torch.manual_seed(0)
    lin = torch.nn.Linear(4, 4)
    f = ta.function(lambda x: _autocast_inside(lin, x))
    f(X)  # traced without autocast around the call
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got, want = f(X), _autocast_inside(lin, X)
        text = str(f.get_concrete_function(X).graph)
    for a, b in zip(got, want):
        assert a.dtype == b.dtype and torch.equal(a, b)
    assert got[2].dtype == torch.float32  # the inner `autocast(enabled=False)`
    assert "[autocast off]" in text
    assert f.experimental_get_tracing_count() == 2
    assert "autocast around the call off -> cpu bfloat16" in str(f.trace_history()[1])


def test_autocast_around_the_call_runs_the_graph_under_it_as_eager():
    torch.manual_seed(0)
    lin = torch.nn.Linear(4, 4)
    f = ta.function(lambda x: (lin(x).relu() * 2).sum(-1))
    x = X.clone().requires_grad_()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = f(x)
    got.sum().backward()
    xe = X.clone().requires_grad_()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        want = (lin(xe).relu() * 2).sum(-1)
    want.sum().backward()
    assert got.dtype == want.dtype == torch.bfloat16 and torch.equal(got, want) and torch.equal(x.grad, xe.grad)
