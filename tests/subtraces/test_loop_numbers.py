"""Loop variables that are Python numbers on the first iteration and tensors (or aliases of tensors) later.

Python's meaning: `n op= m` rebinds a number but updates a tensor in place, so
what the loop computes depends on which one the variable is at each
iteration, and numbers' arithmetic reads its operands where the statement
stands. Each program is compared with plain Python / eager PyTorch on several
inputs, through one traced function.
"""

import torch

import torch_autograph as ta


def same(got, expected):
    """A graph gives a run-time number back as a 0-d tensor: equal values; tensors also equal dtypes."""
    if isinstance(expected, (tuple, list)):
        assert type(got) is type(expected) and len(got) == len(expected), (got, expected)
        for g, e in zip(got, expected):
            same(g, e)
        return
    if isinstance(expected, torch.Tensor):
        assert isinstance(got, torch.Tensor) and got.dtype == expected.dtype, (got, expected)
        torch.testing.assert_close(got, expected, rtol=0, atol=0)
        return
    assert torch.as_tensor(got).item() == expected, (got, expected)


def check(fn, *argsets):
    traced = ta.function(fn)
    for args in argsets:
        same(traced(*args), fn(*args))


# ----- item 1: an inner loop updates in place a number the outer loop read before it ------------------
def dependent_inner_for(a, b):  # TensorFlow AutoGraph's nested_control_flow.dependent_inner_for
    r = 1
    s = 0
    for _ in a:
        r += s
        for j in b:
            s += j
    return r


def dependent_inner_for_plain_add(a, b):
    r = 1
    s = 0
    for _ in a:
        r = r + s
        for j in b:
            s += j
    return r, s


def dependent_inner_for_range_outer(n, b):
    r = 1
    s = 0
    for _ in range(n):
        r += s
        for j in b:
            s += j
    return r


def dependent_inner_range_in_while(n, m):
    r, s, i = 1, 0, 0
    while i < n:
        r = r + s
        for j in range(m):
            s += j
        i += 1
    return r, s


def test_inner_loop_update_is_not_seen_by_an_earlier_read():
    check(dependent_inner_for, (torch.tensor([0]), torch.tensor([0, 1])), (torch.tensor([0, 0, 0]), torch.tensor([0, 1])),
          (torch.tensor([5, 5]), torch.tensor([2, 3])))
    check(dependent_inner_for_plain_add, (torch.tensor([0, 2, 3]), torch.tensor([1, 2])),
          (torch.tensor([0]), torch.tensor([4, 2])))
    check(dependent_inner_for_range_outer, (torch.tensor(2), torch.tensor([0, 1])), (torch.tensor(4), torch.tensor([1, 1])))
    check(dependent_inner_range_in_while, (torch.tensor(3), torch.tensor(3)), (torch.tensor(2), torch.tensor(4)))


# ----- item 2: a number on the first iteration, an alias of a tensor later ---------------------------
def number_then_alias(a, n):
    x = a * 1
    m = 3
    for _ in range(n):
        m += 3  # an int the first time; then m is x, and += updates x in place
        m = x
    return x


def number_then_alias_while(a, n):
    x = a * 1
    m = 3.0
    i = 0
    while i < n:
        m *= 2
        m = x
        i += 1
    return x, m


def number_then_alias_tensor_for(a, b):
    x = a * 1
    m = 1
    for v in b:
        m -= 1
        m = x
    return x


def number_plus_tensor_then_in_place(x):
    acc = 0
    out = []
    for v in x:
        acc += v  # a new tensor the first time, updated in place later: every element of `out` shows it
        out.append(acc)
    return torch.stack(out)


def test_number_then_alias_of_a_tensor_updates_it_in_place_from_the_second_iteration():
    check(number_then_alias, (torch.tensor(2.), torch.tensor(3)), (torch.tensor(-1.), torch.tensor(1)),
          (torch.tensor(5.), torch.tensor(0)))
    check(number_then_alias_while, (torch.tensor(2.), torch.tensor(3)), (torch.tensor(1.5), torch.tensor(1)))
    check(number_then_alias_tensor_for, (torch.tensor(2.), torch.tensor([1, 2, 3])),
          (torch.tensor(4.), torch.tensor([7])))
    check(number_plus_tensor_then_in_place, (torch.tensor([1., 2., 3.]),), (torch.tensor([-1., 0.5]),))
