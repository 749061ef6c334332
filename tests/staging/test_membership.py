"""`in` on graph tensors in converted code: a graph bool, usable in conditions, equal to eager."""

import pytest
import torch

import torch_autograph as ta


def _pad_first(ids, pad):
    if pad in ids[:, 0]:
        return ids + 1
    return ids - 1


def _not_in(x):
    if 2 not in x:
        return x * 2
    return x


def _tensor_in_list(x, y):
    items = [x, y]
    z = x + 1
    hit = 0
    if z in items:  # compared by value, one element each
        hit = 1
    return x * hit, x in items


@pytest.mark.parametrize("ids", [torch.tensor([[0, 1], [2, 3]]), torch.tensor([[5, 1], [2, 3]])])
def test_in_a_tensor_column_as_a_condition_equals_eager(ids):
    f = ta.function(_pad_first)
    torch.testing.assert_close(f(ids, torch.tensor(0)), _pad_first(ids, torch.tensor(0)))
    torch.testing.assert_close(f(ids, 0), _pad_first(ids, 0))


@pytest.mark.parametrize("x", [torch.tensor([1, 2, 3]), torch.tensor([1, 4, 3])])
def test_not_in_equals_eager(x):
    torch.testing.assert_close(ta.function(_not_in)(x), _not_in(x))


@pytest.mark.parametrize("x, y", [(torch.tensor(1.0), torch.tensor(2.0)), (torch.tensor(1.0), torch.tensor(5.0))])
def test_a_tensor_in_a_list_of_tensors_equals_eager(x, y):
    got, found = ta.function(_tensor_in_list)(x, y)
    want, want_found = _tensor_in_list(x, y)
    torch.testing.assert_close(got, want)
    assert bool(found) is want_found is True


def test_in_returns_a_graph_bool_and_plain_python_is_unchanged():
    f = ta.function(lambda x: (3 in x, 3 in [1, 2, 3], "a" in "abc"))
    found, in_list, in_str = f(torch.tensor([1, 2, 3]))
    assert found.dtype == torch.bool and bool(found) is True
    assert bool(in_list) is True and bool(in_str) is True
