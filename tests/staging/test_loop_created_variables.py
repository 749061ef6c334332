"""Variables first assigned inside a graph loop (TensorFlow's loop_initializing_*_variable programs)."""

import pytest
import torch
from eager_reference import line_of

import torch_autograph as ta


def loop_initializing_invariant_variable(n):
    for i in range(n):
        if i == 0:
            a = 1
        else:
            a = 2
    return a


def loop_initializing_variant_variable(n):
    for i in range(n):  # variant loop
        if i == 0:
            a = 1
        else:
            a = a + 1
    return a


def while_initializing_variant_variable(x):
    i = 0
    while i < x.sum():  # variant while
        if i > 0:
            t = t * 2  # noqa: F821 (unbound on the first iteration: what the test is about)
        else:
            t = x
        i += 1
    return t


def nested_initializing_variant_variable(n, m):
    s = 0
    for j in range(m):
        for i in range(n):  # inner variant loop
            if i == 0:
                a = 1.0
            else:
                a = a * 3
        s = s + j
    return s


def test_invariant_variable_matches_python():
    traced = ta.function(loop_initializing_invariant_variable)
    for n in (1, 2, 5):
        assert traced(torch.tensor(n)).item() == loop_initializing_invariant_variable(n)
        assert traced(n) == loop_initializing_invariant_variable(n)


@pytest.mark.parametrize("fn,args,marker", [
    (loop_initializing_variant_variable, (torch.tensor(2),), "# variant loop"),
    (while_initializing_variant_variable, (torch.tensor([1.0, 2.0]),), "# variant while"),
    (nested_initializing_variant_variable, (torch.tensor(3), torch.tensor(2)), "# inner variant loop"),
])
def test_variant_variable_must_be_defined_before_the_loop(fn, args, marker):
    name = "'t'" if fn is while_initializing_variant_variable else "'a'"
    with pytest.raises(ValueError, match="must be defined before the loop") as info:
        ta.function(fn)(*args)
    message = str(info.value)
    assert name in message and line_of(fn, marker) in message


def test_variant_variable_with_python_bounds_is_plain_python():
    traced = ta.function(loop_initializing_variant_variable)
    for n in (1, 2, 4):
        assert traced(n) == loop_initializing_variant_variable(n)


# ----- a variable first assigned in a Python loop inside a graph `if` of a graph loop ------------------
def assigned_in_branch_of_tensor_for(x):
    s = x * 0
    for v in x:
        if v > 0:
            for k in range(2):
                t3 = v * k
            s = s + t3
    return s


def assigned_in_branch_of_tensor_while(x):
    s = x.sum() * 0
    i = torch.tensor(0)
    while i < 3:
        if x[i] > 1:
            for k in range(3):
                t3 = x[i] + k
            s = s + t3
        i += 1
    return s


def assigned_in_nested_branches(x):
    s = x * 0
    for v in x:
        if v > 0:
            if v > 2:
                t3 = v * 3
            else:
                t3 = v
            s = s + t3
    return s


def test_variable_first_assigned_in_one_branch_of_a_loop_body_matches_eager():
    for fn in (assigned_in_branch_of_tensor_for, assigned_in_nested_branches):
        traced = ta.function(fn)
        for x in (torch.tensor([1., -2., 3.]), torch.tensor([-1., -1., -1.]), torch.tensor([4., 0.5, 2.])):
            torch.testing.assert_close(traced(x), fn(x))
    traced = ta.function(assigned_in_branch_of_tensor_while)
    for x in (torch.tensor([1., 2., 3.]), torch.tensor([0., 0., 5.])):
        torch.testing.assert_close(traced(x), assigned_in_branch_of_tensor_while(x))
