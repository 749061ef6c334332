"""Golden tests: `to_code(f, dual_path=True)` (the code that executes) for each construct, pinned as inline text.

The provenance comment is checked separately (its path depends on the
working directory).
"""

from __future__ import annotations

import re

import golden_src
import pytest

from torch_autograph.autograph import to_code

EXPECTED = {
    "if_only": """\
def if_only(x):
    y = 0
    cond = x > 0
    if cond is True or cond is False or ag__.is_plain(cond):
        if cond:
            y = x
    else:
        def if_true(y):
            y = x
            return (y,)
        y, = ag__.if_stmt(cond, if_true, None, (y,), ('y',))
    return y
""",
    "if_else": """\
def if_else(x):
    cond = x > 0
    if cond is True or cond is False or ag__.is_plain(cond):
        if cond:
            y = x
        else:
            y = -x
    else:
        y = ag__.Undefined('y')
        def if_true(y):
            y = x
            return (y,)
        def if_false(y):
            y = -x
            return (y,)
        y, = ag__.if_stmt(cond, if_true, if_false, (y,), ('y',))
    return y
""",
    "if_elif": """\
def if_elif(x):
    cond_1 = x > 0
    if cond_1 is True or cond_1 is False or ag__.is_plain(cond_1):
        if cond_1:
            s = 1
        else:
            cond = x < 0
            if cond is True or cond is False or ag__.is_plain(cond):
                if cond:
                    s = -1
                else:
                    s = 0
            else:
                s = ag__.Undefined('s')
                def if_true(s):
                    s = -1
                    return (s,)
                def if_false(s):
                    s = 0
                    return (s,)
                s, = ag__.if_stmt(cond, if_true, if_false, (s,), ('s',))
    else:
        s = ag__.Undefined('s')
        def if_true_1(s):
            s = 1
            return (s,)
        def if_false_1(s):
            def if_true_2(s):
                s = -1
                return (s,)
            def if_false_2(s):
                s = 0
                return (s,)
            s, = ag__.if_stmt(x < 0, if_true_2, if_false_2, (s,), ('s',))
            return (s,)
        s, = ag__.if_stmt(cond_1, if_true_1, if_false_1, (s,), ('s',))
    return s
""",
    "undefined_before_if": """\
def undefined_before_if(c):
    cond = c
    if cond is True or cond is False or ag__.is_plain(cond):
        if cond:
            z = 1
        else:
            z = 2
    else:
        z = ag__.Undefined('z')
        def if_true(z):
            z = 1
            return (z,)
        def if_false(z):
            z = 2
            return (z,)
        z, = ag__.if_stmt(cond, if_true, if_false, (z,), ('z',))
    return z
""",
    "while_loop": """\
def while_loop(x, n):
    i = 0
    while True:
        test = i < n
        if test is True or test is False or ag__.is_plain(test):
            if not test:
                break
        else:
            def loop_test(i, x):
                return i < n
            def loop_body(i, x):
                x = x * 2
                i += 1
                return (i, x)
            i, x = ag__.while_stmt(loop_test, loop_body, (i, x), ('i', 'x'))
            break
        x = x * 2
        i += 1
    return x
""",
    "for_loop": """\
def for_loop(xs):
    s = 0
    loop_iter = xs
    if ag__.is_plain(loop_iter):
        for x in loop_iter:
            s += x
    else:
        def loop_body(x, s):
            s += x
            return (s,)
        s, = ag__.for_stmt(loop_iter, None, loop_body, (s,), ('s',))
    return s
""",
    "for_break": """\
def for_break(xs):
    s = 0
    break_ = False
    loop_iter = xs
    plain_iter = ag__.plain_iter(loop_iter)
    fast = break_ is False and plain_iter is not None
    if fast:
        for x in plain_iter:
            cond = x < 0
            if cond is True or cond is False or ag__.is_plain(cond):
                if cond:
                    break_ = True
                else:
                    s += x
            else:
                def if_true(break_, s):
                    break_ = True
                    return (break_, s)
                def if_false(break_, s):
                    s += x
                    return (break_, s)
                break_, s = ag__.if_stmt(cond, if_true, if_false, (break_, s), ('break_', 's'))
            if break_ is not False:
                fast = break_ is True
                break
    if not fast:
        if plain_iter is not None:
            loop_iter = plain_iter
        def extra_test(break_, s):
            return ag__.not_(break_)
        def loop_body(x, break_, s):
            def if_true_1(break_, s):
                break_ = True
                return (break_, s)
            def if_false_1(break_, s):
                s += x
                return (break_, s)
            break_, s = ag__.if_stmt(x < 0, if_true_1, if_false_1, (break_, s), ('break_', 's'))
            return (break_, s)
        break_, s = ag__.for_stmt(loop_iter, extra_test, loop_body, (break_, s), ('break_', 's'))
    return s
""",
    "while_continue": """\
def while_continue(n):
    i = 0
    s = 0
    while True:
        test = i < n
        if test is True or test is False or ag__.is_plain(test):
            if not test:
                break
        else:
            def loop_test(i, s):
                return i < n
            def loop_body(i, s):
                i += 1
                def if_true_1(s):
                    return (s,)
                def if_false_1(s):
                    s += i
                    return (s,)
                s, = ag__.if_stmt(i % 2 == 0, if_true_1, if_false_1, (s,), ('s',))
                return (i, s)
            i, s = ag__.while_stmt(loop_test, loop_body, (i, s), ('i', 's'))
            break
        i += 1
        cond = i % 2 == 0
        if cond is True or cond is False or ag__.is_plain(cond):
            if cond:
                pass
            else:
                s += i
        else:
            def if_true(s):
                return (s,)
            def if_false(s):
                s += i
                return (s,)
            s, = ag__.if_stmt(cond, if_true, if_false, (s,), ('s',))
    return s
""",
    "return_in_loop": """\
def return_in_loop(xs):
    do_return = False
    retval_ = ag__.UndefinedReturnValue()
    loop_iter = xs
    plain_iter = ag__.plain_iter(loop_iter)
    fast = do_return is False and plain_iter is not None
    if fast:
        for x in plain_iter:
            cond = x > 0
            if cond is True or cond is False or ag__.is_plain(cond):
                if cond:
                    retval_ = x
                    do_return = True
            else:
                def if_true(do_return, retval_):
                    retval_ = x
                    do_return = True
                    return (do_return, retval_)
                do_return, retval_ = ag__.if_stmt(cond, if_true, None, (do_return, retval_), ('do_return', 'retval_'))
            if do_return is not False:
                fast = do_return is True
                break
    if not fast:
        if plain_iter is not None:
            loop_iter = plain_iter
        def extra_test(do_return, retval_):
            return ag__.not_(do_return)
        def loop_body(x, do_return, retval_):
            def if_true_1(do_return, retval_):
                retval_ = x
                do_return = True
                return (do_return, retval_)
            do_return, retval_ = ag__.if_stmt(x > 0, if_true_1, None, (do_return, retval_), ('do_return', 'retval_'))
            return (do_return, retval_)
        do_return, retval_ = ag__.for_stmt(loop_iter, extra_test, loop_body, (do_return, retval_), ('do_return', 'retval_'))
    cond_1 = ag__.not_(do_return)
    if cond_1 is True or cond_1 is False or ag__.is_plain(cond_1):
        if cond_1:
            retval_ = -1
            do_return = True
    else:
        def if_true_2(retval_):
            retval_ = -1
            do_return = True
            return (retval_,)
        retval_, = ag__.if_stmt(cond_1, if_true_2, None, (retval_,), ('retval_',))
    return ag__.retval(retval_)
""",
    "ternary": """\
def ternary(x):
    return ag__.if_exp(x > 0, lambda: 1, lambda: -1)
""",
    "logical": """\
def logical(a, b, c):
    return ag__.or_(ag__.and_(a, lambda: b), lambda: ag__.not_(c))
""",
    "chained": """\
def chained(a, b, c):
    return ag__.and_(a < b, lambda: b <= c)
""",
    "asserts": """\
def asserts(x):
    ag__.assert_stmt(x > 0, lambda: 'x must be positive')
    return x
""",
    "list_append": """\
def list_append(n):
    l = []
    loop_iter = ag__.converted_call(range, (n,), None)
    if ag__.is_plain(loop_iter):
        for i in loop_iter:
            l = ag__.list_append(l, i * i)
    else:
        def loop_body(i, l):
            l = ag__.list_append(l, i * i)
            return (l,)
        l, = ag__.for_stmt(loop_iter, None, loop_body, (l,), ('l',))
    return l
""",
    "loop_options": """\
def loop_options(x):
    while True:
        test = x < 100
        if test is True or test is False or ag__.is_plain(test):
            if not test:
                break
        else:
            def loop_test(x):
                return x < 100
            def loop_body(x):
                x = x * 2
                return (x,)
            x, = ag__.while_stmt(loop_test, loop_body, (x,), ('x',), {'maximum_iterations': 3, 'shape_invariants': {'x': (None,)}})
            break
        x = x * 2
    return x
""",
    "calls": """\
def calls(f, xs):
    print(ag__.converted_call(len, (xs,), None))
    return ag__.converted_call(f, (*xs,), {'k': 1})
""",
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_to_code(name):
    fn = getattr(golden_src, name)
    header, body = to_code(fn, dual_path=True).split("\n", 1)
    assert re.fullmatch(rf"# converted from {name} \(.*golden_src\.py:{fn.__code__.co_firstlineno}\)", header)
    assert body == EXPECTED[name]


def test_to_code_is_deterministic_and_valid_python():
    import ast
    for name in EXPECTED:
        fn = getattr(golden_src, name)
        text = to_code(fn, dual_path=True)
        ast.parse(text)
        assert text == to_code(fn, dual_path=True)
