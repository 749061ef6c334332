# Ported from tensorflow/tensorflow: tensorflow/python/autograph/converters/control_flow_test.py
# at commit 0304934138cbfabd338ec432a630a9c3c1191564.
# Copyright 2017 The TensorFlow Authors. Licensed under the Apache License, Version 2.0.
# Changes, API spellings only: constant_op.constant -> torch.tensor, dtypes.int32 -> torch.int32. Each test's
# inner function `f` (and the helper classes it defines) is lifted to module level and named after its test
# (`WhileStatementTest.test_basic` -> `while_basic`), its body unchanged; the assertions are the CASES at the end
# (the expected values there are the test's own). The SparseTensor test is not ported. Three programs get a
# Python number where the test passes a tensor: with a tensor `n`, `d = {"a": n}; d[k] += 1` updates `n` in place
# in torch, and the loop never ends eagerly.
"""Tests for control_flow module."""

import collections

import torch

for_unaffected_global = None
for_mixed_globals_nonglobals = None
for_test_global_local = None


def nested_basic(n):
    i = 0
    j = 0
    s = 0
    while i < n:
        while j < i:
            j += 3
        u = i + j  # 'u' is not defined within the inner loop
        s += u
        i += 1
        j = 0
    return s, i, j, n


def nested_mixed_globals_nonglobals(n):
    global for_mixed_globals_nonglobals
    i = 0
    j = 0
    for_mixed_globals_nonglobals = 0
    while i < n:
        while j < i:
            j += 3
        u = i + j  # 'u' is not defined within the inner loop
        for_mixed_globals_nonglobals += u
        i += 1
        j = 0
    return for_mixed_globals_nonglobals, i, j, n


class TestClassX(object):
    def __init__(self, x):
        self.x = x


class TestClassY(object):
    def __init__(self, y):
        self.y = y


def nested_composite_state_complex(n):
    tc = TestClassX(TestClassY({"z": TestClassX(n)}))
    if n > 0:
        while n > 0:
            if n < 2:
                tc.x.y["z"].x += 1
            n -= 1
    return n, tc.x.y["z"].x


def while_basic(n):
    i = 0
    s = 0
    while i < n:
        s += i
        i += 1
    return s, i, n


def while_single_output(n):
    while n > 0:
        n -= 1
    return n


class TestClass(object):
    def __init__(self):
        self.x = torch.tensor(3)


def while_composite_state_attr(n):
    tc = TestClass()
    while n > 0:
        tc.x += 1
        n -= 1
    return n


def while_composite_state_slice(n):
    d = {"a": n}
    k = "a"
    while n > 0:
        d[k] += 1
        n -= 1
    return d[k], n


def while_composite_state_literal_slice(n):
    d = {"a": n}
    while n > 0:
        d["a"] += 1
        n -= 1
    return d["a"], n


class EmptyTestClass(object):
    pass


def while_composite_state_attr_initialized_in_loop(n, x):
    tc = EmptyTestClass()
    while n < 5:
        if n == 0:
            tc.subattr = x
        else:
            tc.subattr = tc.subattr + 1
        n += 1
    return tc.subattr


def while_composite_state_slice_initialized_in_loop(n, x):
    d = {}
    k = "subkey"
    while n < 5:
        if n == 0:
            d[k] = x
        else:
            d[k] = d[k] + 1
        n += 1
    return d


def while_composite_state_literal_slice_initialized_in_loop(n, x):
    d = {}
    while n < 5:
        if n == 0:
            d["subkey"] = x
        else:
            d["subkey"] = d["subkey"] + 1
        n += 1
    return d


def while_composite_state_slice_aliased_to_local(n, x):
    d = {}
    while n < 5:
        k = "subkey"
        d[k] = x + 1
        n += 1
    return d


def while_local_composite_attr(n):
    while n > 0:
        tc = TestClass()
        tc.x = tc.x
        n -= 1
    return n


def while_local_composite_slice(n):
    while n > 0:
        d = {"x": n}
        k = "x"
        d[k] = d[k]
        n -= 1
    return n


def while_local_composite_literal_slice(n):
    while n > 0:
        d = {"x": n}
        d["x"] = d["x"]
        n -= 1
    return n


class NamedTestClass(collections.namedtuple("TestClass", ("x"))):
    pass


def while_non_tensor_state(n):
    tc = NamedTestClass([torch.tensor(0)])
    while n > 0:
        tc = NamedTestClass([torch.tensor(3)])
        tc.x[0] = tc.x[0] + 1
        n -= 1
    return tc.x[0]


def while_dispatches_by_cond_only(n, s):
    while n > 0:
        n -= 1
        s += n
    return s


def if_basic(n):
    a = 0
    b = 0
    if n > 0:
        a = -n
    else:
        b = 2 * n
    return a, b


class ABTestClass(object):
    def __init__(self, a, b):
        self.a = a
        self.b = b


def if_complex_outputs(n, obj):
    obj.a = 0
    obj.b = 0
    if n > 0:
        obj.a = -n
    else:
        obj.b = 2 * n
    return obj.a, obj.b


def if_single_output(n):
    if n > 0:
        n = -n
    return n


def if_unbalanced(n):
    if n > 0:
        n = 3
    return n


def if_unbalanced_raising(n):
    if n > 0:
        n = n + 1
        raise ValueError()
    return n


def if_local_var(n):
    if n > 0:
        b = 4
        n = b + 1
    return n


def if_global_local(n):
    if n > 0:
        global for_test_global_local
        if for_test_global_local is None:
            for_test_global_local = 1
        else:
            for_test_global_local += 1
        n += for_test_global_local
    return n


def if_no_outputs(n):
    if n > 0:
        b = 4  # pylint:disable=unused-variable
    return n


def if_created_outputs(i):
    if i == 0:
        result = i - 1
    else:
        result = i + 1
    return result


def if_created_loop_local_outputs(n, x):
    for i in n:
        if i == 0:
            result = i - 1
        else:
            result = i + 1
        if result > 0:
            x += 1
    return x


def if_created_loop_variable(n, x):
    for i in n:
        if i == 0:
            result = i - 1
        if i > 0:  # Using the result from previous iteration.
            if result < 0:
                x += 1
    return x


def if_unaffected_global(i):
    global for_unaffected_global
    if i == 0:
        for_unaffected_global = i - 1
    return for_unaffected_global


def if_unaffected_nonlocal(i):
    def inner_fn():
        nonlocal n
        if i == 0:
            n = i - 1

    n = 3
    inner_fn()
    return n


def if_output_defined_in_prior_except(i):
    try:
        raise ValueError()
    except ValueError:
        x = 1
    if i == 0:
        x = i - 1
    return x


class Foo(object):
    def __init__(self):
        self.b = 2
        self.c = 3


def if_unbalanced_multiple_composites(x, condition):
    z = 5
    if condition:
        x.b = 7
        x.c = 11
        z = 13

    return x.b, x.c, z


def if_unbalanced_composite(x, condition):
    z = 5
    if condition:
        x.b = 7
        z = 13

    return x.b, z


def for_basic(l):
    s1 = 0
    s2 = 0
    for e in l:
        s1 += e
        s2 += e * e
    return s1, s2


def for_single_output(l):
    s = 0
    for e in l:
        s += e
    return s


def for_composite_state_initialized_in_loop(n, x):
    tc = EmptyTestClass()
    for i in n:
        if i == 0:
            tc.x = x
        else:
            tc.x = tc.x + i
    return tc.x


def for_tuple_unpacking(x_list):
    z = torch.tensor(0)  # pylint:disable=undefined-variable
    for i, x in enumerate(x_list):
        z = z + x + i
    return z


def for_with_comprehension_in_body(l, n):
    s = torch.tensor(list(range(n)))
    for _ in l:
        s += torch.tensor([a for a in range(n)])
    return s


def advanced_while_with_else(x):
    while x > 2:
        x /= 2
    else:
        x += 1
    return x


def advanced_while_with_else_and_break(cond1):
    x = 8
    while x > 2:
        x /= 2
        if cond1:
            break
    else:
        x += 1
    return x


def advanced_for_with_else(l):
    res = 0
    for x in l:
        res += x
    else:
        res += 1
    return res


def advanced_for_with_else_and_break(flag):
    l = [1, 2, 3]
    res = 0
    for x in l:
        res += x
        if flag:
            break
    else:
        res += 1
    return res


# ---- The corpus's cases (ours): the tests' inputs. ----
from cases import A, case, t  # noqa: E402

_EMPTY = torch.tensor([], dtype=torch.int32)
CASES = (
    case(nested_basic, t(5), 5, t(0), jit=True),
    case(nested_mixed_globals_nonglobals, t(5), 5),
    case(nested_composite_state_complex, 5),
    case(while_basic, t(5), t(0), 5),
    case(while_single_output, t(5), 5),
    case(while_composite_state_attr, t(5), 5),
    case(while_composite_state_slice, 5),
    case(while_composite_state_literal_slice, 5),
    case(while_composite_state_attr_initialized_in_loop, A(0, t(10))),
    case(while_composite_state_attr_initialized_in_loop, A(t(0), 0),
         name="while_composite_state_attr_initialized_in_loop:tensor"),
    case(while_composite_state_slice_initialized_in_loop, A(0, t(10))),
    case(while_composite_state_slice_initialized_in_loop, A(t(0), 0),
         name="while_composite_state_slice_initialized_in_loop:tensor"),
    case(while_composite_state_literal_slice_initialized_in_loop, A(0, t(10))),
    case(while_composite_state_literal_slice_initialized_in_loop, A(t(0), 0),
         name="while_composite_state_literal_slice_initialized_in_loop:tensor"),
    case(while_composite_state_slice_aliased_to_local, A(0, t(10)), A(t(0), t(5))),
    case(while_local_composite_attr, t(5), 5),
    case(while_local_composite_slice, t(5), 5),
    case(while_local_composite_literal_slice, t(5), 5),
    case(while_non_tensor_state, t(5), 5),
    case(while_dispatches_by_cond_only, A(t(5), 0), A(5, 0)),
    case(if_basic, t(1), t(-1), 1, jit=True),
    case(lambda n: if_complex_outputs(n, ABTestClass(0, 0)), t(1), t(-1), name="if_complex_outputs"),
    case(if_single_output, t(1), t(-1)),
    case(if_unbalanced, t(2), t(-3)),
    case(if_unbalanced_raising, -3, 1, t(-3)),
    case(if_local_var, t(1), t(-1)),
    case(if_global_local, 1, 0),
    case(if_no_outputs, t(1), t(-1)),
    case(if_created_outputs, 0, 1, t(0), t(1)),
    case(if_created_loop_local_outputs, A(range(5), 10), A(torch.arange(5), 10)),
    case(if_created_loop_variable, A(range(5), 10)),
    case(if_unaffected_global, 1, 0),
    case(if_unaffected_nonlocal, 1, 0, t(0), t(1)),
    case(if_output_defined_in_prior_except, 1, 0, t(1), t(0)),
    case(lambda c: if_unbalanced_multiple_composites(Foo(), c), t(True), t(False),
         name="if_unbalanced_multiple_composites"),
    case(lambda c: if_unbalanced_composite(Foo(), c), t(True), t(False), name="if_unbalanced_composite"),
    case(for_basic, t([1, 3]), _EMPTY, jit=True),
    case(for_single_output, t([1, 3]), _EMPTY),
    case(for_composite_state_initialized_in_loop, A(range(5), t(10))),
    case(for_composite_state_initialized_in_loop, A(t(list(range(5))), 0),
         name="for_composite_state_initialized_in_loop:tensor"),
    case(for_tuple_unpacking, [3, 3], t([3, 3])),
    case(for_with_comprehension_in_body, A(t([1, 2, 3]), 5)),
    case(advanced_while_with_else, 4, 2, t(4.0), t(2.0)),
    case(advanced_while_with_else_and_break, True, False, t(True), t(False)),
    case(advanced_for_with_else, [], [1, 2], t([1, 2])),
    case(advanced_for_with_else_and_break, True, False, t(True), t(False)),
)
