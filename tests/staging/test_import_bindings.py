"""`import` inside a converted function binds a name like an assignment: a tensor `if` or loop that imports
carries the name out, or refuses as for any other Python object it cannot merge (compared with eager)."""

import math

import pytest
import torch

import torch_autograph as ta


def same_module_in_both_branches(x):
    if x.sum() > 0:
        import math as m
        y = x + 1
    else:
        import math as m
        y = x - 1
    return y * m.floor(2.5)


def module_in_one_branch(x):
    m = 1
    if x.sum() > 0:
        import math as m
    return x * (m if isinstance(m, int) else 2)


def from_import_in_tensor_loop(x, n):
    pi = math.pi
    for _ in range(n):
        from math import pi  # noqa: F811 - rebinding it in the loop is the point
        x = x + pi
    return x


def test_an_import_in_both_branches_of_a_tensor_if_binds_its_name_after_it():
    traced = ta.function(same_module_in_both_branches)
    for x in (torch.tensor([1.0]), torch.tensor([-1.0])):
        torch.testing.assert_close(traced(x), same_module_in_both_branches(x), rtol=0, atol=0)


def test_an_import_in_one_branch_of_a_tensor_if_is_branch_state_and_refused_when_it_differs():
    # Not silently dropped (the name used to keep its value from before the `if`): a module against an int
    # cannot be merged by a graph `if`, which says so at the user's line.
    line = module_in_one_branch.__code__.co_firstlineno + 2
    with pytest.raises(TypeError, match=rf"'m' is module .* in the main branch but int 1 .*"
                                        rf"test_import_bindings.py:{line}"):
        ta.function(module_in_one_branch)(torch.tensor([1.0]))


def test_a_from_import_in_a_tensor_loop_is_loop_state():
    traced = ta.function(from_import_in_tensor_loop)
    for n in (0, 2):
        x = torch.tensor([1.0])
        torch.testing.assert_close(traced(x, torch.tensor(n)), from_import_in_tensor_loop(x, n), rtol=0, atol=0)
