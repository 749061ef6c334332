"""Errors from graph control flow name the user's variable and `file:line` (branches, loops, asserts).

Each function marks the statement the message must point at with a `# <-`
comment; `line_of` turns the marker into `test_control_flow_errors.py:N`.
"""

import re

import pytest
import torch
from eager_reference import assert_matches_eager, line_of

import torch_autograph as ta

X = torch.tensor([1.0, 2.0])


def _raises(exc, fn, *args):
    """The message of the error tracing `fn` raises, with its notes (the "in user code:" block)."""
    with pytest.raises(exc) as info:
        ta.function(fn)(*args)
    return "\n".join([str(info.value), *getattr(info.value, "__notes__", [])])


# ----- cond variables ----------------------------------------------------------------------
def only_in_main(x):
    if x.sum() > 0:  # <-
        y = x * 2
    return y


def only_in_else(x):
    if x.sum() > 0:  # <-
        pass
    else:
        y = x * 2
    return y


@pytest.mark.parametrize("fn, branch", [(only_in_main, "else"), (only_in_else, "main")])
def test_variable_defined_in_one_branch(fn, branch):
    msg = _raises(ValueError, fn, X)
    assert f"'y' must also be initialised in the {branch} branch" in msg
    assert line_of(fn, "# <-") in msg


def test_variable_used_only_inside_one_branch_is_fine():
    def f(x):
        if x.sum() > 0:
            y = x * 2
            x = y + 1
        return x

    assert_matches_eager(f, X)
    assert_matches_eager(f, -X)


def test_none_in_one_branch():
    def f(x):
        if x.sum() > 0:  # <-
            y = x
        else:
            y = None
        return y

    msg = _raises(ValueError, f, X)
    assert "'y' is None at the end of the else branch" in msg and line_of(f, "# <-") in msg


def test_dtype_mismatch_between_branches():
    def f(x):
        if x.sum() > 0:  # <-
            y = x.int()
        else:
            y = x
        return y

    msg = _raises(TypeError, f, X)
    assert "'y' has dtype torch.int32 in the main branch, but dtype torch.float32 in the else branch" in msg
    assert line_of(f, "# <-") in msg


def float_number_or_int_tensor(x):
    y = torch.tensor(1)
    if x.sum() > 0:  # <-
        y = 1.5
    return y


def int_tensor_or_float_number(x):
    return torch.tensor(1) if x.sum() > 0 else 2.5  # <-


def int_number_or_bool_tensor(x):
    y = x.sum() > 9
    if x.sum() > 0:  # <-
        y = 3
    return y


@pytest.mark.parametrize("fn, words", [
    (float_number_or_int_tensor, "'y' has dtype torch.int64 in the else branch, but Python type float in the main"),
    (int_tensor_or_float_number, "has dtype torch.int64 in the main branch, but Python type float in the else"),
    (int_number_or_bool_tensor, "'y' has dtype torch.bool in the else branch, but Python type int in the main"),
])
def test_a_number_a_tensor_branch_cannot_hold_unchanged_is_refused_not_cast(fn, words):
    # A tensor `if` turns a number merged with a tensor into a tensor of that dtype; a float in an int tensor or an
    # int in a bool one would change value (1.5 -> 1, 3 -> True), which eager never does.
    msg = _raises(TypeError, fn, X)
    assert words in msg and "both branches must give it the same type" in msg
    assert line_of(fn, "# <-") in msg


def test_an_int_a_float_tensor_branch_holds_becomes_that_tensor():
    def f(x):
        y = 2
        if x.sum() > 0:
            y = x.sum()
        return y

    assert_matches_eager(f, X)
    out = ta.function(f)(-X)
    assert out.dtype == torch.float32 and out.item() == 2.0  # the README's rule: the int becomes the float


def sum_rows_if_many(x):
    if x.shape[0] > 2:
        y = x.sum(0)  # rank 1 here, rank 2 on the other path: no graph `if` holds both
    else:
        y = x
    return y


def test_an_if_on_a_size_whose_branches_differ_in_rank_is_decided_on_the_call_s_size_and_guarded():
    f = ta.function(sum_rows_if_many, reduce_retracing=True)
    for n in (3, 4, 1, 2, 5, 1):
        x = torch.arange(2.0 * n).reshape(n, 2)
        torch.testing.assert_close(f(x), sum_rows_if_many(x), rtol=0, atol=0)
    # One trace per shape kind: the first call's, then one with x.size(0) >= 3 and one with x.size(0) < 3.
    assert f.experimental_get_tracing_count() == 3
    assert "assumed x.size(0) >= 3, which this call breaks" in "\n".join(str(r) for r in f.trace_history())
    g = ta.function(sum_rows_if_many, input_signature=[ta.TensorSpec([None, 2], torch.float32)])
    for n in (3, 1):
        x = torch.ones(n, 2)
        torch.testing.assert_close(g(x), sum_rows_if_many(x), rtol=0, atol=0)


def test_structure_mismatch_between_branches():
    def f(x):
        if x.sum() > 0:  # <-
            y = (x, x)
        else:
            y = x
        return y

    msg = _raises(TypeError, f, X)
    assert "'y' must have the same nested structure in the main and else branches" in msg
    assert "main: ((Tensor, Tensor),)" in msg.replace("'", "") and line_of(f, "# <-") in msg


def test_return_value_on_one_path_only_and_return_dtype_mismatch():
    def bare(x):
        if x.sum() > 0:  # <-
            return x
        else:
            return

    def dtypes(x):
        if x.sum() > 0:  # <-
            return x.int()
        return x

    msg = _raises(ValueError, bare, X)
    assert "is None at the end of the else branch" in msg and line_of(bare, "# <-") in msg
    msg = _raises(TypeError, dtypes, X)
    assert "dtype torch.int32 in the main branch, but dtype torch.float32 in the else branch" in msg
    assert line_of(dtypes, "# <-") in msg


def test_and_of_a_bool_and_a_float_cannot_be_one_graph_value():
    def f(x, y):
        return x.sum() > 0 and y  # <-

    msg = _raises(TypeError, f, X, torch.tensor(2.0))
    assert "'<and>' has dtype torch.float32 in the main branch, but dtype torch.bool" in msg
    assert line_of(f, "# <-") in msg


@pytest.mark.parametrize("kind", ["if", "while"])
def test_multi_element_condition(kind):
    def f_if(x):
        if x > 0:  # <-
            x = x + 1
        return x

    def f_while(x):
        while x < 5:  # <-
            x = x + 1
        return x

    fn = f_if if kind == "if" else f_while
    msg = _raises(ValueError, fn, X)
    what = "if statement" if kind == "if" else "while loop"
    assert f"condition of {what} expected a single-element tensor" in msg and "2 elements" in msg
    assert line_of(fn, "# <-") in msg


# ----- loop variables ----------------------------------------------------------------------
def test_loop_variable_dtype_change():
    def f(x):
        i = torch.tensor(0)
        while i < 3:  # <-
            i = i + 1.5
        return i

    msg = _raises(TypeError, f, X)
    assert "'i' has dtype torch.int64 before the loop, but dtype torch.float32 after one iteration" in msg
    assert line_of(f, "# <-") in msg


def test_a_loop_variable_holding_an_int_tensor_given_a_float_is_refused_not_cast():
    def f(x):
        i = torch.tensor(0)
        for k in range(int(x.sum())):  # <-
            i = 0.5
        return i

    msg = _raises(TypeError, f, X)
    assert "'i' has dtype torch.int64 before the loop, but Python type float after one iteration" in msg
    assert line_of(f, "# <-") in msg


def test_loop_variable_shape_change_is_made_symbolic_with_a_note():
    def plain(x):
        while x.sum() < 10:  # <-
            x = torch.cat([x, x])
        return x

    def relaxed(x):
        while x.sum() < 10:
            ta.autograph.experimental.set_loop_options(shape_invariants=[(x, [None])])
            x = torch.cat([x, x])
        return x

    for fn in (plain, relaxed):
        for x in (X, torch.tensor([20.0]), torch.tensor([0.5, 0.25, 1.0])):
            assert_matches_eager(fn, x)
    f = ta.function(plain)
    f(X)
    (event,) = f.trace_history()
    note = "; ".join(event.reasons)
    assert "loop variable 'x' changes shape between iterations" in note and line_of(plain, "# <-") in note


def test_loop_variable_rank_change_is_an_error():
    def f(x):
        while x.sum() < 10:  # <-
            x = x.unsqueeze(0)
        return x

    msg = _raises(ValueError, f, X)
    assert "'x' has shape" in msg and "a graph loop variable keeps its rank" in msg and line_of(f, "# <-") in msg


def test_initial_value_violating_the_shape_invariant():
    def f(x):
        while x.sum() < 10:  # <-
            ta.autograph.experimental.set_loop_options(shape_invariants=[(x, [3])])
            x = x + 1
        return x

    msg = _raises(ValueError, f, X)
    assert "'x' has shape (2,) before the loop, which does not conform with the shape invariant (3,)" in msg
    assert line_of(f, "# <-") in msg


def test_loop_variable_becoming_none_or_changing_structure():
    def to_none(x):
        while x.sum() < 10:  # <-
            x = None
        return x

    def to_pair(x, n):
        y = x
        for i in range(n):  # <-
            y = (y, y)
        return y

    msg = _raises(ValueError, to_none, X)
    assert "'x' is None at the end of the iteration" in msg and line_of(to_none, "# <-") in msg
    msg = _raises(TypeError, to_pair, X, torch.tensor(2))
    assert "'y' does not have the same nested structure after one iteration" in msg
    assert line_of(to_pair, "# <-") in msg


def test_loop_that_must_run_once_fails_at_run_time_with_the_line():
    def f(x, n):
        for i in range(n):  # <-
            last = x * i
        return last

    g = ta.function(f)
    torch.testing.assert_close(g(X, torch.tensor(3)), f(X, torch.tensor(3)))
    with pytest.raises(ta.errors.InvalidArgumentError) as info:
        g(X, torch.tensor(0))
    assert "loop must iterate at least once to initialize 'last'" in str(info.value)
    assert line_of(f, "# <-") in str(info.value)


# ----- assert --------------------------------------------------------------------------
def test_tensor_assert_is_a_run_time_check():
    def f(x):
        assert x.min() > 0, "x must be positive"  # <-
        return x * 2

    g = ta.function(f)
    torch.testing.assert_close(g(X), X * 2)
    with pytest.raises(ta.errors.InvalidArgumentError) as info:
        g(-X)
    assert "assertion failed: x must be positive" in str(info.value)
    assert line_of(f, "# <-") in str(info.value)
    assert g.experimental_get_tracing_count() == 1
    assert "check" in [n.op.name for n in g.get_concrete_function(X).graph.nodes]


def test_tensor_assert_without_message_and_inside_a_loop():
    def f(x, n):
        for i in range(n):
            assert x[i % 2] < 10 * (i + 1)  # <-
            x = x * 3
        return x

    g = ta.function(f)
    torch.testing.assert_close(g(X, torch.tensor(2)), f(X, torch.tensor(2)))
    with pytest.raises(ta.errors.InvalidArgumentError, match=re.escape(line_of(f, "# <-"))) as info:
        g(X, torch.tensor(6))
    assert str(info.value).startswith("assertion failed")


def test_python_assert_fails_at_trace_time():
    def f(x):
        assert x.shape[0] > 5, "x must be long"  # <-
        return x

    msg = _raises(AssertionError, f, X)
    filename, lineno = line_of(f, "# <-").split(":")
    assert "x must be long" in msg and f'{filename}", line {lineno}, in f' in msg


def test_a_return_slot_is_named_the_return_value_in_messages():
    def f(x):
        if x.sum() > 0:  # <-
            return x
        return 1.0, 2

    msg = _raises(TypeError, f, X)
    assert msg.startswith("the return value must have the same nested structure in the main and else branches")
    assert "retval_" not in msg and line_of(f, "# <-") in msg
