"""Sizes known only when the graph runs that are equal by construction get one symbol, so code comparing them
decides while tracing, as Python does: two tensors a loop grows alike (a KV cache and its attention mask), two
outputs of a tensor `if` grown in the same branch, and a merged size's bounds (`numel() == 0` of a cache that is
never empty)."""

import pytest
import torch
import torch.nn.functional as F

import torch_autograph as ta


def pad_to(a, b):
    """Library code: pad `b` to `a`'s length when it is shorter (transformers' `prepare_padding_mask`)."""
    if (n := a.shape[0] - b.shape[0]) > 0:
        b = F.pad(b, (0, n))
    return b


def grown_alike_in_a_while(x, stop):
    cache, mask = x, torch.ones_like(x)
    while cache.sum() < stop:
        mask = torch.cat([mask, torch.ones(1)])
        cache = torch.cat([cache, x[:1]])
        mask = pad_to(cache, mask)
    return cache, mask


def grown_alike_with_a_break(x, stop):
    cache, mask = x, torch.ones_like(x)
    for _ in range(6):
        mask = torch.cat([mask, torch.ones(1)])
        cache = torch.cat([cache, x[:1]])
        mask = pad_to(cache, mask)
        if (cache.sum() > stop).all():
            break
    return cache, mask


def grown_apart(x, stop):
    a, b = x, x
    while a.sum() < stop:
        a = torch.cat([a, x[:1]])
        b = torch.cat([b, x[:1], x[:1]])
    return a, b


def test_tensors_a_while_grows_alike_compare_equal_in_library_code():
    f = ta.function(grown_alike_in_a_while)
    for stop in (3.0, 7.0, 1.0):
        for out, expected in zip(f(torch.ones(2), torch.tensor(stop)), grown_alike_in_a_while(torch.ones(2), stop)):
            assert torch.equal(out, expected)
    assert len(f.trace_history()) == 1


def test_tensors_an_unrolled_loop_with_a_tensor_break_grows_alike_compare_equal():
    f = ta.function(grown_alike_with_a_break)
    for stop in (3.0, 5.0, 100.0):
        for out, expected in zip(f(torch.ones(2), torch.tensor(stop)), grown_alike_with_a_break(torch.ones(2), stop)):
            assert torch.equal(out, expected)


def test_tensors_equal_on_entry_that_a_loop_grows_differently_keep_their_own_sizes():
    f = ta.function(grown_apart)
    for stop in (3.0, 6.0):
        for out, expected in zip(f(torch.ones(2), torch.tensor(stop)), grown_apart(torch.ones(2), stop)):
            assert torch.equal(out, expected)


def test_a_size_merged_by_a_tensor_if_keeps_its_bounds():
    def f(x, stop):
        for _ in range(3):
            x = torch.cat([x, x[:1]])
            if (x.sum() > stop).all():
                break
        # Decided while tracing (the length is between 3 and 5): plain Python `if`s, whose branches may return
        # different structures, as a graph `if` could not.
        if x.numel() == 0:
            return x, x
        if x.shape[0] < 3:
            return None
        return x * 2

    for stop in (2.0, 100.0):
        assert torch.equal(ta.function(f)(torch.ones(2), torch.tensor(stop)), f(torch.ones(2), stop))


def seq_len(c):
    """Library code: a cache's length, 0 when it holds nothing (transformers' `DynamicLayer.get_seq_length`)."""
    if c.numel() == 0:
        return 0
    return c.shape[0]


def grown_from_a_filled_cache(c, x, n):
    i = torch.tensor(0)
    while i < n:
        c = c + torch.zeros(seq_len(c), 3)
        c = torch.cat([c, x[None]])
        i += 1
    return c


def shrunk(c, n):
    i = torch.tensor(0)
    while i < n:
        c = c[1:]
        i += 1
    return c, seq_len(c)


def _conds(f, *args):
    from torch_autograph.graph import CondOp
    from torch_autograph.graph.walkers import walk_nodes

    graph = f.get_concrete_function(*args).graph
    return sum(isinstance(n.op.target, CondOp) for n in walk_nodes(graph))


def test_a_dim_a_loop_only_grows_is_never_below_its_entry_size():
    # The cache enters with 2 rows and each iteration adds one: `numel() == 0` is False at every iteration,
    # decided while tracing (no graph `if`), and the length read from it is the loop's own size.
    f = ta.function(grown_from_a_filled_cache)
    for n in (0, 1, 3):
        args = (torch.zeros(2, 3), torch.ones(3), torch.tensor(n))
        assert torch.equal(f(*args), grown_from_a_filled_cache(*args))
    assert len(f.trace_history()) == 1
    assert _conds(f, torch.zeros(2, 3), torch.ones(3), torch.tensor(1)) == 0


def test_a_dim_a_loop_shrinks_may_go_below_its_entry_size():
    # Traced first as never below 4 rows; the traced body makes it smaller, so it is traced again without that.
    f = ta.function(shrunk)
    for n in (0, 1, 4):
        out, length = f(torch.zeros(4, 3), torch.tensor(n))
        want, want_length = shrunk(torch.zeros(4, 3), torch.tensor(n))
        assert torch.equal(out, want) and int(length) == want_length
    assert len(f.trace_history()) == 1


def padded_to_a_longer_loop_output(x, stop):
    a, b = x, x
    while a.sum() < stop:
        a = torch.cat([a, x[:1], x[:1]])
        b = torch.cat([b, x[:1]])
    return pad_to(a, b)  # padded by a size known only when the graph runs


def test_a_pad_by_a_size_known_only_when_the_graph_runs():
    f = ta.function(padded_to_a_longer_loop_output)
    for stop in (1.0, 3.0, 9.0):
        assert torch.equal(f(torch.ones(2), torch.tensor(stop)), padded_to_a_longer_loop_output(torch.ones(2), stop))


def test_a_size_after_a_loop_that_only_grows_it_is_never_below_its_entry_size():
    def f(x, stop):
        while x.sum() < stop:
            x = torch.cat([x, x[:1]])
        # Decided while tracing: the loop starts at 2 rows and only adds rows. Plain Python `if`s, whose
        # branches return different structures, as a graph `if` could not.
        if x.shape[0] < 2:
            return None
        return x * 2

    g = ta.function(f)
    for stop in (1.0, 5.0):
        assert torch.equal(g(torch.ones(2), torch.tensor(stop)), f(torch.ones(2), stop))


def padded_to_a_loop_output_by_a_difference(a, b, stop):
    while a.sum() < stop:
        a = torch.cat([a, a[:1]])
    return F.pad(b, (0, a.shape[0] - b.shape[0]))  # negative (eagerly: a crop) when b is the longer


def test_a_pad_by_a_run_time_size_that_is_negative_is_an_error_not_a_crop():
    f = ta.function(padded_to_a_loop_output_by_a_difference)
    a = torch.ones(2)
    assert torch.equal(f(a, torch.ones(1), torch.tensor(3.0)),
                       padded_to_a_loop_output_by_a_difference(a, torch.ones(1), 3.0))
    line = padded_to_a_loop_output_by_a_difference.__code__.co_firstlineno + 3
    with pytest.raises(ta.errors.InvalidArgumentError, match=rf"test_shared_sizes.py:{line}"):
        f(a, torch.ones(6), torch.tensor(3.0))  # eagerly: cropped to 3


@ta.autograph.do_not_convert
def _step(seen, window):
    """Library code deciding in Python on a count (a sliding-window cache's `is_full`): not converted."""
    return 1.0 if seen >= window else 10.0


def counts_up(x, stop):
    seen = 5
    while x.sum() < stop:
        x = x * 2 + _step(seen, 4)
        seen += 1
    return x, seen


def counts_down(x, stop):
    seen = 5
    while x.sum() < stop:
        x = x * 2 + _step(seen, 4)
        seen -= 1
    return x, seen


def test_a_python_count_a_loop_only_adds_to_is_never_below_its_entry_value():
    # `seen` enters at 5 and each iteration adds 1: `seen >= 4` in code that stays Python decides True at every
    # iteration, as it does eagerly, and the count after the loop is the graph's.
    f = ta.function(counts_up)
    for stop in (0.0, 10.0, 1000.0):
        out, seen = f(torch.ones(2), torch.tensor(stop))
        want, want_seen = counts_up(torch.ones(2), torch.tensor(stop))
        assert torch.equal(out, want) and int(seen) == want_seen, stop
    assert len(f.trace_history()) == 1


def test_a_decision_on_the_floor_of_a_count_the_loop_lowers_is_refused_not_kept():
    # Eagerly `seen >= 4` turns False at the third iteration. The floor (never below 5) decided it while tracing;
    # the traced body lowers `seen`, so the loop is traced again without the floor, and the Python decision on a
    # number known only when the graph runs is an error, never the first trace's answer.
    with pytest.raises(ta.errors.OperatorNotAllowedInGraphError, match=r"test_shared_sizes\.py:\d+"):
        ta.function(counts_down)(torch.ones(2), torch.tensor(1000.0))
    assert counts_down(torch.ones(2), torch.tensor(1000.0))[1] < 4  # eagerly it does go below the window


def decided_on_then_made_a_tensor(x, stop):
    acc = 1
    while x.sum() < stop:
        if acc >= 1:  # decided by the floor while `acc` is an int...
            x = x + 1
        else:
            x = x + 10
        acc = acc * x.mean() / 8  # ...which the body makes a tensor, below 1 from the second iteration
    return x, acc


def test_a_count_decided_on_by_its_floor_and_then_made_a_tensor_is_traced_again():
    # Re-typing the body (the number becomes a tensor without running the Python again) would keep the `if`
    # decided for the int: the floor was read, so the loop is traced again, and the `if` is a graph `if`.
    f = ta.function(decided_on_then_made_a_tensor)
    for stop in (3.0, 50.0, 200.0):
        out, acc = f(torch.ones(2), torch.tensor(stop))
        want, want_acc = decided_on_then_made_a_tensor(torch.ones(2), torch.tensor(stop))
        assert torch.equal(out, want) and torch.allclose(torch.as_tensor(acc, dtype=torch.float32),
                                                         torch.as_tensor(want_acc, dtype=torch.float32)), stop
