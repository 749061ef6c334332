"""Programs the conformance corpus (tests/conformance) found failing, reduced; each compared with eager PyTorch."""

import pytest
import torch

import torch_autograph as ta


def _return_list_from_tensor_loop(x):
    # From TF AutoGraph's converters/return_statements_test (test_nested_multiple_withs), without the `with`s.
    v = []
    while x > 0:
        x -= 1
        if x % 2 == 0:
            return v  # the list is the return value in this branch; the other branch never sets one
        v.append(x)
    return v


@pytest.mark.parametrize("n", [0, 1, 3, 4, 7])
def test_a_graph_list_returned_from_one_branch_of_a_tensor_if_in_a_loop(n):
    # It was an internal error: "TypeError: 'NoneType' object is not iterable" (the stand-in for the branch that
    # sets no return value was built as a tensor of the list's element shape).
    got = ta.function(_return_list_from_tensor_loop)(torch.tensor(n))
    expected = _return_list_from_tensor_loop(torch.tensor(n))
    assert isinstance(got, list) and len(got) == len(expected)
    for g, e in zip(got, expected):
        assert torch.equal(g, e) and g.dtype == e.dtype
