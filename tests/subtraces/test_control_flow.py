"""AutoGraph control flow in graphs (if/while/for over tensors, break/continue/return, variables first assigned in loops), compared with eager PyTorch.

Every function here is plain Python over tensors: it runs eagerly as is, and
`ta.function` converts its tensor-dependent `if`/`while`/`for` into graph
`cond`/`while` nodes. Values and gradients must agree
(`eager_reference.assert_matches_eager`).
"""

import pytest
import torch
from eager_reference import assert_matches_eager, graph_ops
from torch import nn

import torch_autograph as ta
from torch_autograph.state import StateEffectError

POS, NEG = torch.tensor([1.0, 2.0, 3.0]), torch.tensor([-1.0, -2.0, -0.5])


# ----- if / elif / else / ternary ------------------------------------------------------------
def if_elif_else(x):
    if x.sum() > 1:
        y = x * 2
    elif x.sum() > -2:
        y = x + 1
    else:
        y = x * x
    return y


@pytest.mark.parametrize("x", [POS, NEG, torch.tensor([0.5, -0.2, 0.1])], ids=["if", "else", "elif"])
def test_tensor_if_elif_else_is_a_cond(x):
    f = assert_matches_eager(if_elif_else, x)
    assert graph_ops(f, x).count("cond") == 2


def test_one_trace_serves_both_branches():
    f = ta.function(if_elif_else)
    for x in (POS, NEG, torch.tensor([0.5, -0.2, 0.1])):
        torch.testing.assert_close(f(x), if_elif_else(x))
    assert f.experimental_get_tracing_count() == 1


def test_both_branches_of_a_tensor_if_are_traced_python_if_only_one():
    traced_lines = []
    note = traced_lines.append  # (a call: the converter leaves it alone)

    def f(x, flag):
        if x.sum() > 0:
            note("tensor-true")
            y = x * 3
        else:
            note("tensor-false")
            y = x - 3
        if flag:
            note("python-true")
            y = y + 1
        else:
            note("python-false")
        return y

    g = ta.function(f)
    for x in (POS, NEG):
        torch.testing.assert_close(g(x, True), f(x, True))
    assert sorted(traced_lines[:3]) == ["python-true", "tensor-false", "tensor-true"]
    traced_lines.clear()
    g(POS, True)
    assert traced_lines == []  # a cached trace runs no Python
    assert graph_ops(g, POS, True).count("cond") == 1  # the Python `if` left no node


def test_ternary_is_a_cond():
    def f(x):
        return x * 2 if x.mean() > 0 else x.exp()

    for x in (POS, NEG):
        g = assert_matches_eager(f, x)
    assert "cond" in graph_ops(g, POS)


def test_if_without_else_keeps_the_previous_value():
    def f(x):
        y = x + 1
        if x.max() > 2:
            y = y * y
        return y

    for x in (POS, NEG):
        assert_matches_eager(f, x)


def test_branches_may_give_different_shapes():
    def f(x):
        if x.sum() > 0:
            y = x[:2]
        else:
            y = torch.cat([x, x])
        return y * 2

    for x in (POS, NEG):
        g = assert_matches_eager(f, x)
    graph = g.get_concrete_function(POS).graph
    cond = next(n for n in graph.nodes if n.op.name == "cond")
    (size,) = cond.outputs[0].shape
    assert isinstance(size, torch.SymInt)  # 3 in one branch, 6 in the other: a size known only when it runs


def test_python_values_assigned_in_branches_become_tensors():
    def f(x):
        if x.sum() > 0:
            k = 2.0
        else:
            k = x.mean()
        return x * k

    for x in (POS, NEG):
        assert_matches_eager(f, x)


def test_variable_local_to_one_branch_is_free():
    def f(x):
        if x.sum() > 0:
            tmp = x * 10
            y = tmp.sum()
        else:
            y = x.prod()
        return y

    for x in (POS, NEG):
        assert_matches_eager(f, x)


def test_nested_tensor_ifs_and_python_if_inside():
    def f(x, mode):
        if x[0] > 0:
            if x[1] > 1.5:
                y = x.sin()
            else:
                y = x.cos()
            if mode == "double":
                y = y * 2
        else:
            y = x.tanh()
        return y

    for x in (POS, NEG, torch.tensor([1.0, 0.0, 0.0])):
        for mode in ("double", "single"):
            assert_matches_eager(f, x, mode)


def test_single_element_tensor_condition():
    def f(x, t):
        return x + 1 if t else x - 1

    assert_matches_eager(f, POS, torch.tensor([True]))
    assert_matches_eager(f, POS, torch.tensor([[0]]))


# ----- while ---------------------------------------------------------------------------------
def test_while_with_tensor_condition_is_a_while_loop():
    def f(x):
        while x.sum() < 100:
            x = x * 1.5 + 1
        return x

    for x in (POS, NEG, torch.tensor([200.0, 0.0, 0.0])):
        g = assert_matches_eager(f, x)
    assert "while" in graph_ops(g, POS)
    assert g.experimental_get_tracing_count() == 1


def test_while_with_python_condition_unrolls():
    trips = []
    note = trips.append

    def f(x):
        i = 0
        while i < 4:
            note(i)
            x = x * 2
            i += 1
        return x

    g = assert_matches_eager(f, POS)
    assert trips == [0, 1, 2, 3] * 2  # eager, then the one trace
    assert "while" not in graph_ops(g, POS)


def test_while_with_python_counter_and_tensor_bound():
    def f(x, n):
        i = 0
        acc = torch.zeros_like(x)
        while i < n:
            acc = acc + x * i
            i += 1
        return acc, i

    for n in (0, 3, 5):
        g = assert_matches_eager(f, POS, torch.tensor(n))
    assert g.experimental_get_tracing_count() == 1


def test_nested_tensor_loops():
    def f(x, n):
        total = torch.zeros(())
        for i in range(n):
            j = torch.tensor(0)
            while j < i:
                total = total + x[j % 3] * i
                j = j + 1
        return total

    for n in (0, 1, 4):
        assert_matches_eager(f, POS, torch.tensor(n))


# ----- for -----------------------------------------------------------------------------------
def for_range_tensor(x, n):
    s = torch.zeros(())
    for i in range(n):
        s = s + x[i % 3] * i
    return s


def for_arange(x, n):
    s = x * 0
    for i in torch.arange(n):
        s = s + x * i
    return s


def for_rows(m):
    s = torch.zeros(m.shape[1])
    for row in m:
        s = s * 0.5 + row
    return s


def for_enumerate(x):
    s = torch.zeros(())
    for i, v in enumerate(x):
        s = s + v * i
    return s


def for_zip(x, y):
    s = torch.zeros(())
    for a, b in zip(x, y):
        s = s + a * b
    return s


def for_enumerate_zip_start(x, y):
    s = torch.zeros(())
    for i, (a, b) in enumerate(zip(x, y), 1):
        s = s + i * a - b
    return s


def for_range_start_stop_step(x, n):
    s = torch.zeros(())
    for i in range(n, 0, -2):
        s = s + x[i % 3] * i
    for i in range(n - 4, n):
        s = s * 0.5 + i
    return s


def for_zip_python_and_graph(x, ks):
    s = torch.zeros(())
    for k, v, r, t in zip(ks, x, range(5), [x * 2, x.exp(), x]):
        s = s + v * k + r * t.sum()
    return s


M = torch.tensor([[1.0, 2.0], [3.0, -4.0], [-1.0, 0.5]])


@pytest.mark.parametrize("fn, args", [
    (for_range_tensor, (POS, torch.tensor(5))),
    (for_range_tensor, (POS, torch.tensor(0))),
    (for_arange, (POS, torch.tensor(4))),
    (for_rows, (M,)),
    (for_enumerate, (POS,)),
    (for_zip, (POS, NEG)),
    (for_enumerate_zip_start, (POS, NEG)),
    (for_range_start_stop_step, (POS, torch.tensor(7))),
    (for_zip_python_and_graph, (POS, [1.5, -2.0])),
    (for_zip_python_and_graph, (POS, [1, 2, 3, 4])),
], ids=["range(t)", "range(0)", "arange", "rows", "enumerate", "zip", "enumerate-zip", "range-step", "zip-python",
        "zip-python-longer"])
def test_for_over_tensors_is_a_while_loop(fn, args):
    g = assert_matches_eager(fn, *args)
    assert "while" in graph_ops(g, *args)


def test_for_over_rows_sees_rows():
    def f(m):
        rows = []
        for row in m:
            rows.append(row * 2)
        return torch.stack(rows)

    g = assert_matches_eager(f, M)
    assert g.get_concrete_function(M).graph.outputs[0].shape[1:] == (2,)


def test_for_over_tensor_with_dynamic_first_dim():
    f = ta.function(for_enumerate, input_signature=[ta.TensorSpec([None])])
    for n in (0, 1, 5):
        x = torch.arange(float(n))
        torch.testing.assert_close(f(x), for_enumerate(x))


def test_python_iterables_and_range_int_unroll():
    trips = []
    note = trips.append

    def f(x, ks):
        for i in range(3):
            note(("range", i))
            x = x + i
        for k in ks:
            note(("list", k))
            x = x * k
        for t in [x, x * 2]:
            note(("tensors", None))
            x = x + t
        return x

    g = assert_matches_eager(f, POS, [2.0, 3.0])
    expected = [("range", 0), ("range", 1), ("range", 2), ("list", 2.0), ("list", 3.0), ("tensors", None),
                ("tensors", None)]
    assert trips == expected * 2
    assert "while" not in graph_ops(g, POS, [2.0, 3.0])


# ----- break / continue / return -------------------------------------------------------------
def while_break(x):
    i = torch.tensor(0)
    s = torch.zeros(())
    while i < 10:
        if s > 5:
            break
        s = s + x[i % 3]
        i = i + 1
    return s, i


def for_break_continue(x, n):
    s = torch.zeros(())
    for i in range(n):
        if x[i % 3] < 0:
            continue
        if s > 4:
            break
        s = s + x[i % 3] * x[i % 3]
    return s


def for_return(x, n):
    for i in range(n):
        if x[i % 3] * i > 2:
            return x * i
    return -x


def while_return(x):
    while x.sum() < 50:
        x = x * 2
        if x.max() > 20:
            return x.sum()
    return x.mean()


def while_true_break(x):
    while True:
        x = x * 2
        if x.sum() > 50:
            break
    return x


def nested_break_continue(x, n):
    total = torch.zeros(())
    for i in range(n):
        for j in range(n):
            if j > i:
                break
            if (i + j) % 2 == 1:
                continue
            total = total + x[(i + j) % 3]
    return total


def nested_return(x, n):
    for i in range(n):
        for j in range(n):
            if x[(i + j) % 3] * i * j > 5:
                return x * i + j
    return x


@pytest.mark.parametrize("fn, args", [
    (while_true_break, (POS,)),
    (nested_break_continue, (POS, torch.tensor(4))),
    (nested_return, (POS, torch.tensor(4))),
    (nested_return, (NEG, torch.tensor(4))),
    (while_break, (POS,)),
    (while_break, (NEG,)),
    (for_break_continue, (POS, torch.tensor(8))),
    (for_break_continue, (torch.tensor([-1.0, 0.5, 1.0]), torch.tensor(9))),
    (for_return, (POS, torch.tensor(6))),
    (for_return, (NEG, torch.tensor(6))),
    (for_return, (POS, torch.tensor(0))),
    (while_return, (POS,)),
    (while_return, (torch.tensor([20.0, 20.0, 20.0]),)),
    (while_return, (torch.tensor([9.0, 0.0, 0.0]),)),
])
def test_break_continue_and_return_in_tensor_loops(fn, args):
    g = assert_matches_eager(fn, *args)
    assert "while" in graph_ops(g, *args)


def test_tensor_break_and_return_in_unrolled_python_loops():
    def f_break(x):
        s = torch.zeros(())
        for k in [1.0, 2.0, 3.0, 4.0]:
            if s > x:
                break
            s = s + k
        return s

    def f_return(x):
        for k in range(4):
            x = x * 2
            if x.sum() > 10:
                return x - k
        return x + 100

    for x in (torch.tensor(0.5), torch.tensor(2.5), torch.tensor(50.0)):
        g = assert_matches_eager(f_break, x)
        assert "while" not in graph_ops(g, x)  # a list's remaining elements: each guarded by the flag
    for x in (POS, NEG, torch.tensor([0.1, 0.1, 0.1])):
        g = assert_matches_eager(f_return, x)
        assert "while" in graph_ops(g, x)  # after the first iteration, the rest of the range is one graph loop


def test_conditional_return_inside_tensor_if():
    def f(x):
        if x.sum() > 0:
            return x * 2
        y = x - 1
        return y * y

    for x in (POS, NEG):
        assert_matches_eager(f, x)


def test_return_tuples_from_a_loop():
    def f(x, n):
        for i in range(n):
            if x[i % 3] > 1.5:
                return x * i, i
        return x, -1

    for n in (0, 1, 4):
        assert_matches_eager(f, POS, torch.tensor(n))


# ----- loop options and loop-variable rules ----------------------------------------------
def test_shape_invariants_allow_concat_growth():
    def f(x):
        while x.shape[0] < 10:
            ta.autograph.experimental.set_loop_options(shape_invariants=[(x, [None])])
            x = torch.cat([x, x * 2])
        return x

    g = ta.function(f)
    for n in (1, 3, 12):
        x = torch.ones(n)
        torch.testing.assert_close(g(x), f(x))


def test_shape_invariants_allow_tensor_condition_growth():
    def f(x):
        while x.sum() < 40:
            ta.autograph.experimental.set_loop_options(shape_invariants=[(x, [None])])
            x = torch.cat([x, x + 1])
        return x

    for x in (torch.ones(1), torch.tensor([5.0, 6.0]), torch.tensor([50.0])):
        assert_matches_eager(f, x)


def test_maximum_iterations_stops_a_ten_step_loop_after_three():
    def f(x):
        for i in torch.arange(10):
            ta.autograph.experimental.set_loop_options(maximum_iterations=3)
            x = x + 1
        return x

    def g_while(x):
        i = torch.tensor(0)
        while i < 10:
            ta.autograph.experimental.set_loop_options(maximum_iterations=3)
            x = x * 2
            i = i + 1
        return x, i

    torch.testing.assert_close(ta.function(f)(POS), POS + 3)
    x, i = ta.function(g_while)(POS)
    torch.testing.assert_close(x, POS * 8)
    assert int(i) == 3


def test_variable_first_assigned_in_loop_is_checked_at_run_time():
    def f(x, n):
        for i in range(n):
            last = x * i
        return last

    g = ta.function(f)
    for n in (1, 4):
        torch.testing.assert_close(g(POS, torch.tensor(n)), f(POS, torch.tensor(n)))
    with pytest.raises(ta.errors.InvalidArgumentError, match=r"loop must iterate at least once to initialize 'last'"):
        g(POS, torch.tensor(0))
    assert g.experimental_get_tracing_count() == 1


def test_python_int_loop_var_taking_tensor_values():
    def f(x):
        count = 0
        while x.sum() < 20:
            x = x * 2
            count = count + x.max().long()
        return x, count

    for x in (POS, torch.tensor([30.0, 0.0, 0.0])):
        assert_matches_eager(f, x)


def test_power_and_reflected_division_of_python_number_loop_vars():
    def power(x, n):
        s = 2
        i = 0
        while i < n:
            s = s ** 2 + x[i]
            i += 1
        return s

    def harmonic(x, n):
        c = 0
        i = 0
        while i < n:
            c = c + 1 / (i + 1) + x[i] * 0
            i += 1
        return c

    def augmented(x, n):
        s = 3
        i = 0
        while i < n:
            s **= 2
            s /= i + 1
            s = s + x[i]
            i += 1
        return s

    n = torch.tensor(3)
    assert_matches_eager(power, torch.tensor([3, -7, 5]), n)
    for fn in (power, harmonic, augmented):
        assert_matches_eager(fn, torch.tensor([0.5, -1.0, 2.0]), n)


def test_loop_over_dict_and_tuple_state():
    def f(x, n):
        state = {"a": x, "b": x * 0}
        pair = (x.sum(), torch.tensor(1.0))
        for i in range(n):
            state = {"a": state["a"] * 0.5, "b": state["b"] + state["a"]}
            pair = (pair[0] + i, pair[1] * 2)
        return state, pair

    for n in (0, 3):
        assert_matches_eager(f, POS, torch.tensor(n))


# ----- and / or / not, chained comparisons -----------------------------------------------
def test_and_or_not_on_tensors():
    def f(x):
        a = (x.sum() > 0) and (x.max() < 2.5)
        b = (x.min() > 0) or (x.mean() < -1)
        c = not (x.sum() > 0)
        if a or (b and not c):
            return x * 2
        return -x

    for x in (POS, NEG, torch.tensor([1.0, 1.0, 0.0]), torch.tensor([-2.0, -3.0, -4.0])):
        assert_matches_eager(f, x)


def test_and_or_are_lazy():
    def f(x, i):
        ok = i < x.shape[0] and x[i] > 0  # x[i] would be out of range when i is too large
        first = i >= x.shape[0] or x[i] < 0
        return ok, first

    g = ta.function(f)
    for i in (0, 2, 3, 7):
        got = g(POS, torch.tensor(i))
        assert tuple(bool(v) for v in got) == tuple(bool(v) for v in f(POS, torch.tensor(i)))
    assert g.experimental_get_tracing_count() == 1


def test_and_or_return_operands_like_python():
    def f(x, y):
        return (x.sum() > 0 and y > 1), (x.sum() > 0 or y > 1), (x.sum() > 0 and 3 > 1)

    for x in (POS, NEG):
        for y in (0.0, 7.0):
            assert_matches_eager(f, x, torch.tensor(y))


def test_chained_comparisons():
    def f(x):
        if 0 < x.sum() < 5:
            return x * 3
        if -5 < x.sum() <= 0 < x.max():
            return x * 4
        return x

    for x in (POS, torch.tensor([1.0, 1.0, 1.0]), torch.tensor([1.0, -2.0, 0.0]), NEG):
        assert_matches_eager(f, x)


# ----- modules ---------------------------------------------------------------------------
class Gate(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        h = self.lin(x)
        if h.sum() > 0:
            h = torch.relu(h) * 2
        else:
            h = torch.tanh(h)
        return h


class Repeat(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        steps = torch.tensor(0)
        while x.abs().sum() < 10 and steps < 5:
            x = self.lin(x) + x
            steps = steps + 1
        for row in x:
            if row.sum() < 0:
                break
            x = x + row * 0.1
        return x


@pytest.mark.parametrize("make", [Gate, Repeat, lambda: nn.Sequential(Gate(), nn.ReLU(), Repeat(), nn.Linear(3, 2))],
                         ids=["if", "loops", "sequential"])
def test_module_with_tensor_control_flow_gradients_match_eager(make):
    torch.manual_seed(0)
    model = make()

    def call(x):
        return model(x)

    g = ta.function(call)
    for seed in range(3):
        torch.manual_seed(seed + 10)
        x = torch.randn(2, 3)
        assert_matches_eager(call, x, modules=[model], traced=g)
    assert g.experimental_get_tracing_count() == 1
    assert {"cond", "while"} & set(graph_ops(g, x))


# ----- functional forms ------------------------------------------------------------------
def test_ta_cond_with_python_predicate_is_python():
    calls = []

    def f(x, flag):
        return ta.cond(flag, lambda: calls.append("t") or x * 2, lambda: calls.append("f") or x - 2)

    g = ta.function(f)
    torch.testing.assert_close(g(POS, True), POS * 2)
    assert calls == ["t"]
    assert "cond" not in graph_ops(g, POS, True)


def test_ta_cond_with_graph_predicate_makes_a_node():
    def f(x):
        return ta.cond(x.sum() > 0, lambda: x * 2, lambda: x.exp())

    g = ta.function(f)
    for x in (POS, NEG):
        xg = x.clone().requires_grad_(True)
        xe = x.clone().requires_grad_(True)
        out = g(xg)
        ref = xe * 2 if x.sum() > 0 else xe.exp()
        out.sum().backward()
        ref.sum().backward()
        torch.testing.assert_close(out, ref)
        torch.testing.assert_close(xg.grad, xe.grad)
    assert "cond" in graph_ops(g, POS)
    assert torch.equal(ta.cond(torch.tensor(True), lambda: POS, lambda: NEG), POS)  # eager


def test_ta_while_loop_forms():
    def f(x, n):
        i, y = ta.while_loop(lambda i, y: i < n, lambda i, y: (i + 1, y * 1.5), (torch.tensor(0), x))
        return i, y

    g = ta.function(f)
    for n in (0, 4):
        i, y = g(POS, torch.tensor(n))
        assert int(i) == n
        torch.testing.assert_close(y, POS * 1.5 ** n)
    assert "while" in graph_ops(g, POS, torch.tensor(4))
    # Python predicate: plain Python, unrolled.
    h = ta.function(lambda x: ta.while_loop(lambda k, y: k < 3, lambda k, y: (k + 1, y + k), [0, x]))
    out = h(POS)
    assert isinstance(out, list) and out[0] == 3
    torch.testing.assert_close(out[1], POS + 3)
    assert "while" not in graph_ops(h, POS)
    # Eager, and maximum_iterations / shape_invariants.
    assert ta.while_loop(lambda k: k < 10, lambda k: (k + 1,), (0,), maximum_iterations=4) == (4,)
    grow = ta.function(lambda x: ta.while_loop(lambda v: v.shape[0] < 8, lambda v: (torch.cat([v, v]),), (x,),
                                               shape_invariants=[[None]]))
    torch.testing.assert_close(grow(torch.ones(1))[0], torch.ones(8))


_GLOBAL_LOG = []


def test_append_to_a_global_list_inside_a_tensor_if_is_refused_at_the_if():
    # The list is not local to the function: AutoGraph must not make it loop/branch state (that would rebind
    # the name and raise UnboundLocalError). Its append would run once while tracing, while eagerly it runs
    # at every call that takes the branch: no graph can replay that, so it is an error at the `if`.
    def f(x):
        if x.sum() > 0:
            _GLOBAL_LOG.append("traced")
        return x * 2

    _GLOBAL_LOG.clear()
    line = f.__code__.co_firstlineno + 1
    with pytest.raises(StateEffectError, match=rf"_GLOBAL_LOG grows or shrinks .*test_control_flow.py:{line}"):
        ta.function(f)(torch.ones(3))
    assert _GLOBAL_LOG == []  # nothing of the failed trace stays in it


# ----- a Python number on one path of a tensor `if` --------------------------------------------------
def _number_or_tensor_then_augmented(x):
    if x.sum() > 0:
        y = x.sum()
    else:
        y = 3
    z = y
    y -= 4  # a number on the else path: rebinds y only; a tensor on the other: z sees it
    w = y * 2
    v = w
    w += 1
    return z, y, v, w


@pytest.mark.parametrize("sign", [1.0, -1.0], ids=["tensor_path", "number_path"])
def test_augmented_assignment_on_a_number_an_if_promoted_rebinds_as_in_python(sign):
    x = torch.ones(2) * sign
    got = ta.function(_number_or_tensor_then_augmented)(x)
    want = _number_or_tensor_then_augmented(x)
    assert [float(g) for g in got] == [float(w) for w in want]
