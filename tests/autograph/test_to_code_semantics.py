"""Golden tests: `to_code` for closures, list mutations, returns that may fall off, `try`, computed indices.

Each conversion (`to_code`'s default, the staged form) is pinned as inline
text (the provenance comment is checked separately); see
golden_semantics_src.py for the functions.
"""

from __future__ import annotations

import ast
import re

import golden_semantics_src
import pytest

from torch_autograph.autograph import to_code

EXPECTED = {
    "closure_in_loop": """\
def closure_in_loop(n):
    i = 0
    s = 0
    def read_i():
        return i
    def loop_test(i, s):
        return i < n
    def loop_body(i_1, s):
        nonlocal i
        i = i_1
        s += ag__.converted_call(read_i, (), None)
        i += 1
        return (i, s)
    i, s = ag__.while_stmt(loop_test, loop_body, (i, s), ('i', 's'))
    return s
""",
    "list_mutations": """\
def list_mutations(l, n):
    s = 0
    def loop_body(i, l, s):
        s += ag__.list_popped((popped := ag__.list_pop(l)), (l := popped[0]))
        l = ag__.list_insert(l, 0, s)
        l = ag__.list_delitem(l, -1)
        return (l, s)
    l, s = ag__.for_stmt(ag__.converted_call(range, (n,), None), None, loop_body, (l, s), ('l', 's'))
    return s
""",
    "falls_off_the_end": """\
def falls_off_the_end(x):
    do_return = False
    retval_ = ag__.UndefinedReturnValue()
    def if_true(do_return, retval_):
        retval_ = x * 2
        do_return = True
        return (do_return, retval_)
    do_return, retval_ = ag__.if_stmt(x > 0, if_true, None, (do_return, retval_), ('do_return', 'retval_'))
    return ag__.retval(retval_, do_return)
""",
    "return_skips_try_else": """\
def return_skips_try_else(x):
    do_return = False
    retval_ = ag__.UndefinedReturnValue()
    do_return, retval_, x, try_token = ag__.try_begin((do_return, retval_, x), ('do_return', 'retval_', 'x'))
    try:
        def if_true(do_return, retval_):
            retval_ = x
            do_return = True
            return (do_return, retval_)
        do_return, retval_ = ag__.if_stmt(x > 0, if_true, None, (do_return, retval_), ('do_return', 'retval_'))
    except ValueError:
        ag__.let_library_errors_through(try_token)
        x = 0
    else:
        def except_body(exc, do_return, retval_, x):
            x = 0
            return (do_return, retval_, x)
        do_return, retval_, x, try_ok = ag__.try_end(try_token, (do_return, retval_, x), ('do_return', 'retval_', 'x'), ((lambda: ValueError, except_body, False, False),), True)
        def if_true_1(x):
            def if_true_2(x):
                x = -x
                return (x,)
            x, = ag__.if_stmt(ag__.not_(do_return), if_true_2, None, (x,), ('x',))
            return (x,)
        x, = ag__.if_stmt(try_ok, if_true_1, None, (x,), ('x',))
    def if_true_3(retval_):
        retval_ = x
        do_return = True
        return (retval_,)
    retval_, = ag__.if_stmt(ag__.not_(do_return), if_true_3, None, (retval_,), ('retval_',))
    return ag__.retval(retval_)
""",
    "computed_index": """\
def computed_index(l, i):
    return ag__.get_item(l, i - 1) + l[0]
""",
    "assigned_in_a_branch_only": """\
def assigned_in_a_branch_only(x, n):
    t = ag__.Undefined('t')
    def if_true(t, x):
        def loop_body(i, t):
            t = x + i
            return (t,)
        t, = ag__.for_stmt(ag__.converted_call(range, (n,), None), None, loop_body, (t,), ('t',))
        x = ag__.ld(t)
        return (ag__.Undefined('t'), x)
    def if_false(t, x):
        return (ag__.Undefined('t'), x)
    t, x = ag__.if_stmt(x > 0, if_true, if_false, (t, x), ('t', 'x'))
    return x
""",
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_to_code(name):
    fn = getattr(golden_semantics_src, name)
    header, body = to_code(fn).split("\n", 1)
    assert re.fullmatch(rf"# converted from {name} \(.*golden_semantics_src\.py:{fn.__code__.co_firstlineno}\)",
                        header)
    assert body == EXPECTED[name]
    ast.parse(body)
