"""Golden tests of `to_code`'s default output, the staged form: one operator call per statement, nothing twice.

Each expected text is also run (with `ag__` bound as in converted code) and must compute what the original
does. `test_to_code.py` pins the executed form (`dual_path=True`).
"""

from __future__ import annotations

import ast
import contextlib
import io
import re

import pytest
import to_code_src
import torch

from torch_autograph.autograph import api, to_code

EXPECTED = {
    "simple_relu": """\
def simple_relu(x):
    do_return = False
    retval_ = ag__.UndefinedReturnValue()
    retval_ = ag__.Undefined('retval_')
    def if_true(retval_):
        retval_ = x
        do_return = True
        return (retval_,)
    def if_false(retval_):
        retval_ = 0
        do_return = True
        return (retval_,)
    retval_, = ag__.if_stmt(x > 0, if_true, if_false, (retval_,), ('retval_',))
    return ag__.retval(retval_)
""",
    "decide": """\
def decide(x):
    y = ag__.Undefined('y')
    def if_true(y):
        y = 15
        return (y,)
    def if_false(y):
        y = 1
        return (y,)
    y, = ag__.if_stmt(x < 5, if_true, if_false, (y,), ('y',))
    return y
""",
    "shrink": """\
def shrink(x):
    def loop_test(x):
        return ag__.converted_call(torch.sum, (x,), None) > 1
    def loop_body(x):
        ag__.converted_call(ta.print, (x,), None)
        x = ag__.converted_call(torch.tanh, (x,), None)
        return (x,)
    x, = ag__.while_stmt(loop_test, loop_body, (x,), ('x',))
    return x
""",
    "fizzbuzz": """\
def fizzbuzz(max_num):
    counter = 0
    def loop_body(num, counter):
        def if_true():
            print('Fizzbuzz')
            return ()
        def if_false():
            def if_true_1():
                print('Fizz')
                return ()
            def if_false_1():
                def if_true_2():
                    print('Buzz')
                    return ()
                def if_false_2():
                    print(num)
                    return ()
                ag__.if_stmt(num % 5 == 0, if_true_2, if_false_2, (), ())
                return ()
            ag__.if_stmt(num % 3 == 0, if_true_1, if_false_1, (), ())
            return ()
        ag__.if_stmt(ag__.and_(num % 3 == 0, lambda: num % 5 == 0, True), if_true, if_false, (), ())
        counter += 1
        return (counter,)
    counter, = ag__.for_stmt(ag__.converted_call(range, (max_num,), None), None, loop_body, (counter,), ('counter',))
    return counter
""",
    "nested": """\
def nested(x, n):
    total = ag__.converted_call(torch.zeros, ((),), None)
    i = 0
    def loop_test(i, total):
        return i < n
    def loop_body(i, total):
        j = 0
        def loop_test_1(j, total):
            return j < i
        def loop_body_1(j, total):
            def if_true(total):
                total += ag__.get_item(x, j) * i
                return (total,)
            total, = ag__.if_stmt(ag__.get_item(x, j) > 0, if_true, None, (total,), ('total',))
            j += 1
            return (j, total)
        j, total = ag__.while_stmt(loop_test_1, loop_body_1, (j, total), ('j', 'total'))
        i += 1
        return (i, total)
    i, total = ag__.while_stmt(loop_test, loop_body, (i, total), ('i', 'total'))
    return total
""",
    "first_above": """\
def first_above(xs, limit):
    found = -1
    break_ = False
    def extra_test(break_, found):
        return ag__.not_(break_)
    def loop_body(itr, break_, found):
        i, x = itr
        def if_true(break_, found):
            found = i
            break_ = True
            return (break_, found)
        break_, found = ag__.if_stmt(x > limit, if_true, None, (break_, found), ('break_', 'found'))
        return (break_, found)
    break_, found = ag__.for_stmt(ag__.converted_call(enumerate, (xs,), None), extra_test, loop_body, (break_, found), ('break_', 'found'))
    return found
""",
}

CALLS = {
    "simple_relu": [(3,), (-2,), (0.5,)],
    "decide": [(3,), (7,)],
    "shrink": [(torch.tensor([0.9, 0.8]),), (torch.tensor([0.1]),)],
    "fizzbuzz": [(16,), (0,)],
    "nested": [(torch.tensor([1.0, -2.0, 3.0, 0.5]), 4), (torch.tensor([-1.0]), 0)],
    "first_above": [([1, 5, 2, 9], 4), ([1, 2], 7)],
}


def _run_and_print(fn, args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        result = fn(*args)
    return result, out.getvalue()


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_default_to_code_is_the_staged_form(name):
    fn = getattr(to_code_src, name)
    header, body = to_code(fn).split("\n", 1)
    assert re.fullmatch(rf"# converted from {name} \(.*to_code_src\.py:{fn.__code__.co_firstlineno}\)", header)
    assert body == EXPECTED[name]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_staged_form_computes_what_the_original_does(name):
    original = getattr(to_code_src, name)
    namespace = dict(vars(to_code_src), ag__=api.AG)
    exec(compile(EXPECTED[name], f"<staged {name}>", "exec"), namespace)
    for args in CALLS[name]:
        want, want_printed = _run_and_print(original, args)
        got, got_printed = _run_and_print(namespace[name], args)
        assert got_printed == want_printed
        if isinstance(want, torch.Tensor):
            assert torch.equal(got, want)
        else:
            assert got == want and type(got) is type(want)


def test_the_staged_form_is_shorter_than_the_executed_form_and_valid_python():
    for name in EXPECTED:
        fn = getattr(to_code_src, name)
        staged, executed = to_code(fn), to_code(fn, dual_path=True)
        ast.parse(staged)
        assert staged == to_code(fn)  # deterministic
        assert len(staged.splitlines()) < len(executed.splitlines())
    nested = to_code(to_code_src.nested).splitlines()
    assert sum("total += ag__.get_item(x, j) * i" in line for line in nested) == 1  # the innermost body, written once
