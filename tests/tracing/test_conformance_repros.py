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


def _nested_item_in_branch(a):
    x = {"a": {"a": a}, "b": {"a": 0}}
    if x["a"]["a"] > 0:
        x["b"]["a"] = 1
    return x["b"]["a"]


def _missing_parent_in_branch(a):
    # TF AutoGraph's composite_names_in_control_flow_test.if_imbalanced_buggy: wrong code, eager fails only
    # when the branch runs.
    x = {"a": {"a": a}}
    if x["a"]["a"] > 0:
        x["b"]["a"] = 1  # the KeyError line
    return x


def _parent_made_in_branch(c):
    x = {}
    if c:  # the if line
        x["b"] = {}
        x["b"]["a"] = 1
    return x


@pytest.mark.parametrize("a", [torch.tensor(3), torch.tensor(-3), 3, -3])
def test_a_nested_item_assigned_in_a_branch_matches_eager(a):
    got = ta.function(_nested_item_in_branch)(a)
    assert int(got) == _nested_item_in_branch(a)


def test_a_missing_parent_of_an_item_raises_in_its_branch_not_before_the_if():
    # It was a bare KeyError raised before the `if`, from reading x['b'] to carry x['b']['a'] into the branches.
    from tests.eager_reference import line_of
    # Raised when the graph takes the branch, as eagerly; the other path runs.
    f = ta.function(_missing_parent_in_branch)
    with pytest.raises(KeyError, match=r"'b'") as info:
        f(torch.tensor(1))
    assert line_of(_missing_parent_in_branch, "# the KeyError line") in "\n".join(info.value.__notes__)
    with pytest.raises(KeyError, match=r"'b'"):
        _missing_parent_in_branch(torch.tensor(1))
    assert f(torch.tensor(0))["a"]["a"].item() == 0 and set(f(torch.tensor(0))) == {"a"}
    assert _missing_parent_in_branch(0) == {"a": {"a": 0}}  # Python's path: as eager
    assert ta.function(_missing_parent_in_branch)(0) == {"a": {"a": 0}}
    from torch_autograph.autograph.operators import variables
    assert variables.is_undefined(variables.ld_item(variables.ld_item({}, "b"), "a"))


def test_a_parent_created_in_one_branch_of_a_tensor_if_is_the_one_branch_rule():
    from tests.eager_reference import line_of
    with pytest.raises(ValueError, match=r"'x\['b'\]' must also be initialised in the else branch") as info:
        ta.function(_parent_made_in_branch)(torch.tensor(True))
    assert line_of(_parent_made_in_branch, "# the if line") in str(info.value)
    assert ta.function(_parent_made_in_branch)(True) == {"b": {"a": 1}}
