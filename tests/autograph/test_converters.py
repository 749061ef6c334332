"""Each converter alone on a small snippet: its docstring's before/after, pinned."""

from __future__ import annotations

import ast
import textwrap

import gast

from torch_autograph.autograph import experimental
from torch_autograph.autograph.converters import (
    asserts,
    break_statements,
    call_trees,
    conditional_expressions,
    continue_statements,
    control_flow,
    directives,
    functions,
    lists,
    logical_expressions,
    return_statements,
    variables,
)
from torch_autograph.autograph.pyct import loader, naming, reaching_definitions, transformer


def convert(src: str, *steps, namespace=None) -> str:
    node = gast.parse(textwrap.dedent(src)).body[0]
    ctx = transformer.ConversionContext(naming.Namer.for_tree(node), "<test>", node.name,
                                        namespace or (lambda name: transformer.MISSING))
    for step in steps:
        if step is variables or step is control_flow:
            reaching_definitions.analyze(node)
        step.transform(node, ctx)
    tree = ast.fix_missing_locations(gast.gast_to_ast(gast.Module(body=[node], type_ignores=[])))
    return loader.unparse(tree) + "\n"


def expect(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def test_break_statements():
    assert convert("""
        def f(n):
            i = 0
            while i < n:
                i += 1
                if i > 3:
                    break
                g(i)
            else:
                i = -1
            return i
    """, break_statements) == expect("""
        def f(n):
            i = 0
            break_ = False
            while not break_ and i < n:
                i += 1
                if i > 3:
                    break_ = True
                else:
                    g(i)
            if not break_:
                i = -1
            return i
    """)


def test_break_guard_when_not_last_in_branch():
    assert convert("""
        def f(xs):
            for x in xs:
                if x:
                    g(x)
                    if x > 1:
                        break
                    h(x)
                k(x)
    """, break_statements) == expect("""
        def f(xs):
            break_ = False
            for x in xs:
                if x:
                    g(x)
                    if x > 1:
                        break_ = True
                    else:
                        h(x)
                if not break_:
                    k(x)
    """)


def test_continue_statements():
    assert convert("""
        def f(xs):
            for x in xs:
                if x < 0:
                    g(x)
                    if x < -5:
                        continue
                    h(x)
                s(x)
    """, continue_statements) == expect("""
        def f(xs):
            for x in xs:
                continue_ = False
                if x < 0:
                    g(x)
                    if x < -5:
                        continue_ = True
                    else:
                        h(x)
                if not continue_:
                    s(x)
    """)


def test_return_statements():
    assert convert("""
        def f(xs):
            for x in xs:
                if x > 0:
                    return x
            return -1
    """, return_statements) == expect("""
        def f(xs):
            do_return = False
            retval_ = ag__.UndefinedReturnValue()
            for x in xs:
                if x > 0:
                    retval_ = x
                    do_return = True
            if not do_return:
                retval_ = -1
                do_return = True
            return ag__.retval(retval_)
    """)


def test_single_final_return_is_untouched():
    src = "def f(x):\n    y = x\n    return y\n"
    assert convert(src, return_statements) == src


def test_asserts_lists_calls():
    assert convert("""
        def f(x, l):
            assert x, 'msg'
            assert x
            for i in x:
                l.append(g(i, *x, k=1))
                y = l.pop()
                l.pop(0)
            print(len(l))
            return super().f()
    """, asserts, lists, call_trees) == expect("""
        def f(x, l):
            ag__.assert_stmt(x, lambda: 'msg')
            ag__.assert_stmt(x)
            for i in x:
                l = ag__.list_append(l, ag__.converted_call(g, (i, *x), {'k': 1}))
                l, y = ag__.list_pop(l)
                l = ag__.list_pop(l, 0)[0]
            print(ag__.converted_call(len, (l,), None))
            return ag__.converted_call(super(__class__, x).f, (), None)
    """)


def test_conditional_and_logical_expressions():
    assert convert("""
        def f(a, b, c):
            return (a if b else c), a and b and not c, a or b, 0 < a < f(b) < c
    """, conditional_expressions, logical_expressions) == expect("""
        def f(a, b, c):
            return (ag__.if_exp(b, lambda: a, lambda: c), ag__.and_(a, lambda: ag__.and_(b, lambda: ag__.not_(c))), ag__.or_(a, lambda: b), ag__.and_(0 < a, lambda: ag__.and_(a < (cmp_ := f(b)), lambda: cmp_ < c)))
    """)


def test_variables_wraps_possibly_unbound_loads():
    assert convert("""
        def f(c):
            if c:
                y = 1
            z = 2
            return y + z
    """, variables) == expect("""
        def f(c):
            if c:
                y = 1
            z = 2
            return ag__.ld(y) + z
    """)


def test_control_flow_state_and_undefined():
    assert convert("""
        def f(x, n):
            while x < n:
                if x > 2:
                    y = x
                else:
                    y = 0
                x = x + y
            return x
    """, control_flow) == expect("""
        def f(x, n):
            while True:
                test = x < n
                if test is True or test is False or ag__.is_plain(test):
                    if not test:
                        break
                else:
                    def loop_test(x):
                        return x < n
                    def loop_body(x):
                        y = ag__.Undefined('y')
                        def if_true_1(y):
                            y = x
                            return (y,)
                        def if_false_1(y):
                            y = 0
                            return (y,)
                        y, = ag__.if_stmt(x > 2, if_true_1, if_false_1, (y,), ('y',))
                        x = x + y
                        return (x,)
                    x, = ag__.while_stmt(loop_test, loop_body, (x,), ('x',))
                    break
                cond = x > 2
                if cond is True or cond is False or ag__.is_plain(cond):
                    if cond:
                        y = x
                    else:
                        y = 0
                else:
                    y = ag__.Undefined('y')
                    def if_true(y):
                        y = x
                        return (y,)
                    def if_false(y):
                        y = 0
                        return (y,)
                    y, = ag__.if_stmt(cond, if_true, if_false, (y,), ('y',))
                x = x + y
            return x
    """)


def test_control_flow_for_target_that_outlives_the_loop():
    assert convert("""
        def f(xs):
            for i, x in xs:
                pass
            return i
    """, control_flow) == expect("""
        def f(xs):
            i = ag__.Undefined('i')
            loop_iter = xs
            if ag__.is_plain(loop_iter):
                for i, x in loop_iter:
                    pass
            else:
                def loop_body(itr, i):
                    i, x = itr
                    return (i,)
                i, = ag__.for_stmt(loop_iter, None, loop_body, (i,), ('i',))
            return i
    """)


def test_directives_become_loop_options():
    namespace = {"experimental": experimental}.get
    out = convert("""
        def f(x):
            for i in range(3):
                experimental.set_loop_options(maximum_iterations=2)
                x = x + i
            return x
    """, directives, control_flow,
        namespace=lambda name: namespace(name, transformer.MISSING))
    assert "loop_iter = range(3)" in out and \
        "ag__.for_stmt(loop_iter, None, loop_body, (x,), ('x',), {'maximum_iterations': 2})" \
        in out and "set_loop_options" not in out


def test_functions_prepares_signature():
    node = gast.parse("f = lambda a, b=K: a + b").body[0].value
    ctx = transformer.ConversionContext(naming.Namer([]), "<test>", "lambda_")
    fn = functions.transform(node, ctx)
    tree = ast.fix_missing_locations(gast.gast_to_ast(gast.Module(body=[fn], type_ignores=[])))
    assert loader.unparse(tree) == "def lambda_(a, b=None):\n    return a + b"
    node = gast.parse("@deco\ndef g(x: int = 1) -> int:\n    return x").body[0]
    tree = ast.fix_missing_locations(gast.gast_to_ast(gast.Module(
        body=[functions.transform(node, ctx)], type_ignores=[])))
    assert loader.unparse(tree) == "def g(x=1):\n    return x"


def test_lists_on_attributes_and_constant_subscripts():
    # The new list is stored back with st_attr / st_item (a no-op for a plain list,
    # which list_append mutates and returns), in loops and out of them; a variable
    # subscript is left alone.
    assert convert("""
        def f(self, x, obj, i):
            self.out.append(x)
            for v in x:
                self.out.append(v)
                obj.a.b.append(v)
                self.d['k'].append(v)
                y = self.out.pop()
                self.out.pop(0)
                self.rows[i].append(v)
            return y
    """, lists) == expect("""
        def f(self, x, obj, i):
            ag__.st_attr(self, 'out', ag__.list_append(self.out, x))
            for v in x:
                ag__.st_attr(self, 'out', ag__.list_append(self.out, v))
                ag__.st_attr(obj.a, 'b', ag__.list_append(obj.a.b, v))
                ag__.st_item(self.d, 'k', ag__.list_append(self.d['k'], v))
                list_, y = ag__.list_pop(self.out)
                ag__.st_attr(self, 'out', list_)
                ag__.st_attr(self, 'out', ag__.list_pop(self.out, 0)[0])
                self.rows[i].append(v)
            return y
    """)


def test_attribute_list_becomes_loop_state():
    # The store counts as assigning `self.out`, so control_flow threads it like `self.out = ...`.
    assert convert("""
        def f(self, n):
            self.out = []
            i = 0
            while i < n:
                self.out.append(i)
                i += 1
            return self.out
    """, lists, control_flow) == expect("""
        def f(self, n):
            self.out = []
            i = 0
            while True:
                test = i < n
                if test is True or test is False or ag__.is_plain(test):
                    if not test:
                        break
                else:
                    def loop_test(i, self_out):
                        ag__.st_attr(self, 'out', self_out)
                        return i < n
                    def loop_body(i, self_out):
                        ag__.st_attr(self, 'out', self_out)
                        ag__.st_attr(self, 'out', ag__.list_append(self.out, i))
                        i += 1
                        return (i, ag__.ld_attr(self, 'out'))
                    i, self_out = ag__.while_stmt(loop_test, loop_body, (i, ag__.ld_attr(self, 'out')), ('i', 'self.out'))
                    ag__.st_attr(self, 'out', self_out)
                    break
                ag__.st_attr(self, 'out', ag__.list_append(self.out, i))
                i += 1
            return self.out
    """)


def test_lists_extend_and_iadd():
    # extend / `+= [...]` everywhere (a graph list after a loop has no such methods); `+=` keeps
    # Python's own store. Anything not visibly a list, and globals, stay as written.
    assert convert("""
        def f(self, x, other):
            global G
            out = []
            out.extend(x)
            self.out += [x]
            for v in x:
                out += [v]
                out += [w for w in v]
                self.out.extend(v)
                self.d['k'] += [v]
                out += other
                n += 1
                G += [v]
                G.extend(v)
            return out
    """, lists) == expect("""
        def f(self, x, other):
            global G
            out = []
            out = ag__.list_extend(out, x)
            self.out = ag__.list_iadd(self.out, [x])
            for v in x:
                out = ag__.list_iadd(out, [v])
                out = ag__.list_iadd(out, [w for w in v])
                ag__.st_attr(self, 'out', ag__.list_extend(self.out, v))
                self.d['k'] = ag__.list_iadd(self.d['k'], [v])
                out += other
                n += 1
                G += [v]
                G.extend(v)
            return out
    """)


def test_list_iadd_is_loop_state():
    # The rewritten `+=` on an attribute is an assignment: control_flow threads `self.out`.
    out = convert("""
        def f(self, n):
            while n > 0:
                self.out += [n]
                n -= 1
    """, lists, control_flow)
    assert "self.out = ag__.list_iadd(self.out, [n])" in out
    assert "ag__.while_stmt(loop_test, loop_body, (n, ag__.ld_attr(self, 'out')), ('n', 'self.out'))" in out
