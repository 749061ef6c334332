"""Every operator behaves exactly like the Python statement on plain values,
and routes staged values to the backend (FakeBackend)."""

from __future__ import annotations

import pytest
from fake_backend import Staged, unwrap

from torch_autograph.autograph import operators as ops
from torch_autograph.autograph.operators import dispatch
from torch_autograph.autograph.pyct.origin_info import Origin
from torch_autograph.errors import OperatorNotAllowedInGraphError


def test_register_backend_returns_previous():
    assert dispatch.current_backend() is None
    fake = object()
    assert dispatch.register_backend(fake) is None
    assert dispatch.current_backend() is fake
    assert dispatch.register_backend(None) is fake


# -- if / ternary -------------------------------------------------------------


@pytest.mark.parametrize("cond", [True, False, 0, 1, [], [0], "", "a", None, 2.5])
def test_if_stmt_plain_truthiness(cond):
    out = ops.if_stmt(cond, lambda x: (x + 1,), lambda x: (x - 1,), (10,), ("x",))
    assert out == ((11,) if cond else (9,))


def test_if_stmt_without_else_passes_state_through():
    assert ops.if_stmt(False, lambda x: (x + 1,), None, (10,), ("x",)) == (10,)


def test_if_stmt_calls_bool_once_and_only_taken_branch():
    calls = []

    class Cond:
        def __bool__(self):
            calls.append("bool")
            return False

    out = ops.if_stmt(Cond(), lambda: calls.append("t") or (), lambda: calls.append("f") or (),
                      (), ())
    assert out == () and calls == ["bool", "f"]


def test_if_stmt_bool_error_propagates():
    class Bad:
        def __bool__(self):
            raise ValueError("no truth")

    with pytest.raises(ValueError, match="no truth"):
        ops.if_stmt(Bad(), lambda: (), None, (), ())


def test_if_exp_lazy():
    assert ops.if_exp(True, lambda: 1, lambda: 1 // 0) == 1
    assert ops.if_exp(0, lambda: 1 // 0, lambda: "b") == "b"


def test_staged_if_traces_both_and_selects(backend):
    seen = []
    out = ops.if_stmt(Staged(True), lambda x: seen.append("t") or (x + 1,),
                      lambda x: seen.append("f") or (x - 1,), (10,), ("x",))
    assert unwrap(out) == (11,) and seen == ["t", "f"] and backend.calls["cond"] == 1
    assert isinstance(out[0], Staged)


def test_staged_if_origin_is_caller(backend):
    ops.if_stmt(Staged(False), lambda: (), None, (), ())
    origin = backend.origins[-1]
    assert isinstance(origin, Origin)
    assert origin.filename == __file__ and "ops.if_stmt(Staged(False)" in origin.source_line


def test_branch_output_check_messages():
    origin = Origin("model.py", 12, "f", "if x > 0:")
    with pytest.raises(ValueError, match=r"'y' must also be initialised in the else branch.*"
                                         r"model\.py:12"):
        ops.check_branch_outputs(("y",), (1,), (ops.Undefined("y"),), origin)
    with pytest.raises(ValueError, match="'y' must also be initialised in the main branch"):
        ops.check_branch_outputs(("y",), (ops.Undefined("y"),), (1,), origin)
    with pytest.raises(ValueError, match="'z' is None at the end of the else branch"):
        ops.check_branch_outputs(("z",), (1,), (None,), origin)
    # The return slot may be unset on one side: do_return guards it.
    ops.check_branch_outputs(("retval_",), (1,), (ops.UndefinedReturnValue(),), origin)


def test_staged_if_defined_in_one_branch_errors(backend):
    with pytest.raises(ValueError, match="'y' must also be initialised in the else branch"):
        ops.if_stmt(Staged(True), lambda y: (1,), None, (ops.Undefined("y"),), ("y",))


# -- while ---------------------------------------------------------------------


def test_while_plain():
    out = ops.while_stmt(lambda i, s: i < 5, lambda i, s: (i + 1, s + i), (0, 0), ("i", "s"))
    assert out == (5, 10)


def test_while_zero_iterations_and_test_call_count():
    calls = []

    def test(i):
        calls.append(i)
        return i < 0

    assert ops.while_stmt(test, lambda i: (i + 1,), (3,), ("i",)) == (3,)
    assert calls == [3]


def test_while_staged_from_start(backend):
    out = ops.while_stmt(lambda i: i < 4, lambda i: (i + 1,), (Staged(0),), ("i",))
    assert unwrap(out) == (4,) and backend.calls["while_loop"] == 1


def test_while_condition_turns_staged_mid_loop(backend):
    # i starts as a Python int; the body makes it staged after one iteration.
    out = ops.while_stmt(lambda i: i < 5, lambda i: (Staged(i + 1),), (0,), ("i",))
    assert unwrap(out) == (5,) and backend.calls["while_loop"] == 1


def test_while_maximum_iterations_when_staged(backend):
    out = ops.while_stmt(lambda i: i < 10, lambda i: (i + 1,), (Staged(0),), ("i",),
                         {"maximum_iterations": 3})
    assert unwrap(out) == (3,)


# -- for -----------------------------------------------------------------------


def test_for_plain_order_and_generator_consumed_once():
    def gen():
        yield from "abc"

    out = ops.for_stmt(gen(), None, lambda c, s: (s + c,), ("",), ("s",))
    assert out == ("abc",)


def test_for_extra_test_does_not_advance_iterator_after_break():
    it = iter(range(10))
    # break when s reaches 3: the element after the break must stay in the iterator
    out = ops.for_stmt(it, lambda s: s < 3, lambda x, s: (s + 1,), (0,), ("s",))
    assert out == (3,) and next(it) == 3


def test_for_extra_test_false_initially():
    out = ops.for_stmt([1, 2], lambda s: False, lambda x, s: (s + x,), (0,), ("s",))
    assert out == (0,)


def test_for_plain_with_backend_installed(backend):
    it = iter(range(10))
    out = ops.for_stmt(it, lambda s: s < 3, lambda x, s: (s + 1,), (0,), ("s",))
    assert out == (3,) and next(it) == 3 and not backend.calls


def test_for_exceptions_propagate():
    with pytest.raises(TypeError):
        ops.for_stmt(5, None, lambda x: (), (), ())


def test_for_staged_range(backend):
    r = ops.range_(Staged(4))
    assert isinstance(r, ops.LazyRange)
    out = ops.for_stmt(r, None, lambda i, s: (s + i,), (0,), ("s",))
    assert unwrap(out) == (6,) and backend.calls["for_loop"] == 1


def test_for_staged_enumerate_zip(backend):
    e = ops.enumerate_(ops.range_(Staged(3)), 1)
    assert isinstance(e, ops.LazyEnumerate)
    out = ops.for_stmt(e, None, lambda t, s: (s + t[0] * t[1],), (0,), ("s",))
    assert unwrap(out) == (1 * 0 + 2 * 1 + 3 * 2,)
    z = ops.zip_(ops.range_(Staged(3)), [10, 20, 30])
    assert isinstance(z, ops.LazyZip)
    out = ops.for_stmt(z, None, lambda t, s: (s + t[0] * t[1],), (0,), ("s",))
    assert unwrap(out) == (0 + 20 + 60,)


def test_lazy_iterables_refuse_plain_iteration(backend):
    with pytest.raises(OperatorNotAllowedInGraphError, match="only supported"):
        list(ops.range_(Staged(3)))


def test_for_unrolled_with_staged_break_guards_rest(backend):
    """Decision 3: the break flag turns staged mid-loop; later iterations run under cond."""
    def body(x, brk, s):
        brk = Staged(x >= 2)  # a staged condition decides the break
        return brk, (s + x if not x >= 2 else s)

    out = ops.for_stmt([0, 1, 2, 3, 4], lambda brk, s: ops.not_(brk), body, (False, 0),
                       ("break_", "s"))
    assert unwrap(out) == (True, 1)
    assert backend.calls["cond"] >= 1


# -- logical ---------------------------------------------------------------------


@pytest.mark.parametrize("a", [0, 1, "", "x", None, [], [1]])
@pytest.mark.parametrize("b", [0, 2, "y"])
def test_and_or_not_match_python(a, b):
    assert ops.and_(a, lambda: b) == (a and b)
    assert ops.or_(a, lambda: b) == (a or b)
    assert ops.not_(a) == (not a)


def test_and_or_short_circuit():
    assert ops.and_(0, lambda: 1 // 0) == 0
    assert ops.or_(1, lambda: 1 // 0) == 1
    with pytest.raises(ZeroDivisionError):
        ops.and_(1, lambda: 1 // 0)


def test_logical_staged(backend):
    assert unwrap(ops.and_(Staged(True), lambda: False)) is False
    assert unwrap(ops.or_(Staged(False), lambda: True)) is True
    assert unwrap(ops.not_(Staged(0))) is True
    # A plain left operand keeps Python semantics even with a staged right one.
    assert isinstance(ops.and_(True, lambda: Staged(1)), Staged)
    assert ops.and_(False, lambda: Staged(1)) is False


def test_assert_stmt():
    ops.assert_stmt(True)
    with pytest.raises(AssertionError) as e:
        ops.assert_stmt(0, lambda: "x must be positive")
    assert e.value.args == ("x must be positive",)
    with pytest.raises(AssertionError) as e:
        ops.assert_stmt([])
    assert e.value.args == ()
    ops.assert_stmt(1, lambda: 1 // 0)  # message is lazy


def test_assert_staged(backend):
    ops.assert_stmt(Staged(True), lambda: "fine")
    with pytest.raises(AssertionError, match="x must be positive"):
        ops.assert_stmt(Staged(False), lambda: "x must be positive")


# -- variables -------------------------------------------------------------------


def test_undefined_and_ld():
    assert ops.ld(3) == 3
    with pytest.raises(UnboundLocalError, match="'y'"):
        ops.ld(ops.Undefined("y"))
    assert ops.is_undefined(ops.Undefined("y")) and not ops.is_undefined(None)
    assert ops.retval(ops.UndefinedReturnValue()) is None and ops.retval(0) == 0
    assert ops.undefined_names(("a", "b"), (1, ops.Undefined("b"))) == ["b"]


# -- builtins --------------------------------------------------------------------

_BUILTIN_CASES = [
    (ops.len_, len, ([1, 2],)), (ops.int_, int, ("12",)), (ops.int_, int, ("ff", 16)),
    (ops.float_, float, ("1.5",)), (ops.abs_, abs, (-3,)), (ops.min_, min, (3, 1, 2)),
    (ops.max_, max, ([3, 1, 2],)), (ops.sum_, sum, ([1, 2], 10)), (ops.any_, any, ([0, 1],)),
    (ops.all_, all, ([0, 1],)), (ops.sorted_, sorted, ([3, 1, 2],)),
    (ops.isinstance_, isinstance, (1, int)),
]


@pytest.mark.parametrize("overload,builtin,args", _BUILTIN_CASES)
def test_builtins_plain(overload, builtin, args):
    assert overload(*args) == builtin(*args)


@pytest.mark.parametrize("overload,builtin,args", [
    (ops.len_, len, (3,)), (ops.int_, int, ("x",)), (ops.min_, min, ([],)),
    (ops.abs_, abs, ("s",))])
def test_builtins_same_exceptions(overload, builtin, args):
    with pytest.raises(Exception) as expected:
        builtin(*args)
    with pytest.raises(type(expected.value), match=str(expected.value).replace("(", r"\(")
                       .replace(")", r"\)").replace("[", r"\[").replace("]", r"\]")):
        overload(*args)


def test_builtins_keywords_plain():
    assert ops.sorted_([3, 1], reverse=True) == [3, 1]
    assert ops.max_([], default=7) == 7
    assert list(ops.enumerate_("ab", start=1)) == [(1, "a"), (2, "b")]
    assert list(ops.zip_([1, 2], "ab")) == [(1, "a"), (2, "b")]
    with pytest.raises(ValueError):
        list(ops.zip_([1, 2], "a", strict=True))
    assert ops.range_(1, 10, 3) == range(1, 10, 3)


def test_builtins_staged(backend):
    assert unwrap(ops.abs_(Staged(-3))) == 3
    assert unwrap(ops.max_([Staged(1), 5])) == 5
    assert unwrap(ops.int_(Staged(2.5))) == 2
    assert backend.calls["abs"] == 1 and backend.calls["max"] == 1
    # The backend may decline (NotImplemented): plain Python semantics apply.
    assert ops.isinstance_(Staged(1), Staged) is True


# -- lists -----------------------------------------------------------------------


def test_list_ops_plain_mutate_in_place():
    l = [1]
    assert ops.list_append(l, 2) is l and l == [1, 2]
    l2, x = ops.list_pop(l)
    assert l2 is l and x == 2 and l == [1]
    assert ops.list_pop([1, 2, 3], 0) == ([2, 3], 1)
    with pytest.raises(IndexError):
        ops.list_pop([])
    assert ops.new_list((1, 2)) == [1, 2]


def test_list_ops_on_other_objects_call_methods():
    import collections
    d = collections.deque([1])
    assert ops.list_append(d, 2) is d and list(d) == [1, 2]


def test_list_ops_staged(backend):
    l = ops.list_append(Staged([1]), 2)
    assert unwrap(l) == [1, 2]
    l, x = ops.list_pop(l)
    assert unwrap(l) == [1] and unwrap(x) == 2


def test_list_extend_and_iadd_plain_behave_like_python():
    l = [1]
    assert ops.list_extend(l, (2, 3)) is l and l == [1, 2, 3]
    assert ops.list_iadd(l, [4]) is l and l == [1, 2, 3, 4]
    with pytest.raises(TypeError, match="can only concatenate tuple"):  # as `t = (1,); t += [2]`
        ops.list_iadd((1,), [2])
    import collections
    d = collections.deque([1])
    assert ops.list_extend(d, [2]) is d and list(d) == [1, 2]
    assert ops.list_iadd(d, [3]) is d and list(d) == [1, 2, 3]


def test_list_extend_and_iadd_staged(backend):
    l = ops.list_extend(Staged([1]), [2, Staged(3)])
    l = ops.list_iadd(l, [4])
    assert unwrap(l) == [1, 2, 3, 4] and backend.calls["list_extend"] == 2
    # A staged non-list: the backend declines and the value's own `+=` runs.
    assert unwrap(ops.list_iadd(Staged(1), Staged(2))) == 3


class _ReadOnly:
    def __init__(self):
        self._items = []

    @property
    def items(self):
        return self._items

    @property
    def copy(self):
        return list(self._items)


def test_st_attr_plain_value_on_a_read_only_property_is_not_stored(backend):
    # The store is AutoGraph's, not the user's: `obj.copy.append(1)` in Python assigns nothing.
    obj = _ReadOnly()
    ops.st_attr(obj, "items", ops.list_append(obj.items, 1))
    ops.st_attr(obj, "copy", ops.list_append(obj.copy, 2))
    ops.st_item((obj.items,), 0, ops.list_append([], 3))
    assert obj.items == [1]


def test_st_attr_graph_value_that_cannot_be_stored_says_what_to_do(backend):
    obj = _ReadOnly()
    with pytest.raises(AttributeError) as info:
        ops.st_attr(obj, "items", Staged([1]))
    msg = str(info.value)
    assert "attribute 'items' of '_ReadOnly' object" in msg and "has no setter" in msg
    assert f"{__file__}:" in msg and "local variable (`items = []`" in msg
    assert isinstance(info.value.__cause__, AttributeError)
    with pytest.raises(AttributeError, match="frozen"):
        ops.st_attr(obj, "items", [Staged(1)])  # a Python list rebuilt around graph values
    with pytest.raises(TypeError, match=r"item 0 of 'tuple' object .* does not support item assignment"):
        ops.st_item(([],), 0, Staged([1]))


def test_new_list_operators_plain_behave_like_python():
    l = [1, 2, 3]
    assert ops.list_insert(l, 1, 9) is l and l == [1, 9, 2, 3]
    assert ops.list_delitem(l, 0) is l and l == [9, 2, 3]
    assert ops.list_delitem(l, slice(0, 2)) is l and l == [3]
    pair = ops.list_pop(l)
    assert ops.list_popped(pair, None) == 3 and l == []
    assert ops.get_item([4, 5, 6], 1) == 5 and ops.get_item({"k": 1}, "k") == 1
    assert ops.get_item((7, 8), -1) == 8 and ops.get_item("ab", 0) == "a"
    with pytest.raises(IndexError):
        ops.get_item([], 0)
    with pytest.raises(TypeError):
        ops.get_item([1], 1.5)


def test_new_list_operators_staged(backend):
    l = ops.list_insert(Staged([1, 2]), 0, 5)
    assert unwrap(l) == [5, 1, 2]
    assert unwrap(ops.list_delitem(l, 1)) == [5, 2]
    assert unwrap(ops.get_item([10, 20, 30], Staged(2))) == 30
    assert backend.calls["list_insert"] == backend.calls["list_delitem"] == 1
    assert backend.calls["sequence_getitem"] == 1


def test_retval_with_the_return_flag():
    assert ops.retval(ops.UndefinedReturnValue(), False) is None
    assert ops.retval(3, True) == 3 and ops.retval(3) == 3 and ops.retval(None, True) is None


def test_retval_refuses_a_value_or_none_decided_by_a_staged_flag(backend):
    with pytest.raises(ValueError, match=r"returns a value on some paths and reaches its end"):
        ops.retval(3, Staged(True))
    assert ops.retval(None, Staged(True)) is None  # None either way
