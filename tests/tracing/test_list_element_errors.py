"""A graph list whose elements would differ in rank or dtype: a clear error at the user's line (no internal name)."""

import pytest
import torch
from eager_reference import line_of

import torch_autograph as ta


def ranks_differ_per_branch(x):
    a = []
    if x.sum() > 0:
        a.append(x)
    else:
        a.append(torch.full([1, 2], 9.))  # other rank
    return a[0]


def ranks_differ_in_a_loop(x):
    a = [x[0]]
    for v in x:
        a.insert(0, v.reshape(1, 1))  # other rank
    return a[0]


def float_into_int_list_in_branch(x):
    a = []
    for v in x:
        a.append(v)
    if x.sum() > 0:
        a[0] = 2.5  # other dtype
    return a[0]


@pytest.mark.parametrize("fn,x,words", [
    (ranks_differ_per_branch, torch.ones(3), "one rank"),
    (ranks_differ_in_a_loop, torch.ones(3), "one rank"),
    (float_into_int_list_in_branch, torch.ones(3, dtype=torch.long), "one dtype"),
])
def test_graph_list_element_mismatch_is_reported_at_the_users_line(fn, x, words):
    with pytest.raises(TypeError) as info:
        ta.function(fn)(x)
    message = str(info.value)
    marker = {"one rank": "# other rank", "one dtype": "# other dtype"}[words]
    assert words in message and line_of(fn, marker) in message, message
    assert "NoneType" not in message and "%" not in message
