"""Converted code with staged values, end to end through the FakeBackend."""

from __future__ import annotations

import pytest
import staging_src as src
from fake_backend import Staged, unwrap

from torch_autograph.autograph import convert, to_graph


@pytest.mark.parametrize("x", [-1, 0, 2, 7])
def test_staged_break_in_unrolled_python_loop(backend, x):
    """The break flag turns staged in the first iteration: the rest of the range is one staged loop."""
    assert unwrap(to_graph(src.break_in_python_loop)(Staged(x))) == src.break_in_python_loop(x)
    assert backend.calls["for_loop"] == 1


@pytest.mark.parametrize("x", [-1, 0, 2, 7])
def test_staged_break_in_python_loop_over_a_list_guards_each_remaining_element(backend, x):
    """A list's rest is no range: each remaining element runs under a staged `if` on the flag."""
    assert unwrap(to_graph(src.break_in_python_list_loop)(Staged(x))) == src.break_in_python_list_loop(x)
    assert backend.calls["cond"] >= 5 and backend.calls["for_loop"] == 0


@pytest.mark.parametrize("x", [-1, 2, 7])
def test_staged_return_in_unrolled_python_loop(backend, x):
    assert unwrap(to_graph(src.return_in_python_loop)(Staged(x))) == \
        src.return_in_python_loop(x)


def test_python_while_condition_turns_staged(backend):
    assert unwrap(to_graph(src.python_while_turns_staged)(Staged(3))) == 6
    assert backend.calls["while_loop"] == 1


@pytest.mark.parametrize("x", [-2, 3])
def test_attributes_are_branch_state(backend, x):
    acc = src.Acc()
    result = convert(acc.add)(Staged(x))
    # Both branches were traced from the same starting total.
    assert unwrap(result) == (x if x > 0 else -1) and unwrap(acc.total) == unwrap(result)


def test_staged_range_enumerate_zip(backend):
    assert unwrap(to_graph(src.loop_over_staged_range)(Staged(5))) == 10
    assert unwrap(to_graph(src.enumerate_zip)(Staged(3), [5, 6, 7])) == (0 + 1 + 4) + (0 + 6 + 14)
    assert backend.calls["for_loop"] == 3


def test_list_append_in_staged_loop_is_loop_state(backend):
    seen = {}

    def for_loop(iterable, extra_test, body_fn, init_vars, names, options, origin):
        seen.update((n, list(v)) for n, v in zip(names, init_vars))  # snapshot at entry
        return type(backend).for_loop(backend, iterable, extra_test, body_fn, init_vars, names,
                                      options, origin)

    backend.for_loop = for_loop
    out = to_graph(src.list_in_staged_loop)(Staged(4))
    assert seen == {"out": []}  # the list is a loop variable the backend can turn into a graph list
    assert unwrap(out) == [0, 1, 4, 9]


def test_assert_on_staged_value(backend):
    assert unwrap(to_graph(src.assert_staged)(Staged(3))) == 3
    with pytest.raises(AssertionError, match="x must be positive"):
        to_graph(src.assert_staged)(Staged(-3))
    origin = backend.origins[-1]
    assert origin.filename == src.__file__ and origin.source_line.startswith("assert x > 0")
    assert origin.function_name == "assert_staged"


@pytest.mark.parametrize("a,b", [(1, 1), (1, -1), (-1, 1)])
def test_both_branches_traced_with_branch_local_state(backend, a, b):
    import api_src
    fn = api_src.branch_local_overwritten
    assert unwrap(to_graph(fn)(Staged(a), Staged(b))) == fn(a, b)
    assert backend.calls["cond"] >= 2


def test_attribute_list_append_in_staged_loop_is_loop_state(backend):
    seen = {}

    def for_loop(iterable, extra_test, body_fn, init_vars, names, options, origin):
        seen.update((n, list(v)) for n, v in zip(names, init_vars))  # snapshot at entry
        return type(backend).for_loop(backend, iterable, extra_test, body_fn, init_vars, names,
                                      options, origin)

    backend.for_loop = for_loop
    rec = src.Recorder()
    out, last = convert(rec.run)(Staged(4))
    assert seen == {"self.out": []}  # threaded through the loop like a local list
    assert unwrap(out) == [0, 1, 4] and unwrap(last) == 9 and unwrap(rec.out) == [0, 1, 4]


def test_attribute_list_on_plain_values_is_not_reassigned():
    # Plain lists are appended in place; nothing is stored back, so a read-only
    # property holding the list works as in Python.
    rec = src.Recorder()
    assert convert(rec.fill_read_only)(3) == [0, 1, 4] == src.Recorder().fill_read_only(3)
    assert convert(src.Recorder().run)(3) == src.Recorder().run(3) == ([0, 1], 4)
