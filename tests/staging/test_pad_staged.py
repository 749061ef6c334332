"""`F.pad` of a tensor whose shape changes in a graph loop, or with a fill value known only when the graph runs.

TensorFlow AutoGraph's `while_with_variable_shape_growing_matrix` (the conformance corpus) pads by one each
iteration with the loop counter as the value: as eagerly, values, dtype and gradients.
"""

import pytest
import torch

import torch_autograph as ta


def grow(n):
    m = torch.tensor([[0, 0], [0, 0]])
    i = 0
    while i < n:
        ta.autograph.experimental.set_loop_options(shape_invariants=[(m, None)])
        m = torch.nn.functional.pad(m, (1, 1, 1, 1), value=i)
        i += 1
    return m


def grow_over(xs):
    m = torch.zeros(1, 2)
    for v in xs:
        ta.autograph.experimental.set_loop_options(shape_invariants=[(m, [None, None])])
        m = torch.nn.functional.pad(m, (0, 2, 1, 0), value=v * 1.5)
    return m


@pytest.mark.parametrize("n", [0, 1, 3])
def test_pad_growing_a_loop_variable_with_the_counter_as_value(n):
    f = ta.function(grow)
    want = grow(torch.tensor(n))
    got = f(torch.tensor(n))
    assert got.dtype == want.dtype and torch.equal(got, want)


def test_pad_value_from_a_tensor_element_is_cast_to_the_padded_dtype():
    ints = torch.tensor([1, 2])
    want = grow_over(ints)
    got = ta.function(grow_over)(ints)
    assert got.dtype == want.dtype and torch.equal(got, want)


def test_pad_value_that_may_require_grad_is_refused_at_the_line():
    # Eagerly torch refuses a value that requires grad; whether this one does is known only at each call.
    line = grow_over.__code__.co_firstlineno + 4
    with pytest.raises(Exception, match=rf"pad\(\) needs the value .* at .*test_pad_staged.py:{line}"):
        ta.function(grow_over)(torch.tensor([1.0, 2.0]))


def pad_input(x, v):
    return torch.nn.functional.pad(x * 2, (1, 0), value=v.sum()).sum()


def test_pad_with_a_graph_value_backpropagates_to_the_input():
    x = torch.ones(2, 2, requires_grad=True)
    v = torch.tensor([3])
    eager = pad_input(x, v)
    eager.backward()
    gx = x.grad.clone()
    x.grad = None
    got = ta.function(pad_input)(x, v)
    got.backward()
    assert torch.equal(got.detach(), eager.detach()) and torch.equal(x.grad, gx)


def test_pad_with_a_value_that_requires_grad_raises_as_eagerly():
    x, v = torch.ones(2, 2), torch.tensor([3.0], requires_grad=True)
    with pytest.raises(TypeError):
        pad_input(x, v)
    with pytest.raises(Exception, match=r"pad\(\)"):
        ta.function(pad_input)(x, v)
