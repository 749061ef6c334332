"""`set_loop_options(shape_invariants=[(m, None)])`: any shape, every dim free to change (TensorFlow's
while_with_variable_shape_growing_matrix), compared with eager; a change of rank is still refused."""

import pytest
import torch
from eager_reference import line_of

import torch_autograph as ta


def growing_matrix(n):
    m = torch.ones(2, 2)
    i = 0
    while i < n:
        ta.autograph.experimental.set_loop_options(shape_invariants=[(m, None)])
        m = torch.cat([m, m], 0)
        i += 1
    return m


def growing_both_dims(x, n):
    m = x
    for _ in range(n):
        ta.autograph.experimental.set_loop_options(shape_invariants=[(m, None)])
        m = torch.cat([m, torch.ones(1, m.shape[1])], 0)
        m = torch.cat([m, torch.ones(m.shape[0], 1)], 1)
    return m.sum(), m.shape[0]


def shrinking_vector(x):
    while x.sum() > 3:
        ta.autograph.experimental.set_loop_options(shape_invariants=[(x, None)])
        x = x[1:]
    return x


def rank_changes(x, n):
    for _ in range(n):  # rank loop
        ta.autograph.experimental.set_loop_options(shape_invariants=[(x, None)])
        x = x.unsqueeze(0)
    return x


def test_none_shape_invariant_lets_every_dim_change():
    f = ta.function(growing_matrix)
    for n in (0, 2, 3):
        torch.testing.assert_close(f(torch.tensor(n)), growing_matrix(n))
    f = ta.function(growing_both_dims)
    for x, n in ((torch.ones(1, 2), 3), (torch.zeros(2, 2), 1)):
        got, expected = f(x, torch.tensor(n)), growing_both_dims(x, n)
        torch.testing.assert_close(got[0], expected[0])
        assert int(got[1]) == expected[1]
    f = ta.function(shrinking_vector)
    for x in (torch.ones(6), torch.arange(5.)):
        torch.testing.assert_close(f(x), shrinking_vector(x))


def test_none_shape_invariant_keeps_the_rank():
    with pytest.raises(ValueError, match="keeps its rank") as info:
        ta.function(rank_changes)(torch.ones(2), torch.tensor(2))
    assert "'x'" in str(info.value) and line_of(rank_changes, "# rank loop") in str(info.value)
