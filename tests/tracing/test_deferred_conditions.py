"""A multi-element condition in a graph branch or loop body fails only if that code runs, as in Python."""

import pytest
import torch
from eager_reference import line_of

import torch_autograph as ta


def in_a_branch_never_taken(x):
    y = x * 2
    if x.sum() > 100:
        if y[0] < 10:  # multi-element
            y = y + 1
    return y


def in_a_loop_body(x, n):
    y = x * 1
    for _ in range(n):
        if y > 0:  # multi-element loop
            y = y - 1
    return y


@pytest.mark.parametrize("fn,ok,bad,marker", [
    (in_a_branch_never_taken, (torch.ones(2, 3),), (torch.ones(2, 3) * 100,), "# multi-element"),
    (in_a_loop_body, (torch.ones(3), torch.tensor(0)), (torch.ones(3), torch.tensor(2)), "# multi-element loop"),
])
def test_multi_element_condition_fails_only_when_it_runs(fn, ok, bad, marker):
    traced = ta.function(fn)
    torch.testing.assert_close(traced(*ok), fn(*ok))
    with pytest.raises(RuntimeError, match="ambiguous"):
        fn(*bad)
    with pytest.raises(ta.errors.InvalidArgumentError, match="single-element tensor") as info:
        traced(*bad)
    assert line_of(fn, marker) in str(info.value)


def test_multi_element_condition_at_the_top_level_is_refused_while_tracing():
    def top(x):
        if x > 0:  # top
            return x
        return -x

    with pytest.raises(ValueError, match="single-element tensor") as info:
        ta.function(top)(torch.ones(3))
    assert line_of(top, "# top") in str(info.value)
