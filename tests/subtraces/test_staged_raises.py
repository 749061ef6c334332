"""A `raise` in a branch of a tensor `if` or in a graph loop's body raises when the graph runs and takes that path.

Each case runs eagerly and as a `ta.function` over several calls that take each path: the values (and
gradients) of the normal path equal eager's; the raising path raises the user's own exception type with
eager's message, which an `except` around the call catches.
"""

from __future__ import annotations

import pytest
import torch

import torch_autograph as ta
from tests.eager_reference import assert_matches_eager, graph_ops, line_of
from torch_autograph import errors


def outcome(fn, *args):
    """What calling `fn` gives: ("value", result) or ("raised", exception type, message)."""
    try:
        return ("value", fn(*args))
    except Exception as e:  # noqa: BLE001 - the exception is what is compared
        return ("raised", type(e), str(e))


def assert_same_outcomes(fn, calls):
    """`ta.function(fn)` and `fn` give the same value or raise the same exception, call after call."""
    traced = ta.function(fn)
    for args in calls:
        want, got = outcome(fn, *args), outcome(traced, *args)
        assert got[0] == want[0], (args, got, want)
        if want[0] == "raised":
            assert got[1:] == want[1:], (args, got, want)
        else:
            torch.testing.assert_close(got[1], want[1])
    return traced


def sqrt_of_non_negative(x):
    if (x < 0).any():
        raise ValueError("negative input")  # the raise line
    return x.sqrt()


def test_the_issue_example_raises_only_when_the_branch_is_taken():
    f = assert_same_outcomes(sqrt_of_non_negative, [(torch.ones(2),), (torch.tensor([1.0, -1.0]),),
                                                   (torch.tensor([4.0, 9.0]),), (-torch.ones(2),)])
    assert_matches_eager(sqrt_of_non_negative, torch.tensor([4.0, 9.0]))
    with pytest.raises(ValueError, match="^negative input"):
        f(torch.tensor([1.0, -2.0]))
    assert "raise" in graph_ops(f, torch.ones(2))


def test_an_except_around_the_call_catches_it_and_the_traceback_names_the_raise_line():
    f = ta.function(sqrt_of_non_negative)
    try:
        f(torch.tensor([-1.0, 2.0]))
    except ValueError as e:
        notes = "\n".join(getattr(e, "__notes__", []))
        assert line_of(sqrt_of_non_negative, "# the raise line").split(":")[1] in notes
        assert "raise ValueError" in notes
    else:
        raise AssertionError("no ValueError")


class ShapeError(Exception):
    def __init__(self, what, n):
        super().__init__(what, n)
        self.n = n


def custom_exception_after_work(x, limit):
    y = x * 2
    if y.sum() > limit:
        ta.print("over")  # an effect before the raise runs, as eagerly
        raise ShapeError(f"sum over {limit}", limit)
    elif y.sum() < 0:
        return -y
    return y + 1


def test_a_user_exception_class_with_attributes_and_the_other_branches_run_normally(capsys):
    assert_same_outcomes(custom_exception_after_work, [(torch.ones(2), 10), (torch.full((2,), 9.0), 10),
                                                       (-torch.ones(2), 10), (torch.ones(2), 1)])
    f = ta.function(custom_exception_after_work)
    with pytest.raises(ShapeError) as info:
        f(torch.full((2,), 9.0), 10)
    assert info.value.n == 10 and info.value.args == ("sum over 10", 10)
    assert "over" in capsys.readouterr().out
    # A second raise is a new exception object (the graph keeps its own copy).
    with pytest.raises(ShapeError) as again:
        f(torch.full((2,), 9.0), 10)
    assert again.value is not info.value
    assert_matches_eager(custom_exception_after_work, torch.tensor([1.0, 2.0]), 10)
    assert_matches_eager(custom_exception_after_work, torch.tensor([-1.0, -2.0]), 10)


def raise_in_loop(x):
    for _ in range(x.shape[0]):
        x = x * 2
    while x.sum() < 40:
        x = x + 1
        if (x > 30).any():
            raise KeyError("too big")
    return x


def raise_in_for_over_tensor(xs):
    total = xs[0] * 0
    for row in xs:
        if row.sum() > 5:
            raise RuntimeError("row too large")
        total = total + row
    return total


def test_raises_inside_tensor_loops():
    assert_same_outcomes(raise_in_loop, [(torch.ones(2),), (torch.full((2,), 29.0),), (torch.full((2,), 8.0),), (torch.tensor([7.5, 0.0]),),
                                         (torch.ones(3),)])
    f = ta.function(raise_in_loop)
    with pytest.raises(KeyError, match="too big"):
        f(torch.tensor([7.5, 0.0]))  # 30 after the `for`, 31 in the `while`
    assert outcome(raise_in_loop, torch.tensor([7.5, 0.0]))[1] is KeyError
    assert_same_outcomes(raise_in_for_over_tensor, [(torch.ones(3, 2),), (torch.tensor([[1.0, 1], [9, 9]]),),
                                                    (torch.zeros(4, 2),)])
    assert_matches_eager(raise_in_for_over_tensor, torch.ones(3, 2))


def raise_as_loop_body(x):
    while x.sum() > 100:
        raise OverflowError("sum above 100")
    return x * 3


def test_a_loop_body_that_always_raises_raises_only_if_it_runs():
    assert_same_outcomes(raise_as_loop_body, [(torch.ones(2),), (torch.full((2,), 60.0),), (torch.zeros(1),)])


def both_branches_raise(x):
    if x.sum() > 0:
        raise ValueError("positive")
    else:
        raise TypeError("not positive")


def test_both_branches_raising():
    assert_same_outcomes(both_branches_raise, [(torch.ones(1),), (-torch.ones(1),)])


def return_or_raise(x):
    if x.sum() > 0:
        return x * 2
    raise LookupError("empty sum")


def test_return_on_one_path_raise_on_the_other():
    assert_same_outcomes(return_or_raise, [(torch.ones(2),), (-torch.ones(2),), (torch.ones(3),)])
    assert_matches_eager(return_or_raise, torch.tensor([1.0, 3.0]))


def ternary_with_raise(x):
    y = x + 1 if x.sum() > 0 else fails("nope")
    return y


def fails(msg):
    raise ValueError(msg)


def test_a_raise_in_a_called_function_of_a_conditional_expression():
    assert_same_outcomes(ternary_with_raise, [(torch.ones(2),), (-torch.ones(2),)])


def message_formats_a_tensor(x):
    if (x < 0).any():
        raise ValueError(f"negative input {x}")  # the formatting line
    return x


def message_holds_a_tensor(x):
    if (x < 0).any():
        raise ValueError("negative input", x)  # the holding line
    return x


def test_a_message_made_from_a_graph_tensor_is_refused_at_the_raise_line():
    with pytest.raises(errors.StagedBranchError, match="formats a graph tensor") as info:
        ta.function(message_formats_a_tensor)(torch.ones(2))
    assert line_of(message_formats_a_tensor, "# the formatting line") in str(info.value)
    with pytest.raises(errors.StagedBranchError, match="holds the graph value") as info:
        ta.function(message_holds_a_tensor)(torch.ones(2))
    assert line_of(message_holds_a_tensor, "# the holding line") in str(info.value)


def test_export_refuses_a_staged_raise_at_its_line():
    f = ta.function(sqrt_of_non_negative)
    with pytest.raises(errors.GraphLoweringError) as info:
        ta.export(f, torch.ones(2))
    assert "ValueError" in str(info.value)
    assert line_of(sqrt_of_non_negative, "# the raise line") in str(info.value)


def test_jit_compile_raises_at_run_time_too():
    f = ta.function(sqrt_of_non_negative, jit_compile=True)
    torch.testing.assert_close(f(torch.tensor([4.0, 9.0])), torch.tensor([2.0, 3.0]))
    with pytest.raises(ValueError, match="^negative input"):
        f(torch.tensor([4.0, -9.0]))
    torch.testing.assert_close(f(torch.tensor([1.0, 16.0])), torch.tensor([1.0, 4.0]))


def test_saved_model_and_onnx_refuse_a_staged_raise(tmp_path):
    f = ta.function(sqrt_of_non_negative, input_signature=[ta.TensorSpec([2], torch.float32)])
    with pytest.raises(errors.GraphLoweringError, match="raise ValueError"):
        ta.saved_model.save(f, str(tmp_path / "m"))
    pytest.importorskip("onnx")
    with pytest.raises(errors.GraphLoweringError, match="raise ValueError"):
        ta.onnx.export(f, (torch.ones(2),))


def int_tensor_updated_by_a_float_in_one_branch(a):
    y = 1
    if not (a > 1).all():
        y = y + torch.as_tensor(2)  # an int64 tensor...
        y -= a + y  # ...that a float64 cannot update in place: torch refuses it, eagerly and while tracing
    else:
        y = y + torch.as_tensor(5)
    return y


def int_tensor_updated_by_a_float_in_a_loop_body(a, n):
    y = torch.as_tensor(2)
    i = 0
    while i < n:
        y -= a
        i += 1
    return y


def test_an_op_torch_refuses_for_its_types_raises_only_when_its_branch_runs():
    # Eagerly the refusal is raised only when the branch runs; both branches are traced, and torch's refusal of
    # the in-place op (a matter of the arguments' types, confirmed by running it on zeros) raises then.
    f = assert_same_outcomes(int_tensor_updated_by_a_float_in_one_branch,
                             [(torch.tensor(4.0, dtype=torch.float64),), (torch.tensor(0.0, dtype=torch.float64),),
                              (torch.tensor(3.0, dtype=torch.float64),)])
    assert f.experimental_get_tracing_count() == 1


def test_an_op_torch_refuses_in_a_loop_body_raises_only_if_the_body_runs():
    a = torch.tensor(1.5, dtype=torch.float64)
    traced = ta.function(int_tensor_updated_by_a_float_in_a_loop_body)
    assert int(traced(a, torch.tensor(0))) == int(int_tensor_updated_by_a_float_in_a_loop_body(a, 0)) == 2
    with pytest.raises(RuntimeError):
        int_tensor_updated_by_a_float_in_a_loop_body(a, 2)
    with pytest.raises(RuntimeError):
        traced(a, torch.tensor(2))


def test_an_op_torch_refuses_outside_any_branch_is_refused_while_tracing():
    def f(a):
        y = torch.as_tensor(2)
        y -= a
        return y

    with pytest.raises(RuntimeError, match=r"while tracing .* at .*test_staged_raises\.py:\d+"):
        ta.function(f)(torch.tensor(1.5, dtype=torch.float64))
