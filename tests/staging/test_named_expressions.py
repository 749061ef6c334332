"""`:=` in `if` and `while` tests binds the user's name, as in Python (compared with eager on several inputs)."""

import torch

import torch_autograph as ta


def check(fn, *argsets):
    traced = ta.function(fn)
    for args in argsets:
        expected, got = fn(*args), traced(*args)
        expected = expected if isinstance(expected, tuple) else (expected,)
        got = got if isinstance(got, tuple) else (got,)
        for g, e in zip(got, expected, strict=True):
            torch.testing.assert_close(torch.as_tensor(g), torch.as_tensor(e), rtol=0, atol=0)


def walrus_in_while_test(x):
    i = 0
    while (s := x.sum() * i) < 10 and i < 20:
        i += 1
    return s


def walrus_updates_its_own_variable(x):
    i = x.sum() * 0
    while (i := i + 1) < 10:
        x = x + 1
    return i, x


def walrus_in_right_operand(x, n):
    k = torch.zeros(())
    i = 0
    while i < n and (k := k + x.max()) < 7:
        i += 1
    return k, i


def walrus_with_break_and_continue(x):
    i = 0
    t = x[0] * 0
    while (t := t + x[0]) < 20:
        i += 1
        if i % 2 == 0:
            continue
        if t > 12:
            break
    return t, i


def walrus_in_if_test(x):
    if (y := x.sum()) > 0:
        z = y * 2
    else:
        z = -y
    return z, y


def walrus_in_elif_and_right_operand(x):
    z = x * 0
    y = x.sum()
    if x.sum() > 5:
        z = x
    elif x.max() > 0 and (y := x.max() * 3) > 2:
        z = x + y
    return z, y


def test_walrus_in_a_while_test():
    check(walrus_in_while_test, (torch.tensor([1., 2.]),), (torch.tensor([0.5]),), (torch.tensor([20.]),))
    check(walrus_updates_its_own_variable, (torch.tensor([1., 2.]),), (torch.tensor([3.]),))
    check(walrus_in_right_operand, (torch.tensor([1., 2.]), torch.tensor(10)), (torch.tensor([3.]), torch.tensor(1)))
    check(walrus_with_break_and_continue, (torch.tensor([1.]),), (torch.tensor([3.]),), (torch.tensor([30.]),))


def test_walrus_in_an_if_test():
    check(walrus_in_if_test, (torch.tensor([1., 2.]),), (torch.tensor([-3.]),))
    check(walrus_in_elif_and_right_operand, (torch.tensor([1., 2.]),), (torch.tensor([9., 0.]),),
          (torch.tensor([-1., -2.]),), (torch.tensor([0.5, 0.1]),))



def walrus_in_inner_test_with_break(a, b, c):
    y = 1
    k = 0
    while k < 4 and (c > a and a >= 5):
        k += 1
        j = 0
        while j < 4 and (w := b * j) < 0:
            j += 1
            if c == 3:
                break
        y = y + w
    return y


def test_a_walrus_bound_in_a_loop_and_unused_after_it_needs_no_iteration():
    # `w` is state of the outer loop (the `break` makes its binding conditional in the converted test), read
    # after the loop by nothing: a loop that runs zero times is fine, as in Python.
    t = torch.tensor
    check(walrus_in_inner_test_with_break, (t(-1), t(0), t(-3)), (t(5), t(-1), t(6)), (t(5), t(1), t(3)))
