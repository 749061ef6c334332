"""Golden tests: `to_code` output for each construct, pinned as inline text.

The provenance comment is checked separately (its path depends on the
working directory).
"""

from __future__ import annotations

import re

import pytest

import golden_src
from torch_autograph.autograph import to_code

EXPECTED = {
    "if_only": """\
def if_only(x):
    y = 0
    def if_true(y):
        y = x
        return (y,)
    y, = ag__.if_stmt(x > 0, if_true, None, (y,), ('y',))
    return y
""",
    "if_else": """\
def if_else(x):
    y = ag__.Undefined('y')
    def if_true(y):
        y = x
        return (y,)
    def if_false(y):
        y = -x
        return (y,)
    y, = ag__.if_stmt(x > 0, if_true, if_false, (y,), ('y',))
    return y
""",
    "if_elif": """\
def if_elif(x):
    s = ag__.Undefined('s')
    def if_true(s):
        s = 1
        return (s,)
    def if_false(s):
        def if_true_1(s):
            s = -1
            return (s,)
        def if_false_1(s):
            s = 0
            return (s,)
        s, = ag__.if_stmt(x < 0, if_true_1, if_false_1, (s,), ('s',))
        return (s,)
    s, = ag__.if_stmt(x > 0, if_true, if_false, (s,), ('s',))
    return s
""",
    "undefined_before_if": """\
def undefined_before_if(c):
    z = ag__.Undefined('z')
    def if_true(z):
        z = 1
        return (z,)
    def if_false(z):
        z = 2
        return (z,)
    z, = ag__.if_stmt(c, if_true, if_false, (z,), ('z',))
    return z
""",
    "while_loop": """\
def while_loop(x, n):
    i = 0
    def loop_test(i, x):
        return i < n
    def loop_body(i, x):
        x = x * 2
        i += 1
        return (i, x)
    i, x = ag__.while_stmt(loop_test, loop_body, (i, x), ('i', 'x'))
    return x
""",
    "for_loop": """\
def for_loop(xs):
    s = 0
    def loop_body(x, s):
        s += x
        return (s,)
    s, = ag__.for_stmt(xs, None, loop_body, (s,), ('s',))
    return s
""",
    "for_break": """\
def for_break(xs):
    s = 0
    break_ = False
    def extra_test(break_, s):
        return ag__.not_(break_)
    def loop_body(x, break_, s):
        def if_true(break_, s):
            break_ = True
            return (break_, s)
        def if_false(break_, s):
            s += x
            return (break_, s)
        break_, s = ag__.if_stmt(x < 0, if_true, if_false, (break_, s), ('break_', 's'))
        return (break_, s)
    break_, s = ag__.for_stmt(xs, extra_test, loop_body, (break_, s), ('break_', 's'))
    return s
""",
    "while_continue": """\
def while_continue(n):
    i = 0
    s = 0
    def loop_test(i, s):
        return i < n
    def loop_body(i, s):
        i += 1
        def if_true(s):
            return (s,)
        def if_false(s):
            s += i
            return (s,)
        s, = ag__.if_stmt(i % 2 == 0, if_true, if_false, (s,), ('s',))
        return (i, s)
    i, s = ag__.while_stmt(loop_test, loop_body, (i, s), ('i', 's'))
    return s
""",
    "return_in_loop": """\
def return_in_loop(xs):
    do_return = False
    retval_ = ag__.UndefinedReturnValue()
    def extra_test(do_return, retval_):
        return ag__.not_(do_return)
    def loop_body(x, do_return, retval_):
        def if_true(do_return, retval_):
            do_return = True
            retval_ = x
            return (do_return, retval_)
        do_return, retval_ = ag__.if_stmt(x > 0, if_true, None, (do_return, retval_), ('do_return', 'retval_'))
        return (do_return, retval_)
    do_return, retval_ = ag__.for_stmt(xs, extra_test, loop_body, (do_return, retval_), ('do_return', 'retval_'))
    def if_true_1(retval_):
        do_return = True
        retval_ = -1
        return (retval_,)
    retval_, = ag__.if_stmt(ag__.not_(do_return), if_true_1, None, (retval_,), ('retval_',))
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
    def loop_body(i, l):
        l = ag__.list_append(l, i * i)
        return (l,)
    l, = ag__.for_stmt(ag__.converted_call(range, (n,), None), None, loop_body, (l,), ('l',))
    return l
""",
    "loop_options": """\
def loop_options(x):
    def loop_test(x):
        return x < 100
    def loop_body(x):
        x = x * 2
        return (x,)
    x, = ag__.while_stmt(loop_test, loop_body, (x,), ('x',), {'maximum_iterations': 3, 'shape_invariants': {'x': (None,)}})
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
    header, body = to_code(fn).split("\n", 1)
    assert re.fullmatch(rf"# converted from {name} \(.*golden_src\.py:{fn.__code__.co_firstlineno}\)", header)
    assert body == EXPECTED[name]


def test_to_code_is_deterministic_and_valid_python():
    import ast
    for name in EXPECTED:
        fn = getattr(golden_src, name)
        text = to_code(fn)
        ast.parse(text)
        assert text == to_code(fn)
