"""Modules and Parameters created inside a traced function: refused at the user's line (each eager call would
make new parameters, a graph would freeze one set: TensorFlow's rule that Variables are created on the first
trace only); modules without parameters are fine."""

import pytest
import torch
from eager_reference import line_of

import torch_autograph as ta


def linear_in_forward(x):
    lin = torch.nn.Linear(3, 2)  # linear here
    return lin(x)


def conv_in_a_branch(x):
    if x.sum() > 0:
        y = torch.nn.Conv1d(1, 1, 1)(x)  # conv here
    else:
        y = x
    return y


def bare_parameter(x):
    w = torch.nn.Parameter(torch.zeros(3))  # parameter here
    return x * w


@pytest.mark.parametrize("fn,x,marker", [
    (linear_in_forward, torch.ones(3), "# linear here"),
    (conv_in_a_branch, torch.ones(1, 1, 4), "# conv here"),
    (bare_parameter, torch.ones(3), "# parameter here"),
])
def test_parameter_created_while_tracing_is_refused_at_the_users_line(fn, x, marker):
    with pytest.raises(ValueError, match="creating a torch.nn.Parameter") as info:
        ta.function(fn)(x)
    assert line_of(fn, marker) in str(info.value) and "outside the function" in str(info.value)


def modules_without_parameters(x):
    act = torch.nn.ReLU()
    pool = torch.nn.Flatten(0)
    return pool(act(x - 1))


def test_modules_without_parameters_may_be_created_inside():
    f = ta.function(modules_without_parameters)
    for x in (torch.ones(2, 2), torch.tensor([[3.0, -1.0]])):
        torch.testing.assert_close(f(x), modules_without_parameters(x))
