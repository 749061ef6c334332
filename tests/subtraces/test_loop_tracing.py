"""How many times a graph loop's body runs its Python while tracing (once, as a Python loop traced once would).

A loop variable whose type only one traced iteration reveals (a Python number
the body turns into a tensor, an empty list the body appends to, a variable
first assigned in the body, a graph list whose element type was unknown) is
handled by re-typing the recorded sub-graph, not by tracing the body again.
The cases still traced twice are listed at the end, with their exact counts,
so a change in either direction shows up here. Every function is also
compared with eager PyTorch, values and gradients.
"""

from collections import Counter

import pytest
import torch
from eager_reference import assert_matches_eager, graph_ops

import torch_autograph as ta
from torch_autograph.subtraces import retype as retype_module

X = torch.tensor([1.0, 2.0, 3.0])
traced: list[str] = []
note = traced.append  # a Python side effect: runs once per trace of the line that calls it


def trace_counts(fn, *args) -> dict:
    """{tag: how many times `note(tag)` ran} while `fn` was traced for `args`."""
    traced.clear()
    f = ta.function(fn)
    concrete = f.get_concrete_function(*args)
    concrete.graph.verify()
    counts = dict(Counter(traced))
    traced.clear()
    return counts


# ----- the body is traced once ---------------------------------------------------------------
def all_tensor_vars(x):
    i = torch.tensor(0)
    s = torch.zeros(())
    while i < 3:
        note("body")
        s = s + x[i]
        i = i + 1
    return s


def python_counter_stays_int(x):
    i = 0
    s = torch.zeros(())
    while s < 10:
        note("body")
        s = s + x.sum()
        i += 1
    return s, i


def tensor_condition_while(x):
    while x.sum() < 100:
        note("body")
        x = x * 2
    return x


def for_over_tensor(x):
    s = torch.zeros(())
    for v in x:
        note("body")
        s = s + v * v
    return s


def int_promoted_to_tensor(x):
    s = 0
    for v in x:
        note("body")
        s = s + v
    return s


def int_promoted_by_augmented_assignment(x):
    total = 0
    for v in x:
        note("body")
        total += v * 2
    return total


def append_to_empty_list(x):
    out = []
    for v in x:
        note("body")
        out.append(v * 2)
    return torch.stack(out)


def append_under_tensor_if(x):
    out = []
    for v in x:
        note("body")
        if v > 1.5:
            out.append(v * v)
    return torch.stack(out)


def first_assigned_in_loop(x):
    for v in x:
        note("body")
        y = v * 3
    return y


def break_in_loop(x):
    s = torch.zeros(())
    for v in x:
        note("body")
        if v > 1.5:
            break
        s = s + v
    return s


def continue_in_loop(x):
    s = torch.zeros(())
    for v in x:
        note("body")
        if v > 1.5:
            continue
        s = s + v
    return s


def return_in_loop(x):
    for v in x:
        note("body")
        if v > 1.5:
            return v * 10
    return x.sum()


def shape_invariant_growth(x):
    acc = x[:1]
    while acc.sum() < 20:
        ta.autograph.experimental.set_loop_options(shape_invariants=[(acc, [None])])
        note("body")
        acc = torch.cat([acc, acc[-1:] * 2])
    return acc


def nested_loops(x):
    s = torch.zeros(())
    for a in x:
        note("outer")
        for b in x:
            note("inner")
            s = s + a * b
    return s


def nested_inner_promotion(x):
    s = torch.zeros(())
    for a in x:
        note("outer")
        t = 0
        for b in x:
            note("inner")
            t = t + a * b
        s = s + t
    return s


def promoted_inside_tensor_if(x):
    s = 0
    if x.sum() > 0:
        for v in x:
            note("body")
            s = s + v
    else:
        s = x.sum()
    return s


def augmented_assignment_updates_aliases(x):
    acc = 0
    out = []
    for v in x:
        note("body")
        acc += v  # a tensor from the 2nd iteration on: updated in place, which every element of `out` shows
        out.append(acc)
    return torch.stack(out)


def augmented_assignments_of_each_operator(x):
    acc = 1
    out = []
    for v in x:
        note("body")
        acc *= v
        acc -= 0.5
        acc /= 2
        acc **= 2
        out.append(acc)
    return torch.stack(out)


def augmented_assignment_in_tensor_if(x):
    acc = 0
    out = []
    for v in x:
        note("body")
        if v > 1.5:
            acc += v
        else:
            acc = acc + 2 * v
        out.append(acc)
    return torch.stack(out)


def promoted_through_tensor_if(x):
    s = 0
    for v in x:
        note("body")
        if v > 1.5:
            s = s + v
    return s


def promoted_through_tensor_if_else(x):
    s = 0
    for v in x:
        note("body")
        if v > 1.5:
            s = s + v
        else:
            s = s * 2  # a run-time int in the first trace, converted by the `if`
    return s


def promoted_in_place_through_tensor_if(x):
    s = 0
    out = []
    for v in x:
        note("body")
        if v > 1.5:
            s += v  # a new tensor the first time, then updated in place: every element of `out` is that tensor
            out.append(s)
    return torch.stack(out)


def outer_int_promoted_by_inner_loop(x):
    s = 0
    for a in x:
        note("outer")
        for b in x:
            note("inner")
            s = s + a * b
    return s


def outer_int_promoted_in_place_by_inner_loop(x):
    s = 0
    out = []
    for a in x:
        note("outer")
        for b in x:
            note("inner")
            s += a * b
        out.append(s)
    return torch.stack(out)


ONCE = [
    (all_tensor_vars, {"body": 1}),
    (python_counter_stays_int, {"body": 1}),
    (tensor_condition_while, {"body": 1}),
    (for_over_tensor, {"body": 1}),
    (int_promoted_to_tensor, {"body": 1}),
    (int_promoted_by_augmented_assignment, {"body": 1}),
    (append_to_empty_list, {"body": 1}),
    (append_under_tensor_if, {"body": 1}),
    (first_assigned_in_loop, {"body": 1}),
    (break_in_loop, {"body": 1}),
    (continue_in_loop, {"body": 1}),
    (return_in_loop, {"body": 1}),
    (shape_invariant_growth, {"body": 1}),
    (nested_loops, {"outer": 1, "inner": 1}),
    (nested_inner_promotion, {"outer": 1, "inner": 1}),
    (promoted_inside_tensor_if, {"body": 1}),
    (augmented_assignment_updates_aliases, {"body": 1}),
    (augmented_assignments_of_each_operator, {"body": 1}),
    (augmented_assignment_in_tensor_if, {"body": 1}),
    # A number the tracer converted to a tensor (a tensor `if` merging it, an inner loop's initial
    # value) is re-typed to the identity once it is a tensor of that type.
    (promoted_through_tensor_if, {"body": 1}),
    (promoted_through_tensor_if_else, {"body": 1}),
    (promoted_in_place_through_tensor_if, {"body": 1}),
    (outer_int_promoted_by_inner_loop, {"outer": 1, "inner": 1}),
    (outer_int_promoted_in_place_by_inner_loop, {"outer": 1, "inner": 1}),
]


@pytest.mark.parametrize("fn, counts", ONCE, ids=[fn.__name__ for fn, _ in ONCE])
def test_body_python_runs_once_while_tracing(fn, counts):
    assert trace_counts(fn, X) == counts
    assert "while" in graph_ops(ta.function(fn), X)


@pytest.mark.parametrize("fn", [fn for fn, _ in ONCE], ids=[fn.__name__ for fn, _ in ONCE])
@pytest.mark.parametrize("x", [X, torch.tensor([0.5, -1.0, 2.5, 4.0])], ids=["x3", "x4"])
def test_values_and_gradients_match_eager(fn, x):
    assert_matches_eager(fn, x)


def test_a_cached_trace_runs_no_python():
    f = ta.function(append_to_empty_list)
    f(X)
    traced.clear()
    torch.testing.assert_close(f(X * 2), append_to_empty_list(X * 2))
    assert traced == ["body"] * 3  # only the eager reference ran the body's Python
    assert f.experimental_get_tracing_count() == 1


def test_promoted_counter_keeps_the_body_dtype():
    def f(x):
        s = 0
        for v in x:
            s = s + v
        return s

    g = ta.function(f)
    xi = torch.tensor([1, 2, 3], dtype=torch.int32)
    out = g(xi)
    assert out.dtype == torch.int32 and int(out) == 6
    assert g(X).dtype == torch.float32


CONVERSIONS = [promoted_through_tensor_if, promoted_through_tensor_if_else, promoted_in_place_through_tensor_if,
               outer_int_promoted_by_inner_loop, outer_int_promoted_in_place_by_inner_loop]


@pytest.mark.parametrize("fn", CONVERSIONS, ids=[fn.__name__ for fn in CONVERSIONS])
@pytest.mark.parametrize("dtype", [torch.int32, torch.float32, torch.float64], ids=str)
def test_dropped_conversions_give_what_a_second_trace_gives(fn, dtype, monkeypatch):
    x = torch.tensor([1, 2, 3], dtype=dtype)
    assert_matches_eager(fn, x)
    once = ta.function(fn)(x)
    assert once.dtype == dtype
    # Without the re-typing of the conversion the body is traced again: same result, same dtype.
    def refuse(node, mapping):
        raise retype_module._CannotRetype

    monkeypatch.setattr(retype_module, "_drop_conversion", refuse)
    assert set(trace_counts(fn, x).values()) == {2}
    torch.testing.assert_close(once, ta.function(fn)(x))


def test_first_assigned_variable_still_checks_the_loop_ran():
    def f(x, n):
        for i in range(n):
            note("body")
            y = x * i
        return y

    assert trace_counts(f, X, torch.tensor(2)) == {"body": 1}
    g = ta.function(f)
    torch.testing.assert_close(g(X, torch.tensor(3)), X * 2)
    with pytest.raises(ta.errors.InvalidArgumentError, match=r"loop must iterate at least once to initialize 'y'"):
        g(X, torch.tensor(0))


def test_empty_list_reset_in_the_body_stays_a_list():
    def f(x):
        last = []
        for v in x:
            last = [v * 2]
        return torch.stack(last)

    assert_matches_eager(f, X)


def test_retyped_graph_prints_the_promoted_type():
    def f(x):
        s = 0
        for v in x:
            s = s + v
        return s

    text = str(ta.function(f).get_concrete_function(X).graph)
    assert "graph body(iteration: int, s: float32[] cpu" in text  # the promoted tensor, not a Python int


def test_augmented_assignment_to_a_promoted_number_updates_in_place_like_eager():
    def f(x, n):
        acc = 0
        out = []
        i = 0
        while i < n:
            note("body")
            acc += x[i]
            out.append(acc)  # the same tensor each time in eager: all elements end equal
            i += 1
        return torch.stack(out)

    n = torch.tensor(3)
    assert trace_counts(f, X, n) == {"body": 1}
    assert "add_" in graph_ops(ta.function(f), X, n)
    for x in (X, torch.tensor([1.5, -2.0, 3.0])):
        assert_matches_eager(f, x, n)


def test_list_appended_to_before_its_number_is_promoted():
    def f(x, n):
        s = 0
        out = []
        i = 0
        while i < n:
            note("body")
            out.append(s)
            s = s + x[i]
            i += 1
        return out

    n = torch.tensor(3)
    # The first trace gives `out` int64 elements (s was an int): traced again with s a float tensor.
    assert trace_counts(f, X, n) == {"body": 2}
    x_eager, x_graph = X.clone().requires_grad_(), X.clone().requires_grad_()
    want, got = f(x_eager, n), ta.function(f)(x_graph, n)
    # Eager's first element is the Python 0; a graph list holds tensors of one dtype (tensor(0.)).
    assert type(want[0]) is int and got[0].dtype == torch.float32
    want, got = torch.stack([torch.as_tensor(v, dtype=torch.float32) for v in want]), torch.stack(got)
    torch.testing.assert_close(got, want)
    want.sum().backward()
    got.sum().backward()
    torch.testing.assert_close(x_graph.grad, x_eager.grad)


# ----- the cases that still trace the body twice (documented in while_loop.py) ---------------
def append_to_nonempty_list(x):
    out = [x[0]]
    for v in x:
        note("body")
        out.append(v * 2)
    return torch.stack(out)


def converted_to_another_dtype_by_tensor_if(x):
    s = 0
    for v in x:
        note("body")
        if v > 1.5:
            t = s + v
        else:
            t = s  # a float32 tensor made from the int in the first trace; float64 in the second
        s = torch.as_tensor(t).double()
    return s


def return_tuple_in_loop(x):
    for v in x:
        note("body")
        if v > 1.5:
            return v, v * 2
    return x[0], x[1]


def first_assigned_in_inner_loop(x):
    s = torch.zeros(())
    for a in x:
        note("outer")
        for b in x:
            note("inner")
            y = a * b
        s = s + y
    return s


TWICE = [
    (append_to_nonempty_list, {"body": 2}),  # a list with elements may be a fixed structure
    (converted_to_another_dtype_by_tensor_if, {"body": 2}),  # the `if` converted the number to float32
    (return_tuple_in_loop, {"body": 2}),  # the returned structure is learnt by tracing
]


def test_a_variable_first_bound_in_an_inner_loop_that_nothing_after_the_outer_reads_is_traced_once():
    # `y` is state of the outer loop (an iteration reads it) but not read after it: no run-time check that the
    # outer loop ran, so the inner loop's placeholder start needs no second trace.
    assert trace_counts(first_assigned_in_inner_loop, X) == {"outer": 1, "inner": 1}
    for x in (X, torch.tensor([0.5, 1.0, 2.5, 4.0])):
        assert_matches_eager(first_assigned_in_inner_loop, x)


@pytest.mark.parametrize("fn, counts", TWICE, ids=[fn.__name__ for fn, _ in TWICE])
def test_body_python_runs_twice_while_tracing(fn, counts):
    assert trace_counts(fn, X) == counts


@pytest.mark.parametrize("fn", [fn for fn, _ in TWICE], ids=[fn.__name__ for fn, _ in TWICE])
def test_twice_traced_loops_match_eager(fn):
    for x in (X, torch.tensor([0.5, 1.0, 2.5, 4.0])):
        assert_matches_eager(fn, x)
