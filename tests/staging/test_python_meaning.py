"""Converted code means what the Python means on constructs found in code nobody here wrote.

Each program runs in plain Python / eager PyTorch and through one
`ta.function` on several inputs; a Python number the eager run returns comes
back from the graph as a 0-d tensor of the same value.
"""

import torch

import torch_autograph as ta


def same(got, expected):
    if isinstance(expected, (tuple, list)):
        assert len(got) == len(expected), (got, expected)
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
    return traced


# ----- item 3: type() of a graph value is the type of what it stands for ------------------------------
def type_is_tensor(x):
    if type(x) is torch.Tensor:
        return x + 1
    return x - 1


def type_of_numbers_and_lists(x, n):
    k = int(n)
    out = []
    for v in x:
        out.append(v)
    y = x * 1
    if type(k) is int and type(k * 0.5) == float:
        y = y * 2
    if type(out) is list and type(x[0]) in (torch.Tensor,):
        y = y + 10
    return y


def type_in_a_called_function(x):
    def kind(v):
        return type(v).__name__
    return x * 2 if kind(x) == "Tensor" else x


def test_type_of_a_graph_tensor_is_torch_tensor():
    check(type_is_tensor, (torch.tensor([1.0, 2.0]),), (torch.tensor(3),))
    check(type_of_numbers_and_lists, (torch.tensor([1.0, 2.0]), torch.tensor(3)), (torch.tensor([5.0]), torch.tensor(0)))
    check(type_in_a_called_function, (torch.tensor([1.0, 2.0]),), (torch.tensor([4.0]),))


def test_type_of_plain_values_is_unchanged_in_converted_code():
    def f(a, b, c):
        return type(a), type(b), type(c), type("T", (), {}).__name__

    converted = ta.autograph.to_graph(f)
    assert converted(1, 2.5, [1]) == f(1, 2.5, [1]) == (int, float, list, "T")
    t = torch.nn.Parameter(torch.ones(1))
    assert converted(t, None, ())[:3] == (torch.nn.Parameter, type(None), tuple)


# ----- item 7: conditions on 1-element tensors of any rank, as `bool(t)` allows ----------------------
def while_on_rank1_counter_with_break(x):
    i = torch.zeros([1])
    while i < 10:
        i += x
        if i > 5:
            break
    return i


def if_rank1_and_python_number(x, a):
    if x < 10 and a > 0:
        return x + 1
    return x


def if_rank2_or_rank0(x, y):
    if x.sum(0, keepdim=True).reshape(1, 1) > 4 or y < 0:
        return x * 2
    return x


def for_with_break_on_rank1(x):
    s = torch.zeros([1, 1])
    for v in x:
        s = s + v
        if s > 2:
            break
    return s


def test_conditions_on_one_element_tensors_of_any_rank():
    check(while_on_rank1_counter_with_break, (torch.ones(1),), (torch.tensor([4.]),))
    check(if_rank1_and_python_number, (torch.tensor([3]), 2), (torch.tensor([30]), 2))
    check(if_rank1_and_python_number, (torch.tensor([3]), -1))
    check(if_rank2_or_rank0, (torch.tensor([1., 2.]), torch.tensor(1.)), (torch.tensor([3., 2.]), torch.tensor(1.)),
          (torch.tensor([1., 0.]), torch.tensor(-1.)))
    check(for_with_break_on_rank1, (torch.tensor([1., 1., 1., 1.]),), (torch.tensor([0.5, 0.5]),))


# ----- item 8: and/or over operands of different kinds, as Python evaluates them ----------------------
def and_float_with_bool(m):
    if m + 1 and m > 1:
        return m * 2
    return m


def and_with_none(m, y=None):
    if m > 0 and y:
        return m
    return -m


def or_in_ternary_test(y):
    return y + 1 if y or y < 2 else y ** 2


def not_of_mixed_or(m, k):
    while not (m > 5 or k == 3):
        m = m + 1
        k = k + 1
    return m, k


def test_and_or_of_mixed_kinds_in_tests():
    check(and_float_with_bool, (torch.tensor(2.),), (torch.tensor(-1.),), (torch.tensor(0.5),))
    check(and_with_none, (torch.tensor(2.),), (torch.tensor(-3.),))
    check(or_in_ternary_test, (torch.tensor(2.),), (torch.tensor(0.),), (torch.tensor(-4.),))
    check(not_of_mixed_or, (torch.tensor(0.), 0), (torch.tensor(4.), 2))


# ----- item 12: `del` of a slice of a list --------------------------------------------------------------
def del_slices_of_python_lists(x):
    l = [x, x * 2, x * 3]
    del l[:]
    m = [x, x + 1, x + 2, x + 3]
    del m[1:3]
    del m[::-2]
    return len(l), m[0], len(m)


def del_slice_of_a_graph_list(x, n):
    out = []
    for i in range(n):
        out.append(x * i)
    del out[1:]
    return torch.stack(out)


def test_del_of_a_slice():
    check(del_slices_of_python_lists, (torch.ones(1),), (torch.tensor([2., 3.]),))
    check(del_slice_of_a_graph_list, (torch.ones(1), torch.tensor(4)), (torch.tensor([2.]), torch.tensor(2)))
    converted = ta.autograph.to_graph(del_slices_of_python_lists)
    assert converted(5) == del_slices_of_python_lists(5)


# ----- item 11: int() / float() / bool() chains of run-time numbers ---------------------------------------
def number_conversion_chain(t):
    n = int(t)
    f = float(n)
    b = bool(f)
    return torch.tensor(b) * t, bool(n - 3), bool(t > 2), int(f * 1.5) + 1, float(b)


def bool_of_a_run_time_number_decides_a_branch(t, x):
    if bool(int(t) % 2):
        return x + 1
    return x - 1


def test_number_conversion_chains_of_run_time_numbers():
    check(number_conversion_chain, (torch.tensor(3),), (torch.tensor(0),), (torch.tensor(-5),))
    check(bool_of_a_run_time_number_decides_a_branch, (torch.tensor(3), torch.ones(2)), (torch.tensor(4), torch.ones(2)))
